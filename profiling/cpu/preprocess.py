"""A source file as its compiler reads it: macros expanded by the compiler's own preprocessor, line for line with
the file the user sees.

The static facts (loops.py, dependences.py, layout.py) parse C and C++ with tree-sitter, which reads text, not
macros: CS:APP's `*dest = *dest OP val` under `#define OP *` is no accumulator in memory to it, and `for (i = 0; i
< N; i++)` under `#define N 4` no short fixed walk. So the file is preprocessed by the task's compiler (`gcc -E`,
clang's is the same) with the build's flags (-I, -D, -std, -march and -fopenmp change what the preprocessor
defines), keeping gcc's line markers (`# 12 "file.c" 2`), and the file is rebuilt from them: line k of the result
holds what the preprocessor made of line k of the file, so every fact keeps the line numbers the user sees (and
callgrind's per-line costs, which are lines of the file as written, still meet them). What other files contribute
(the headers the file includes, the unit around an included file) is left out, as the raw text leaves it out;
directives and comments become blank lines; code of an inactive `#if` branch is gone, as it is from the binary.

A file need not be compiled on its own: application mode's function may sit in a file another unit includes
(ufidon/ca's loops.c, a fragment whose data type and operation come from the including driver's combine.h, or a
header's inline function). The unit is then preprocessed and the file's lines taken from the first time it is
entered. When the preprocessor fails (a missing header, a compiler that is not gcc-compatible, a timeout) or
never enters the file, the raw text stands and the reason is recorded (ExpandedSource.describe, in the profile's
tool_versions).

What a macro expands to is what the facts see: `assert(x)` is a call of `__assert_fail`, `INFINITY` a call of
`__builtin_inff`, exactly as the compiler reads them.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from profiling import sandbox

PREPROCESS_TIMEOUT_S = 60.0
# Compilers whose -E output carries gcc's line markers (clang writes the same format).
_COMPILER_RE = re.compile(r"^(gcc|g\+\+|cc|c\+\+|clang|clang\+\+)(-[\d.]+)?$")
# `# 12 "file.c" 1 3 4`: the next line is line 12 of file.c; flag 1 enters an include, flag 2 returns to a file.
_MARKER_RE = re.compile(r'^#\s*(\d+)\s+"((?:[^"\\]|\\.)*)"((?:\s+\d)*)\s*$')
# Options that name outputs or link inputs, or ask for another stage: not passed to the preprocessor.
_DROPPED_WITH_VALUE = frozenset({"-o", "-MF", "-MT", "-MQ"})
_DROPPED_RE = re.compile(r"^(-c|-S|-E|-M|-MM|-MD|-MMD|-MP|-MG|-l.*|-L.*|-Wl,.*|-fopt-info.*|-save-temps.*|-flto.*)$")


@dataclass(frozen=True)
class ExpandedSource:
    """The file's text with its macros expanded (or as written, when expanded is False), one line per line."""

    text: str
    expanded: bool
    reason: str  # the command, or why the raw text stands

    def describe(self) -> str:
        if self.expanded:
            return f"source facts read the preprocessed file: {self.reason}"
        return f"source facts read the file as written (macros not expanded: {self.reason})"


def preprocessor_flags(flags: Sequence[str]) -> list[str]:
    """The build's flags less outputs, link inputs and other stages' switches; -D, -U, -I, -include, -std, -m*,
    -O* and -fopenmp stay (each changes what the preprocessor defines or finds)."""
    kept: list[str] = []
    skip = False
    for flag in flags:
        if skip:
            skip = False
        elif flag in _DROPPED_WITH_VALUE:
            skip = True
        elif not _DROPPED_RE.match(flag):
            kept.append(flag)
    return kept


def expanded_source(source: Path, raw: str, compiler: str, flags: Sequence[str], scratch: Path, *,
                    unit: Path | None = None, timeout_s: float = PREPROCESS_TIMEOUT_S) -> ExpandedSource:
    """source's text with its macros expanded by `compiler -E` under flags, preprocessing unit (the translation
    unit that includes source; source itself by default). raw: source as written, returned when preprocessing
    fails, with the reason."""
    unit = (unit or source).resolve()
    if not _COMPILER_RE.match(Path(compiler).name):
        return ExpandedSource(raw, False, f"{compiler} is not a gcc-compatible preprocessor")
    scratch.mkdir(parents=True, exist_ok=True)
    argv = [compiler, *preprocessor_flags(flags), "-E", "-w", f"-I{source.resolve().parent}", str(unit)]
    shown = f"{Path(compiler).name} -E {' '.join(preprocessor_flags(flags))} {unit.name}".replace("  ", " ")
    result = sandbox.run(argv, cwd=scratch, limits=sandbox.Limits(timeout_s=timeout_s, memory_bytes=None))
    if not result.ok:
        first = next((line for line in result.stderr_full.splitlines() if "error" in line), result.reason())
        return ExpandedSource(raw, False, f"`{shown}` failed: {first.strip()}")
    lines = file_lines(result.stdout_full, source.resolve(), scratch, raw.count("\n") + 1)
    if lines is None:
        return ExpandedSource(raw, False, f"`{shown}` never enters {source.name}")
    return ExpandedSource("\n".join(lines), True, f"`{shown}`" + (f" (through {unit.name})" if unit != source.resolve()
                                                                    else ""))


def file_lines(output: str, source: Path, cwd: Path, count: int) -> list[str] | None:
    """The `count` lines of source rebuilt from preprocessor output with line markers, None when the output never
    enters source. Relative marker paths are the preprocessor's cwd's. Several output lines landing on one line (a
    `_Pragma` turned into a `#pragma` line, a line marker repeating a line) are joined, a directive among them
    dropped when code shares the line (a directive cannot)."""
    rebuilt: dict[int, list[str]] = {}
    stack: list[Path] = []  # files entered, innermost last
    depth = None  # the stack's depth inside source's first inclusion; None before it, -1 after it
    current, line = None, 0
    for text in output.split("\n"):
        marker = _MARKER_RE.match(text)
        if marker is not None:
            name, flags = marker.group(2), marker.group(3).split()
            line = int(marker.group(1))
            if name.startswith("<"):  # <built-in>, <command-line>: at the unit's level
                current = None
                del stack[1 if "2" in flags else len(stack):]
                continue
            current = Path(cwd, name).resolve()
            if "1" in flags:
                stack.append(current)
            elif "2" in flags:
                while stack and stack[-1] != current:
                    stack.pop()
            elif not stack:
                stack.append(current)  # the unit itself
            if depth is None and current == source:
                depth = len(stack)
            elif depth is not None and depth > 0 and len(stack) < depth:
                depth = -1  # left source's first inclusion: a later one is not read again
            continue
        if depth is not None and depth > 0 and current == source and len(stack) == depth and 1 <= line <= count:
            rebuilt.setdefault(line, []).append(text)
        line += 1
    if depth is None:
        return None
    return [_joined(rebuilt.get(number, [])) for number in range(1, count + 1)]


def _joined(parts: list[str]) -> str:
    parts = [part for part in parts if part.strip()]
    code = [part for part in parts if not part.lstrip().startswith("#")]
    return " ".join(code) if code else (parts[0] if parts else "")
