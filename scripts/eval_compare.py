"""Compare model configurations of one or more `perfforge eval` output directories on the runs they all finished.

A GPU run that split the work (one eval process per pattern, each its own --out) or ran out of time leaves each
configuration with a different set of (task, seed) runs; this compares them on the runs every configuration
finished, per split (held-out instances of trained patterns, held-out patterns, all), with 95% intervals from a
bootstrap over tasks (a task's seeds are resampled together: they share the task, so they are not independent).
It also counts, per configuration, the correct candidates whose code is the original's token for token (a model
that copies the kernel back is "correct" and never faster).

    python scripts/eval_compare.py EVAL_DIR [EVAL_DIR ...] --models base ft --out summary.json
"""

from __future__ import annotations

import argparse
import collections
import json
import random
import re
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from eval.metrics import BOOTSTRAP_RESAMPLES, compiled_share, correctness_rate, fast_p, geomean_speedup  # noqa: E402
from eval.results import load  # noqa: E402
from perfforge.io import read_json, write_json  # noqa: E402
from perfforge.records import EvalRecord  # noqa: E402
from perfforge.verdict import Status  # noqa: E402

SPLITS = ("held_out_instance", "held_out_pattern", "all")


def candidates(rows: Sequence[EvalRecord]) -> int:
    return sum(r.attempts for r in rows)


def parsed_share(rows: Sequence[EvalRecord]) -> float:
    """Share of the candidates the loop read code from (not unparsable)."""
    unparsable = sum(Status(s) is Status.UNPARSABLE for r in rows for s in r.attempt_statuses)
    return 1 - unparsable / candidates(rows) if candidates(rows) else 0.0


RATES: dict[str, Callable[[Sequence[EvalRecord]], float]] = {
    "parsed": parsed_share,
    "compiled": lambda rows: compiled_share(rows) or 0.0,
    "correct": correctness_rate,
    "fast_1": lambda rows: fast_p(rows, 1.0),
}


def interval(rows: Sequence[EvalRecord], rate: Callable[[Sequence[EvalRecord]], float], seed: int = 0) -> list[float]:
    """95% bootstrap interval over tasks (eval.metrics' resample count)."""
    by_task: dict[str, list[EvalRecord]] = collections.defaultdict(list)
    for row in rows:
        by_task[row.task].append(row)
    tasks = sorted(by_task)
    rng = random.Random(seed)
    values = sorted(rate([r for _ in tasks for r in by_task[rng.choice(tasks)]]) for _ in range(BOOTSTRAP_RESAMPLES))
    return [values[int(0.025 * BOOTSTRAP_RESAMPLES)], values[int(0.975 * BOOTSTRAP_RESAMPLES) - 1]]


def copies(directory: Path, configuration: str) -> tuple[int, int]:
    """(correct candidates, those identical to the original token for token) of a configuration's runs."""
    correct = same = 0
    for path in directory.glob(f"runs/{configuration}/*/s*/*/*/rounds/*/c*/attempt.json"):
        attempt = read_json(path)
        if not Status(attempt["status"]).correct:
            continue
        correct += 1
        original = re.search(r"```\w*\n(.*?)```", attempt.get("prompt", ""), re.S)
        same += bool(original) and original.group(1).split() == attempt.get("code", "").split()
    return correct, same


def compare(directories: Sequence[Path], models: Sequence[str]) -> dict:
    rows = [r for d in directories for path in sorted(d.glob("results.parquet")) for r in load(path)]
    finished = {m: {(r.task, r.seed) for r in rows if r.configuration == m} for m in models}
    common = set.intersection(*finished.values())
    report: dict = {"runs_finished": {m: len(finished[m]) for m in models}, "runs_compared": len(common),
                    "splits": {}, "statuses": {}, "copies": {}}
    for split in SPLITS:
        report["splits"][split] = {}
        for model in models:
            chosen = [r for r in rows if r.configuration == model and (r.task, r.seed) in common
                      and (split == "all" or r.split == split)]
            summary = {"runs": len(chosen), "tasks": len({r.task for r in chosen}), "candidates": candidates(chosen),
                       "correct_candidates": sum(r.correct_candidates for r in chosen),
                       "proven_faster_candidates": sum(r.improved_candidates for r in chosen)}
            for name, rate in RATES.items():
                summary[name] = rate(chosen) if chosen else None
                summary[f"{name}_ci95"] = interval(chosen, rate) if chosen else None
            speedup = geomean_speedup(chosen) if chosen else None
            summary["geomean_speedup"] = (None if speedup is None else
                                          {"value": speedup.value, "ci95": [speedup.ci_low, speedup.ci_high]})
            report["splits"][split][model] = summary
    for model in (*models, "human"):
        report["statuses"][model] = dict(collections.Counter(r.status for r in rows if r.configuration == model))
    for model in models:
        counts = [copies(d, model) for d in directories]
        report["copies"][model] = {"correct_candidates": sum(c for c, _ in counts),
                                   "identical_to_the_original": sum(s for _, s in counts)}
    humans = [r for r in rows if r.configuration == "human"]
    report["human_fast_1"] = fast_p(humans, 1.0) if humans else None
    return report


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("dirs", nargs="+", type=Path, help="perfforge eval output directories")
    parser.add_argument("--models", nargs="+", default=["base", "ft"], help="configurations to compare")
    parser.add_argument("--out", type=Path, help="write the comparison here (JSON)")
    args = parser.parse_args(argv)
    report = compare(args.dirs, args.models)
    if args.out:
        write_json(args.out, report)
    print(json.dumps(report, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
