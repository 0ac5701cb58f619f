"""store_forwarding_dependency (issue 20, CPU side: perf-ninja's mem_order_violation_1, a histogram of an image's
pixels): a loop updating array elements at an index it loads (`hist[pixels[i]]++`) makes an update that hits the
element a recent update stored wait for that store (store-to-load forwarding, or a memory-ordering machine clear),
and gcc cannot vectorise it (lanes with equal indices conflict). The static fact is checked on small sources that
have it and twins that do not; the rule on real C programs built with gcc and profiled under callgrind in
application mode, with an innocent twin."""

from __future__ import annotations

from pathlib import Path

from profiling.cpu import loops
from profiling.diagnoses import registry
from tests.profiling.callgrind_programs import diagnosis_names, needs_tools, profile_function


def _updates(source: str, function: str, language: str = "c") -> list[tuple[int, str]]:
    """(line, target) of the function's updates at a loaded index."""
    return [(u.line, u.target) for u in loops.analyze_loops(source, function, language).indexed_updates]


# ---- static facts ---------------------------------------------------------------------------------------------------

STATIC = """\
#include <vector>
struct S { int key; double value; };
void histogram(const unsigned char *pixels, int n, int *hist) {
  for (int i = 0; i < n; i++)
    hist[pixels[i]]++;
}
void counting(const std::vector<S> &arr, int *cnt) {
  for (const auto &v : arr) {
    ++cnt[v.key + 1];
  }
}
void scatter(float *y, const int *col, const float *a, int n) {
  for (int k = 0; k < n; k++) {
    int j = col[k];
    y[j] = y[j] + a[k];
  }
}
void stream(float *out, const float *a, int n) {
  for (int i = 0; i < n; i++)
    out[i] += a[i];
}
void hashed(int *h, int n) {
  for (int i = 0; i < n; i++) {
    int b = (i * 2654435761u) >> 24;
    h[b]++;
  }
}
void accumulate(int *h, const int *x, int n, int k) {
  for (int i = 0; i < n; i++)
    h[k] += x[i];
}
void stored(int *h, const int *x, int n) {
  for (int i = 0; i < n; i++)
    h[x[i]] = i;
}
"""


def test_updates_at_an_index_the_loop_loads_are_indexed_updates() -> None:
    """A histogram (`hist[pixels[i]]++`), a counting sort's count over a range-for's elements, and a scatter-add
    through a variable the loop loads (`int j = col[k]; y[j] = y[j] + a[k]`)."""
    assert _updates(STATIC, "histogram", "cpp") == [(5, "hist[pixels[i]]")]
    assert _updates(STATIC, "counting", "cpp") == [(9, "cnt[v.key + 1]")]
    assert _updates(STATIC, "scatter", "cpp") == [(15, "y[j]")]


def test_streams_computed_indices_accumulators_and_plain_stores_are_not() -> None:
    """An index from the loop's counters alone (`out[i]`, a hash of i: no load), one the loop does not change (an
    accumulator in memory: memory_accumulators' case) and a store that does not read the element (no chain)."""
    for function in ("stream", "hashed", "accumulate", "stored"):
        assert _updates(STATIC, function, "cpp") == [], function


# ---- the rule on profiled programs ----------------------------------------------------------------------------------

HEAD = """\
#include <stdio.h>
#include <stdlib.h>
"""
MAIN = """
int main(void) {
    int n = 1 << 20;
    unsigned char *pixels = malloc(n);
    unsigned seed = 12345u;
    for (int i = 0; i < n; i++) {  /* an image: runs of equal values */
        if (i % 16 == 0) seed = seed * 1103515245u + 12345u;
        pixels[i] = (unsigned char)(seed >> 24);
    }
    int hist[256] = {0};
    for (int r = 0; r < 4; r++) count(pixels, n, hist);
    long total = 0;
    for (int b = 0; b < 256; b++) total += (long)b * hist[b];
    printf("%ld\\n", total);
    return 0;
}
"""
HISTOGRAM = HEAD + """\
__attribute__((noinline)) void count(const unsigned char *pixels, int n, int *hist) {
    for (int i = 0; i < n; i++)
        hist[pixels[i]]++;
}
""" + MAIN
# The same loads and adds, each into the element the counter selects: consecutive updates never meet.
BY_POSITION = HEAD + """\
__attribute__((noinline)) void count(const unsigned char *pixels, int n, int *hist) {
    for (int i = 0; i < n; i++)
        hist[i & 255] += pixels[i];
}
""" + MAIN




@needs_tools
def test_a_histogram_of_loaded_values_is_a_store_forwarding_dependency(tmp_path: Path) -> None:
    """mem_order_violation_1 in C: missed_vectorization came first (gcc: data dependence). Vector lanes with equal
    indices would lose updates, and the fix is several copies of the histogram, so the update's loop is claimed
    from missed_vectorization; the estimate says what it assumes (callgrind sees neither values nor forwarding)."""
    profile = profile_function(tmp_path, HISTOGRAM, "count")
    names = diagnosis_names(profile)
    assert names[:1] == ["store_forwarding_dependency"], profile.diagnoses
    assert "missed_vectorization" not in names, profile.diagnoses
    evidence = " ".join(profile.diagnoses[0].evidence)
    assert "update_repeat_share" in evidence and "not measured" in evidence


@needs_tools
def test_updates_at_the_counter_s_index_are_no_store_forwarding_dependency(tmp_path: Path) -> None:
    profile = profile_function(tmp_path, BY_POSITION, "count")
    assert "store_forwarding_dependency" not in diagnosis_names(profile), profile.diagnoses


def test_the_store_forwarding_thresholds_are_documented() -> None:
    thresholds = registry.thresholds_for("cpu")
    for name, unit in (("store_forward_cycles", "cycle"), ("update_repeat_share", "ratio")):
        assert thresholds[name].unit == unit and len(thresholds[name].reason) > 80
        assert name in registry.get_rule("store_forwarding_dependency").thresholds
