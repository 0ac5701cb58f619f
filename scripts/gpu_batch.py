"""Build, validate, time and profile a set of tasks in one call, and print a table (for a lent GPU machine).

Runs from a checkout without installing anything beyond numpy (the GPU image lacks `datasets`):

    PYTHONPATH=. python3 scripts/gpu_batch.py examples/tasks/cuda/* --out $OUT/batch

For each task: the verdict of its reference (known-good optimisation) against its original, with the cost of the
verdict; a profile of the original and of the reference (timing outside the profiler, then ncu or callgrind),
with the cost of each profile and the top diagnosis of each. Everything goes to OUT/results.json; the table is
printed last.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import traceback
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from perfforge.task import load_task  # noqa: E402
from profiling.profile import profile_task  # noqa: E402
from profiling.validate import validate  # noqa: E402


def run_one(task_dir: Path, out: Path) -> dict:
    task = load_task(task_dir)
    row: dict = {"task": task.name, "target": task.target, "planted": task.bottleneck}
    work = out / task.name
    for side, version in (("original", task.source_path), ("reference", task.reference_path)):
        if version is None:
            continue
        started = time.monotonic()
        try:
            profile = profile_task(task, work / f"profile-{side}", version=version)
        except Exception as exc:  # one task's failure must not lose the others
            row[f"{side}_error"] = f"{type(exc).__name__}: {exc}"
            traceback.print_exc()
            continue
        row[f"{side}_profile_s"] = round(time.monotonic() - started, 2)
        row[f"{side}_median_ms"] = profile.timing.median_ms
        row[f"{side}_diagnoses"] = [(d.name, d.severity) for d in profile.diagnoses]
        (work / f"{side}.profile.json").write_text(json.dumps(profile.to_dict(), indent=1))
    if task.reference_path is not None:
        started = time.monotonic()
        verdict = validate(task, task.reference_path, work / "validate")
        row["verdict_s"] = round(time.monotonic() - started, 2)
        row["verdict"] = verdict.status.value
        row["speedup"] = verdict.speedup
        row["speedup_ci"] = verdict.speedup_ci
        row["headline"] = verdict.headline()
        (work / "verdict.json").write_text(json.dumps(verdict.to_dict(), indent=1, default=str))
    return row


def table(rows: list[dict]) -> str:
    head = ("task", "planted", "orig ms", "ref ms", "verdict", "speedup", "top diag (orig)", "top diag (ref)",
            "profile s", "verdict s")
    lines = [" | ".join(head), " | ".join("---" for _ in head)]
    for r in rows:
        top = [(r.get(f"{s}_diagnoses") or [("-", 0)])[0][0] for s in ("original", "reference")]
        lines.append(" | ".join(str(x) for x in (
            r["task"], r.get("planted") or "-", _fmt(r.get("original_median_ms")), _fmt(r.get("reference_median_ms")),
            r.get("verdict", "-"), _fmt(r.get("speedup")), top[0], top[1],
            f"{r.get('original_profile_s', '-')}/{r.get('reference_profile_s', '-')}", r.get("verdict_s", "-"))))
    return "\n".join(lines)


def _fmt(value: float | None) -> str:
    return "-" if value is None else f"{value:.4g}"


def main() -> int:
    parser = argparse.ArgumentParser(allow_abbrev=False, description=__doc__.splitlines()[0])
    parser.add_argument("tasks", nargs="+", type=Path)
    parser.add_argument("--out", type=Path, default=Path("perfforge-out/batch"))
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    rows = []
    for task_dir in args.tasks:
        print(f"== {task_dir}", flush=True)
        try:
            rows.append(run_one(task_dir, args.out))
        except Exception as exc:
            traceback.print_exc()
            rows.append({"task": task_dir.name, "error": f"{type(exc).__name__}: {exc}"})
        print(json.dumps(rows[-1], default=str), flush=True)
    (args.out / "results.json").write_text(json.dumps(rows, indent=1, default=str))
    print(table(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
