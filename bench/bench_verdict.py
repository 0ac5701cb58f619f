"""What a verdict costs, and what it says, on the old path and the new one, side by side on the same tasks.

For every task given (default: every CPU example task), the task's own fast version is judged twice per repetition,
interleaved (old, new, new, old, ...), with builds cached beforehand so that both sides pay the same:

- old: the harness-driven path (`validate(..., served=False)`): one process per seed and per timing round, the
  harness drawing inputs, timing and writing outputs inside the candidate's process;
- new: the served path (`validate(..., served=True)`): one kernel process per side and configuration, the judge
  drawing, timing and reading (profiling/served.py).

Both check the same configurations, seeds x calls and rounds x trials of the task's [validate] table. Printed per
task: each path's median verdict time, the ratio old/new, and both speedups (they should agree within the noise
floor); then the medians over tasks. Results go to bench/results/verdict_cost.json.

    .venv/bin/python bench/bench_verdict.py [--repeat 3] [TASK_DIR ...]

On a GPU machine, pass CUDA task directories (examples/tasks/cuda/*): both paths, as for the CPU. Triton has no
served path yet, so only its old one is timed (the new column says so). Each verdict's phases (start, correctness,
timing, ...: Verdict.phase_durations_s) are printed beside its time.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from perfforge.targets import target_spec  # noqa: E402
from perfforge.task import load_task  # noqa: E402
from profiling.build import build  # noqa: E402
from profiling.validate import validate  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "bench" / "results" / "verdict_cost.json"


def measure(task_dir: Path, repeat: int, work: Path, sides: tuple[str, ...] = ("old", "new")) -> dict:
    task = load_task(task_dir)
    paths = [served for served in (False, True) if ("new" if served else "old") in sides]
    if not target_spec(task.target).served:
        paths = [False]
    build(task, task.source_path, work)  # both paths find their builds in the cache
    build(task, task.reference_path, work)
    runs: dict[str, list[dict]] = {"old": [], "new": []}
    for index in range(repeat):
        order = paths if index % 2 == 0 else list(reversed(paths))
        for served in order:
            started = time.monotonic()
            verdict = validate(task, task.reference_path, work, served=served)
            runs["new" if served else "old"].append({"seconds": time.monotonic() - started,
                                                     "status": verdict.status.value, "speedup": verdict.speedup,
                                                     "phases_s": verdict.phase_durations_s,
                                                     "reason": verdict.reason.splitlines()[0][:300]})
    row = {"task": task.name, "target": task.target}
    for side, measured in runs.items():
        if measured:
            row[side] = {"median_s": statistics.median(r["seconds"] for r in measured), "runs": measured}
    if "new" in row and "old" in row:
        row["ratio_old_over_new"] = row["old"]["median_s"] / row["new"]["median_s"]
    return row


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(allow_abbrev=False, description=__doc__.splitlines()[0])
    parser.add_argument("tasks", nargs="*", type=Path, help="task directories (default: examples/tasks/cpu/*)")
    parser.add_argument("--repeat", type=int, default=3, help="verdicts per path and task")
    parser.add_argument("--paths", choices=("both", "old", "new"), default="both",
                        help="which paths to time (default both: the comparison; one alone to look at its phases)")
    parser.add_argument("--out", type=Path, default=RESULTS, help=f"results file (default {RESULTS})")
    args = parser.parse_args(argv)
    sides = ("old", "new") if args.paths == "both" else (args.paths,)
    tasks = args.tasks or sorted(p for p in (ROOT / "examples" / "tasks" / "cpu").iterdir() if p.is_dir())
    rows = []
    with tempfile.TemporaryDirectory(prefix="bench-verdict-") as scratch:
        for task_dir in tasks:
            row = measure(task_dir, args.repeat, Path(scratch) / task_dir.name, sides)
            rows.append(row)
            print(_line(row), flush=True)
            summary = _write(args.out, rows, args.repeat)  # after every task: a run cut short keeps what it had
    print("median over tasks: " + ", ".join(f"{k} {v:.2f}" + ("x" if k.startswith("ratio") else " s")
                                            for k, v in summary.items()))
    print(f"results: {args.out}")
    return 0


def _write(out: Path, rows: list[dict], repeat: int) -> dict:
    """The results so far, written atomically; returns their summary (medians over tasks)."""
    summary = {side: statistics.median(r[side]["median_s"] for r in rows if side in r)
               for side in ("old", "new") if any(side in r for r in rows)}
    if "new" in summary and "old" in summary:
        summary["ratio_old_over_new"] = summary["old"] / summary["new"]
    out.parent.mkdir(parents=True, exist_ok=True)
    partial = out.with_suffix(".partial")
    partial.write_text(json.dumps({"machine": os.uname().nodename, "cpus": os.cpu_count(),
                                   "load_average": os.getloadavg(), "repeat": repeat, "tasks": rows,
                                   "summary": summary}, indent=1) + "\n")
    os.replace(partial, out)
    return summary


def _line(row: dict) -> str:
    def side(name: str) -> str:
        if name not in row:
            return f"{name}: not timed"
        runs = row[name]["runs"]
        speedups = ", ".join(f"{r['speedup']:.2f}x" if r["speedup"] else r["status"] for r in runs)
        phases = " ".join(f"{k} {v:.1f}" for k, v in runs[-1]["phases_s"].items() if v >= 0.05)
        return f"{name} {row[name]['median_s']:.2f} s ({speedups}; {phases})"
    ratio = f", old/new {row['ratio_old_over_new']:.2f}x" if "ratio_old_over_new" in row else ""
    return f"{row['task']:<24} {side('old')}; {side('new')}{ratio}"


if __name__ == "__main__":
    sys.exit(main())
