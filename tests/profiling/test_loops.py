"""Static loop analysis with tree-sitter on small C sources."""

from __future__ import annotations

from profiling.cpu.loops import analyze_loops

NEST = """\
#include <math.h>
#include <string.h>
void kernel(const float *x, const float *t, float *out, const char *name, int n, int m, float lambda) {
    for (int i = 0; i < n; i++) {
        for (int j = 0; j < m; j++) {
            out[i * m + j] = x[i * m + j] * expf(-lambda * t[i]) / (lambda * 2.0f);
            out[i * m + j] += sqrtf(x[i * m + j]);
        }
    }
    for (size_t k = 0; k < strlen(name); k++) {
        out[k] = name[k];
    }
}
"""


def test_loops_depth_and_nest() -> None:
    analysis = analyze_loops(NEST, "kernel")
    assert analysis.function_found
    spans = [(loop.start_line, loop.end_line, loop.depth, loop.innermost, loop.outer_line) for loop in analysis.loops]
    assert spans == [(4, 9, 1, False, 4), (5, 8, 2, True, 4), (10, 12, 1, True, 10)]
    assert analysis.innermost_loop_at(6).start_line == 5
    assert analysis.innermost_loop_at(2) is None


def test_invariant_calls_and_arithmetic() -> None:
    found = {(e.line, e.text, e.kind, e.loop_line) for e in analyze_loops(NEST, "kernel").invariants}
    assert (6, "expf(-lambda * t[i])", "call", 5) in found  # t and i are not written in the j loop
    assert (6, "(lambda * 2.0f)", "arithmetic", 5) not in found  # only divisions and calls are candidates
    assert (10, "strlen(name)", "call", 10) in found  # the condition is re-evaluated every iteration
    assert not any("sqrtf" in text for _, text, _, _ in found)  # x[i*m+j] changes with j


def test_written_arrays_and_unknown_calls_are_not_invariant() -> None:
    code = """\
float g(float);
void kernel(float *a, float *b, int n) {
    for (int i = 0; i < n; i++) {
        a[0] += 1.0f;
        b[i] = sqrtf(a[0]) + sqrtf(b[0]) / g(b[1]);
    }
}
"""
    assert analyze_loops(code, "kernel").invariants == []  # a is written; g may write b


def test_openmp_schedule_and_triangular_nest() -> None:
    code = """\
void kernel(float *a, int n) {
#pragma omp parallel for
    for (int i = 0; i < n; i++)
        for (int j = 0; j <= i; j++)
            a[i * n + j] = 0;
#pragma omp parallel for schedule(dynamic, 8)
    for (int i = 0; i < n; i++)
        a[i] = 1;
}
"""
    pragmas = analyze_loops(code, "kernel").pragmas
    assert [(p.line, p.schedule, p.loop_line, p.triangular) for p in pragmas] == [(2, "", 3, True),
                                                                                  (6, "dynamic", 7, False)]


def test_array_of_structures_field_use() -> None:
    code = """\
typedef struct { float x, y, z; double mass; float spin[4]; int id; } body;
void kernel(body *b, float *out, int n) {
    for (int i = 0; i < n; i++) {
        body *p = &b[i];
        out[i] = b[i].x + (b + i)->y + p->z;
    }
}
"""
    (access,) = analyze_loops(code, "kernel").structs
    assert (access.array, access.type_name, access.loop_line, access.lines) == ("b", "body", 3, (5,))
    assert access.fields_used == ("x", "y", "z")
    assert (access.used_bytes, access.struct_bytes) == (12, 12 + 8 + 16 + 4)


def test_missing_function_and_threads() -> None:
    assert not analyze_loops(NEST, "nope").function_found
    code = "#include <pthread.h>\nvoid kernel(pthread_t *t) { pthread_create(t, 0, 0, 0); }\n"
    assert analyze_loops(code, "kernel").spawns_threads


FILTER = """\
int filter(const float *x, float *out, int n, float lo) {
    int kept = 0;
    float s = 0.0f, p = 1.0f;
    for (int i = 0; i < n; i++) {
        s += x[i];
        p = p * x[i];
        if (x[i] > lo) {
            out[kept++] = x[i];
        }
        for (int j = 0; j < 4; j++) {
            float t = x[j];
            t += 1.0f;
        }
    }
    return kept + (int)(s + p);
}
"""


def test_carried_scalars_reduction_and_scan() -> None:
    carried = {(c.name, c.loop_line, c.line, c.kind, c.operator) for c in analyze_loops(FILTER, "filter").carried}
    # kept's running value indexes out (a compaction: a scan); s and p are only accumulated (reductions);
    # i, j and t are per-iteration (loop variables, a local declared in the nest)
    assert carried == {("s", 4, 5, "reduction", "+"), ("p", 4, 6, "reduction", "*"), ("kept", 4, 8, "scan", "")}


def test_independent_loop_carries_nothing() -> None:
    assert analyze_loops(NEST, "kernel").carried == []


def test_a_pure_call_on_memory_the_loop_writes_is_its_own_kind_of_invariant() -> None:
    """strlen(s) in the test of a loop writing s[i] (CS:APP's lower1): its argument does not change, it reads what
    the loop writes. Not when the loop moves the pointer (s++), passes a changing address (s + i) or an element
    (a value the loop may change)."""
    code = """\
#include <string.h>
void kernel(char *s, char *t, float *x, int n) {
    for (long i = 0; i < strlen(s); i++)
        s[i] = s[i] | 0x20;
    for (long i = 0; i < strlen(t); i++) { t[i] = 0; t++; }
    for (long i = 0; i < strlen(s + i); i++)
        s[i] = 0;
    for (int i = 0; i < n; i++)
        x[i] = sqrtf(x[0]);
}
"""
    found = [(e.line, e.text, e.kind) for e in analyze_loops(code, "kernel").invariants]
    assert found == [(3, "strlen(s)", "call_on_written_memory")]


RESTRICT_REFERENCES = """\
#include <vector>
float dot_product(std::vector<float> &__restrict v1,
                  std::vector<float> &__restrict__ v2) {
  float tmp = 0.0f;
  for (size_t i = 0; i < v1.size(); i++) {
    tmp += v1[i] * v2[i];
  }
  return tmp;
}
int masked(int a, int restrict_mask) { return a & restrict_mask; }
"""


def test_a_cpp_function_taking_restrict_references_is_read() -> None:
    """gcc's `__restrict` on a C++ reference (CoffeeBeforeArch's dot product): tree-sitter-cpp alone finds no
    function there, so its loop and its floating-point sum went without static facts."""
    from profiling.cpu.loops import functions_at

    analysis = analyze_loops(RESTRICT_REFERENCES, "dot_product", "cpp")
    assert analysis.function_found
    assert [(loop.start_line, loop.end_line) for loop in analysis.loops] == [(5, 7)]
    assert [(chain.target, chain.lines) for chain in analysis.chains] == [("tmp", (6,))]
    # an identifier that only begins with the qualifier's spelling is left alone
    assert functions_at(RESTRICT_REFERENCES, [6, 10], "cpp") == {6: "dot_product", 10: "masked"}
