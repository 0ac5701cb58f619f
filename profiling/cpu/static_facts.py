"""The static facts of a function of a user's application, as a task profile carries them (profile.py's
static_metrics): its loop nests, invariant work, structure layouts, carried scalars and OpenMP pragmas from the
source (loops.py), the linear searches and recomputed expressions of its loops (loops.avoidable_work_facts), gcc's
vectoriser verdict per loop (vectorize.py) under the flags the binary records
(compile_command.py), the integer divisions its lines compiled to (disassembly.py), and the cores.

The function is named as callgrind reports it (`select(std::array<int, 4ul>&) [clone .constprop.0]`); its loops are
looked up by its base name in the file holding most of its instructions, and when that file does not define it
(perf-ninja's `solution`, whose hot code is `Life::simulateNext` inlined from solution.hpp) in the function of that
file around its hottest line. Hot lines of another function of the file, inlined into this one (perf-ninja's
`power`, whose hot lines are the loops of `multiply`), get the facts of the function around them: the loops that
hold a line are those of the function its text is in. A file that holds no function around its hottest line is a
body `#include`d into one (INAF's `multiply_arrays`, whose main includes `v0.c`, a block with the loop): it is read
as the body of a function of its own (`INCLUDED_BODY`, opened on the file's first line that is not a directive, so
its line numbers stay), which first declares what the including function declares (its parameters and locals,
read from the compile unit: `double sum` there makes `sum += ...` a floating-point chain).

The facts read the file with its macros expanded by the unit's compiler under its recorded flags (preprocess.py),
through the unit that includes it when it is not one; the raw text when that fails, or when the expanded text
lacks the function (it lies under an #if the recorded flags, which never hold -D, leave inactive). Which reading
was used lands in the profile's tool_versions.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from perfforge.records import CounterValue, HotLine
from profiling.cpu import disassembly, layout, loops, preprocess, vectorize
from profiling.cpu.compile_command import CompileCommand, compile_command, language_of
from profiling.cpu.profile import static_metrics, struct_metrics
from profiling.cpu.symbols import base_name


@dataclass
class StaticFacts:
    """The kernel-wide counters (the hot lines got theirs in place) and how the vectoriser report was made."""

    counters: list[CounterValue]
    description: str  # for the profile's tool_versions: the compile command and where its flags came from


def function_static_facts(symbol: str, source: Path, hot_lines: list[HotLine], binary: Path, files: Sequence[str],
                          scratch: Path) -> StaticFacts:
    """Add the static metrics to hot_lines (lines of source) and return the kernel counters. binary: the object
    holding the function; files: the user source files of its own instructions, costliest first."""
    command = compile_command(binary, files)
    function = base_name(symbol)
    disassembly.add_division_counts(hot_lines, disassembly.line_code(binary, source.name, function))
    raw = source.read_text(encoding="utf-8", errors="replace")
    language = language_of(source, command)
    expanded = _expanded(command, source, raw, scratch / "preprocess")
    includer = functools.partial(_includer_declarations, command, function, language)
    text, name, analysis = _analysis(expanded.text, function, hot_lines, language, includer)
    if (not analysis.function_found and expanded.expanded
            and loops.analyze_loops(raw, function, language).function_found):
        # the function lies in a branch the recorded flags leave inactive (gcc records no -D): read it as written
        expanded = preprocess.ExpandedSource(raw, False, f"{function} is not in the preprocessed text "
                                             f"({expanded.reason})")
        text, name, analysis = _analysis(raw, function, hot_lines, language, includer)
    report, description = _vectoriser_report(command, source, scratch)
    description = f"{description}; {expanded.describe()}"
    by_function = _by_function(text, hot_lines, language, name)
    structs = layout.padded_structs([text, *layout.local_headers(source, raw)], language)
    _add_padding(by_function.get(name, []), layout.padded_lines(text, name, language, structs))
    counters = static_metrics(by_function.pop(name, []), analysis, report)
    for owner, lines in by_function.items():  # functions of the file inlined into the analysed one
        _add_padding(lines, layout.padded_lines(text, owner, language, structs))
        counters = _merged(counters, static_metrics(lines, loops.analyze_loops(text, owner, language), report))
        for hot in lines:  # a method the analysed function's loop calls on each structure: the loop's facts
            if hot.metric("static.aos_used_fraction") is None:
                hot.metrics += struct_metrics(hot.line, analysis)
    return StaticFacts(counters, description)


INCLUDED_BODY = "perfforge_included_body"  # the function a file included into another's body is read as


def _analysis(text: str, name: str, hot_lines: list[HotLine], language: str,
              includer: Callable[[], list[str]]) -> tuple[str, str, loops.LoopAnalysis]:
    """(the text read, the function analysed, its loops): the function's own; when the file does not define it,
    the function around its hottest line; when no function holds that line, the file read as a body included into
    one (INCLUDED_BODY) that declares what includer() gives."""
    analysis = loops.analyze_loops(text, name, language)
    if analysis.function_found or not hot_lines:
        return text, name, analysis
    around = loops.function_at(text, hot_lines[0].line, language)
    if around:
        return text, around, loops.analyze_loops(text, around, language)
    wrapped = as_included_body(text, includer())
    body = loops.analyze_loops(wrapped, INCLUDED_BODY, language)
    return (wrapped, INCLUDED_BODY, body) if body.loops else (text, name, analysis)


def as_included_body(text: str, declarations: Sequence[str] = ()) -> str:
    """text as the body of a function INCLUDED_BODY, at its own line numbers: the function opens, with the
    declarations (one line each), at the start of the first line that is neither blank nor a preprocessor directive
    (a comment there stays one) and closes after the last; text of directives only stays as it is."""
    lines = text.split("\n")
    first = next((i for i, line in enumerate(lines) if line.strip() and not line.lstrip().startswith("#")),
                 len(lines))
    if first == len(lines):
        return text
    lines[first] = f"void {INCLUDED_BODY}(void) {{ {''.join(f'{d} ' for d in declarations)}{lines[first]}"
    return "\n".join(lines) + "\n}\n"


def _includer_declarations(command: CompileCommand | None, name: str, language: str) -> list[str]:
    """The declarations of the function named name in the compile unit (as written: a file included into its body
    is read at the unit's own text), [] without a unit or where it does not define the function."""
    if command is None:
        return []
    try:
        unit = command.unit.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return []
    return loops.declarations(unit, name, language)


def _expanded(command: CompileCommand | None, source: Path, raw: str, scratch: Path) -> preprocess.ExpandedSource:
    """The file with its macros expanded under the unit's recorded flags, through the unit that includes it when it
    is not one (preprocess.py); as written when no gcc unit holds it."""
    if command is None:
        return preprocess.ExpandedSource(raw, False, "no gcc compile unit holds the function, its flags are unknown")
    return preprocess.expanded_source(source, raw, command.compiler, command.flags, scratch, unit=command.unit)


def _add_padding(hot_lines: list[HotLine], padded: dict[int, layout.Padded]) -> None:
    """`static.padded_struct_bytes` and `static.packed_struct_bytes` on the hot lines that move arrays of a
    structure holding padding (layout.py): its size, and its size with the fields reordered."""
    for hot in hot_lines:
        if (found := padded.get(hot.line)) is not None:
            hot.metrics += [CounterValue("static.padded_struct_bytes", float(found.size), "byte"),
                            CounterValue("static.packed_struct_bytes", float(found.packed), "byte")]


def _by_function(text: str, hot_lines: list[HotLine], language: str, analysed: str) -> dict[str, list[HotLine]]:
    """The hot lines by the function whose text holds them: the analysed one unless another definition of the file
    does (a line outside every definition stays with the analysed function)."""
    owners = loops.functions_at(text, [line.line for line in hot_lines], language)
    grouped: dict[str, list[HotLine]] = {}
    for line in hot_lines:
        owner = owners[line.line]
        key = owner if owner and owner.split("::")[-1] != analysed.split("::")[-1] else analysed
        grouped.setdefault(key, []).append(line)
    return grouped


def _merged(counters: list[CounterValue], more: list[CounterValue]) -> list[CounterValue]:
    """Kernel-wide counters of the function and of what was inlined into it: an OpenMP region or a thread spawn
    anywhere in the inlined code counts (the larger value of each; cpu_cores is the same in both)."""
    values = {c.name: c for c in counters}
    for counter in more:
        if counter.name not in values or counter.value > values[counter.name].value:
            values[counter.name] = counter
    return list(values.values())


def _vectoriser_report(command: CompileCommand | None, source: Path,
                       scratch: Path) -> tuple[dict[int, vectorize.LoopReport], str]:
    if command is None:
        return {}, "vectoriser report: none (no gcc compile unit holds the function)"
    try:
        report = vectorize.vectorization_report(command.unit, command.compiler, command.flags, scratch,
                                                lines_of=source.name)
    except vectorize.VectorizeError as error:
        return {}, f"{command.describe()}: failed, {error}"
    return report or {}, command.describe() if report is not None else "vectoriser report: none (not gcc)"
