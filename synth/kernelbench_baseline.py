"""KernelBench baselines measured on the user's machine: the PyTorch reference of every imported problem, eager or
under torch.compile, in KernelBench's baseline JSON layout (`perfforge baseline kernelbench`).

KernelBench publishes per-GPU baselines as results/timing/<hardware>/<baseline>.json: {"level1": {"19_ReLU.py":
{"mean", "std", "min", "max", "num_trials", "hardware", "device"}, ...}, ...}, times in milliseconds, problems in
problem order. This writes the same layout from the tasks `perfforge import kernelbench` made, so published numbers
and ours line up, and perfforge's speedups can be read against eager and against torch.compile.

Each problem runs in a process of its own (a failing problem, or a CUDA error, takes nothing else down), the way
KernelBench times it: the model built after its seed, inputs from get_inputs() on the device, warm-up calls, then
each trial timed by CUDA events around one forward (on a CPU, by the monotonic clock).
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from perfforge.errors import ConfigError
from perfforge.io import write_text
from synth.kernelbench import INIT_SEED, META_FILE

PROBLEM_TIMEOUT_S = 1800.0  # torch.compile of a level-3 model can take minutes; a hang must still end

_SCRIPT = """
import json, statistics, sys, time
import torch
sys.path.insert(0, sys.argv[1])
import problem
mode, trials, warmup, seed = sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
torch.manual_seed(seed)
inputs = [v.to(device) if isinstance(v, torch.Tensor) else v for v in problem.get_inputs()]
torch.manual_seed(seed)
model = problem.Model(*problem.get_init_inputs()).to(device).eval()
if mode == "compile":
    model = torch.compile(model)
times = []
with torch.no_grad():
    for index in range(warmup + trials):
        if device.type == "cuda":
            start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            model(*inputs)
            stop.record()
            torch.cuda.synchronize(device)
            elapsed = start.elapsed_time(stop)
        else:
            began = time.perf_counter()
            model(*inputs)
            elapsed = (time.perf_counter() - began) * 1e3
        if index >= warmup:
            times.append(elapsed)
name = torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu"
print(json.dumps({"mean": statistics.fmean(times), "std": statistics.pstdev(times), "min": min(times),
                  "max": max(times), "num_trials": len(times), "hardware": name, "device": str(device)}))
"""


@dataclass
class BaselineResult:
    timings: dict[str, dict[str, dict]]  # {"level1": {"19_ReLU.py": stats}}
    failed: list[tuple[str, str]]  # (task, why)


def measure(task_dirs: Sequence[Path], *, mode: str, trials: int, warmup: int,
            log: Callable[[str], None] = lambda _: None) -> BaselineResult:
    """Every task's reference timed in its own process; a problem that fails is reported and skipped."""
    if mode not in ("eager", "compile"):
        raise ConfigError(f"--mode {mode!r}: expected eager or compile")
    result = BaselineResult({}, [])
    metas = []
    for task_dir in task_dirs:
        meta_path = task_dir / META_FILE
        if not meta_path.is_file():
            raise ConfigError(f"{task_dir}: no {META_FILE}; point at tasks `perfforge import kernelbench` wrote")
        metas.append((task_dir, json.loads(meta_path.read_text(encoding="utf-8"))))
    for task_dir, meta in sorted(metas, key=lambda item: (item[1]["level"], item[1]["problem_id"])):
        argv = [sys.executable, "-c", _SCRIPT, str(task_dir), mode, str(trials), str(warmup), str(INIT_SEED)]
        try:
            run = subprocess.run(argv, capture_output=True, text=True, timeout=PROBLEM_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            result.failed.append((task_dir.name, f"timed out after {PROBLEM_TIMEOUT_S:.0f} s"))
            log(f"{task_dir.name}: timed out")
            continue
        lines = run.stdout.strip().splitlines()
        if run.returncode != 0 or not lines:
            why = (run.stderr.strip().splitlines() or [f"exit status {run.returncode}"])[-1][:300]
            result.failed.append((task_dir.name, why))
            log(f"{task_dir.name}: failed: {why}")
            continue
        stats = json.loads(lines[-1])
        result.timings.setdefault(f"level{meta['level']}", {})[meta["problem_file"]] = stats
        log(f"{task_dir.name}: {mode} {stats['mean']:.4g} ms (+- {stats['std']:.2g}) on {stats['hardware']}")
    return result


def write_baseline(path: Path, result: BaselineResult) -> None:
    """KernelBench's layout, problems in problem order (its analysis script lines values up by position)."""
    write_text(path, json.dumps(result.timings, indent=2) + "\n")
