"""The source facts read a kernel's file with its macros expanded by the real preprocessor (profiling/cpu/
preprocess.py), at the file's own line numbers. Each case is a small C source whose point is behind a macro; each
asserts the fact on the expanded reading and its absence on the text as written (the fix's twin).

Scenario (ufidon/ca, issue 20): CS:APP's combine2 writes `*dest = *dest OP val` under `#define OP *`, and loops.c
is a fragment that only its driver's include of combine.h completes; the raw text hid the accumulator in memory."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from perfforge.records import HotLine
from profiling.cpu import loops
from profiling.cpu.compile_command import including_unit
from profiling.cpu.preprocess import expanded_source, file_lines, preprocessor_flags
from profiling.cpu.static_facts import function_static_facts

pytestmark = pytest.mark.skipif(shutil.which("gcc") is None, reason="needs gcc")

COMBINE2 = """\
#define IDENT 1
#define OP *
typedef double data_t;
/* Move call to vec_length out of loop */
void combine2(const data_t *v, long length, data_t *dest)
{
    *dest = IDENT;
    for (long i = 0; i < length; i++) {
        data_t val = v[i];
        *dest = *dest OP val;
    }
}
"""

LOWER = """\
#include <string.h>
#define LENGTH(s) strlen(s)
void copy_lower(const char *s, char *out)
{
    for (size_t i = 0; i < LENGTH(s); i++)
        out[i] = s[i] | 0x20;
}
"""

COMBINE_H = "#define IDENT 1\n#define OP *\ntypedef double data_t;\n"
COMBINE5 = """\
#include "combine.h"
void combine5(const data_t *data, long length, data_t *dest)
{
    data_t acc = IDENT;
    for (long i = 0; i + 1 < length; i += 2)
        acc = ((acc OP data[i]) OP data[i + 1]) OP data[i];
    *dest = acc;
}
"""


def _expanded(tmp_path: Path, name: str, text: str, flags: list[str] | None = None):
    source = tmp_path / name
    source.write_text(text)
    return expanded_source(source, text, "gcc", flags or [], tmp_path / "scratch")


def test_a_macro_defined_operation_is_an_accumulator_in_memory(tmp_path: Path) -> None:
    expanded = _expanded(tmp_path, "combine.c", COMBINE2)
    assert expanded.expanded and "gcc -E" in expanded.describe()
    assert expanded.text.split("\n")[9] == "        *dest = *dest * val;"  # line 10, where the user sees it
    assert len(expanded.text.split("\n")) == len(COMBINE2.split("\n"))
    found = loops.analyze_loops(expanded.text, "combine2", "c").accumulators
    assert [(a.line, a.loop_line, a.target) for a in found] == [(10, 8, "*dest")]
    assert loops.analyze_loops(COMBINE2, "combine2", "c").accumulators == []  # as written: OP hides it


def test_a_macro_defined_loop_bound_is_a_loop_invariant_call(tmp_path: Path) -> None:
    expanded = _expanded(tmp_path, "lower.c", LOWER)
    invariants = loops.analyze_loops(expanded.text, "copy_lower", "c").invariants
    assert [(i.line, i.text, i.kind) for i in invariants] == [(5, "strlen(s)", "call")]
    assert loops.analyze_loops(LOWER, "copy_lower", "c").invariants == []


def test_an_operation_from_an_included_header_follows_the_include_flags(tmp_path: Path) -> None:
    """combine.h sits in inc/, found through the build's -I: the chain is three multiplications an iteration."""
    (tmp_path / "inc").mkdir()
    (tmp_path / "inc" / "combine.h").write_text(COMBINE_H)
    expanded = _expanded(tmp_path, "combine5.c", COMBINE5, ["-O1", f"-I{tmp_path / 'inc'}", "-c", "-o", "x.o"])
    assert expanded.expanded
    chains = loops.analyze_loops(expanded.text, "combine5", "c").chains
    assert [(c.target, c.loop_line, c.operations) for c in chains] == [("acc", 5, 3)]
    assert loops.analyze_loops(COMBINE5, "combine5", "c").chains == []
    without = _expanded(tmp_path, "combine5.c", COMBINE5, ["-O1"])  # the header is not found: as written
    assert not without.expanded and without.text == COMBINE5
    assert "combine.h" in without.describe() and "as written" in without.describe()


def test_a_compiler_without_gcc_s_preprocessor_leaves_the_text_as_written(tmp_path: Path) -> None:
    source = tmp_path / "k.c"
    source.write_text(COMBINE2)
    expanded = expanded_source(source, COMBINE2, "nvcc", [], tmp_path)
    assert not expanded.expanded and expanded.text == COMBINE2 and "nvcc" in expanded.reason


def test_only_the_first_inclusion_of_a_file_is_read() -> None:
    """An X-macro file included twice: its lines are those of its first inclusion, not both joined."""
    output = ('# 0 "/p/unit.c"\n# 0 "<built-in>"\n# 0 "<command-line>"\n# 1 "/usr/include/stdc-predef.h" 1 3 4\n'
              '# 0 "<command-line>" 2\n# 1 "/p/unit.c"\n# 1 "/p/x.def" 1\nint a;\nint b;\n# 2 "/p/unit.c" 2\n'
              '# 1 "/p/x.def" 1\nfloat a;\nfloat b;\n# 3 "/p/unit.c" 2\nint c;\n')
    assert file_lines(output, Path("/p/x.def"), Path("/"), 2) == ["int a;", "int b;"]
    assert file_lines(output, Path("/p/unit.c"), Path("/"), 3) == ["", "", "int c;"]
    assert file_lines(output, Path("/p/other.c"), Path("/"), 3) is None


def test_outputs_and_link_inputs_are_not_passed_to_the_preprocessor() -> None:
    flags = ["-O3", "-c", "-o", "k.o", "-DN=4", "-I", "inc", "-fopenmp", "-lm", "-MD", "-MF", "k.d", "-march=native"]
    assert preprocessor_flags(flags) == ["-O3", "-DN=4", "-I", "inc", "-fopenmp", "-march=native"]


FRAGMENT = """\
/* no includes: the driver defines data_t and OP before including this file */
void combine2(const data_t *v, long length, data_t *dest)
{
    *dest = IDENT;
    for (long i = 0; i < length; i++)
        *dest = *dest OP v[i];
}
"""
DRIVER = """\
#include <stdlib.h>
#define IDENT 1
#define OP *
typedef double data_t;
#include "fragment.c"
int main(int argc, char **argv)
{
    static data_t v[1000];
    data_t r;
    for (int i = 0; i < 1000; i++) v[i] = 1.0 + i * 1e-9;
    void (*volatile f)(const data_t *, long, data_t *) = combine2;
    f(v, 1000 + argc - 1, &r);
    return r > 2.0;
}
"""


@pytest.mark.skipif(shutil.which("readelf") is None, reason="needs readelf")
def test_a_fragment_included_by_its_driver_is_read_through_the_driver(tmp_path: Path) -> None:
    """Application mode: combine2 lies in fragment.c, which no unit compiles as its own; the driver's unit
    (found through the binary's line tables) preprocesses it with the driver's macros."""
    (tmp_path / "lib").mkdir()
    fragment = tmp_path / "lib" / "fragment.c"
    fragment.write_text(FRAGMENT)
    (tmp_path / "driver.c").write_text(DRIVER)
    binary = tmp_path / "prog"
    subprocess.run(["gcc", "-O1", "-g", "-Ilib", "driver.c", "-o", str(binary)], cwd=tmp_path, check=True)
    unit = including_unit(binary, fragment)
    assert unit is not None and unit.source.name == "driver.c"
    hot = [HotLine(line=6, code="", share=0.9, dominant_stall="", metrics=[])]
    facts = function_static_facts("combine2", fragment, hot, binary, [str(fragment)], tmp_path / "static")
    assert hot[0].metric("static.memory_accumulators") == 1
    assert hot[0].metric("static.loop_depth") == 1
    assert "through driver.c" in facts.description


@pytest.mark.skipif(shutil.which("readelf") is None, reason="needs readelf")
def test_a_function_under_an_unrecorded_macro_is_read_as_written(tmp_path: Path) -> None:
    """gcc records no -D in the binary: a function under `#ifdef USE_SUM` is absent from the preprocessed text, so
    the facts read the file as written and say why."""
    source = tmp_path / "k.c"
    source.write_text("#ifdef USE_SUM\ndouble sum(const double *x, long n)\n{\n    double s = 0;\n"
                      "    for (long i = 0; i < n; i++)\n        s += x[i];\n    return s;\n}\n#endif\n"
                      "int main(void) { static double x[8]; return sum(x, 8) > 1; }\n")
    binary = tmp_path / "prog"
    subprocess.run(["gcc", "-O1", "-g", "-DUSE_SUM", "k.c", "-o", str(binary)], cwd=tmp_path, check=True)
    hot = [HotLine(line=6, code="", share=0.9, dominant_stall="", metrics=[])]
    facts = function_static_facts("sum", source, hot, binary, [str(source)], tmp_path / "static")
    assert hot[0].metric("static.loop_depth") == 1
    assert "sum is not in the preprocessed text" in facts.description
