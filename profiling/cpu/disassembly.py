"""Integer divisions in the compiled code, per source line, from objdump's disassembly with line numbers.

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

The hot lines get `binary.divisions` (where there are any); slow_integer_division reads it. A binary without line
information, or no objdump, gives nothing: the divisions are then not measured, and the rule reads only the
source's loop-carried divisions.
"""

from __future__ import annotations

import functools
import re
import shutil
import subprocess
from dataclasses import dataclass
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
# an instruction line: "    1189:\tmnemonic operands" (--no-show-raw-insn)
_INSTRUCTION_RE = re.compile(r"^\s+[0-9a-f]+:\t(\S+)")
_PREFIXES = frozenset({"lock", "rep", "repz", "repnz", "repe", "repne", "notrack", "data16", "cs", "ds", "bnd"})


@dataclass(frozen=True)
class LineCode:
    """What one source line compiled to: its instructions, and of those the integer divisions."""

    instructions: int
    divisions: int


def line_code(binary: Path, source_name: str, kernel: str | None = None) -> dict[int, LineCode]:
    """The code of each line of the source file named source_name (every file of that name counts, as callgrind's
    hot lines do) in binary, read from the function named kernel where the line has code there; {} where objdump
    is missing or fails."""
    try:
        stamp = binary.stat().st_mtime_ns
    except OSError:
        return {}
    return _chosen(_line_code(str(binary), stamp, source_name), kernel)


@functools.lru_cache(maxsize=8)  # application mode asks once per profiled function of the same binary
def _line_code(binary: str, _stamp: int, source_name: str) -> dict[str, dict[int, LineCode]]:
    objdump = shutil.which("objdump")
    if objdump is None:
        return {}
    try:
        listing = subprocess.run([objdump, "-d", "-l", "-C", "--no-show-raw-insn", binary], capture_output=True,
                                 text=True, errors="replace", timeout=OBJDUMP_TIMEOUT_S, check=True).stdout
    except (OSError, subprocess.SubprocessError):
        return {}
    return _by_function(listing, source_name)


def parse_listing(listing: str, source_name: str, kernel: str | None = None) -> dict[int, LineCode]:
    """objdump -d -l -C --no-show-raw-insn output -> the code of each line of the source file named source_name;
    a line with code in the function named kernel (its base name: clones and parameters aside) counts that code
    only."""
    return _chosen(_by_function(listing, source_name), kernel)


def _by_function(listing: str, source_name: str) -> dict[str, dict[int, LineCode]]:
    """The code of each line of source_name, per function (by base name) it was compiled into."""
    found: dict[str, dict[int, LineCode]] = {}
    lines: dict[int, LineCode] = {}
    current: int | None = None
    for text in listing.splitlines():
        symbol = _SYMBOL_RE.match(text)
        if symbol:  # a new function: its first location line comes next
            current, lines = None, found.setdefault(base_name(symbol.group(1)), {})
            continue
        location = _LOCATION_RE.match(text)
        if location:
            current = int(location.group(2)) if Path(location.group(1)).name == source_name else None
            continue
        instruction = _INSTRUCTION_RE.match(text)
        if instruction is None or current is None:
            continue
        words = [w for w in text.split("\t", 1)[1].split() if w not in _PREFIXES]
        if not words or words[0].startswith("nop") or words[0] in ("(bad)", "int3"):
            continue  # alignment padding after a function's return: never executed, it would dilute the line's count
        seen = lines.get(current, LineCode(0, 0))
        lines[current] = LineCode(seen.instructions + 1, seen.divisions + bool(_DIVISION_RE.fullmatch(words[0])))
    return found


def _chosen(by_function: dict[str, dict[int, LineCode]], kernel: str | None) -> dict[int, LineCode]:
    """Every copy of each line summed, the kernel's own code where the line has some there."""
    everywhere: dict[int, LineCode] = {}
    for lines in by_function.values():
        for line, code in lines.items():
            seen = everywhere.get(line, LineCode(0, 0))
            everywhere[line] = LineCode(seen.instructions + code.instructions, seen.divisions + code.divisions)
    return everywhere | by_function.get(kernel, {}) if kernel else everywhere


def add_division_counts(hot_lines: list[HotLine], code: dict[int, LineCode]) -> None:
    """`binary.divisions` on the hot lines whose code holds integer divisions: how many they ran a kernel call."""
    for hot in hot_lines:
        found = code.get(hot.line)
        if found is None or not found.divisions:
            continue
        own = hot.metric("Ir_self") or 0.0
        hot.metrics.append(CounterValue("binary.divisions", own * found.divisions / found.instructions, "division"))
