"""`perfforge profile`: build a task's version, time it (never under a profiler), then profile it in a separate
pass with the target's profiler, and attach the diagnoses. Output: a Profile record (profile.json).

Profilers are registered in PROFILERS under the key a target's spec names (perfforge/targets.py: callgrind, ncu,
rocprofv3); each takes the task, the built version, the configuration, the timing measured beforehand and a
scratch directory, and returns a Profile with counters, stalls, roofline and hot lines, without diagnoses:
profile_task attaches them, the one place a task's fresh profile is diagnosed (profiling/application.py is the
other, for whole applications).
"""

from __future__ import annotations

import contextlib
import platform
import re
from collections.abc import Callable
from pathlib import Path

from perfforge.errors import PerfforgeError
from perfforge.records import Profile, Timing
from perfforge.registry import Registry
from perfforge.targets import TARGETS, target_spec
from perfforge.task import Task, TaskConfig
from profiling.build import Build, build
from profiling.device_turns import GPU_TURNS
from profiling.diagnoses import attach_diagnoses
from profiling.harness_run import run_harness
from profiling.machine import describe_machine, describe_tools, tool_version
from profiling.score import timing_stats

Profiler = Callable[[Task, Build, TaskConfig, Timing, Path], Profile]

# profiler key (a target spec's `profiler`) -> the function that runs it. Each imports its parsers when it runs, so
# a CPU run never imports the CUDA ones.
PROFILERS: Registry[Profiler] = Registry("profiler")


def profile_build_flags(task: Task) -> tuple[str, ...]:
    """Extra flags of a build that will be profiled. valgrind 3.19 cannot execute AVX-512, which gcc emits under
    -march=native on AVX-512 machines (this project's CPU machines among them): profile builds of targets profiled
    under valgrind keep AVX2/FMA and drop AVX-512, and timing and profile come from that same build. Delete once
    valgrind decodes AVX-512."""
    if (target_spec(task.target).profiler == "callgrind" and platform.machine() in ("x86_64", "AMD64")
            and task.build.compiler in ("gcc", "clang")
            and any(flag.startswith("-march=") for flag in task.build.flags)):
        return ("-mno-avx512f",)
    return ()


@PROFILERS.register("callgrind")
def profile_built_cpu(task: Task, built: Build, config: TaskConfig, timing: Timing, work_dir: Path) -> Profile:
    from profiling.cpu.profile import profile_cpu

    flags = [*task.build.flags, *profile_build_flags(task)] + (["-fopenmp"] if task.build.openmp else [])
    _, work_bytes = task.work.evaluate(config.params)
    return profile_cpu(built.directory / "bin", config.args(), built.directory / task.source, task.kernel,
                       task.build.compiler, flags, work_dir / "callgrind", timing, work_bytes=work_bytes,
                       timeout_s=max(300.0, task.validate.timeout_s))


# Launches ncu profiles inside the pf_profile range (one call of the launcher): enough for a chain of kernels,
# bounded because each launch is replayed ~40 times under --set full.
NCU_LAUNCH_COUNT = 8
NCU_TIMEOUT_S = 600.0


@PROFILERS.register("ncu")
def profile_built_cuda(task: Task, built: Build, config: TaskConfig, timing: Timing, work_dir: Path) -> Profile:
    """ncu over the harness in profile mode (only the call inside the pf_profile range), then an application-mode
    pass over the same call for launches per call (the launch-overhead and fusion diagnoses read it)."""
    from profiling.cuda import ncu
    from profiling.cuda.profile import profile_from_files

    ncu_dir = work_dir / "ncu"
    env = dict(built.env)
    program = [*built.argv, "profile", "--seed", "0", "--out", str(ncu_dir / "profile-out"), *config.args()]
    (ncu_dir / "profile-out").mkdir(parents=True, exist_ok=True)
    exports = ncu.profile_and_export(program, ncu_dir, launch_count=NCU_LAUNCH_COUNT, timeout_s=NCU_TIMEOUT_S,
                                     env=env, writable=built.cache_dirs)
    # Launches per call: every launch of the one call inside the pf_profile range. Not a time-mode run: a Python
    # harness draws its inputs with torch kernels, which the H100 run counted as 7 launches per call of a
    # one-kernel Triton task.
    one_call = [*built.argv, "profile", "--seed", "0", "--out", str(ncu_dir / "app-out"), *config.args()]
    (ncu_dir / "app-out").mkdir(parents=True, exist_ok=True)
    application = ncu.export_application_page(one_call, ncu_dir / "application", timeout_s=NCU_TIMEOUT_S, env=env,
                                              nvtx_range=ncu.PROFILE_RANGE,
                                              writable=[ncu_dir / "app-out", *built.cache_dirs])
    return profile_from_files(exports.raw_csv, exports.source_csv, timing=timing, source_file=task.source,
                              machine=describe_machine(), tool_versions=f"ncu: {tool_version('ncu')}",
                              kernel=_profiled_kernel(exports.raw_csv, task.kernel), target=task.target,
                              application_csv=application, calls=1)


def _profiled_kernel(raw_csv: Path, kernel_pattern: str) -> str:
    """The kernel the profile describes: the first launch in the pf_profile range whose name matches the task's
    kernel (a name or a regex), else the longest launch (a candidate may rename or fuse kernels)."""
    from profiling.cuda.launches import launch_duration_ms
    from profiling.cuda.raw_csv import read_raw_page

    launches = read_raw_page(raw_csv)
    if not launches:
        raise PerfforgeError(f"ncu profiled no kernel launch in the pf_profile range ({raw_csv})")
    matching = [launch for launch in launches if re.match(kernel_pattern, launch.kernel_base)]
    return (matching[0] if matching else max(launches, key=launch_duration_ms)).kernel_base


@PROFILERS.register("rocprofv3")
def profile_built_hip(task: Task, built: Build, config: TaskConfig, timing: Timing, work_dir: Path) -> Profile:
    """No AMD machine runs tasks here: rocprofv3's output is parsed (profiling/hip/rocprof.py), never produced."""
    runnable = [spec.name for spec in TARGETS.values() if spec.profiler != "rocprofv3"]
    raise PerfforgeError(f"no profiler for target {task.target!r} yet (profilers: {', '.join(runnable)}); hip "
                         "profiles are parsed from rocprofv3 output with profiling.hip.rocprof")


def profiler_for(target: str) -> Profiler:
    """The profiler the target's spec names."""
    return PROFILERS.get(target_spec(target).profiler)


def measure(task: Task, built: Build, config: TaskConfig, work_dir: Path) -> tuple[Timing, dict]:
    """One timing run of the version (warm-up, trials, cache flush), outside any profiler; with the context the
    harness reported (the device under CUDA)."""
    run = run_harness(task, built, "time", config, work_dir / "time")
    if not run.ok:
        raise PerfforgeError(f"task {task.name}: the timing run failed: {run.reason()}")
    context = run.timing()
    return timing_stats([run.times_ms()], context.get("method", "")), context


def profile_task(task: Task, work_dir: Path, *, version: Path | None = None,
                 config_name: str | None = None) -> Profile:
    """Timing, then the profiler's pass, then the diagnoses."""
    work_dir = work_dir.resolve()  # profilers run in directories of their own
    config = task.config(config_name)
    built = build(task, version or task.source_path, work_dir, extra_flags=profile_build_flags(task))
    if not built.ok:
        raise PerfforgeError(f"task {task.name}: {built.reason()}")
    # the GPU's turn: a timing or ncu's replays beside another judge's verdict would disturb both
    with GPU_TURNS if target_spec(task.target).gpu else contextlib.nullcontext():
        timing, context = measure(task, built, config, work_dir)
        profile = profiler_for(task.target)(task, built, config, timing, work_dir)
    if context.get("device"):
        profile.machine = describe_machine(context)
        profile.tool_versions = describe_tools(task.build.compiler, context) + (
            f"; {profile.tool_versions}" if profile.tool_versions else "")
    attach_diagnoses(profile)  # the profilers leave this to their caller: diagnosed here, once
    return profile
