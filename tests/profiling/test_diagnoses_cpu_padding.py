"""poor_data_layout from structure padding (issue 20, CPU side: perf-ninja's data_packing, whose `struct S { int i;
long long l; short s; double d; bool b; }` takes 40 bytes for 23 of fields): every cache line an array of such
structures fills carries the padding, and ordering the fields by decreasing alignment (24 bytes here) removes that
share of the misses. The layout facts are checked on small sources (and a header included with quotes); the rule
on real C programs built with gcc and profiled under callgrind in application mode, with an innocent twin whose
fields are already ordered."""

from __future__ import annotations

from pathlib import Path

import pytest

from profiling.cpu import layout
from profiling.diagnoses import registry
from tests.profiling.callgrind_programs import diagnosis_names, needs_tools, profile_function

# ---- layout facts ---------------------------------------------------------------------------------------------------

STRUCTS = """\
struct Padded { int i; long long l; short s; double d; bool b; bool operator<(const Padded &o) const; };
struct Ordered { long long l; double d; int i; short s; bool b; };
struct Nested { int i; Ordered o; };
struct Bits { int a : 3; long b; };
typedef struct { char c; double d; char e; } Typedef;
"""


def test_padding_is_what_ordering_the_fields_by_decreasing_alignment_removes() -> None:
    """data_packing's S: 4 + 4 (pad) + 8 + 2 + 6 (pad) + 8 + 1 + 7 (pad) = 40 bytes, 24 ordered; a method is no
    member. Already ordered fields, a member of structure type (its size is not read from the text) and a bitfield
    give nothing."""
    found = layout.padded_structs([STRUCTS], "cpp")
    assert found["Padded"] == layout.Padded("Padded", 40, 24)
    assert found["Typedef"] == layout.Padded("Typedef", 24, 16)
    assert {"Ordered", "Nested", "Bits"}.isdisjoint(found)
    assert found["Padded"].saving == pytest.approx(0.4)


def test_lines_moving_arrays_of_a_padded_structure_come_from_a_local_header(tmp_path: Path) -> None:
    """The structure is defined in a header the source includes with quotes; a vector of it, the elements a
    range-for takes from one, and a pointer to it are its arrays; a scalar of another type is not."""
    (tmp_path / "s.h").write_text(STRUCTS)
    source = tmp_path / "s.cpp"
    text = """\
#include "s.h"
#include <vector>
void f(std::vector<Padded> &arr, int *cnt, Padded *out, int n) {
  int k = 0;
  for (const auto &v : arr) {
    ++cnt[v.i];
  }
  for (int j = 0; j < n; j++)
    out[j].i = k;
}
"""
    source.write_text(text)
    structs = layout.padded_structs([text, *layout.local_headers(source, text)], "cpp")
    assert sorted(layout.padded_lines(text, "f", "cpp", structs)) == [3, 5, 6, 9]


# ---- the rule on profiled programs ----------------------------------------------------------------------------------

PROGRAM = """\
#include <stdio.h>
#include <stdlib.h>
struct S { FIELDS };
__attribute__((noinline)) double gather(const struct S *a, const int *idx, int n) {
    double s = 0;
    for (int k = 0; k < n; k++)
        s += a[idx[k]].i + a[idx[k]].l + a[idx[k]].s + a[idx[k]].d + a[idx[k]].b;
    return s;
}
int main(void) {
    int n = 100000;
    struct S *a = malloc(n * sizeof(struct S));
    int *idx = malloc(n * sizeof(int));
    for (int i = 0; i < n; i++) {
        a[i].i = i; a[i].l = i; a[i].s = (short)i; a[i].d = i; a[i].b = (char)(i & 1);
        idx[i] = i;
    }
    unsigned r = 1;
    for (int i = n - 1; i > 0; i--) {  /* a random order */
        r = r * 1103515245u + 12345u;
        int j = (int)((r >> 8) % (unsigned)(i + 1)), t = idx[i];
        idx[i] = idx[j];
        idx[j] = t;
    }
    double s = 0;
    for (int rep = 0; rep < 3; rep++) s += gather(a, idx, n);
    printf("%f\\n", s);
    return 0;
}
"""
PADDED = PROGRAM.replace("FIELDS", "int i; long long l; short s; double d; char b;")
ORDERED = PROGRAM.replace("FIELDS", "long long l; double d; int i; short s; char b;")




@needs_tools
def test_a_random_walk_over_padded_structures_is_a_poor_data_layout(tmp_path: Path) -> None:
    """Every field is used (no array-of-structures waste), but 40% of each structure is padding: the misses stay
    cache_miss_bound's, and poor_data_layout names the share reordering removes."""
    profile = profile_function(tmp_path, PADDED, "gather")
    names = diagnosis_names(profile)
    assert "poor_data_layout" in names[:3] and "cache_miss_bound" in names, profile.diagnoses
    layout_diagnosis = profile.diagnoses[names.index("poor_data_layout")]
    assert any(f.metric == "padding_share" and f.value == pytest.approx(0.4) for f in layout_diagnosis.findings)


@needs_tools
def test_the_same_walk_over_ordered_fields_is_no_poor_data_layout(tmp_path: Path) -> None:
    profile = profile_function(tmp_path, ORDERED, "gather")
    names = diagnosis_names(profile)
    assert "poor_data_layout" not in names and "cache_miss_bound" in names, profile.diagnoses


def test_the_padding_threshold_is_documented() -> None:
    entry = registry.thresholds_for("cpu")["min_padding_share"]
    assert entry.unit == "ratio" and len(entry.reason) > 80
    assert "min_padding_share" in registry.get_rule("poor_data_layout").thresholds


# ---- an array of structures walked by a C++ range-for -------------------------------------------------------------

PARTICLES = """#include <cstdio>
#include <vector>
struct Particle { double x, y, z, vx, vy, vz, mass, charge; };

__attribute__((noinline)) void drift(std::vector<Particle> &ps, double dt) {
  for (auto &p : ps) {
    p.x += dt * p.vx;
  }
}

int main() {
  std::vector<Particle> ps(200000);
  for (size_t i = 0; i < ps.size(); i++) ps[i].vx = 1e-3 * (double)(i % 7);
  for (int r = 0; r < 4; r++) drift(ps, 0.5);
  printf("%f\\n", ps[12345].x);
  return 0;
}
"""


@needs_tools
def test_a_range_for_over_a_vector_of_structures_using_two_fields_is_a_poor_data_layout(tmp_path: Path) -> None:
    """`for (auto &p : ps) p.x += dt * p.vx` over 200,000 64-byte particles: 16 of each structure's 64 bytes used,
    one D1 miss per element. The range-for's element was no array element to the layout facts, so only
    cache_miss_bound spoke; poor_data_layout now names the wasted three quarters of each line."""
    profile = profile_function(tmp_path, PARTICLES, "drift", cpp=True)
    names = diagnosis_names(profile)
    assert names[0] == "poor_data_layout", profile.diagnoses
    assert any("25% of each 64-byte structure" in e for e in profile.diagnoses[0].evidence)


OBJECTS = """#include <cstdio>
#include <vector>
struct Object {
  int v0 = 0, v1 = 0, v2 = 0, v3 = 0, v4 = 0, v5 = 0, v6 = 0, v7 = 0;
  int v8 = 0, v9 = 0, v10 = 0, v11 = 0, v12 = 0, v13 = 0, v14 = 0, v15 = 0;
  void inc_v0() { v0++; }
};

__attribute__((noinline)) void update(std::vector<Object> &objects) {
  for (auto &o : objects) {
    o.inc_v0();
  }
}

int main() {
  std::vector<Object> objects(1 << 16);
  for (int r = 0; r < 20; r++) update(objects);
  printf("%d\\n", objects[99].v0);
  return 0;
}
"""


@needs_tools
def test_a_method_a_loop_calls_on_each_structure_counts_the_fields_it_uses(tmp_path: Path) -> None:
    """Scenario (CoffeeBeforeArch's data-oriented-design example, held out): each 64-byte object's `inc_v0()`,
    inlined, increments one field; every access misses D1 (one line per object) and the costly line is the
    method's body, outside the loop. cache_miss_bound alone spoke; the loop's layout facts now follow the method
    (the fields its body uses, at its lines), and poor_data_layout names the 60 unused bytes of each object."""
    profile = profile_function(tmp_path, OBJECTS, "update", cpp=True)
    names = diagnosis_names(profile)
    assert names[0] == "poor_data_layout", profile.diagnoses
    body = next(h for h in profile.hot_lines if h.line == 6)
    assert body.metric("static.aos_used_bytes") == 4.0 and body.metric("static.aos_struct_bytes") == 64.0
