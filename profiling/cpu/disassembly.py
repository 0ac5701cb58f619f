"""What the compiled code says per source line, from objdump's disassembly with line numbers and inline chains:
integer divisions, and which of the source's lines inlined a header's code.

Callgrind counts a division as one instruction, and the source cannot say which divisions are left after
compilation: one by a literal or a constant becomes a multiplication, one by a field, a parameter or a call's
result stays a `div`/`idiv` whatever its syntax (a hash table's `key % buckets` in an inlined hasher). The binary
says both: which lines hold division instructions, and how many instructions each line compiled to. A hot line's
own executed instructions (callgrind's `Ir_self`, per kernel call) then give how many divisions it ran:

    divisions = Ir_self x divisions in the line's code / instructions in the line's code

which assumes the line's instructions run equally often: true of straight-line code (`h = key % n;`), an
estimate for a line that also holds a loop's header or a branch. A line compiled into several functions (a kernel
also inlined, unrolled or vectorised into the benchmark loop that calls it) has a different mix of instructions in
each; callgrind's counts are the kernel's own, so a line that has code in the kernel's symbol (or its clones) is
read from that code only, and a line that has none there (an out-of-line callee's) from all of its copies.

Inlined headers: debug information files the code a function inlined from a header (a C++ library's `std::find`,
an intrinsic) under the header's lines, and callgrind charges it there, off the source; `objdump --inlines` prints,
for each location, the chain of call sites it was inlined through. The first of them in the source is the line
whose call brought that code in: `inline_sites` maps each header location of a function to those source lines, so
that callgrind.py charges the header's cost to the call (a quadratic `std::find` in a loop was otherwise no hot
line at all), and the line's code here counts the instructions it inlined.

The hot lines get `binary.divisions` (where there are any); slow_integer_division reads it. A binary without line
information, or no objdump, gives nothing: the divisions are then not measured, and the rule reads only the
source's loop-carried divisions.
"""

from __future__ import annotations

import functools
import re
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from perfforge.records import CounterValue, HotLine
from profiling.cpu.symbols import base_name

OBJDUMP_TIMEOUT_S = 120  # a large C++ binary disassembles in seconds; past this it is not worth the wait
# `div`/`idiv` with or without an operand-size suffix: integer division (SSE's divss/divsd/divps/divpd are not)
_DIVISION_RE = re.compile(r"i?div[bwlq]?")
# objdump -l's location lines: "/path/file.c:12" or "file.c:12 (discriminator 3)"
_LOCATION_RE = re.compile(r"^(\S.*):(\d+)(?: \(discriminator \d+\))?$")
# a symbol's first line: "0000000000001189 <modsum>:" (demangled with -C: "<ns::f(int) [clone .constprop.0]>:")
_SYMBOL_RE = re.compile(r"^[0-9a-f]+ <(.+)>:$")
# --inlines' chain, innermost caller first: "inlined by /path/file.cpp:40 (_ZL8baselineRN9benchmark5StateE)"
_INLINED_BY_RE = re.compile(r"^inlined by (\S.*?):(\d+)(?: \(discriminator \d+\))?(?: \(.*\))?$")
# an instruction line: "    1189:\tmnemonic operands" (--no-show-raw-insn)
_INSTRUCTION_RE = re.compile(r"^\s+[0-9a-f]+:\t(\S+)")
_PREFIXES = frozenset({"lock", "rep", "repz", "repnz", "repe", "repne", "notrack", "data16", "cs", "ds", "bnd"})


@dataclass(frozen=True)
class LineCode:
    """What one source line compiled to: its instructions, and of those the integer divisions."""

    instructions: int
    divisions: int


# a header location (its path as the debug information gives it, its line) -> the source lines inlining its code
InlineSites = dict[tuple[str, int], frozenset[int]]


@dataclass
class FunctionCode:
    """One function's code as objdump lists it: per source line, and the header locations it inlined."""

    lines: dict[int, LineCode] = field(default_factory=dict)
    inlined: dict[tuple[str, int], set[int]] = field(default_factory=dict)


def line_code(binary: Path, source_name: str, kernel: str | None = None) -> dict[int, LineCode]:
    """The code of each line of the source file named source_name (every file of that name counts, as callgrind's
    hot lines do) in binary, read from the function named kernel where the line has code there; {} where objdump
    is missing or fails."""
    return _chosen(_functions_of(binary, source_name), kernel)


def inline_sites(binary: Path, source_name: str, kernel: str) -> InlineSites:
    """The header locations whose code the function named kernel (its base name) inlined, each with the lines of
    the source file named source_name that called it in; {} where objdump is missing or fails."""
    found = _functions_of(binary, source_name).get(base_name(kernel))
    return {where: frozenset(lines) for where, lines in found.inlined.items()} if found else {}


def _functions_of(binary: Path, source_name: str) -> dict[str, FunctionCode]:
    try:
        stamp = binary.stat().st_mtime_ns
    except OSError:
        return {}
    return _listed(str(binary), stamp, source_name)


@functools.lru_cache(maxsize=8)  # application mode asks once per profiled function of the same binary
def _listed(binary: str, stamp: int, source_name: str) -> dict[str, FunctionCode]:
    listing = _listing(binary, stamp)
    return _by_function(listing, source_name) if listing else {}


@functools.lru_cache(maxsize=2)  # the functions of several source files read one binary's listing
def _listing(binary: str, _stamp: int) -> str:
    objdump = shutil.which("objdump")
    if objdump is None:
        return ""
    # --inlines (binutils 2.30 on) adds the inline chains (about 3.5 times the listing of a small C++ program); an
    # objdump without it lists the lines alone
    for extra in (["--inlines"], []):
        try:
            return subprocess.run([objdump, "-d", "-l", *extra, "-C", "--no-show-raw-insn", binary],
                                  capture_output=True, text=True, errors="replace", timeout=OBJDUMP_TIMEOUT_S,
                                  check=True).stdout
        except subprocess.CalledProcessError:
            continue
        except (OSError, subprocess.SubprocessError):
            return ""
    return ""


def parse_listing(listing: str, source_name: str, kernel: str | None = None) -> dict[int, LineCode]:
    """objdump -d -l [--inlines] -C --no-show-raw-insn output -> the code of each line of the source file named
    source_name; a line with code in the function named kernel (its base name: clones and parameters aside) counts
    that code only."""
    return _chosen(_by_function(listing, source_name), kernel)


def _by_function(listing: str, source_name: str) -> dict[str, FunctionCode]:
    """Each function's (by base name) code per line of source_name, and its inlined header locations. An
    instruction belongs to its innermost location's line when that is in the source, else to the first line of
    the source in its inline chain (the call that inlined it), else to none."""
    found: dict[str, FunctionCode] = {}
    code = FunctionCode()
    innermost: tuple[str, int] | None = None
    chain: list[tuple[str, int]] = []
    chain_open = False  # "inlined by" lines after an instruction start the next instruction's chain afresh
    line: int | None = None  # the source line the next instructions belong to (set when the location changes)
    inlined = False  # their innermost location is a header's: line inlined it
    for text in listing.splitlines():
        symbol = _SYMBOL_RE.match(text)
        if symbol:  # a new function: its first location line comes next
            code, innermost, chain, line = found.setdefault(base_name(symbol.group(1)), FunctionCode()), None, [], None
            continue
        caller = _INLINED_BY_RE.match(text)
        location = None if caller else _LOCATION_RE.match(text)
        if caller or location:
            if caller:
                chain = (chain if chain_open else []) + [(caller.group(1), int(caller.group(2)))]
            else:
                innermost, chain = (location.group(1), int(location.group(2))), []
            chain_open = True
            line = _source_line(innermost, chain, source_name)
            inlined = innermost is not None and _file_name(innermost[0]) != source_name
            continue
        instruction = _INSTRUCTION_RE.match(text)
        if instruction is None:
            continue
        chain_open = False
        if line is None:
            continue
        words = [w for w in text.split("\t", 1)[1].split() if w not in _PREFIXES]
        if not words or words[0].startswith("nop") or words[0] in ("(bad)", "int3"):
            continue  # alignment padding after a function's return: never executed, it would dilute the line's count
        if inlined:
            code.inlined.setdefault(innermost, set()).add(line)
        seen = code.lines.get(line, LineCode(0, 0))
        code.lines[line] = LineCode(seen.instructions + 1, seen.divisions + bool(_DIVISION_RE.fullmatch(words[0])))
    return found


def _source_line(innermost: tuple[str, int] | None, chain: list[tuple[str, int]], source_name: str) -> int | None:
    """The line of source_name the code at this location belongs to: the innermost location's, else the first of
    its inline chain's (the call that inlined it), else None."""
    if innermost is None:
        return None
    return next((number for path, number in (innermost, *chain) if _file_name(path) == source_name), None)


@functools.lru_cache(maxsize=4096)  # a listing names a few hundred files over millions of lines
def _file_name(path: str) -> str:
    return Path(path).name


def _chosen(by_function: dict[str, FunctionCode], kernel: str | None) -> dict[int, LineCode]:
    """Every copy of each line summed, the kernel's own code where the line has some there."""
    everywhere: dict[int, LineCode] = {}
    for function in by_function.values():
        for line, code in function.lines.items():
            seen = everywhere.get(line, LineCode(0, 0))
            everywhere[line] = LineCode(seen.instructions + code.instructions, seen.divisions + code.divisions)
    own = by_function.get(base_name(kernel)) if kernel else None
    return everywhere | own.lines if own else everywhere


def add_division_counts(hot_lines: list[HotLine], code: dict[int, LineCode]) -> None:
    """`binary.divisions` on the hot lines whose code holds integer divisions: how many they ran a kernel call."""
    for hot in hot_lines:
        found = code.get(hot.line)
        if found is None or not found.divisions:
            continue
        own = hot.metric("Ir_self") or 0.0
        hot.metrics.append(CounterValue("binary.divisions", own * found.divisions / found.instructions, "division"))
