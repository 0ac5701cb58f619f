"""Whole applications, as IntelliPerf profiles them: a ranking pass finds the costliest kernels of a command, then
each of the top N is profiled on its own.

CUDA: the ranking pass is ncu collecting only `gpu__time_duration.sum` for every launch (kernels are serialised
under ncu, so these durations rank kernels; they are not the timings a verdict uses); then one ncu pass with the
full set per chosen kernel. CPU: the ranking pass is callgrind over the whole command, ranking functions by their
own instructions (callgrind counts instructions, not seconds: repeatable on a shared machine); then one callgrind
pass per chosen function with collection toggled to it. The command runs in the sandbox with its working
directory; its files are the user's, so it runs with the network allowed but the usual time limits.

The application profilers are registered in APPLICATION_PROFILERS under the profiler key of a target's spec
(perfforge/targets.py); they return profiles without diagnoses, which profile_application attaches, once.
"""

from __future__ import annotations

import re
import shlex
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from perfforge.errors import PerfforgeError
from perfforge.records import Profile, Timing
from perfforge.registry import Registry
from perfforge.targets import TARGETS, target_spec
from profiling import sandbox
from profiling.cpu.cache_model import simulated_cache_model
from profiling.diagnoses import diagnose
from profiling.machine import describe_machine, tool_version

APPLICATION_TIMEOUT_S = 1800.0

# (argv, working directory, top, scratch directory) -> profiles of the top kernels or functions, costliest first
ApplicationProfiler = Callable[[list[str], Path, int, Path], list[Profile]]
# profiler key (a target spec's `profiler`) -> its application mode
APPLICATION_PROFILERS: Registry[ApplicationProfiler] = Registry("application profiler")


@dataclass(frozen=True)
class RankedFunction:
    """A function of a CPU application and its own cost in the ranking pass."""

    name: str
    file: str
    self_instructions: float
    share: float  # of all instructions the program executed


def profile_application(command: str, workdir: Path, *, target: str, top: int, work_dir: Path) -> list[Profile]:
    """Profiles of the `top` costliest kernels (cuda) or functions (cpu) of `command`, costliest first."""
    argv = shlex.split(command)
    if not argv:
        raise PerfforgeError("--command is empty; give the application's command line")
    if not workdir.is_dir():
        raise PerfforgeError(f"--workdir {workdir} does not exist")
    profiler = APPLICATION_PROFILERS.get(target_spec(target).profiler, None)
    if profiler is None:
        with_one = [spec.name for spec in TARGETS.values() if spec.profiler in APPLICATION_PROFILERS]
        raise PerfforgeError(f"no application mode for target {target!r} (targets with one: {', '.join(with_one)})")
    workdir, work_dir = workdir.resolve(), work_dir.resolve()  # the profilers run in directories of their own
    work_dir.mkdir(parents=True, exist_ok=True)
    profiles = profiler(argv, workdir, top, work_dir)
    for profile in profiles:
        profile.diagnoses = diagnose(profile)  # the application profilers leave this to here: diagnosed once
    return profiles


@APPLICATION_PROFILERS.register("ncu")
def _profile_cuda_application(argv: list[str], workdir: Path, top: int, work_dir: Path) -> list[Profile]:
    from profiling.cuda.application import profile_cuda_application  # on use: a CPU run never imports ncu's parsers

    return profile_cuda_application(argv, workdir, top=top, work_dir=work_dir)


def _run_under_callgrind(argv: list[str], workdir: Path, out_file: Path, toggle: str | None) -> None:
    from profiling.cpu.callgrind import callgrind_argv

    result = sandbox.run(callgrind_argv(argv, toggle, out_file), cwd=workdir,
                         limits=sandbox.Limits(timeout_s=APPLICATION_TIMEOUT_S, memory_bytes=None, network=True,
                                               filesystem=True))
    if not result.ok or not out_file.is_file():
        raise PerfforgeError(f"the application failed under callgrind: {result.reason()}")


def rank_functions(callgrind_text: str) -> list[RankedFunction]:
    """Functions by their own instructions (Ir of their cost lines, not of the calls they make), costliest first."""
    own: dict[tuple[str, str], float] = defaultdict(float)
    current, current_file, skip_next = ("", ""), "", False
    for line in callgrind_text.splitlines():
        if line.startswith(("fl=", "fi=", "fe=")):
            current_file = line[3:].strip()
        elif line.startswith("fn="):
            current = (line[3:].strip(), current_file)
        elif line.startswith("calls="):
            skip_next = True  # the next cost line is the call's inclusive cost, charged to the callee
        elif line[:1].isdigit() or line[:1] in "+-*":
            if skip_next:
                skip_next = False
                continue
            fields = line.split()
            if len(fields) > 1:
                own[current] += float(fields[1])
    total = sum(own.values()) or 1.0
    ranked = [RankedFunction(name, file, cost, cost / total) for (name, file), cost in own.items() if cost > 0]
    return sorted(ranked, key=lambda f: (-f.self_instructions, f.name))


@APPLICATION_PROFILERS.register("callgrind")
def _profile_cpu_application(argv: list[str], workdir: Path, top: int, work_dir: Path) -> list[Profile]:
    from profiling.cpu import callgrind

    ranking_file = work_dir / "callgrind.ranking.out"
    _run_under_callgrind(argv, workdir, ranking_file, toggle=None)
    ranked = [f for f in rank_functions(ranking_file.read_text(errors="replace")) if _is_user_code(f.file)][:top]
    if not ranked:
        raise PerfforgeError("callgrind saw no function with source information: build the application with -g")
    profiles = []
    for index, function in enumerate(ranked):
        out_file = work_dir / f"callgrind.{index}.out"
        _run_under_callgrind(argv, workdir, out_file, toggle=function.name)
        source = Path(function.file)
        result = callgrind.parse_callgrind(out_file.read_text(errors="replace"), source.name, function.name)
        lines = source.read_text(errors="replace").split("\n") if source.is_file() else []
        profiles.append(Profile(
            machine=f"{describe_machine()}; {simulated_cache_model().describe()}",
            tool_versions=f"valgrind: {tool_version('valgrind')}",
            timing=Timing(median_ms=0.0, p10_ms=0.0, p90_ms=0.0, trials=0,
                          method=f"not timed: ranked by instructions ({function.share:.1%} of the program's)"),
            counters=callgrind.counters(result), hot_lines=callgrind.hot_lines(result, lines) if lines else [],
            target="cpu", kernel=function.name, source_file=str(source)))
    return profiles


_SYSTEM_PATH_RE = re.compile(r"^(/usr/|/lib|\?\?\?|$)|glibc|libc-|ld-linux")


def _is_user_code(path: str) -> bool:
    """Not libc, the loader or an unknown file: the functions a user can change."""
    return not _SYSTEM_PATH_RE.search(path)
