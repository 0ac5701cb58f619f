"""Work a rewrite avoids (issue 20): a histogram that finds each value's bin by scanning the bin edges one by one
(`linear_search`), and a smoothing stencil that recomputes its Gaussian coefficients for every output element
(`redundant_computation`). Each is a real C program built with gcc and profiled under callgrind in application
mode; its rewrite (the bin computed directly, the coefficients tabulated once) must not get the diagnosis.
Severity estimates recoverable time, so `missing_parallelism` no longer outranks the cause it depends on."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from perfforge.records import CounterValue, HotLine, Profile, Timing
from profiling.application import profile_application
from profiling.diagnoses import diagnose

needs_tools = pytest.mark.skipif(shutil.which("valgrind") is None or shutil.which("gcc") is None,
                                 reason="CPU profiles need gcc and valgrind")

MAIN_HIST = """
int main(void) {
    int n = 200000;
    float *x = malloc(n * sizeof(float));
    float edges[BINS + 1];
    int counts[BINS] = {0};
    for (int b = 0; b <= BINS; b++) edges[b] = (float)b / BINS;
    srand(1);
    for (int i = 0; i < n; i++) x[i] = (float)rand() / ((float)RAND_MAX + 1.0f);
    histogram(x, n, edges, BINS, counts);
    long total = 0;
    for (int b = 0; b < BINS; b++) total += counts[b] * (b + 1);
    printf("%ld\\n", total);
    return 0;
}
"""
HEAD = "#include <math.h>\n#include <stdio.h>\n#include <stdlib.h>\n#define BINS 64\n"
# Line 8 is the scan: the key x[i] is compared with each edge until one is larger (64 bins, uniform data: 32 steps
# on average).
HIST_SCAN = HEAD + """\
__attribute__((noinline)) void histogram(const float *x, int n, const float *edges, int nb, int *counts) {
    for (int i = 0; i < n; i++) {
        int b = 0;
        while (b < nb - 1 && x[i] >= edges[b + 1])
            b++;
        counts[b]++;
    }
}
""" + MAIN_HIST
# The fix: uniform edges let the bin be computed from the value.
HIST_DIRECT = HEAD + """\
__attribute__((noinline)) void histogram(const float *x, int n, const float *edges, int nb, int *counts) {
    float lo = edges[0], scale = nb / (edges[nb] - edges[0]);
    for (int i = 0; i < n; i++) {
        int b = (int)((x[i] - lo) * scale);
        counts[b < nb ? b : nb - 1]++;
    }
}
""" + MAIN_HIST
# A legitimate search: bisection over the edges (the index halves an interval, it is not stepped by one).
HIST_BISECT = HEAD + """\
__attribute__((noinline)) void histogram(const float *x, int n, const float *edges, int nb, int *counts) {
    for (int i = 0; i < n; i++) {
        int lo = 0, hi = nb;
        while (hi - lo > 1) {
            int mid = (lo + hi) / 2;
            if (x[i] >= edges[mid]) lo = mid; else hi = mid;
        }
        counts[lo]++;
    }
}
""" + MAIN_HIST

MAIN_SMOOTH = """
int main(void) {
    int n = 40000, r = 8;
    float *in = malloc(n * sizeof(float)), *out = calloc(n, sizeof(float));
    for (int i = 0; i < n; i++) in[i] = (float)(i % 13);
    smooth(in, out, n, r, 3.0f);
    double s = 0;
    for (int i = 0; i < n; i++) s += out[i];
    printf("%f\\n", s);
    return 0;
}
"""
# Line 9 recomputes the 17 coefficients (an expf each) for every one of the 40000 outputs.
SMOOTH_RECOMPUTE = HEAD + """\
__attribute__((noinline)) void smooth(const float *in, float *out, int n, int r, float sigma) {
    for (int i = r; i < n - r; i++) {
        float acc = 0.0f;
        for (int k = -r; k <= r; k++)
            acc += in[i + k] * expf(-(float)(k * k) / (2.0f * sigma * sigma));
        out[i] = acc;
    }
}
""" + MAIN_SMOOTH
SMOOTH_TABLE = HEAD + """\
__attribute__((noinline)) void smooth(const float *in, float *out, int n, int r, float sigma) {
    float w[64];
    for (int k = -r; k <= r; k++)
        w[k + r] = expf(-(float)(k * k) / (2.0f * sigma * sigma));
    for (int i = r; i < n - r; i++) {
        float acc = 0.0f;
        for (int k = -r; k <= r; k++)
            acc += in[i + k] * w[k + r];
        out[i] = acc;
    }
}
""" + MAIN_SMOOTH

# CS:APP 5.4's lower1 and lower2 (Fig. 5.7): lower1 calls strlen(s) in its loop test, so its time is quadratic in
# the string's length; it writes s[i], which the compiler cannot prove leaves strlen(s) unchanged, so it may not
# hoist the call (the fix, lower2, does by hand). Line 6 is lower1's loop test.
LOWER = """\
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
STRLEN
__attribute__((noinline)) void lower1(char *s) {
    for (size_t i = 0; i < strlen(s); i++)
        if (s[i] >= 'A' && s[i] <= 'Z')
            s[i] = s[i] + ('a' - 'A');
}
__attribute__((noinline)) void lower2(char *s) {
    size_t len = strlen(s);
    for (size_t i = 0; i < len; i++)
        if (s[i] >= 'A' && s[i] <= 'Z')
            s[i] = s[i] + ('a' - 'A');
}
int main(void) {
    size_t n = 3000;
    char *s = malloc(n + 1), *t = malloc(200 * n + 1);
    for (size_t i = 0; i < n; i++) s[i] = 'A' + i % 26;
    for (size_t i = 0; i < 200 * n; i++) t[i] = 'A' + i % 26;
    s[n] = t[200 * n] = 0;
    lower1(s);
    lower2(t);
    printf("%c%c\\n", s[n / 2], t[n / 2]);
    return 0;
}
"""
# CS:APP's own strlen, in the same file (its loop's cost is on its own lines, not on the calling line): on one line
# so that lower1's loop test stays line 6; built with -fno-builtin (gcc would otherwise turn its loop into a call to
# strlen, itself).
OWN_STRLEN = ("__attribute__((noinline)) size_t strlen(const char *s) { size_t n = 0; while (*s != '\\0') { s++; "
              "n++; } return n; }")


def _profile(tmp_path: Path, code: str, function: str) -> Profile:
    return _profiles(tmp_path, code, 2)[function]


def _profiles(tmp_path: Path, code: str, top: int, flags: tuple[str, ...] = ()) -> dict[str, Profile]:
    (tmp_path / "prog.c").write_text(code)
    subprocess.run(["gcc", "-O2", "-g", *flags, "prog.c", "-o", "prog", "-lm"], cwd=tmp_path, check=True)
    profiles = profile_application("./prog", tmp_path, target="cpu", top=top, work_dir=tmp_path / "work")
    return {p.kernel: p for p in profiles}


@needs_tools
def test_a_histogram_that_scans_for_its_bin_is_a_linear_search(tmp_path: Path) -> None:
    """Issue 20's histogram: `missed_vectorization` came first (gcc does not vectorise the scan's early exit);
    the fix computes the bin. The scan is the diagnosis, on its line, and vectorisation does not claim it."""
    profile = _profile(tmp_path, HIST_SCAN, "histogram")
    top = profile.diagnoses[0]
    assert top.name == "linear_search", profile.diagnoses
    assert top.findings[0].lines == [8] and top.findings[0].metric == "linear_search_share"
    assert top.severity > 0.5  # the scan is nearly all of the function; 75% of it is assumed recoverable
    assert any("not measured" in line for line in top.evidence)  # it says its saving is an assumption
    assert "missed_vectorization" not in [d.name for d in profile.diagnoses]


@needs_tools
@pytest.mark.parametrize("code", [HIST_DIRECT, HIST_BISECT], ids=["direct", "bisection"])
def test_a_histogram_that_computes_or_bisects_its_bin_is_no_linear_search(code: str, tmp_path: Path) -> None:
    profile = _profile(tmp_path, code, "histogram")
    assert "linear_search" not in [d.name for d in profile.diagnoses], profile.diagnoses


@needs_tools
def test_coefficients_recomputed_for_every_output_are_redundant_computation(tmp_path: Path) -> None:
    """Issue 20's stencil with coefficient work in its hot loop: nothing named the work. The expf depends only on
    the inner index k and on sigma, which the loop over outputs never changes."""
    profile = _profile(tmp_path, SMOOTH_RECOMPUTE, "smooth")
    top = profile.diagnoses[0]
    assert top.name == "redundant_computation", profile.diagnoses
    assert top.findings[0].lines == [9]
    assert "line 6" in top.hint and "table" in top.hint
    # the expf calls are out of line: their measured cost (Ir - Ir_self of line 9) is the saving
    line = next(h for h in profile.hot_lines if h.line == 9)
    total_ir = profile.counter("Ir")
    assert top.severity == pytest.approx((line.metric("Ir") - line.metric("Ir_self")) / total_ir, rel=0.2)


@needs_tools
def test_tabulated_coefficients_are_not_redundant_computation(tmp_path: Path) -> None:
    profile = _profile(tmp_path, SMOOTH_TABLE, "smooth")
    assert "redundant_computation" not in [d.name for d in profile.diagnoses], profile.diagnoses


@needs_tools
@pytest.mark.parametrize("strlen", ["", OWN_STRLEN], ids=["libc", "same_file"])
def test_strlen_in_the_test_of_a_loop_writing_the_string_is_loop_invariant_work(strlen: str, tmp_path: Path) -> None:
    """CS:APP's lower1 (issue 20's ufidon-ca/opt/lower1 got no diagnosis): the loop writes s[i], so strlen(s) was
    not "invariant" and nothing named the quadratic work. The call's arguments do not change, it reads memory the
    loop writes: the diagnosis says the compiler may not hoist it and the programmer may, where the writes never
    change what it reads. With CS:APP's own strlen in the same file, the call's cost sits on strlen's lines; the
    calling line is a hot line for its calls' inclusive cost (source_call_Ir), which is the saving. lower2, the fix,
    gets no such diagnosis."""
    profiles = _profiles(tmp_path, LOWER.replace("STRLEN", strlen), 3, ("-fno-builtin",) if strlen else ())
    top = profiles["lower1"].diagnoses[0]
    assert top.name == "loop_invariant_work", profiles["lower1"].diagnoses
    assert [f.metric for f in top.findings] == ["static.invariant_calls_on_written_memory"]
    assert top.findings[0].lines == [6] and top.severity > 0.8  # nearly all of lower1's time is the calls
    assert any("on memory the loop writes" in line for line in top.evidence)
    line = next(h for h in profiles["lower1"].hot_lines if h.line == 6)
    assert (line.metric("source_call_Ir") or 0.0) > 0.8 * profiles["lower1"].counter("Ir") if strlen else \
        line.metric("source_call_Ir") is None
    assert "loop_invariant_work" not in [d.name for d in profiles["lower2"].diagnoses], profiles["lower2"].diagnoses


def _line(number: int, ir: float, **metrics: float) -> HotLine:
    values = {"Ir": ir, "Ir_self": ir, "static.loop_depth": 2.0, "static.outer_loop_line": 3.0, **metrics}
    return HotLine(line=number, code=f"line {number}", share=ir / 1e6, dominant_stall="",
                   metrics=[CounterValue(name, value, "") for name, value in values.items()])


def _serial(lines: list[HotLine]) -> Profile:
    return Profile(machine="test", tool_versions="", timing=Timing(5.0, 4.9, 5.1, 30, "monotonic_clock"),
                   target="cpu", kernel="k", hot_lines=lines,
                   counters=[CounterValue("Ir", 1e6, "inst"), CounterValue("cpu_cores", 64.0, "core"),
                             CounterValue("static.openmp_pragmas", 0.0, "pragma"),
                             CounterValue("static.thread_spawns", 0.0, "flag")])


def test_a_recomputed_call_into_the_sources_own_helper_is_big_enough_by_its_callees_cost() -> None:
    """A recomputed pure call into a function of the same file: callgrind counts the callee's cost on the callee's
    lines, so the calling line's own share is near 0 (1%, under min_line_share) and redundant_computation declined,
    where loop_invariant_work already counted the call's inclusive cost (source_call_Ir, 60% here). Both rules now
    decide "big enough" alike, and the saving is the call's cost."""
    call = _line(9, 1.0e4, **{"static.recomputed_exprs": 1.0, "static.recomputed_outer_loop": 6.0,
                              "source_call_Ir": 6.0e5})
    ranked = {d.name: d for d in diagnose(_serial([call, _line(20, 6.0e5)]))}
    assert "redundant_computation" in ranked, ranked
    assert ranked["redundant_computation"].severity == pytest.approx(0.6, abs=0.01)
    alone = _line(9, 1.0e4, **{"static.recomputed_exprs": 1.0, "static.recomputed_outer_loop": 6.0})
    assert "redundant_computation" not in [d.name for d in diagnose(_serial([alone, _line(20, 6.0e5)]))]


def test_missing_parallelism_counts_only_what_the_other_fixes_leave() -> None:
    """On 64 cores a serial nest with 95% of the cycles read 0.95 x (63/64) x 0.8 = 0.75 whatever else was wrong,
    above every other rule. Its saving is now what sharing the nest saves after the fix another diagnosis names:
    a scan with 90% of the cycles, of which 75% is recoverable, leaves the nest 0.95 x 0.25 of the time."""
    profile = _serial([_line(7, 9.0e5, **{"static.linear_search_loop": 6.0}), _line(9, 0.5e5)])
    ranked = diagnose(profile)
    assert [d.name for d in ranked][:2] == ["linear_search", "missing_parallelism"]
    search, parallel = ranked[0].severity, ranked[1].severity
    assert search == pytest.approx(0.9 * 0.75, abs=1e-3)
    assert parallel == pytest.approx(0.95 * (1 - search) * (63 / 64) * 0.8, abs=1e-3)
    assert any("would leave the nest" in line for line in ranked[1].evidence)


def test_a_serial_nest_nothing_else_explains_keeps_its_parallel_saving() -> None:
    profile = _serial([_line(7, 9.0e5), _line(9, 0.5e5)])
    (parallel,) = diagnose(profile)
    assert parallel.name == "missing_parallelism"
    assert parallel.severity == pytest.approx(0.95 * (63 / 64) * 0.8, abs=1e-3)


@pytest.mark.parametrize(("d1_rate_pct", "ll_rate_pct", "flagged"), [
    (25.0, 0.0, False),   # a unit-stride walk of 16-byte loads: one miss per line, prefetched
    (12.6, 0.0, False),   # of 8-byte loads, within the tolerance
    (30.0, 0.0, True),    # more than a stream's: lines fetched for a few bytes, or refetched
    (25.0, 5.0, True),    # a stream's rate, but reaching DRAM on 5% of accesses
    (100.0, 0.0, True),   # every access a miss (a column walk)
])
def test_a_wide_unit_stride_stream_is_not_a_cache_miss_bottleneck(d1_rate_pct: float, ll_rate_pct: float,
                                                                    flagged: bool) -> None:
    """External kernels (session 15): a vectorised loop streaming through memory misses D1 on exactly 25% of its
    16-byte accesses; cache_miss_bound ranked first on 4 of 50 such kernels (an SSE intrinsics loop, a denormal
    loop, two branchy loops) where no cache fix applies."""
    accesses = 2e5
    line = _line(10, 1e6, D1_miss_rate=d1_rate_pct, LLd_miss_rate=ll_rate_pct,
                 D1_misses=accesses * d1_rate_pct / 100, LL_misses=accesses * ll_rate_pct / 100)
    names = [d.name for d in diagnose(_serial([line]))]
    assert ("cache_miss_bound" in names) is flagged, names


DEDUPLICATE = """#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <unordered_set>
#include <vector>

__attribute__((noinline)) size_t unique_values(const std::vector<int> &in, std::vector<int> &out) {
  out.clear();
  for (int x : in) {
    if (SCAN) out.push_back(x);
  }
  return out.size();
}

int main() {
  std::vector<int> in(4000), out;
  for (auto &x : in) x = rand() % 3000;
  size_t kept = 0;
  for (int r = 0; r < 5; r++) kept += unique_values(in, out);
  printf("%zu\\n", kept);
  return 0;
}
"""


@needs_tools
@pytest.mark.parametrize("scan, searches", [
    ("std::find(out.begin(), out.end(), x) == out.end()", True),
    ("seen(out, x)", False)])
def test_std_find_over_the_values_kept_so_far_is_a_linear_search(scan: str, searches: bool, tmp_path: Path) -> None:
    """Scenario (CoffeeBeforeArch's duplicate_removal baseline, held out): `std::find` over the kept values, once per
    input, inlined from <bits/stl_algobase.h>. Callgrind files the scan's instructions (nearly all the function's)
    under the header's lines, so the function had no hot line and no diagnosis; they are now charged to line 10,
    the call that inlined them (the binary's inline chains), and the call in a loop is a linear search. The twin
    keeps a hash set of the values seen (`seen` inserts into a static unordered_set): no search."""
    code = DEDUPLICATE.replace("SCAN", scan)
    if not searches:
        code = code.replace("__attribute__((noinline)) size_t", """static std::unordered_set<int> kept_set;
static bool seen(std::vector<int> &, int x) { return kept_set.insert(x).second; }
__attribute__((noinline)) size_t""")
    (tmp_path / "prog.cpp").write_text(code)
    subprocess.run(["g++", "-O2", "-g", "prog.cpp", "-o", "prog"], cwd=tmp_path, check=True)
    profiles = profile_application("./prog", tmp_path, target="cpu", top=3, work_dir=tmp_path / "work")
    profile = next(p for p in profiles if p.kernel.startswith("unique_values"))
    names = [d.name for d in profile.diagnoses]
    if searches:
        line = next(h for h in profile.hot_lines if h.line == 10)
        assert line.share > 0.9
        assert names[0] == "linear_search"
        assert "calls a standard library scan inside the loop at line 9" in " ".join(profile.diagnoses[0].evidence)
    else:
        assert "linear_search" not in names
