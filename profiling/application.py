"""Whole applications, as IntelliPerf profiles them: a ranking pass finds the costliest kernels of a command, then
each of the top N is profiled on its own.

CUDA: the ranking pass is ncu collecting only `gpu__time_duration.sum` for every launch (kernels are serialised
under ncu, so these durations rank kernels; they are not the timings a verdict uses); then one ncu pass with the
full set per chosen kernel. CPU: the ranking pass is callgrind over the whole command, ranking functions by their
own instructions (callgrind counts instructions, not seconds: repeatable on a shared machine), each filed under the
source file holding most of them, and keeping only the user's code; then one callgrind pass per chosen function
with collection toggled to it. A CPU profile carries the static facts a task profile does (loop nests, gcc's
vectoriser verdicts under the flags the binary records, cores: profiling/cpu/static_facts.py) when the function's
source can be read. The command runs in the sandbox with its working directory; its files are the user's, so it
runs with the network allowed but the usual time limits.

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
from profiling.diagnoses import attach_diagnoses
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
    file: str  # the source file holding most of its own instructions, a user's file before a system one
    self_instructions: float
    share: float  # of all instructions the program executed
    object: str = ""  # the binary or shared library holding it (callgrind's ob=)
    files: tuple[tuple[str, float], ...] = ()  # its own instructions per source file, costliest first


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
        attach_diagnoses(profile)  # the application profilers leave this to here: diagnosed once
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


def rank_functions(callgrind_text: str, workdir: Path | None = None) -> list[RankedFunction]:
    """Functions by their own instructions (Ir of their cost lines, not of the calls they make), costliest first.

    Each is filed under the source file holding most of its own instructions, user code first (is_user_code;
    workdir: where relative paths of the user's files are found), not under callgrind's fl= for it, the file of
    its first instruction: in C++ built with -O3 that is often an inlined standard header (perf-ninja's `select`,
    88% of a program's instructions, began in /usr/include/c++/12/array and was dropped as system code)."""
    own: dict[str, dict[str, float]] = defaultdict(lambda: defaultdict(float))
    objects: dict[str, str] = {}
    function, function_file, file, obj, skip_next = "", "", "", "", False
    for line in callgrind_text.splitlines():
        if line.startswith("ob="):
            obj = line[3:].strip()
        elif line.startswith("fl="):
            function_file = file = line[3:].strip()
        elif line.startswith(("fi=", "fe=")):
            file = line[3:].strip()  # inlined code, until the next fi=, fe= or function
        elif line.startswith("fn="):
            function, file = line[3:].strip(), function_file
            objects.setdefault(function, obj)
        elif line.startswith("calls="):
            skip_next = True  # the next cost line is the call's inclusive cost, charged to the callee
        elif line[:1].isdigit() or line[:1] in "+-*":
            fields = line.split()
            if not skip_next and len(fields) > 1:
                own[function][file] += float(fields[1])
            skip_next = False
    total = sum(sum(files.values()) for files in own.values()) or 1.0
    ranked = []
    for name, files in own.items():
        cost = sum(files.values())
        if cost > 0:
            by_cost = tuple(sorted(files.items(), key=lambda item: (-item[1], item[0])))
            home = next((path for path, _ in by_cost if is_user_code(path, workdir)), by_cost[0][0])
            ranked.append(RankedFunction(name, home, cost, cost / total, objects.get(name, ""), by_cost))
    return sorted(ranked, key=lambda f: (-f.self_instructions, f.name))


@APPLICATION_PROFILERS.register("callgrind")
def _profile_cpu_application(argv: list[str], workdir: Path, top: int, work_dir: Path) -> list[Profile]:
    ranking_file = work_dir / "callgrind.ranking.out"
    _run_under_callgrind(argv, workdir, ranking_file, toggle=None)
    ranked = [f for f in rank_functions(ranking_file.read_text(errors="replace"), workdir)
              if is_user_code(f.file, workdir) and not _SYSTEM_OBJECT_RE.search(f.object)][:top]
    if not ranked:
        raise PerfforgeError("callgrind saw no function with source information: build the application with -g")
    return [_profile_cpu_function(argv, workdir, function, work_dir, index) for index, function in enumerate(ranked)]


def _profile_cpu_function(argv: list[str], workdir: Path, function: RankedFunction, work_dir: Path,
                          index: int) -> Profile:
    """One callgrind pass toggled to the function; its hot lines are lines of its file, with the static facts a
    task profile carries when that file can be read (profiling/cpu/static_facts.py)."""
    from profiling.cpu import callgrind, disassembly
    from profiling.cpu.static_facts import function_static_facts

    out_file = work_dir / f"callgrind.{index}.out"
    _run_under_callgrind(argv, workdir, out_file, toggle=function.name)
    source = workdir / function.file  # an absolute file stays as it is
    sites = disassembly.inline_sites(Path(function.object), source.name, function.name) if source.is_file() else {}
    result = callgrind.parse_callgrind(out_file.read_text(errors="replace"), source.name, function.name, sites)
    lines = source.read_text(errors="replace").split("\n") if source.is_file() else []
    hot = callgrind.hot_lines(result, lines) if lines else []
    counters, tools = callgrind.counters(result), f"valgrind: {tool_version('valgrind')}"
    if lines:
        user_files = [str(workdir / path) for path, _ in function.files if is_user_code(path, workdir)]
        facts = function_static_facts(function.name, source, hot, Path(function.object), user_files,
                                      work_dir / f"static.{index}")
        counters, tools = counters + facts.counters, f"{tools}; {facts.description}"
    return Profile(
        machine=f"{describe_machine()}; {simulated_cache_model().describe()}", tool_versions=tools,
        timing=Timing(median_ms=0.0, p10_ms=0.0, p90_ms=0.0, trials=0,
                      method=f"not timed: ranked by instructions ({function.share:.1%} of the program's)"),
        counters=counters, hot_lines=hot, target="cpu", kernel=function.name, source_file=str(source))


# System code, which a user cannot change: files under /usr (headers, distribution sources), callgrind's ??? for
# code without line information, a glibc source tree (/build/glibc-2.36/elf/...). Relative paths are judged by
# is_user_code: distribution packages are built with -ffile-prefix-map=BUILD=., so glibc's sources read
# ./elf/dl-lookup.c, ./string/../sysdeps/x86_64/multiarch/..., stdlib/stdlib/random_r.c.
_SYSTEM_PATH_RE = re.compile(r"^(/usr/|/lib|\?\?\?$|$)|(^|/)e?glibc-[\d.]+/")
# Objects of the system: shared libraries under /usr or /lib, the loader, valgrind's preloaded replacements.
_SYSTEM_OBJECT_RE = re.compile(r"^(/usr/|/lib|\?\?\?$)|/ld-linux|/vgpreload_")


def is_user_code(path: str, workdir: Path | None = None) -> bool:
    """Whether a source path is the user's: not the system's (see _SYSTEM_PATH_RE), and when relative (the user's
    build mapped it, or its debug information has no compile directory) a file under the application's working
    directory, where its lines are read from."""
    if _SYSTEM_PATH_RE.search(path):
        return False
    if Path(path).is_absolute():
        return True
    return workdir is not None and (workdir / path).is_file()
