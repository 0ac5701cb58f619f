"""Mining speed: `perfforge mine` against a plain PyDriller traversal that loads every diff, in one run.

Both sides produce the same output: the same prefilter on changed paths, the same classifier on the kernel
files' diffs, and for performance commits the changed functions of their kernel files (the pairs).
The only difference is how the history is read: PyDriller's traversal (every commit, every diff, through
GitPython), or the miner's two stages (one `git diff-tree` stream of paths for every commit, patches and
blobs only for candidates, in worker processes). The script prints rates, their ratio, and how far the two
agree on which commits are performance changes.

    python bench/bench_mining.py --repo /work/.mirror/karpathy+llm.c/repo [--repo ...] [--jobs 2]

Each repository is read through a `--shared` bare clone, never directly (PyDriller writes to the repository
it opens).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import pyarrow.parquet as pq  # noqa: E402
from pydriller import ModificationType, Repository  # noqa: E402

from mining import functions  # noqa: E402
from mining.classify import PERF_THRESHOLD, classify_commit  # noqa: E402
from mining.config import MineConfig  # noqa: E402
from mining.gitlog import CommitMeta, FileDiff, parse_patch, shared_clone  # noqa: E402
from mining.pipeline import mine  # noqa: E402
from mining.prefilter import kernel_python_files_at, prefilter  # noqa: E402
from perfforge.io import write_json  # noqa: E402

_STATUS = {ModificationType.ADD: "added", ModificationType.DELETE: "deleted"}


@dataclass
class SideResult:
    commits: int
    seconds: float
    perf_shas: set[str]
    failures: int = 0

    @property
    def commits_per_s(self) -> float:
        return self.commits / self.seconds if self.seconds else 0.0


def run_miner(repo: Path, out: Path, jobs: int, pairs: bool) -> tuple[SideResult, float]:
    started = time.perf_counter()
    result = mine(MineConfig(sources=[str(repo)], out=out, jobs=jobs, progress=False, pairs=pairs))
    seconds = time.perf_counter() - started
    perf = {row["commit"] for row in pq.read_table(out / "commits.parquet", columns=["commit", "is_perf"]).to_pylist()
            if row["is_perf"]}
    repo_stats = next(iter(result.stats["repos"].values()))
    side = SideResult(result.stats["totals"]["commits_total"], seconds, perf, result.stats["totals"]["failures"])
    return side, repo_stats["prefilter_commits_per_s"]


def _file_diff(modified) -> FileDiff:
    diff = FileDiff(path=modified.new_path or modified.old_path, status=_STATUS.get(modified.change_type, "modified"))
    parse_patch(diff, modified.diff, max_patch_lines=20_000)
    return diff


def run_pydriller(repo: Path, clone_dir: Path, pairs: bool) -> SideResult:
    """The plain traversal: every commit of HEAD (no merges), every modified file's diff, then the same
    prefilter, classifier and, for performance commits, the changed functions of their kernel files."""
    functions.clear_caches()
    git_dir = shared_clone(repo, clone_dir / "pydriller.git")
    kernel_py_files = kernel_python_files_at(git_dir, "HEAD")
    started = time.perf_counter()
    commits, perf, failures = 0, set(), 0
    traversal = Repository(str(git_dir), only_no_merge=True).traverse_commits()
    while True:
        try:
            commit = next(traversal)
        except StopIteration:
            break
        except Exception:  # PyDriller cannot step over a missing object: the traversal ends there
            failures += 1
            break
        commits += 1
        try:
            modified = commit.modified_files
            diffs = {m.new_path or m.old_path: m for m in modified}
            for m in modified:
                _ = m.diff
        except Exception:
            failures += 1
            continue
        meta = CommitMeta(commit.hash, commit.parents, "", commit.msg, list(diffs))
        kept = prefilter(meta, kernel_py_files)
        if not kept.is_candidate:
            continue
        parsed = {p: _file_diff(diffs[p]) for p in kept.kernel_files if p in diffs}
        file_diffs = list(parsed.values())
        if classify_commit(commit.msg, file_diffs).perf_score >= PERF_THRESHOLD:
            perf.add(commit.hash)
            for path in kept.kernel_files if pairs else ():
                language = functions.language_of(path)
                if path in diffs and language and diffs[path].change_type == ModificationType.MODIFY:
                    before, after = diffs[path].source_code_before, diffs[path].source_code
                    if before is not None and after is not None:
                        functions.changed_functions(before, after, language, parsed[path].line_ranges)
    return SideResult(commits, time.perf_counter() - started, perf, failures)


def main() -> None:
    parser = argparse.ArgumentParser(allow_abbrev=False, description=__doc__.splitlines()[0])
    parser.add_argument("--repo", type=Path, action="append", required=True, help="a git directory (repeatable)")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--output", choices=["pairs", "commits", "both"], default="both",
                        help="pairs: the full dataset; commits: classification only (perfforge mine --no-pairs)")
    parser.add_argument("--json", type=Path, default=None, help="also write the rows to this JSON file")
    args = parser.parse_args()
    print(f"{'repository':<30} {'output':<8} {'commits':>7} | {'miner c/s':>9} {'prefilter c/s':>13} | "
          f"{'pydriller c/s':>13} | {'ratio':>6} | perf agree")
    outputs = ["pairs", "commits"] if args.output == "both" else [args.output]
    rows = [report_one(repo, args.jobs, output == "pairs") for repo in args.repo for output in outputs]
    if args.json:
        write_json(args.json, {"jobs": args.jobs, "cpus": os.cpu_count(), "rows": rows})


def report_one(repo: Path, jobs: int, pairs: bool) -> dict[str, object]:
    with tempfile.TemporaryDirectory() as tmp:
        miner, prefilter_rate = run_miner(repo, Path(tmp) / "out", jobs, pairs)
        baseline = run_pydriller(repo, Path(tmp), pairs)
    shared = miner.perf_shas & baseline.perf_shas
    union = miner.perf_shas | baseline.perf_shas
    agree = f"{len(shared)}/{len(union)}" if union else "-"
    name = repo.parent.name if repo.name == "repo" else repo.name
    print(f"{name:<30} {'pairs' if pairs else 'commits':<8} {miner.commits:>7} | {miner.commits_per_s:>9.0f} "
          f"{prefilter_rate:>13.0f} | {baseline.commits_per_s:>13.1f} | "
          f"{miner.commits_per_s / baseline.commits_per_s:>5.1f}x | {agree}"
          + (f"  (pydriller read {baseline.commits} commits, {baseline.failures} failures)"
             if baseline.failures else ""), flush=True)
    return {"repository": name, "output": "pairs" if pairs else "commits", "commits": miner.commits,
            "miner_seconds": round(miner.seconds, 2), "pydriller_seconds": round(baseline.seconds, 2),
            "ratio": round(miner.commits_per_s / baseline.commits_per_s, 2), "prefilter_commits_per_s": prefilter_rate,
            "perf_commits_agree": agree, "pydriller_commits_read": baseline.commits,
            "pydriller_failures": baseline.failures}


if __name__ == "__main__":
    main()
