"""Static facts of avoidable work (profiling/cpu/loops.py): which loops are linear searches and which expressions
an enclosing loop recomputes, with the scans and loops that must not count as either."""

from __future__ import annotations

import pytest

from perfforge.records import HotLine
from profiling.cpu.loops import analyze_loops, avoidable_work_facts
from profiling.cpu.profile import static_metrics

SEARCHES = """\
int bin_of(const float *edges, int nb, float x) {
    int b = 0;
    while (b < nb - 1 && x >= edges[b + 1]) b++;
    return b;
}
int find(const int *t, int n, int key) {
    for (int k = 0; k < n; k++) {
        if (t[k] == key) return k;
    }
    return -1;
}
"""

NOT_SEARCHES = """\
int length(const char *s) { int i = 0; while (s[i] != 0) i++; return i; }
void damp(float *x, int n, float tol) { for (int i = 0; i < n; i++) { x[i] *= 0.5f; if (x[i] < tol) break; } }
int bisect(const float *e, int n, float x) {
    int lo = 0, hi = n;
    while (lo < hi) { int mid = (lo + hi) / 2; if (e[mid] <= x) lo = mid + 1; else hi = mid; }
    return lo;
}
int first4(const float *e, float x) { int k; for (k = 0; k < 4; k++) if (x < e[k]) break; return k; }
int inner_break(const int *t, int n, int key) {
    int hits = 0;
    for (int i = 0; i < n; i++) { for (int j = 0; j < 3; j++) { if (t[j] == key) break; } hits += t[i]; }
    return hits;
}
"""

RECOMPUTE = """\
#include <math.h>
void smooth(const float *in, float *out, int n, int r, float s) {
    for (int i = r; i < n - r; i++) {
        float acc = 0;
        for (int k = -r; k <= r; k++)
            acc += in[i + k] * expf(-(float)(k * k) / (2 * s * s));
        out[i] = acc;
    }
}
void scaled(const float *in, float *out, int n, int r, const float *w) {
    for (int i = r; i < n - r; i++) {
        float acc = 0;
        for (int k = -r; k <= r; k++)
            acc += in[i + k] * expf(w[i] * k);
        out[i] = acc;
    }
}
void triangle(float *out, int n) {
    for (int i = 0; i < n; i++)
        for (int k = 0; k < i; k++)
            out[i] += sqrtf((float)k);
}
"""


@pytest.mark.parametrize(("function", "loop", "table", "key", "bound"), [
    ("bin_of", 3, "edges", "x", "b < nb - 1"),
    ("find", 7, "t", "key", "k < n"),
])
def test_a_stepped_scan_with_an_early_exit_on_a_table_element_is_a_linear_search(
        function: str, loop: int, table: str, key: str, bound: str) -> None:
    (search,) = analyze_loops(SEARCHES, function).searches
    assert (search.loop_line, search.table, search.key, search.bound) == (loop, table, key, bound)


@pytest.mark.parametrize("function", ["length", "damp", "bisect", "first4", "inner_break"])
def test_scans_that_are_not_avoidable_searches(function: str) -> None:
    """A terminator scan (compared with a literal), a loop that stores and stops on its own result, a bisection
    (the index is not stepped by one), a fixed walk of 4 and a break that leaves only an inner loop."""
    assert analyze_loops(NOT_SEARCHES, function).searches == []


def test_an_expression_of_the_inner_index_alone_is_recomputed_by_the_outer_loop() -> None:
    analysis = analyze_loops(RECOMPUTE, "smooth")
    (found,) = analysis.recomputed
    assert (found.line, found.kind, found.outer_line, found.inner_line, found.indices) == (6, "call", 3, 5, ("k",))
    assert found.text.startswith("expf(")
    facts = {name: value for name, value, _ in avoidable_work_facts(analysis, 6)}
    assert {k: v for k, v in facts.items() if k.startswith("static.recomputed")} == {
        "static.recomputed_exprs": 1.0, "static.recomputed_outer_loop": 3.0}
    # the line's dependence facts come with them: `acc +=` of a float is a chain of one 4-cycle addition a step
    assert (facts["static.chain_latency_cycles"], facts["static.chain_loop_line"]) == (4.0, 5.0)


@pytest.mark.parametrize("function", ["scaled", "triangle"])
def test_work_that_changes_with_the_outer_loop_is_not_recomputed(function: str) -> None:
    """expf(w[i] * k) changes with i; the triangle's inner bound changes with i, so its k values differ per i."""
    assert analyze_loops(RECOMPUTE, function).recomputed == []


def test_hot_lines_get_the_search_fact_of_the_scan_they_are_in() -> None:
    analysis = analyze_loops(SEARCHES, "find")
    hot = [HotLine(line=n, code="", share=0.4, dominant_stall="", metrics=[]) for n in (7, 8, 10)]
    static_metrics(hot, analysis, {})  # task mode and application mode both add the facts here
    assert [h.metric("static.linear_search_loop") for h in hot] == [7.0, 7.0, None]


LIBRARY_SCANS = """\
#include <algorithm>
#include <vector>
using namespace std;
int find(int *parent, int x) { while (parent[x] != x) x = parent[x]; return x; }
int kernel(vector<int> &v, vector<int> &keys, int *parent, int *a) {
  int hits = 0;
  for (int k : keys) {
    if (std::find(v.begin(), v.end(), k) != v.end()) hits++;
    hits += std::count_if(v.begin(), v.end(), [k](int x) { return x < k; });
    hits += std::ranges::any_of(v, [k](int x) { return x == k; });
    hits += find(parent, k);
    hits += std::find(a, a + 4, k) != a + 4;
  }
  return hits + (std::find(v.begin(), v.end(), 3) != v.end());
}
"""


def test_a_standard_library_scan_called_in_a_loop_is_a_linear_search() -> None:
    """CoffeeBeforeArch's duplicate_removal (held out): `std::find` over the values kept so far, once per input. Not
    searches: the file's own `find` (a union-find's, though `using namespace std`), a scan of four elements fixed in
    the source, and a scan outside every loop."""
    analysis = analyze_loops(LIBRARY_SCANS, "kernel", "cpp")
    assert [(s.loop_line, s.algorithm, s.around_line) for s in analysis.searches] == [
        (8, "std::find", 7), (9, "std::count_if", 7), (10, "std::ranges::any_of", 7)]
    assert ("static.linear_search_call_loop", 7.0, "line") in avoidable_work_facts(analysis, 8)
    for line in (11, 12, 14):
        assert not [f for f in avoidable_work_facts(analysis, line) if f[0].startswith("static.linear_search")]


ELEMENTS_OF_STRUCTURES = """\
#include <array>
#include <vector>
struct Particle { double x, y, z, vx, vy, vz, mass, charge; };
void drift(std::vector<Particle> &ps, double dt) {
  for (auto &p : ps) {
    p.x += dt;
  }
}
void kick(Particle w[], int n, const std::array<Particle, 64> &a, double *out) {
  for (const Particle &e : a) { out[0] += e.mass; }
  for (int k = 0; k < n; k++) w[k].vx *= 0.5;
}
void scale(std::vector<double> &v, Particle s) { for (double &x : v) { x *= s.mass; } }
"""


def test_a_range_for_over_a_container_of_structures_is_an_array_of_structures() -> None:
    """C++'s array of structures walked by a range-for (`for (auto &p : ps) p.x += dt`, CoffeeBeforeArch's data-
    oriented-design example in its plain form) and a C array parameter (`Particle w[]`) touch one field of each
    64-byte structure: the layout facts poor_data_layout reads. A range over scalars using a structure passed by
    value is none."""
    found = {f: [(s.array, s.loop_line, s.fields_used, s.used_bytes, s.struct_bytes)
                 for s in analyze_loops(ELEMENTS_OF_STRUCTURES, f, "cpp").structs]
             for f in ("drift", "kick", "scale")}
    assert found == {"drift": [("ps", 5, ("x",), 8, 64)],
                     "kick": [("a", 10, ("mass",), 8, 64), ("w", 11, ("vx",), 8, 64)], "scale": []}


SINGLE_PASS_SCANS = """\
#include <algorithm>
#include <array>
#include <string>
#include <vector>
int kernel(std::vector<int> &v, std::vector<std::string> &words, std::array<int, 4> &small, int x) {
  int n = 0;
  for (auto &w : words) n += std::count(w.begin(), w.end(), 'a');
  for (auto it = std::find(v.begin(), v.end(), x); it != v.end(); it = std::find(it + 1, v.end(), x)) n++;
  auto it = v.begin();
  while ((it = std::find(it, v.end(), x)) != v.end()) ++it;
  for (int k = 0; k < x; k++) n += std::count(small.begin(), small.end(), k);
  for (int k = 0; k < x; k++) n += std::count(v.begin(), v.end(), k);
  for (size_t i = 0; i < v.size(); i++) n += std::find(v.begin() + i, v.end(), x) != v.end();
  return n;
}
"""


def test_library_scans_that_pass_over_their_data_once_are_no_linear_search() -> None:
    """The review's false positives: each word of a range-for counted once, a find resumed where the last stopped
    (in a for's header or a while's condition: one pass in all), a std::array of four. Still searches: a count
    over the whole vector per k, and a find from i to the end per i (quadratic in all)."""
    searches = analyze_loops(SINGLE_PASS_SCANS, "kernel", "cpp").searches
    assert [(s.loop_line, s.algorithm) for s in searches] == [(12, "std::count"), (13, "std::find")]


METHODS = """\
#include <vector>
class Body { public: double x, y, z, vx, vy, vz, m, q; static int count; void drift(double dt);
  double energy() const { return m * (vx * vx); } };
void Body::drift(double dt) { x += dt * vx; }
void step(std::vector<Body> &bs, double dt, double *e) {
  for (auto &b : bs) {
    b.drift(dt);
  }
  for (auto &b : bs) { *e += b.energy(); }
  for (auto &b : bs) { b.reset(); }
}
"""


def test_a_method_called_on_each_element_counts_the_fields_its_body_uses() -> None:
    """A class's methods, defined in its body or out of it, count the fields they use at their own lines (where
    their inlined code runs); a method declared in the body and a static member take no room in an instance; a
    method the file does not define counts nothing."""
    found = [(s.loop_line, s.lines, s.fields_used, s.used_bytes, s.struct_bytes)
             for s in analyze_loops(METHODS, "step", "cpp").structs]
    assert found == [(6, (4, 7), ("vx", "x"), 16, 64), (9, (3, 9), ("m", "vx"), 16, 64)]
