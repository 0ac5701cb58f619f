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
    """One harness buffer: an input drawn uniformly in [low, high) or an output the kernel writes."""

    name: str
    dtype: str
    count: str  # C expression of the element count over the int params
    output: bool = False
    low: float = -1.0
    high: float = 1.0

    @property
    def c_type(self) -> str:
        return C_TYPE[self.dtype]


def c_harness(params: dict[str, int], buffers: list[Buffer], launcher: str, args: tuple[str, ...] = (),
              includes: tuple[str, ...] = ()) -> str:
    """A C/C++/CUDA harness: reads the int params (with their defaults), draws the inputs, calls `launcher` with
    the buffers in order (inputs as const pointers), then the int params named in `args`, in that order."""
    lines = ['#include "perfforge_harness.h"', *(f"#include {header}" for header in includes)]
    prototype = [("const " if not b.output else "") + f"{b.c_type} *{b.name}" for b in buffers]
    prototype += [f"int {name}" for name in args]
    lines.append(f"void {launcher}({', '.join(prototype)});")
    lines += ["", "int main(int argc, char **argv) {", "    pf_run r;", "    pf_init(&r, argc, argv);"]
    lines += [f'    int {name} = (int)pf_param_int(&r, "{name}", {default});' for name, default in params.items()]
    for b in buffers:
        head = f'    pf_buf *{b.name}_buf = pf_{"output" if b.output else "input"}(&r, "{b.name}", {PF_DTYPE[b.dtype]}'
        lines.append(f"{head}, (size_t)({b.count}));" if b.output else
                     f"{head}, (size_t)({b.count}), {b.low!r}, {b.high!r});")
    call_args = [("(const " if not b.output else "(") + f"{b.c_type} *)pf_ptr({b.name}_buf)" for b in buffers]
    lines += ["    while (pf_begin(&r)) {", f"        {launcher}({', '.join(call_args + list(args))});",
              "        pf_end(&r);", "    }", "    return pf_finish(&r);", "}", ""]
    return "\n".join(lines)


def python_harness(params: dict[str, int], buffers: list[tuple[str, str, str, float, float, bool]], call: str,
                   doc: str) -> str:
    """A Triton/torch harness: buffers are (name, dtype, shape expression, low, high, is_output); `call` is the
    Python expression that runs the kernel module's launcher (the module is imported as `kernel`)."""
    lines = [f'"""{doc}"""', "", "import kernel", "from perfforge_harness import Run", "", "", "def main() -> int:",
             "    r = Run()"]
    lines += [f'    {name} = r.param_int("{name}", {default})' for name, default in params.items()]
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
