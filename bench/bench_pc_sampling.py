"""What watching the kernel processes costs a verdict, side by side: their program counters sampled
(profiling/pc_samples.py) and their threads probed mid-call (profiling/fp_probe.py: every call of the sampled
processes and validate.PROBED_TRIAL_SHARE of the timed ones, whose times are dropped).

For every task given (default: every CPU example task), the task's own fast version is judged with timing, with
sampling and without, interleaved (off, on, on, off, ...), builds cached beforehand. Printed per task: each
setting's median speedup and noise floor, the ratio of the medians (on / off: 1.00 means the judge reads the same
speedup with the samples being taken), the verdict's time, and the samples read. Both sides of a pair are sampled
alike, so the interrupts cost the original as much as the candidate. Results go to
bench/results/pc_sampling_cost.json.

    .venv/bin/python bench/bench_pc_sampling.py [--repeat 3] [TASK_DIR ...]

Run it on an idle machine: the speedups of the example tasks move by several percent under load.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from perfforge.task import load_task  # noqa: E402
from profiling import paired  # noqa: E402
from profiling.validate import validate  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "bench" / "results" / "pc_sampling_cost.json"


def judged(task_dir: Path, work_dir: Path, *, sampling: bool) -> dict[str, float | str | None]:
    """One timed verdict of the task's fast version, sampling on or off."""
    task = load_task(task_dir)
    original_switch = paired._samples_pcs
    paired._samples_pcs = original_switch if sampling else (lambda task: False)  # type: ignore[assignment]
    try:
        started = time.monotonic()
        verdict = validate(task, task_dir / task.reference, work_dir, timing=True)
    finally:
        paired._samples_pcs = original_switch  # type: ignore[assignment]
    rule = next((r for r in verdict.rules if r.rule == 22), None)
    return {"status": verdict.status.value, "speedup": verdict.speedup, "noise_floor": verdict.noise_floor,
            "duration_s": round(time.monotonic() - started, 2), "rule_22": rule.detail[-90:] if rule else None}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("tasks", nargs="*", type=Path)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    tasks = args.tasks or sorted(p for p in (ROOT / "examples" / "tasks" / "cpu").iterdir() if p.is_dir())
    report = []
    with tempfile.TemporaryDirectory() as scratch:
        for task_dir in tasks:
            runs: dict[str, list[dict]] = {"off": [], "on": []}
            for index in range(args.repeat):
                for setting in (("off", "on") if index % 2 == 0 else ("on", "off")):
                    runs[setting].append(judged(task_dir, Path(scratch) / task_dir.name,
                                                sampling=setting == "on"))
            row = {"task": task_dir.name}
            for setting, found in runs.items():
                speedups = [r["speedup"] for r in found if r["speedup"]]
                row[setting] = {"median_speedup": statistics.median(speedups) if speedups else None,
                                "median_duration_s": statistics.median(r["duration_s"] for r in found),
                                "runs": found}
            off, on = row["off"]["median_speedup"], row["on"]["median_speedup"]
            row["speedup_ratio_on_off"] = round(on / off, 3) if off and on else None
            report.append(row)
            print(f"{task_dir.name:28s} speedup off {off or 0:7.3f}  on {on or 0:7.3f}  ratio "
                  f"{row['speedup_ratio_on_off']}  verdict s off {row['off']['median_duration_s']:.1f} on "
                  f"{row['on']['median_duration_s']:.1f}  {runs['on'][0]['rule_22']}", flush=True)
    ratios = [r["speedup_ratio_on_off"] for r in report if r["speedup_ratio_on_off"]]
    if ratios:
        print(f"median ratio of speedups (sampling on / off) over {len(ratios)} tasks: {statistics.median(ratios):.3f}")
    RESULTS.write_text(json.dumps(report, indent=1) + "\n")


if __name__ == "__main__":
    main()
