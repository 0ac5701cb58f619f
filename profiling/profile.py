"""`perfforge profile`: build a task's version, time it (never under a profiler), then profile it in a separate
pass with the target's profiler, and attach the diagnoses. Output: a Profile record (profile.json).

Profilers are registered per target; each takes the built version, the configuration, the timing measured
beforehand and a scratch directory, and returns a Profile with counters, stalls, roofline and hot lines.
"""

from __future__ import annotations

import importlib
import platform
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from perfforge.errors import PerfforgeError
from perfforge.records import Profile, Timing
from profiling.build import Build, build
from profiling.diagnoses import diagnose
from profiling.harness_run import run_harness
from profiling.score import timing_stats
from profiling.task import Task, TaskConfig

Profiler = Callable[[Task, Build, TaskConfig, Timing, Path], Profile]

# target -> "module:function" of its profiler; imported on use so a CPU run never imports the CUDA parsers.
PROFILERS = {
    "cpu": "profiling.profile:profile_built_cpu",
    "cuda": "profiling.profile:profile_built_cuda",
    "triton": "profiling.profile:profile_built_cuda",
}


def profile_build_flags(task: Task) -> tuple[str, ...]:
    """Extra flags of a build that will be profiled. valgrind 3.19 cannot execute AVX-512, which gcc emits under
    -march=native on AVX-512 machines (this project's CPU machines among them): profile builds keep AVX2/FMA and
    drop AVX-512, and timing and profile come from that same build. Delete once valgrind decodes AVX-512."""
    if (task.target == "cpu" and platform.machine() in ("x86_64", "AMD64") and task.build.compiler in ("gcc", "clang")
            and any(flag.startswith("-march=") for flag in task.build.flags)):
        return ("-mno-avx512f",)
    return ()


def profile_built_cpu(task: Task, built: Build, config: TaskConfig, timing: Timing, work_dir: Path) -> Profile:
    from profiling.cpu.profile import profile_cpu

    flags = [*task.build.flags, *profile_build_flags(task)] + (["-fopenmp"] if task.build.openmp else [])
    _, work_bytes = task.work.evaluate(config.params)
    return profile_cpu(built.directory / "bin", config.args(), built.directory / task.source, task.kernel,
                       task.build.compiler, flags, work_dir / "callgrind", timing, work_bytes=work_bytes,
                       timeout_s=max(300.0, task.validate.timeout_s))


@dataclass
class ProfileResult:
    profile: Profile
    build: Build


def profiler_for(target: str) -> Profiler:
    if target not in PROFILERS:
        raise PerfforgeError(f"no profiler for target {target!r} yet (profilers: {', '.join(PROFILERS)}); hip "
                             "profiles are parsed from rocprofv3 output with profiling.hip.rocprof")
    module, function = PROFILERS[target].split(":")
    return getattr(importlib.import_module(module), function)


def measure(task: Task, built: Build, config: TaskConfig, work_dir: Path) -> Timing:
    """One timing run of the version (warm-up, trials, cache flush), outside any profiler."""
    run = run_harness(task, built, "time", config, work_dir / "time")
    if not run.ok:
        raise PerfforgeError(f"task {task.name}: the timing run failed: {run.reason()}")
    return timing_stats([run.times_ms()], run.timing().get("method", ""))


def profile_task(task: Task, work_dir: Path, *, version: Path | None = None,
                 config_name: str | None = None) -> ProfileResult:
    """Timing, then the profiler's pass, then the diagnoses."""
    config = task.config(config_name)
    built = build(task, version or task.source_path, work_dir, extra_flags=profile_build_flags(task))
    if not built.ok:
        raise PerfforgeError(f"task {task.name}: {built.reason()}")
    timing = measure(task, built, config, work_dir)
    profile = profiler_for(task.target)(task, built, config, timing, work_dir)
    profile.diagnoses = diagnose(profile)
    return ProfileResult(profile=profile, build=built)
