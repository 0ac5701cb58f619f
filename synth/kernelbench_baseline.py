"""KernelBench baselines measured on the user's machine: the PyTorch reference of every imported problem, eager or
under torch.compile, in KernelBench's baseline JSON layout (`perfforge baseline kernelbench`).

KernelBench publishes per-GPU baselines as results/timing/<hardware>/<baseline>.json: {"level1": {"19_ReLU.py":
{"mean", "std", "min", "max", "num_trials", "hardware", "device"}, ...}, ...}, times in milliseconds, problems in
problem order. This writes the same layout from the tasks `perfforge import kernelbench` made, so published numbers
and ours line up, and perfforge's speedups can be read against eager and against torch.compile.

Each problem runs in a process of its own (a failing problem, or a CUDA error, takes nothing else down), the way
KernelBench times it: the model built after its seed, inputs from get_inputs() on the device, warm-up calls, then
each trial timed by CUDA events around one forward (on a CPU, by the monotonic clock).

With `jobs` above 1, that many problems are prepared at once and still timed one at a time: a process builds its
model, moves it and the inputs to the device and makes its first forward (where torch.compile compiles, minutes of
CPU) under a shared lock, and takes the lock alone for its warm-up and timed forwards. No forward of another problem
runs on the device while one is timed; the compiles overlap. Their CPU load does not stop, and it shows: on the
H100 host, --jobs 10 read compiled means up to 24% above --jobs 1's (median 6%; docs/kernelbench.md). Report
figures made with jobs=1.

    problem A: [ build, first forward (compile) | shared ] ......... [ warm-up, trials | exclusive ]
    problem B: [ build, first forward (compile) | shared ] [ warm-up, trials | exclusive ]

The baseline JSON is written again after every problem (atomically), and `resume` keeps the problems an earlier
run of the same file measured: an interrupted run loses at most the problems under way.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import tempfile
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass
from pathlib import Path

from perfforge.errors import ConfigError
from perfforge.io import write_text
from synth.kernelbench import INIT_SEED, META_FILE

PROBLEM_TIMEOUT_S = 1800.0  # torch.compile of a level-3 model can take minutes; a hang must still end

_SCRIPT = """
import fcntl, json, statistics, sys, time
import torch
sys.path.insert(0, sys.argv[1])
import problem
mode, trials, warmup, seed, lock_path = sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5]), sys.argv[6]
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
lock = open(lock_path, "a")
fcntl.flock(lock, fcntl.LOCK_SH)  # beside other problems' preparation, never beside a timed forward
torch.manual_seed(seed)
inputs = [v.to(device) if isinstance(v, torch.Tensor) else v for v in problem.get_inputs()]
torch.manual_seed(seed)
model = problem.Model(*problem.get_init_inputs()).to(device).eval()
if mode == "compile":
    model = torch.compile(model)
times = []
with torch.no_grad():
    model(*inputs)  # torch.compile compiles here
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    fcntl.flock(lock, fcntl.LOCK_UN)
    fcntl.flock(lock, fcntl.LOCK_EX)  # alone on the device from here
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


def measure(task_dirs: Sequence[Path], *, mode: str, trials: int, warmup: int, jobs: int = 1,
            done: dict[str, dict[str, dict]] | None = None,
            on_result: Callable[[BaselineResult], None] = lambda _: None,
            log: Callable[[str], None] = lambda _: None) -> BaselineResult:
    """Every task's reference timed in its own process, `jobs` prepared at once (their timed forwards one at a
    time); a problem that fails is reported and skipped. `done`: timings measured before ({level: {file: stats}}),
    kept and not measured again; `on_result` sees the result after every problem."""
    if mode not in ("eager", "compile"):
        raise ConfigError(f"--mode {mode!r}: expected eager or compile")
    if jobs < 1:
        raise ConfigError(f"--jobs {jobs}: at least 1")
    result = BaselineResult({level: dict(stats) for level, stats in (done or {}).items()}, [])
    metas = []
    for task_dir in task_dirs:
        meta_path = task_dir / META_FILE
        if not meta_path.is_file():
            raise ConfigError(f"{task_dir}: no {META_FILE}; point at tasks `perfforge import kernelbench` wrote")
        meta = json.loads(meta_path.read_text(encoding="utf-8"))
        if meta["problem_file"] in result.timings.get(f"level{meta['level']}", {}):
            log(f"{task_dir.name}: kept from the earlier run")
            continue
        metas.append((task_dir, meta))
    metas.sort(key=lambda item: (item[1]["level"], item[1]["problem_id"]))
    with tempfile.TemporaryDirectory(prefix="pf-baseline-") as scratch, \
            ThreadPoolExecutor(max_workers=jobs) as pool:
        lock = Path(scratch) / "device.lock"
        runs = {pool.submit(_measure_one, task_dir, mode, trials, warmup, lock): (task_dir, meta)
                for task_dir, meta in metas}
        for finished in as_completed(runs):
            task_dir, meta = runs[finished]
            stats, why = finished.result()
            if stats is None:
                result.failed.append((task_dir.name, why))
                log(f"{task_dir.name}: failed: {why}")
            else:
                result.timings.setdefault(f"level{meta['level']}", {})[meta["problem_file"]] = stats
                log(f"{task_dir.name}: {mode} {stats['mean']:.4g} ms (+- {stats['std']:.2g}) on {stats['hardware']}")
            on_result(result)
    return result


def _measure_one(task_dir: Path, mode: str, trials: int, warmup: int, lock: Path) -> tuple[dict | None, str]:
    """One problem's statistics, or None and why it failed."""
    argv = [sys.executable, "-c", _SCRIPT, str(task_dir), mode, str(trials), str(warmup), str(INIT_SEED), str(lock)]
    try:
        run = subprocess.run(argv, capture_output=True, text=True, timeout=PROBLEM_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        return None, f"timed out after {PROBLEM_TIMEOUT_S:.0f} s"
    lines = run.stdout.strip().splitlines()
    if run.returncode != 0 or not lines:
        return None, (run.stderr.strip().splitlines() or [f"exit status {run.returncode}"])[-1][:300]
    return json.loads(lines[-1]), ""


def read_baseline(path: Path) -> dict[str, dict[str, dict]]:
    """An earlier baseline file's timings ({} when there is none)."""
    if not path.is_file():
        return {}
    try:
        timings = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as error:
        raise ConfigError(f"{path}: not a baseline JSON ({error}); move it away or drop --resume") from None
    if not isinstance(timings, dict) or not all(isinstance(v, dict) for v in timings.values()):
        raise ConfigError(f"{path}: not a baseline JSON ({{level: {{problem file: timing}}}}); move it away or drop "
                          "--resume")
    return timings


def write_baseline(path: Path, result: BaselineResult) -> None:
    """KernelBench's layout, levels and problems in problem order (its analysis script lines values up by
    position), written atomically."""
    ordered = {level: dict(sorted(result.timings[level].items(), key=lambda item: _problem_order(item[0])))
               for level in sorted(result.timings, key=_problem_order)}
    write_text(path, json.dumps(ordered, indent=2) + "\n")


def _problem_order(name: str) -> tuple[int, str]:
    """"19_ReLU.py" -> (19, ...), "level2" -> (2, ...): by the number in the name, then the name."""
    digits = re.search(r"\d+", name)
    return (int(digits.group()) if digits else 0, name)
