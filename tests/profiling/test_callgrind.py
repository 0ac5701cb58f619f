"""callgrind: a real valgrind run on a small harness the test writes, and the parser on hand-written output."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from profiling.cpu import callgrind
from tests.profiling.conftest import rows_harness

RUNTIME = Path(__file__).resolve().parents[2] / "profiling" / "runtime"

KERNEL_C = """\
#include <math.h>
void walk(const float *a, float *out, int n) {
    float s = 0.0f;
    for (int i = 0; i < n; i++) {
        for (int j = 0; j < n; j++) {
            s += a[j * n + i];
        }
    }
    for (int i = 0; i < n; i++) {
        out[i] = s + expf(a[i]);
    }
}
"""

HARNESS_C = rows_harness("walk", 128)

needs_valgrind = pytest.mark.skipif(shutil.which("valgrind") is None, reason="valgrind is not installed")


@pytest.fixture(scope="module")
def column_walk(tmp_path_factory: pytest.TempPathFactory) -> callgrind.CallgrindResult:
    """A column walk over a 256x256 matrix (one cache line per element) and a loop calling expf."""
    directory = tmp_path_factory.mktemp("walk")
    (directory / "kernel.c").write_text(KERNEL_C)
    (directory / "harness.c").write_text(HARNESS_C)
    subprocess.run(["gcc", "-O2", "-g", f"-I{RUNTIME}", "harness.c", "kernel.c", "-o", "bin", "-lm"], cwd=directory,
                   check=True)
    return callgrind.run_callgrind(directory / "bin", ["n=256"], "walk", "kernel.c", directory / "scratch")


@needs_valgrind
def test_counts_only_the_kernel_per_call(column_walk: callgrind.CallgrindResult) -> None:
    assert column_walk.kernel_calls == 2  # profile mode: one warm-up call and the profiled one
    loads = column_walk.totals["Dr"]
    assert 256 * 256 <= loads < 3 * 256 * 256  # one load per element per call, not the harness's input filling
    assert column_walk.totals["Ir"] < 40 * 256 * 256


@needs_valgrind
def test_column_walk_line_misses_d1(column_walk: callgrind.CallgrindResult) -> None:
    source = KERNEL_C.split("\n")
    hot = callgrind.hot_lines(column_walk, source)
    assert {line.line for line in hot[:2]} == {5, 6}  # the inner loop: its header and s += a[j * n + i]
    worst = max(hot, key=lambda line: line.metric("D1_misses") or 0)
    # stride 1 KiB: every access a new line, and the 256 lines of a column alias in 16 sets of D1
    assert worst.line == 6 and worst.metric("D1_miss_rate") > 50
    assert sum(line.share for line in hot) == pytest.approx(1.0, abs=0.02)


@needs_valgrind
def test_library_calls_are_charged_to_the_calling_line(column_walk: callgrind.CallgrindResult) -> None:
    cost = column_walk.lines[10]  # out[i] = s + expf(a[i])
    assert cost.calls.get("Ir", 0) > 256 * 5  # expf's instructions, ~256 calls of several instructions
    assert cost.total("Ir") > cost.own["Ir"]


@needs_valgrind
def test_counters_have_units_and_rates(column_walk: callgrind.CallgrindResult) -> None:
    counters = {c.name: c for c in callgrind.counters(column_walk)}
    assert counters["Ir"].unit == "inst" and counters["D1mr"].unit == "miss"
    assert 0 < counters["D1_miss_rate"].value <= 100 and counters["D1_miss_rate"].unit == "%"


# Hand-written output in callgrind's format: main (harness.c) calls kernel twice; the kernel's line 5 calls expf
# (inclusive 100 Ir) and GOMP_parallel, which calls back into the kernel's outlined region (kernel.c line 9).
CALLGRIND_TEXT = """\
events: Ir Dr Dw I1mr D1mr D1mw ILmr DLmr DLmw Bc Bcm Bi Bim
fl=/build/harness.c
fn=main
cfi=/build/kernel.c
cfn=kernel
calls=2 3
20 400
fl=/build/kernel.c
fn=kernel
4 10 2 0 0 1
5 20
cfi=???
cfn=expf
calls=10 0
5 100 10
cfn=GOMP_parallel
calls=1 0
6 200
fn=kernel._omp_fn.0
9 150 50 0 0 5 0 0 0 0 10 4
fl=/lib/libm.c
fn=expf
+1 100 10
fl=/lib/gomp.c
fn=GOMP_parallel
1 50
cfi=/build/kernel.c
cfn=kernel._omp_fn.0
calls=1 9
2 150
totals: 430 62 0 0 6 0 0 0 0 10 4
"""


def test_parser_separates_own_and_call_costs() -> None:
    result = callgrind.parse_callgrind(CALLGRIND_TEXT, "kernel.c", "kernel")
    assert result.kernel_calls == 2
    assert result.totals["Ir"] == 215  # per call
    assert result.lines[4].own == {"Ir": 5.0, "Dr": 1.0, "D1mr": 0.5}
    assert result.lines[5].own == {"Ir": 10.0} and result.lines[5].calls == {"Ir": 50.0, "Dr": 5.0}
    # GOMP_parallel calls back into the source: its inclusive cost would count line 9 twice
    assert 6 not in result.lines
    assert result.lines[9].own["Bcm"] == 2.0
    assert set(result.lines) == {4, 5, 9}


def test_relative_positions_and_compressed_names() -> None:
    text = ("events: Ir\nfl=(1) /b/kernel.c\nfn=(1) kernel\n10 1\n+2 3\n* 4\n-1 5\n"
            "fn=(2) other\nfl=(1)\nfn=(1)\n12 6\ntotals: 19\n")
    result = callgrind.parse_callgrind(text, "kernel.c", "kernel")
    assert {line: cost.own["Ir"] for line, cost in result.lines.items()} == {10: 1.0, 12: 13.0, 11: 5.0}


def test_inlined_intrinsics_are_charged_to_the_source_line_before_them_and_other_headers_are_not() -> None:
    """A hand-vectorised loop (how-to-optimize-gemm's MMult_4x4_10, measured): every load is an inlined
    `_mm_load_pd` whose debug lines are emmintrin.h's, so the loop's 75% D1 misses were on no source line and no
    cache rule could see them. Intrinsics headers' costs go to the source line listed before them (the same loop);
    a C++ library header's inlined code stays off the source, and a function's first lines inherit nothing."""
    text = ("events: Ir Dr D1mr\nfl=/b/gemm.c\nfn=kernel\n"
            "fi=/usr/lib/gcc/x86_64-linux-gnu/12/include/emmintrin.h\n124 7 7 7\n"  # before any source line
            "fe=/b/gemm.c\n87 10\n97 4\n"
            "fi=/usr/lib/gcc/x86_64-linux-gnu/12/include/emmintrin.h\n124 8 8 6\n75 4 4 2\n"
            "fi=/usr/include/c++/12/bits/stl_vector.h\n1125 5 5 5\n"
            "fe=/b/gemm.c\n98 4\ntotals: 42 24 20\n")
    result = callgrind.parse_callgrind(text, "gemm.c", "kernel")
    assert {line: cost.own for line, cost in result.lines.items()} == {
        87: {"Ir": 10.0}, 97: {"Ir": 16.0, "Dr": 12.0, "D1mr": 8.0}, 98: {"Ir": 4.0}}


def test_a_headers_inlined_code_is_charged_to_the_call_the_binary_says_inlined_it() -> None:
    """`std::find` inlined into the kernel (CoffeeBeforeArch's duplicate_removal): its loop is filed under
    stl_algobase.h's lines. With the binary's inline sites (disassembly.inline_sites) a header location one source
    line inlined is charged to that line, its calls too (never as calls of the source's own functions); one that
    several lines inlined is split evenly among them (callgrind's line counts cannot tell the copies apart: an
    estimate); another function's code (a callee's, fn=helper) maps nothing, even at the same header location."""
    algo = "/usr/include/c++/12/bits/stl_algobase.h"
    text = ("events: Ir Dr\nfl=/b/dedup.cpp\nfn=kernel(int)\n38 3\n"
            f"fi={algo}\n2072 100 50\n2073 7\n"
            "cfn=helper\ncalls=2 5\n2072 30 3\n"
            "fe=/b/dedup.cpp\n41 2\n"
            f"fi={algo}\n2073 5\n2080 9\n"
            f"fn=helper\nfi={algo}\n2072 11\ntotals: 167 53\n")
    sites = {(algo, 2072): frozenset({40}), (algo, 2073): frozenset({40, 41}), (algo, 2080): frozenset({40, 44})}
    result = callgrind.parse_callgrind(text, "dedup.cpp", "kernel", sites)
    assert {line: cost.own for line, cost in result.lines.items() if cost.own} == {
        38: {"Ir": 3.0}, 40: {"Ir": 110.5, "Dr": 50.0}, 41: {"Ir": 8.0}, 44: {"Ir": 4.5}}
    assert result.lines[40].calls == {"Ir": 30.0, "Dr": 3.0} and result.lines[40].source_calls == 0
    # without the sites, the library's code stays off the source as before
    assert {line for line, cost in callgrind.parse_callgrind(text, "dedup.cpp", "kernel").lines.items()
            if cost.own} == {38, 41}
