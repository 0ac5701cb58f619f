"""Precision, recall and F1 of the commit classifier and of a message-keyword baseline on the labelled set.

The labels (bench/labels/*.csv: repo, sha, label, category, reason) were written by reading each commit's
message and diff. The commits are read from local mirrors of the repositories (`--mirrors DIR` holding
`owner+name/repo` git directories, as the search tool's fetch leaves them). The pipeline's own path is used:
prefilter on changed paths, then the classifier on the message and the kernel files' patches; a commit the
prefilter drops counts as predicted not-perf.

Within a label set, rows are also split in two halves by sha (even/odd first byte), a check of how stable the
figures are. Which sets were looked at during development, and which were held out: bench/labels/README.md.

    python bench/eval_classifier.py --mirrors DIR [--labels bench/labels/heldout4] [--show-errors all]

With `--judge-url URL --judge-model NAME` the commits whose rule score falls in the uncertain band go to that
LLM judge, as in `perfforge mine --judge-url`, and the figures are those of the judged decisions; the judge's
tallies (asked, answered, changed decisions, unparsable answers) are printed after them.
"""

from __future__ import annotations

import argparse
import csv
import re
import sys
import tempfile
from collections import Counter, defaultdict
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from mining.config import MineConfig  # noqa: E402
from mining.gitlog import CommitMeta, FileDiff, iter_commit_meta, iter_patches, shared_clone  # noqa: E402
from mining.judge import classify_with_judge, judge_client  # noqa: E402
from mining.prefilter import PrefilterResult, kernel_python_files_at, prefilter  # noqa: E402
from perfforge.config import add_arguments, from_namespace  # noqa: E402
from perfforge.errors import BackendError, ConfigError  # noqa: E402
from perfforge.llm_client import ChatClient  # noqa: E402

LABELS_DIR = Path(__file__).parent / "labels" / "dev"
# The options of perfforge mine's LLM judge, taken over as they are.
JUDGE_OPTIONS = ("judge_url", "judge_model", "judge_band_low", "judge_band_high", "judge_diff_chars")
MAX_PATCH_LINES = 20_000
# The baseline most mining papers start from: any performance word in the message.
KEYWORD_BASELINE_RE = re.compile(r"perf|performance|speed|fast|faster|optimi[sz]|efficien|improve", re.IGNORECASE)


@dataclass
class Row:
    repo: str
    sha: str
    label: bool
    predicted: bool
    baseline: bool
    score: float
    category: str
    true_category: str
    subject: str
    evidence: list[str]
    candidate: bool  # passed the prefilter: touches a kernel file (the miner never classifies the others)

    @property
    def split(self) -> str:
        return "even-sha half" if int(self.sha[:2], 16) % 2 == 0 else "odd-sha half"


def load_labels(labels_dirs: list[Path]) -> dict[str, list[dict[str, str]]]:
    by_repo: dict[str, list[dict[str, str]]] = defaultdict(list)
    for path in sorted(p for labels_dir in labels_dirs for p in labels_dir.glob("*.csv")):
        with path.open(newline="") as handle:
            for row in csv.DictReader(handle):
                by_repo[row["repo"]].append(row)
    return by_repo


@dataclass
class Judge:
    """The optional LLM judge of the uncertain band, and its tallies over the whole evaluation."""

    config: MineConfig
    client: ChatClient | None
    counts: Counter[str]


@dataclass
class LabelledCommits:
    """What the pipeline reads of labelled commits: metadata, the prefilter's result, and the kernel files'
    patches of the candidates (a commit missing from patches was dropped by the prefilter or unreadable)."""

    metas: dict[str, CommitMeta]
    kept: dict[str, PrefilterResult]
    patches: dict[str, list[FileDiff]]


def read_labelled(mirror: Path, labels: list[dict[str, str]], workdir: Path) -> LabelledCommits:
    git_dir = shared_clone(mirror, workdir / (mirror.parent.name + ".git"))
    kernel_py_files = kernel_python_files_at(git_dir, "HEAD")
    shas = [row["sha"] for row in labels]
    failures: list = []
    metas = {m.sha: m for m in iter_commit_meta(git_dir, shas, failures)}
    kept = {sha: prefilter(m, kernel_py_files) for sha, m in metas.items()}
    candidates = [sha for sha, r in kept.items() if r.is_candidate]
    patches = dict(iter_patches(git_dir, candidates, {s: kept[s].kernel_files for s in candidates},
                                MAX_PATCH_LINES, failures))
    return LabelledCommits(metas, kept, patches)


def mirror_of(mirrors: Path, repo: str) -> Path:
    mirror = mirrors / repo.replace("/", "+") / "repo"
    if not mirror.exists():
        sys.exit(f"error: no mirror of {repo} at {mirror}; fetch it first")
    return mirror


def evaluate_repo(mirror: Path, labels: list[dict[str, str]], workdir: Path, judge: Judge) -> list[Row]:
    read = read_labelled(mirror, labels, workdir)
    metas, kept, patches = read.metas, read.kept, read.patches
    rows = []
    for label in labels:
        sha = label["sha"]
        meta = metas.get(sha)
        message = meta.message if meta else ""
        if sha in patches:
            result, _ = classify_with_judge(message, patches[sha], judge.config, judge.client, judge.counts)
            predicted, score, category, evidence = result.is_perf, result.perf_score, result.category.value, \
                result.evidence
        else:
            predicted, score, category = False, 0.0, "none"
            evidence = [f"prefilter: {kept[sha].reason}" if sha in kept else "unreadable"]
        rows.append(Row(label["repo"], sha, label["label"] == "perf", predicted,
                        bool(KEYWORD_BASELINE_RE.search(message)), score, category, label["category"],
                        message.splitlines()[0][:80] if message else "", evidence, sha in patches))
    return rows


def scores(pairs: list[tuple[bool, bool]]) -> tuple[float, float, float, int, int]:
    tp = sum(1 for truth, pred in pairs if truth and pred)
    fp = sum(1 for truth, pred in pairs if not truth and pred)
    fn = sum(1 for truth, pred in pairs if truth and not pred)
    precision = tp / (tp + fp) if tp + fp else 0.0
    recall = tp / (tp + fn) if tp + fn else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return precision, recall, f1, tp + fn, len(pairs)


def report(rows: list[Row]) -> None:
    print(f"{'set':<34} {'n':>4} {'pos':>4} | {'classifier P':>12} {'R':>5} {'F1':>5} | "
          f"{'keywords P':>10} {'R':>5} {'F1':>5}")
    groups: dict[str, list[Row]] = {"all": rows, "prefilter candidates": [r for r in rows if r.candidate]}
    for half in ("even-sha half", "odd-sha half"):
        groups[half] = [r for r in rows if r.split == half]
    for repo in sorted({r.repo for r in rows}):
        groups[repo] = [r for r in rows if r.repo == repo]
    for name, group in groups.items():
        cp, cr, cf, pos, n = scores([(r.label, r.predicted) for r in group])
        bp, br, bf, _, _ = scores([(r.label, r.baseline) for r in group])
        print(f"{name:<34} {n:>4} {pos:>4} | {cp:>12.2f} {cr:>5.2f} {cf:>5.2f} | {bp:>10.2f} {br:>5.2f} {bf:>5.2f}")
    true_pos = [r for r in rows if r.label and r.predicted]
    same = sum(1 for r in true_pos if r.category == r.true_category)
    print(f"category agreement on true positives: {same}/{len(true_pos)}")


def threshold_sweep(rows: list[Row]) -> None:
    """P/R/F1 per half at several thresholds of perf_score (how PERF_THRESHOLD was chosen on the dev set)."""
    print("threshold sweep (P/R/F1):")
    for threshold in (0.4, 0.45, 0.5, 0.55, 0.6, 0.65, 0.7):
        cells = []
        for split in ("even-sha half", "odd-sha half"):
            group = [r for r in rows if r.split == split]
            p, r, f, _, _ = scores([(row.label, row.score >= threshold) for row in group])
            cells.append(f"{split} {p:.2f}/{r:.2f}/{f:.2f}")
        print(f"  {threshold:.2f}  " + "   ".join(cells))


def show_errors(rows: list[Row], split: str) -> None:
    for r in rows:
        if r.label != r.predicted and (split == "all" or r.split == split):
            kind = "FN" if r.label else "FP"
            print(f"{kind} {r.repo} {r.sha[:8]} score={r.score:.2f} {r.subject!r}")
            for line in r.evidence[:5]:
                print(f"     {line}")


def main() -> None:
    parser = argparse.ArgumentParser(allow_abbrev=False, description=__doc__.splitlines()[0])
    parser.add_argument("--mirrors", type=Path, required=True, help="directory of owner+name/repo mirrors")
    parser.add_argument("--show-errors", choices=["even-sha half", "odd-sha half", "all"], default=None)
    parser.add_argument("--labels", type=Path, action="append",
                        help="directory of label CSVs, repeatable (default bench/labels/dev; bench/labels/README.md)")
    parser.add_argument("--sweep", action="store_true", help="print P/R/F1 at several score thresholds")
    add_arguments(parser, MineConfig, only=JUDGE_OPTIONS)  # as perfforge mine has them (band 0 to 1: judge all)
    args = parser.parse_args()
    try:
        config = from_namespace(MineConfig, args)
        client = judge_client(config, check=True)
    except (ConfigError, BackendError) as exc:
        sys.exit(f"error: {exc}")
    judge = Judge(config, client, Counter())
    rows: list[Row] = []
    with tempfile.TemporaryDirectory() as tmp:
        for repo, labels in load_labels(args.labels or [LABELS_DIR]).items():
            rows.extend(evaluate_repo(mirror_of(args.mirrors, repo), labels, Path(tmp), judge))
    report(rows)
    if client is not None:
        print(f"judge {config.judge_model} on scores in [{config.judge_band_low}, {config.judge_band_high}]: "
              f"{dict(judge.counts)}")
    if args.sweep:
        threshold_sweep(rows)
    if args.show_errors:
        show_errors(rows, args.show_errors)


if __name__ == "__main__":
    main()
