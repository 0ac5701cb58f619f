"""Static facts of an application function: its loops found by its base name, or around its hottest line when
its code was inlined from a header that does not define it."""

from __future__ import annotations

from pathlib import Path

import pytest

from perfforge.records import HotLine
from profiling.cpu.static_facts import base_name, function_static_facts

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
