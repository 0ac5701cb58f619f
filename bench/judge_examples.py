"""Training examples of the mining judge from labelled commits: judgements.parquet for `perfforge train`.

Each labelled commit that passes the prefilter becomes one record (perfforge.records.JudgementRecord): the judge's
own prompt (mining.judge.judge_prompt: instructions, message, the kernel files' diff cut to --judge-diff-chars)
and the label as the answer the judge is asked to write (JSON with is_perf, category and the label's reason).
Commits the prefilter drops are left out: the miner never asks the judge about them.

    python bench/judge_examples.py --mirrors DIR --labels bench/labels/dev --labels bench/labels/heldout1 \\
        --judge-diff-chars 1500 --out OUT/judgements.parquet
    perfforge train OUT/judgements.parquet --eval-fraction 0 --out OUT/judge
    perfforge serve --model default --lora judge=OUT/judge/adapter
    python bench/eval_classifier.py --mirrors DIR --labels bench/labels/heldout3 --judge-url URL \\
        --judge-model judge --judge-diff-chars 1500

Train on some label sets and evaluate on others: a judge fitted on a set says nothing of its quality there.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the repository: mining, perfforge
sys.path.insert(0, str(Path(__file__).resolve().parent))  # bench: the evaluation's reading of labelled commits

from eval_classifier import load_labels, mirror_of, read_labelled  # noqa: E402

from mining.config import MineConfig  # noqa: E402
from mining.judge import judgement_record  # noqa: E402
from perfforge.config import add_arguments, from_namespace  # noqa: E402
from perfforge.errors import ConfigError  # noqa: E402
from perfforge.io import write_parquet  # noqa: E402
from perfforge.records import JUDGEMENT_FEATURES, Category, as_row  # noqa: E402


def judgement_rows(mirrors: Path, labels_dirs: list[Path], max_diff_chars: int) -> list[dict]:
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for repo, labels in load_labels(labels_dirs).items():
            read = read_labelled(mirror_of(mirrors, repo), labels, Path(tmp))
            for label in labels:
                diffs = read.patches.get(label["sha"])
                if diffs is None:  # dropped by the prefilter (or unreadable): never judged
                    continue
                is_perf = label["label"] == "perf"
                record = judgement_record(repo, label["sha"], read.metas[label["sha"]].message, diffs,
                                          is_perf=is_perf, category=Category(label["category"]),
                                          reason=label["reason"], max_diff_chars=max_diff_chars)
                rows.append(as_row(record))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(allow_abbrev=False, description=__doc__.splitlines()[0])
    parser.add_argument("--mirrors", type=Path, required=True, help="directory of owner+name/repo mirrors")
    parser.add_argument("--labels", type=Path, action="append", required=True,
                        help="directory of label CSVs, repeatable (bench/labels/README.md)")
    add_arguments(parser, MineConfig, only=("judge_diff_chars",))  # as perfforge mine --judge-diff-chars
    parser.add_argument("--out", type=Path, required=True, help="the judgements.parquet to write")
    args = parser.parse_args()
    try:
        config = from_namespace(MineConfig, args)
    except ConfigError as exc:
        sys.exit(f"error: {exc}")
    rows = judgement_rows(args.mirrors, args.labels, config.judge_diff_chars)
    write_parquet(args.out, rows, JUDGEMENT_FEATURES)
    perf = sum(row["is_perf"] for row in rows)
    print(f"{len(rows)} judgement examples ({perf} perf) from {len({r['repo'] for r in rows})} repositories: "
          f"{args.out}")


if __name__ == "__main__":
    main()
