"""Static facts of an application function: its loops found by its base name, or around its hottest line when
its code was inlined from a header that does not define it."""

from __future__ import annotations

from pathlib import Path

import pytest

from perfforge.records import HotLine
from profiling.cpu.loops import declarations
from profiling.cpu.static_facts import INCLUDED_BODY, as_included_body, base_name, function_static_facts

LIFE_HPP = """\
struct Life {
    int cells[64][64];
    int next[64][64];
    void simulateNext() {
        for (int i = 1; i < 63; i++)
            for (int j = 1; j < 63; j++)
                next[i][j] = cells[i - 1][j] + cells[i + 1][j];
    }
};
"""


@pytest.mark.parametrize(("symbol", "name"), [
    ("select(std::array<unsigned int, 8192ul> const&, unsigned int) [clone .constprop.0]", "select"),
    ("void ns::kern<64, 8>(float*, int)", "ns::kern"),
    ("(anonymous namespace)::f(int)", "f"),
    ("dot.constprop.0", "dot"),
    ("f.part.0.cold", "f"),
    ("strided", "strided"),
])
def test_base_name(symbol: str, name: str) -> None:
    assert base_name(symbol) == name


def test_code_inlined_from_a_header_is_analysed_in_the_function_around_it(tmp_path: Path) -> None:
    """Scenario (perf-ninja's branches_to_cmov_1): `solution` is defined in solution.cpp, its hot code is
    Life::simulateNext inlined from solution.hpp, the file its hot lines are read from."""
    header = tmp_path / "solution.hpp"
    header.write_text(LIFE_HPP)
    hot = [HotLine(line=7, code="", share=0.9, dominant_stall="", metrics=[])]
    facts = function_static_facts("solution(std::vector<Life>&)", header, hot, tmp_path / "absent", [], tmp_path)
    assert hot[0].metric("static.loop_depth") == 2 and hot[0].metric("static.outer_loop_line") == 5
    assert {c.name for c in facts.counters} == {"cpu_cores", "static.openmp_pragmas", "static.thread_spawns"}
    assert "none" in facts.description


MATRIX_CPP = """\
constexpr int N = 64;
void zero(float (&r)[N][N]) {
    for (int i = 0; i < N; i++)
        for (int j = 0; j < N; j++)
            r[i][j] = 0;
}
void multiply(float (&r)[N][N], const float (&a)[N][N], const float (&b)[N][N]) {
    zero(r);
    for (int i = 0; i < N; i++)
        for (int j = 0; j < N; j++)
            for (int k = 0; k < N; k++)
                r[i][j] += a[i][k] * b[k][j];
}
void power(float (&r)[N][N], const float (&a)[N][N], float (&t)[N][N], int k) {
    for (int i = 0; i < k; i++) {
        multiply(t, r, a);
        #pragma omp parallel for
        for (int x = 0; x < N; x++)
            for (int y = 0; y < N; y++)
                r[x][y] = t[x][y];
    }
}
"""


def test_hot_lines_of_a_callee_inlined_from_the_same_file_get_the_callee_s_loops(tmp_path: Path) -> None:
    """Scenario (perf-ninja's loop_interchange_1): callgrind names `power`, defined in the file, but its hot lines
    are the loop nest of `multiply`, inlined into it. Read in `power`, those lines were in no loop (depth 0), and no
    loop rule could see the nest; they take `multiply`'s loops, power's own line keeps power's, and power's OpenMP
    region still counts for the kernel."""
    source = tmp_path / "solution.cpp"
    source.write_text(MATRIX_CPP)
    hot = [HotLine(line=line, code="", share=0.3, dominant_stall="", metrics=[]) for line in (11, 12, 20)]
    facts = function_static_facts("power(float (&) [64][64], float const (&) [64][64], float (&) [64][64], int)",
                                  source, hot, tmp_path / "absent", [], tmp_path)
    inner, body, copy = hot
    assert inner.metric("static.loop_depth") == 3 and inner.metric("static.outer_loop_line") == 9
    assert body.metric("static.loop_depth") == 3
    assert copy.metric("static.loop_depth") == 3 and copy.metric("static.outer_loop_line") == 15
    counters = {c.name: c.value for c in facts.counters}
    assert counters["static.openmp_pragmas"] == 1 and len(facts.counters) == 3


BODY_C = """\
// the loop body of v0, included into main's timing loop by pipeline.c
//
{
  for ( int i = 0; i < N; i++ )
    sum += array1[i] * array2[i];
}
"""


def test_a_file_included_into_a_function_s_body_is_read_as_a_body(tmp_path: Path) -> None:
    """Scenario (INAF HPC school's multiply_arrays, session 28's miss): main `#include`s v0.c, a block holding the
    dot product's loop, inside its timing loop; callgrind names main and reads its hot lines from v0.c, which
    defines no function. The lines were in no loop (depth 0) and carried no loop fact; read as a function's body
    at its own line numbers they are in the loop of line 4, which carries `sum`."""
    body = tmp_path / "v0.c"
    body.write_text(BODY_C)
    hot = [HotLine(line=line, code="", share=0.4, dominant_stall="", metrics=[]) for line in (5, 4)]
    function_static_facts("main", body, hot, tmp_path / "absent", [], tmp_path)
    for line in hot:
        assert line.metric("static.loop_depth") == 1 and line.metric("static.outer_loop_line") == 4
        assert line.metric("static.carried_reduction.+.sum") == 5


def test_an_included_body_opens_after_the_directives_and_keeps_line_numbers() -> None:
    text = "#pragma once\n#define STEP 2\n/* a comment */ {\n  x += STEP;\n}"
    wrapped = as_included_body(text).split("\n")
    assert wrapped[:2] == ["#pragma once", "#define STEP 2"]
    assert wrapped[2].startswith(f"void {INCLUDED_BODY}(void) {{ /* a comment */ {{")
    assert wrapped[3] == "  x += STEP;" and wrapped[-2:] == ["}", ""]
    assert as_included_body("#include <x.h>\n") == "#include <x.h>\n"
    declared = as_included_body(text, ["double x = 0;", "int n;"]).split("\n")
    assert declared[2] == f"void {INCLUDED_BODY}(void) {{ double x = 0; int n; /* a comment */ {{"


def test_an_including_function_s_declarations_are_its_own_parameters_and_locals() -> None:
    """What a body included into `run` sees: its parameters (not the parameters of a function-pointer parameter's
    type) and its locals, one statement a line."""
    unit = "int run(const double *a, int (*cmp)(int, int), int n) {\n    double sum = 0,\n        x;\n    return n;\n}"
    assert declarations(unit, "run") == ["const double *a;", "int (*cmp)(int, int);", "int n;", "double sum = 0, x;"]
    assert declarations(unit, "absent") == []
