"""call_overhead seen from the caller (issue 20, CPU side): johnysswlab's selection sort calls a noinline helper
3.2e7 times, and the rule, which read only the profiled function's own call count, flagged the helper but not the
sort the label names. Callgrind's call counts per source line now reach the profile (`source_calls`, calls to the
source's other functions that were left out of line), and the rule counts their overhead against the caller. Each
on a real C program built with gcc and profiled under callgrind, with a twin whose helper is inlined (no calls
left) that must not get it."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from perfforge.records import Profile
from profiling.application import profile_application
from profiling.cpu.callgrind import parse_callgrind

needs_tools = pytest.mark.skipif(shutil.which("valgrind") is None or shutil.which("gcc") is None,
                                 reason="CPU profiles need gcc and valgrind")

SORT = """#include <stdio.h>
#include <stdlib.h>

HELPER void update_min(const int *a, int j, int *best) {
    if (a[j] < a[*best]) *best = j;
}

void selection_sort(int *a, int n) {
    for (int i = 0; i < n; i++) {
        int best = i;
        for (int j = i + 1; j < n; j++)
            update_min(a, j, &best);
        int t = a[i]; a[i] = a[best]; a[best] = t;
    }
}

int main(void) {
    int n = 800;
    int *a = malloc(n * sizeof *a);
    srand(1);
    for (int i = 0; i < n; i++) a[i] = rand() % 100000;
    selection_sort(a, n);
    printf("%d %d\\n", a[0], a[n - 1]);
    free(a);
    return 0;
}
"""


def _sort_profile(tmp_path: Path, helper: str) -> Profile:
    (tmp_path / "prog.c").write_text(SORT.replace("HELPER", helper))
    subprocess.run(["gcc", "-O2", "-g", "prog.c", "-o", "prog"], cwd=tmp_path, check=True)
    profiles = profile_application("./prog", tmp_path, target="cpu", top=3, work_dir=tmp_path / "work")
    return next(p for p in profiles if p.kernel.split("(")[0] == "selection_sort")


@needs_tools
def test_a_caller_of_a_helper_left_out_of_line_is_call_overhead(tmp_path: Path) -> None:
    profile = _sort_profile(tmp_path, "__attribute__((noinline)) static")
    assert profile.counter("source_calls") == pytest.approx(800 * 799 / 2)
    first = profile.diagnoses[0]
    assert first.name == "call_overhead"
    assert any(f.metric == "call_overhead_share" and f.lines == [12] for f in first.findings)
    assert any("update_min(a, j, &best);" in line for line in first.evidence)


@needs_tools
def test_the_same_sort_with_the_helper_inlined_has_no_call_overhead(tmp_path: Path) -> None:
    profile = _sort_profile(tmp_path, "static inline")
    assert profile.counter("source_calls") == 0
    assert "call_overhead" not in [d.name for d in profile.diagnoses]


CALLGRIND_OUT = """events: Ir
fl=(1) /src/prog.c
fn=(1) kernel
10 5
cfl=(1)
cfn=(2) helper
calls=1000 20
12 3000
cfl=(2) /lib/libm.so
cfn=(3) sqrt
calls=50 0
13 400
fn=(2) helper
20 3000
fn=(4) main
cfl=(1)
cfn=(1)
calls=1 10
30 6505
"""


def test_source_calls_count_calls_to_the_sources_own_functions_only() -> None:
    """A call to a libm function cannot be inlined by changing the source; calls to the kernel itself are the
    recursion the own-calls side reads: neither counts."""
    result = parse_callgrind(CALLGRIND_OUT, "prog.c", "kernel")
    assert result.lines[12].source_calls == 1000
    assert result.lines[13].source_calls == 0
    assert result.source_calls == 1000
