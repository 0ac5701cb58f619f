"""An evaluation's KernelBench rows in KernelBench's own result layout, so its analysis script reads ours.

KernelBench's scripts/benchmark_eval_analysis.py reads one `eval_results.json` per run and level, keyed by problem
id, each entry {"sample_id", "compiled", "correctness", "metadata", "runtime" (ms, -1.0 when not measured),
"runtime_stats"}, and compares "runtime" with the "mean" of its baseline JSON. `perfforge eval` writes, per
configuration (and variant and seed, when there are several) and level:

    OUT/kernelbench/<configuration>[-<variant>-s<seed>]/level<N>/eval_results.json
    OUT/kernelbench/<configuration>[-<variant>-s<seed>]/level<N>/level_<N>_problem_<id>_sample_<seed>_kernel.py
                                                   the best proven-faster answer (the loop's optimized/ file),
                                                   named as KernelBench names its samples

"runtime" is the best correct candidate's median time by perfforge's judge: served, with the host's cost of a
Python launch in every call (docs/validation.md), so it is not an event timing of the kernel alone. Problems
without a row are left out; KernelBench's script fills those in as failures.
"""

from __future__ import annotations

import json
import re
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path

from perfforge.io import write_text
from perfforge.records import EvalRecord

SUITE = "kernelbench"
TASK_NAME = re.compile(r"^kb_l(\d)_(\d{3})_")  # synth/kernelbench.py's Problem.task_name


def eval_results(rows: Sequence[EvalRecord]) -> dict[str, dict[int, dict[str, dict]]]:
    """{run name: {level: {problem id: entry}}} for the rows of the kernelbench suite (other rows are ignored)."""
    runs: dict[str, dict[int, dict[str, dict]]] = defaultdict(lambda: defaultdict(dict))
    for row in rows:
        match = TASK_NAME.match(row.task) if row.suite == SUITE else None
        if match is None:
            continue
        level, problem = int(match.group(1)), int(match.group(2))
        run = row.configuration + (f"-{row.variant}-s{row.seed}" if row.variant else "")
        runtime_ms = row.best_ms if row.correct and row.best_ms is not None else -1.0
        runs[_safe(run)][level][str(problem)] = {
            "sample_id": row.seed,
            "compiled": row.compiled > 0,
            "correctness": bool(row.correct),
            "metadata": {"perfforge_status": row.status, "perfforge_speedup": row.speedup,
                         "perfforge_baseline_ms": row.baseline_ms, "hardware": row.machine},
            "runtime": float(runtime_ms),
            "runtime_stats": {"median": runtime_ms} if runtime_ms >= 0 else {},
        }
    return runs


def write_eval_results(out: Path, rows: Sequence[EvalRecord]) -> list[Path]:
    """Write every run's and level's eval_results.json under OUT/kernelbench (atomically); the paths written."""
    written = []
    for run, levels in eval_results(rows).items():
        for level, entries in levels.items():
            path = out / SUITE / run / f"level{level}" / "eval_results.json"
            # in problem order, not sorted as strings: KernelBench's script lines the values up with its baseline's
            ordered = dict(sorted(entries.items(), key=lambda item: int(item[0])))
            write_text(path, json.dumps(ordered, indent=2) + "\n")
            written.append(path)
    return written


def write_answers(out: Path, rows: Sequence[EvalRecord]) -> list[Path]:
    """Copy each kernelbench row's winning answer (OUT/<run_dir>/optimized/<source>: only a proven improvement is
    kept there) into the run's level directory under KernelBench's sample name; the paths written."""
    written = []
    for row in rows:
        match = TASK_NAME.match(row.task) if row.suite == SUITE and row.run_dir else None
        winner = out / row.run_dir / "optimized" / "model_new.py" if match else None
        if match is None or winner is None or not winner.is_file():
            continue
        level, problem = int(match.group(1)), int(match.group(2))
        run = _safe(row.configuration + (f"-{row.variant}-s{row.seed}" if row.variant else ""))
        path = out / SUITE / run / f"level{level}" / f"level_{level}_problem_{problem}_sample_{row.seed}_kernel.py"
        write_text(path, winner.read_text(encoding="utf-8"))
        written.append(path)
    return written


def _safe(name: str) -> str:
    return re.sub(r"[^\w.=,;-]+", "_", name)
