"""profile_cpu: one CPU profile of a built harness, without diagnoses (its caller attaches them:
profiling/profile.py profile_task).

Counters and hot lines come from callgrind (simulated, kernel only, per call), plus `perf stat` hardware
counters where the machine has them. The static facts the diagnoses need ride along as numbers, so that a
Profile alone is enough to diagnose (and to store in a dataset):

- per hot line: `static.loop_depth`, `static.outer_loop_line` (the loop nest it belongs to),
  `static.invariant_calls` / `static.invariant_arithmetic` (loop-invariant expressions on the line),
  `static.invariant_calls_on_written_memory` (pure calls with unchanged arguments that read memory the loop writes),
  `static.aos_used_fraction` / `static.aos_struct_bytes` (array-of-structures field accesses),
  `static.omp_static_triangular` (in a loop shared with a static schedule over a triangular nest),
  `gcc.vectorized`, `gcc.vector_bytes` and `gcc.missed.<reason>` (the verdict on the line's innermost loop),
  `gcc.fold_left_reduction` (vectorised with its floating-point reduction kept in order: its adds stay scalar),
  `static.carried_scan.<name>` / `static.carried_reduction.<operator>.<name>` (a scalar the line's loop nest
  carries from one iteration to the next, valued with the line of its first update);
- kernel-wide: `static.openmp_pragmas`, `static.thread_spawns`, `cpu_cores`, and with the task's per-call bytes
  `work_bytes` and `D1_miss_amplification` / `LL_miss_amplification` (cache-line fills per line of necessary
  traffic: near 1 for a kernel that streams its data once, far above for one that refetches it).

The source facts read the kernel's file with its macros expanded by the task's compiler and flags
(preprocess.py), at the file's own line numbers; the profile's tool_versions says whether they did, or why not.

Timing is measured by the caller outside valgrind (VALIDATION.md rule 16) and passed in.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from pathlib import Path

from perfforge.records import CounterValue, HotLine, Profile, Timing
from profiling.cpu import callgrind, disassembly, loops, perf_stat, preprocess, vectorize
from profiling.cpu.cache_model import simulated_cache_model
from profiling.machine import describe_machine, tool_version

_LINE_BYTES_RE = re.compile(r"^D1 cache:.*?(\d+) B, (\d+) B")
DEFAULT_LINE_BYTES = 64


def profile_cpu(binary: Path, config_args: Sequence[str], source: Path, kernel: str, compiler: str,
                flags: Sequence[str], scratch: Path, timing: Timing, *, work_bytes: float | None = None,
                timeout_s: float = callgrind.VALGRIND_TIMEOUT_S) -> Profile:
    """Profile the kernel of a built CPU harness.

    binary: the built harness; config_args: the config's key=value arguments; source: the editable source
    it was built from (hot lines refer to it); kernel: the function name in it; compiler and flags: the task's
    build (flags include -fopenmp when the task builds with OpenMP), used to ask gcc for its vectorisation
    report; scratch: a directory for valgrind's and gcc's files; timing: measured by the caller;
    work_bytes: the task's [work] bytes for this config, when it has one.
    """
    scratch.mkdir(parents=True, exist_ok=True)
    source_text = source.read_text(encoding="utf-8", errors="replace")
    result = callgrind.run_callgrind(binary, list(config_args), kernel, source.name, scratch, timeout_s)
    language = "cpp" if source.suffix in (".cc", ".cpp", ".cxx") else "c"
    expanded = preprocess.expanded_source(source, source_text, compiler, flags, scratch / "preprocess")
    analysis = loops.analyze_loops(expanded.text, kernel, language)
    if not analysis.function_found and expanded.expanded:  # under an #if the flags leave inactive: as written
        expanded = preprocess.ExpandedSource(source_text, False, f"{kernel} is not in the preprocessed text")
        analysis = loops.analyze_loops(source_text, kernel, language)
    try:
        vec_report = vectorize.vectorization_report(source, compiler, flags, scratch / "vectorize")
    except vectorize.VectorizeError:
        vec_report = None  # the hot lines then carry no gcc.* metrics; the rest of the profile stands
    lines = callgrind.hot_lines(result, source_text.split("\n"))
    disassembly.add_division_counts(lines, disassembly.line_code(binary, source.name, kernel))
    counters = callgrind.counters(result) + static_metrics(lines, analysis, vec_report or {})
    counters += _work_counters(result, work_bytes)
    counters += perf_stat.run_perf_stat(binary, list(config_args), scratch, timeout_s)
    return Profile(machine=f"{describe_machine()}; {simulated_cache_model().describe()}",
                   tool_versions=f"{_tool_versions(compiler)}; {expanded.describe()}", timing=timing,
                   counters=counters, hot_lines=lines, target="cpu", kernel=kernel, source_file=source.name)


def _tool_versions(compiler: str) -> str:
    return f"{compiler}: {tool_version(compiler)}; valgrind: {tool_version('valgrind')}"


def cpu_cores() -> int:
    """Cores this process may run on (the affinity mask, which containers narrow), else the machine's count."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:
        return os.cpu_count() or 1


def _line_bytes(result: callgrind.CallgrindResult) -> int:
    for desc in result.cache_config:
        match = _LINE_BYTES_RE.match(desc)
        if match:
            return int(match.group(2))
    return DEFAULT_LINE_BYTES


def static_metrics(lines: list[HotLine], analysis: loops.LoopAnalysis,
                   vec_report: dict[int, vectorize.LoopReport]) -> list[CounterValue]:
    """The static facts of a kernel: each hot line's metrics are added to it (in place); the kernel-wide counters
    are returned. Task mode (profile_cpu) and application mode (static_facts.py) share this."""
    for hot in lines:
        hot.metrics += _static_line_metrics(hot, analysis, vec_report)
        # avoidable work on the line: the linear search it is part of, what an enclosing loop recomputes
        hot.metrics += [CounterValue(name, value, unit)
                        for name, value, unit in loops.avoidable_work_facts(analysis, hot.line)]
    return [CounterValue("cpu_cores", float(cpu_cores()), "core"),
            CounterValue("static.openmp_pragmas", float(len(analysis.pragmas)), "pragma"),
            CounterValue("static.thread_spawns", float(analysis.spawns_threads), "flag")]


def _work_counters(result: callgrind.CallgrindResult, work_bytes: float | None) -> list[CounterValue]:
    if not work_bytes:
        return []
    t, line = result.totals, _line_bytes(result)
    d1_fills = t.get("D1mr", 0.0) + t.get("D1mw", 0.0)
    ll_fills = t.get("DLmr", 0.0) + t.get("DLmw", 0.0)
    return [CounterValue("work_bytes", float(work_bytes), "byte"),
            CounterValue("D1_miss_amplification", d1_fills * line / work_bytes, "ratio"),
            CounterValue("LL_miss_amplification", ll_fills * line / work_bytes, "ratio")]


def _static_line_metrics(hot: HotLine, analysis: loops.LoopAnalysis,
                         vec_report: dict[int, vectorize.LoopReport]) -> list[CounterValue]:
    loop = analysis.innermost_loop_at(hot.line)
    metrics = [CounterValue("static.loop_depth", float(loop.depth if loop else 0), "loop"),
               CounterValue("static.outer_loop_line", float(loop.outer_line if loop else 0), "line")]
    invariants = [i for i in analysis.invariants if i.line == hot.line]
    metrics += [CounterValue("static.invariant_calls", float(sum(i.kind == "call" for i in invariants)), "expr"),
                CounterValue("static.invariant_arithmetic", float(sum(i.kind == "arithmetic" for i in invariants)),
                             "expr")]
    on_written = sum(i.kind == "call_on_written_memory" for i in invariants)
    if on_written:
        metrics.append(CounterValue("static.invariant_calls_on_written_memory", float(on_written), "expr"))
    metrics += struct_metrics(hot.line, analysis)
    if loop is not None:
        # Names and operators ride in the metric's name (as gcc.missed.<reason> does) so the diagnosis can say what
        # the nest carries; the value is the line of its first update.
        metrics += [CounterValue(carried_metric(c), float(c.line), "line") for c in analysis.carried
                    if c.loop_line == loop.outer_line]
    if loop is not None and _in_static_triangular(loop, analysis):
        metrics.append(CounterValue("static.omp_static_triangular", 1.0, "flag"))
    report = _loop_report(loop, vec_report) if loop is not None and loop.innermost else None
    if report is not None:
        metrics += [CounterValue("gcc.vectorized", float(report.vectorized), "flag"),
                    CounterValue("gcc.vector_bytes", float(report.vector_bytes), "byte")]
        metrics += [CounterValue(f"gcc.missed.{reason}", 1.0, "flag") for reason in report.reasons]
        if report.fold_left:
            metrics.append(CounterValue("gcc.fold_left_reduction", 1.0, "flag"))
    return metrics


def _loop_report(loop: loops.Loop, vec_report: dict[int, vectorize.LoopReport]) -> vectorize.LoopReport | None:
    """gcc's verdict on an innermost loop. gcc gives a loop the location of its header, or of the first statement
    of its body when the header has no initialiser (`for (; i < n; ++i)`: mandelbrot's escape loop is reported at the
    line after its `for`); an innermost loop holds no other loop, so a report inside its span is its own."""
    if loop.start_line in vec_report:
        return vec_report[loop.start_line]
    inside = [line for line in vec_report if loop.start_line < line <= loop.end_line]
    return vec_report[min(inside)] if inside else None


def carried_metric(carried: loops.CarriedScalar) -> str:
    """The hot-line metric naming a carried scalar: static.carried_scan.<name>, static.carried_reduction.<op>.<name>."""
    if carried.kind == "reduction":
        return f"static.carried_reduction.{carried.operator}.{carried.name}"
    return f"static.carried_scan.{carried.name}"


def struct_metrics(line: int, analysis: loops.LoopAnalysis) -> list[CounterValue]:
    """The array-of-structures facts of the line: of the structure accesses whose lines hold it, the one that uses
    the least of its structure."""
    accesses = [s for s in analysis.structs if line in s.lines]
    if not accesses:
        return []
    worst = min(accesses, key=lambda s: s.used_fraction)
    return [CounterValue("static.aos_used_fraction", worst.used_fraction, "ratio"),
            CounterValue("static.aos_struct_bytes", float(worst.struct_bytes), "byte"),
            CounterValue("static.aos_used_bytes", float(worst.used_bytes), "byte")]


def _in_static_triangular(loop: loops.Loop, analysis: loops.LoopAnalysis) -> bool:
    """Whether the loop lies in a loop nest shared out with a static schedule (or none: libgomp's default is
    static) whose inner bounds depend on the shared loop's variable."""
    return any(p.triangular and p.schedule in ("", "static") and p.loop_line is not None
               and _within(loop, p.loop_line, analysis) for p in analysis.pragmas)


def _within(loop: loops.Loop, outer_line: int, analysis: loops.LoopAnalysis) -> bool:
    outer = next((candidate for candidate in analysis.loops if candidate.start_line == outer_line), None)
    return outer is not None and outer.start_line <= loop.start_line <= outer.end_line
