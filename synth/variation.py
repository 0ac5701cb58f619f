"""What pattern generators share: element types, harness text, and the small pieces of surrounding code that make
two instances of one pattern read differently.

Harnesses follow the protocol of profiling/runtime (perfforge_harness.h for C, C++ and CUDA; perfforge_harness.py
for Triton): draw inputs from the seed, call the kernel's launcher inside pf_begin/pf_end, write every output.
"""

from __future__ import annotations

from dataclasses import dataclass

# Task dtype -> C type, harness dtype tag, literal suffix.
C_TYPE = {"float32": "float", "float64": "double", "int32": "int", "float16": "__half", "uint8": "unsigned char"}
PF_DTYPE = {"float32": "PF_F32", "float64": "PF_F64", "int32": "PF_I32", "float16": "PF_F16", "uint8": "PF_U8",
            "int64": "PF_I64", "bfloat16": "PF_BF16"}
LITERAL_SUFFIX = {"float32": "f", "float64": ""}


def literal(value: float, dtype: str) -> str:
    """A floating literal of the element type: 0.5f for float32, 0.5 for float64."""
    return f"{value!r}{LITERAL_SUFFIX.get(dtype, '')}"


@dataclass(frozen=True)
class Buffer:
    """One harness buffer: `role` in (input), out (output, poisoned before each checked call) or inout (drawn,
    then updated in place by the kernel)."""

    name: str
    dtype: str
    count: str  # C expression of the element count over the int params
    role: str = "in"
    low: float = -1.0
    high: float = 1.0

    @property
    def c_type(self) -> str:
        return C_TYPE[self.dtype]


def c_harness(scalars: list[tuple[str, str, int | float]], buffers: list[Buffer], launcher: str,
              args: tuple[str, ...]) -> str:
    """A C, C++ or CUDA harness: scalars are (name, C type, default), read with pf_param_int or
    pf_param_double; the launcher gets the buffers in order (inputs as const pointers), then the scalars named in
    `args`."""
    prototype = [("const " if b.role == "in" else "") + f"{b.c_type} *{b.name}" for b in buffers]
    types = {name: ctype for name, ctype, _ in scalars}
    prototype += [f"{types[name]} {name}" for name in args]
    lines = ['#include "perfforge_harness.h"', "", f"void {launcher}({', '.join(prototype)});", "",
             "int main(int argc, char **argv) {", "    pf_run r;", "    pf_init(&r, argc, argv);"]
    for name, ctype, default in scalars:
        reader = "pf_param_int" if ctype == "int" else "pf_param_double"
        lines.append(f'    {ctype} {name} = ({ctype}){reader}(&r, "{name}", {default!r});')
    for b in buffers:
        count = f"(size_t)({b.count})"
        if b.role == "out":
            lines.append(f'    pf_buf *{b.name}_buf = pf_output(&r, "{b.name}", {PF_DTYPE[b.dtype]}, {count});')
        else:
            call = "pf_input" if b.role == "in" else "pf_inout"
            lines.append(f'    pf_buf *{b.name}_buf = {call}(&r, "{b.name}", {PF_DTYPE[b.dtype]}, {count}, {b.low!r}, '
                         f"{b.high!r});")
    call_args = [("(const " if b.role == "in" else "(") + f"{b.c_type} *)pf_ptr({b.name}_buf)" for b in buffers]
    call, width = f"{launcher}(", len(launcher) + 9
    for k, arg in enumerate(call_args + list(args)):  # wrapped at 110 columns, continuation under the first
        piece = arg + (", " if k < len(call_args) + len(args) - 1 else ");")
        if len(call.rsplit("\n", 1)[-1]) + len(piece) + 8 > 110:
            call = call.rstrip() + "\n" + " " * width
        call += piece
    lines += ["    while (pf_begin(&r)) {", f"        {call}", "        pf_end(&r);", "    }",
              "    return pf_finish(&r);", "}", ""]
    return "\n".join(lines)


def python_harness(ints: dict[str, int], floats: dict[str, float],
                   buffers: list[tuple[str, str, str, float, float, bool]], call: str, doc: str) -> str:
    """A Python harness (profiling/runtime/perfforge_harness.py): int and float parameters, then the buffers
    (name, dtype, shape expression, low, high, is_output), then `call` (the kernel module is `kernel`) per run."""
    lines = [f'"""{doc}"""', "", "import kernel", "from perfforge_harness import Run", "", "", "def main() -> int:",
             "    r = Run()"]
    lines += [f'    {name} = r.param_int("{name}", {default})' for name, default in ints.items()]
    lines += [f'    {name} = r.param_float("{name}", {default!r})' for name, default in floats.items()]
    for name, dtype, shape, low, high, is_output in buffers:
        if is_output:
            lines.append(f'    {name} = r.output("{name}", "{dtype}", {shape})')
        else:
            lines.append(f'    {name} = r.input("{name}", "{dtype}", {shape}, {low!r}, {high!r})')
    lines += ["    while r.begin():", f"        {call}", "        r.end()", "    return r.finish()", "", "",
              'if __name__ == "__main__":', "    raise SystemExit(main())", ""]
    return "\n".join(lines)


def header_comment(summary: str, style: str = "c") -> str:
    """The file's opening comment (C block or Python docstring-free comment lines)."""
    if style == "python":
        return "\n".join(f"# {line}" for line in summary.splitlines()) + "\n"
    return "/* " + "\n * ".join(summary.splitlines()) + " */\n"
