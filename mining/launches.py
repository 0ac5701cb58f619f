"""Kernel launches and calls in a function's code: which kernel each launch starts, and with which configuration.

Launch syntaxes read:
- CUDA and HIP triple chevrons, `kernel<<<grid, block, shared_bytes, stream>>>(args)`, template arguments allowed
  between the name and the chevrons;
- HIP's `hipLaunchKernelGGL(kernel, grid, block, shared_bytes, stream, args...)`;
- the runtime calls `cudaLaunchKernel` / `hipLaunchKernel` and their cooperative forms,
  `(kernel, grid, block, args, shared_bytes, stream)`;
- Triton's `kernel[grid](args..., num_warps=4, BLOCK_SIZE=1024)`.

A launch counts only when it names a kernel of the same file version (the caller passes their names): a kernel
defined elsewhere has no definition here to pair, and in Python `table[i](x)` is a launch only when `table` is a
Triton kernel. Comments are blanked first, so a commented-out launch is no launch. This reads text, not a syntax
tree: a launch hidden behind a macro or a function pointer is not seen.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass

from perfforge.records import blank_comments, normalise_code

# The runtime launch calls and the positions of their configuration arguments (grid, block, shared memory, stream).
_LAUNCH_CALL_CONFIG_ARGS: dict[str, tuple[int, ...]] = {
    "hipLaunchKernelGGL": (1, 2, 3, 4),
    "cudaLaunchKernel": (1, 2, 4, 5), "cudaLaunchCooperativeKernel": (1, 2, 4, 5),
    "hipLaunchKernel": (1, 2, 4, 5), "hipLaunchCooperativeKernel": (1, 2, 4, 5),
}
_LAUNCH_CALL_RE = re.compile(r"\b(" + "|".join(_LAUNCH_CALL_CONFIG_ARGS) + r")\s*\(")
_CHEVRONS_RE = re.compile(r"<<<(.*?)>>>", re.DOTALL)
# The name written before the chevrons (template arguments already cut off): `k`, `ns::k`, `ns :: k`.
_NAME_BEFORE_RE = re.compile(r"((?:\w+\s*::\s*)*\w+)\s*$")
_TRITON_LAUNCH_RE = re.compile(r"\b(\w+)\s*\[")
# A call of a function: its name, then template arguments (C++) or nothing, then the opening parenthesis.
_CALL_RE = re.compile(r"\b(\w+)\s*(?:<[^;{}()<>]*>\s*)?\(")
_IDENTIFIER_RE = re.compile(r"\b[A-Za-z_]\w*\b")
# Keyword arguments of a Triton launch that configure it rather than feed the kernel: the compiler's launch
# options, and by Triton convention the upper-case tl.constexpr meta-parameters (BLOCK_SIZE), which set the tile
# each program handles and so the grid it needs.
_TRITON_LAUNCH_OPTIONS = frozenset({"num_warps", "num_stages", "num_ctas", "maxnreg"})
_OPENERS, _CLOSERS = "([{", ")]}"
# How far before `<<<` the kernel's name and template arguments are looked for, in characters.
_NAME_WINDOW_CHARS = 400


@dataclass(frozen=True)
class Launch:
    """One launch of a kernel of the file."""

    kernel: str  # the kernel's qualified name, as the file defines it
    offset: int  # where the launch starts in the function's code
    config: str  # the configuration as written (grid, block, shared memory, stream; Triton's grid and options)


def short_name(name: str) -> str:
    """The last component of a qualified name (`ns::Class::f`, `Class.f`): what a call or launch writes."""
    return name.rsplit("::", 1)[-1].rsplit(".", 1)[-1].strip()


def launches(code: str, language: str, kernels: Mapping[str, str]) -> list[Launch]:
    """The launches in code, in order. kernels maps the short name of each kernel of the file to its name."""
    text = blank_comments(code, language)
    found = _triton_launches(text, kernels) if language == "python" else [
        *_chevron_launches(text, kernels), *_launch_call_launches(text, kernels)]
    return sorted((Launch(kernel, offset, config) for kernel, offset, config in found),
                  key=lambda launch: launch.offset)


def launch_shapes(code: str, language: str, found: list[Launch]) -> list[str]:
    """What decides each launch's configuration, formatting-blind: its configuration and every statement of code
    assigning a value it reads, directly or through other values (`threads = 512` behind `blocks = (n + threads
    - 1) / threads` behind `<<<blocks, threads>>>`). A launch written the same way whose block size is computed
    otherwise above it has another shape."""
    statements = _statements(blank_comments(code, language), language)
    return [_shape(launch.config, statements, language) for launch in found]


def calls(code: str, language: str, functions: Mapping[str, list[str]], own_name: str) -> list[tuple[int, str]]:
    """(offset, name) of each call in code of a function of the file. functions maps a short name to the names of
    the file's functions that bear it. A name written like own_name's is left out: it is the definition's own
    header, recursion, or in Python as often `super().forward(...)` as another class's method."""
    text = blank_comments(code, language)
    own = short_name(own_name)
    return [(match.start(), name) for match in _CALL_RE.finditer(text) if match.group(1) != own
            for name in functions.get(match.group(1), [])]


def _chevron_launches(text: str, kernels: Mapping[str, str]) -> list[tuple[str, int, str]]:
    found = []
    for match in _CHEVRONS_RE.finditer(text):
        window_start = max(0, match.start() - _NAME_WINDOW_CHARS)
        head = _without_template_arguments(text[window_start:match.start()])
        name = _NAME_BEFORE_RE.search(head)
        kernel = kernels.get(short_name(name.group(1))) if name else None
        if name and kernel:
            found.append((kernel, window_start + name.start(1), match.group(1)))
    return found


def _without_template_arguments(head: str) -> str:
    """head without the balanced `<...>` that ends it (`k<float, Vec<4>>` gives `k`), white space trimmed."""
    head = head.rstrip()
    if not head.endswith(">"):
        return head
    depth = 0
    for index in range(len(head) - 1, -1, -1):
        depth += {">": 1, "<": -1}.get(head[index], 0)
        if depth == 0:
            return head[:index].rstrip()
    return ""


def _launch_call_launches(text: str, kernels: Mapping[str, str]) -> list[tuple[str, int, str]]:
    found = []
    for match in _LAUNCH_CALL_RE.finditer(text):
        arguments = _arguments(text, match.end() - 1)
        if not arguments:
            continue
        # HIP_KERNEL_NAME(k<T>) and (k<T>) wrap a templated kernel: its name is the first identifier of the file's
        # kernels in the argument.
        kernel = next((kernels[word] for word in _IDENTIFIER_RE.findall(arguments[0]) if word in kernels), None)
        positions = _LAUNCH_CALL_CONFIG_ARGS[match.group(1)]
        if kernel:
            found.append((kernel, match.start(), ", ".join(arguments[i] for i in positions if i < len(arguments))))
    return found


def _triton_launches(text: str, kernels: Mapping[str, str]) -> list[tuple[str, int, str]]:
    found = []
    for match in _TRITON_LAUNCH_RE.finditer(text):
        kernel = kernels.get(match.group(1))
        grid_end = _closing(text, match.end() - 1) if kernel else None
        if kernel is None or grid_end is None:
            continue
        call_open = len(text) - len(text[grid_end + 1:].lstrip())
        arguments = _arguments(text, call_open) if text.startswith("(", call_open) else None
        if arguments is None:
            continue  # indexing a kernel without calling it is no launch
        options = [argument for argument in arguments if _is_launch_option(argument)]
        found.append((kernel, match.start(), ", ".join([text[match.end():grid_end].strip(), *options])))
    return found


def _is_launch_option(argument: str) -> bool:
    keyword, equals, _ = argument.partition("=")
    keyword = keyword.strip()
    return bool(equals) and keyword.isidentifier() and (keyword in _TRITON_LAUNCH_OPTIONS or keyword.isupper())


def _closing(text: str, open_index: int) -> int | None:
    """Index of the bracket closing the one at open_index, string literals skipped; None when unclosed."""
    depth = 0
    for index, char in _code_chars(text, open_index):
        depth += (char in _OPENERS) - (char in _CLOSERS)
        if depth == 0:
            return index
    return None


def _arguments(text: str, open_index: int) -> list[str] | None:
    """The top-level comma-separated arguments of the call whose `(` is at open_index; None when unclosed."""
    close = _closing(text, open_index)
    if close is None:
        return None
    arguments, depth, start = [], 0, open_index + 1
    for index, char in _code_chars(text[:close], open_index + 1):
        depth += (char in _OPENERS) - (char in _CLOSERS)
        if char == "," and depth == 0:
            arguments.append(text[start:index].strip())
            start = index + 1
    last = text[start:close].strip()
    return [*arguments, last] if last or arguments else []


def _code_chars(text: str, start: int) -> Iterator[tuple[int, str]]:
    """(index, character) of text from start on, without the characters inside string and character literals."""
    index = start
    while index < len(text):
        char = text[index]
        if char in "\"'":
            end = text.find(char, index + 1)
            while end > 0 and text[end - 1] == "\\":
                end = text.find(char, end + 1)
            if end < 0:
                return
            index = end + 1
            continue
        yield index, char
        index += 1


# ---- what a configuration depends on --------------------------------------------------------------------------


def _statements(text: str, language: str) -> list[str]:
    """The function's statements: C-family code split at `;` and braces (a statement may span lines), Python at
    line breaks."""
    pieces = text.splitlines() if language == "python" else re.split(r"[;{}]", text)
    return [piece.strip() for piece in pieces if piece.strip()]


def _shape(config: str, statements: list[str], language: str) -> str:
    """config and the statements assigning the values it reads, transitively (see launch_shapes)."""
    wanted = _values_read(config)
    used: set[int] = set()
    grew = True
    while grew:  # a pass per link of the longest chain of values assigned out of order (loops): few
        grew = False
        for index, statement in enumerate(statements):
            if index in used:
                continue
            assigned = _assigned_value(statement, wanted, language)
            if assigned is not None:
                used.add(index)
                wanted |= _values_read(assigned)
                grew = True
    parts = [config, *(statements[index] for index in sorted(used))]
    return "\n".join(normalise_code(part, language) for part in parts)


def _values_read(expression: str) -> set[str]:
    """Identifiers an expression reads as values: not the functions it calls (`dim3(...)`, `cdiv(...)`)."""
    return {match.group(0) for match in _IDENTIFIER_RE.finditer(expression)
            if not expression[match.end():].lstrip().startswith("(")}


def _assigned_value(statement: str, names: set[str], language: str) -> str | None:
    """The expression a statement assigns to one of names (`x = e`, `x += e`, `grid.x = e`, and in C `dim3 x(e)`
    or `T x{e}`), or None when it assigns none of them. Inside brackets `x=e` is a keyword argument (the launch's
    own `BLOCK_SIZE=1024`), not an assignment."""
    for match in _IDENTIFIER_RE.finditer(statement):
        if match.group(0) not in names or statement[max(0, match.start() - 1):match.start()] == ".":
            continue
        if _depth(statement[:match.start()]):
            continue
        rest = statement[match.end():]
        assignment = re.match(r"\s*(?:\.\w+\s*)?(?:[-+*/%&|^]|<<|>>)?=(?!=)", rest)
        if assignment:
            return rest[assignment.end():]
        declared = language != "python" and re.match(r"\s*[({]", rest) and re.search(r"\w[\w:<>]*\s+$",
                                                                                    statement[:match.start()])
        if declared:
            return rest
    return None


def _depth(text: str) -> int:
    """How many brackets are open at the end of text."""
    return sum((char in _OPENERS) - (char in _CLOSERS) for _, char in _code_chars(text, 0))
