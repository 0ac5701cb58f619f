"""dependency_chain measured by latency, not by counting operations (issue 20: CS:APP's combine5 and
shortcut-comparison's v1 were missed because a floating-point minimum and two multiplications a step counted as one
and two operations, under the threshold of three). A chain's latency a step is estimated from its operations' kinds
and the type of the value it carries (dependences.operation_latency); the rule estimates the chain's time as its
loop's iterations x that latency. The facts are checked on small sources, the rule on hand-built profiles."""

from __future__ import annotations

from perfforge.records import CounterValue, HotLine, Profile, Timing
from profiling.cpu import dependences, loops
from profiling.diagnoses import diagnose, registry


def _chains(source: str, function: str, language: str = "c") -> dict[tuple[str, int], tuple[int, float, int]]:
    """(target, loop line) -> (operations, latency cycles, reassociable updates) of the function's chains."""
    return {(c.target, c.loop_line): (c.operations, c.latency_cycles, c.reassociable)
            for c in loops.analyze_loops(source, function, language).chains}


# ---- the fact -------------------------------------------------------------------------------------------------------

LINEAR_READING = """\
#include <algorithm>
void step(float *r, const float *d, const float *t, int n) {
    for (int i = 0; i < n; ++i)
        for (int j = 0; j < n; ++j) {
            float v = 1e30f;
            for (int k = 0; k < n; ++k) {
                float z = d[n * i + k] + t[n * j + k];
                v = std::min(v, z);
            }
            r[n * i + j] = v;
        }
}
"""


def test_a_float_minimum_through_std_min_is_a_chain_of_one_four_cycle_operation() -> None:
    """shortcut-comparison's v1: `v = std::min(v, z)` is a call, no binary expression, yet one minss a step that
    the next waits for (4 cycles); the minimum is associative, so partial minima split it (v2's fix)."""
    assert _chains(LINEAR_READING, "step", "cpp") == {("v", 6): (1, 4.0, 1)}


def test_the_conditional_form_of_a_minimum_is_a_chain_too() -> None:
    source = ("float m(const float *a, int n) { float v = a[0];\n"
              " for (int i = 0; i < n; i++) v = a[i] < v ? a[i] : v;\n return v; }\n")
    assert _chains(source, "m") == {("v", 2): (1, 4.0, 0)}


COMBINE5 = """\
typedef double data_t;
void combine5(const data_t *data, long length, data_t *dest) {
    long i, limit = length - 1;
    data_t acc = 1;
    for (i = 0; i < limit; i += 2)
        acc = (acc * data[i]) * data[i + 1];
    for (; i < length; i++)
        acc = acc * data[i];
    *dest = acc;
}
"""


def test_combine5s_two_multiplications_a_step_are_eight_cycles_of_floating_point_latency() -> None:
    """CS:APP's 2x1 unrolling: two dependent multiplications a step (two operations, under the old count of
    three) are 2 x 4 cycles on doubles (the typedef is followed), 2 x 3 on integers; an unknown type counts as an
    integer (the lower bound: a header's typedef the preprocessed file does not hold)."""
    assert _chains(COMBINE5, "combine5") == {("acc", 5): (2, 8.0, 0), ("acc", 7): (1, 4.0, 1)}
    assert _chains(COMBINE5.replace("double", "long"), "combine5") == {("acc", 5): (2, 6.0, 0),
                                                                        ("acc", 7): (1, 3.0, 1)}
    unknown = COMBINE5.replace("typedef double data_t;", "")  # the line stays, empty
    assert _chains(unknown, "combine5")[("acc", 5)] == (2, 6.0, 0)


def test_an_integer_shift_xor_generator_is_still_a_chain_of_six_cycles() -> None:
    source = ("unsigned x;\nvoid f(unsigned *o, int n) {\n for (int i = 0; i < n; i++) {\n"
              "  x ^= x << 13; x ^= x >> 17; x ^= x << 5; o[i] = x;\n }\n}\n")
    assert _chains(source, "f") == {("x", 3): (6, 6.0, 0)}


DOT = ("double dot(const double *a, const double *b, int n) {\n double s = 0;\n for (int i = 0; i < n; i++)\n"
       "  s += a[i] * b[i];\n return s;\n}\n")


def test_a_floating_point_sum_is_a_four_cycle_chain_an_integer_one_is_none() -> None:
    """gcc does not reassociate `s += a[i] * b[i]` on doubles without -ffast-math: one add a step, 4 cycles, that
    the next waits for (CS:APP's combine4; the multiplication is off the chain). On integers it is one cycle,
    below the facts' floor (a reduction the vectoriser handles)."""
    assert _chains(DOT, "dot") == {("s", 3): (1, 4.0, 1)}
    assert _chains(DOT.replace("double", "int"), "dot") == {}


# A 4 x 4 block of C kept in four AVX registers, the k loop unrolled by two: each register takes two fused
# multiply-adds an iteration, each waiting on the last (yzhai-dgemm's kernel6 has this shape; the fix widens the
# block so that more independent accumulators fill the FMA units' latency).
VECTOR_ACCUMULATORS = """\
#include <immintrin.h>
void block4x4(int K, const double *A, int lda, const double *B, int ldb, double *C, int ldc) {
    __m256d c0 = _mm256_setzero_pd(), c1 = _mm256_setzero_pd();
    __m256d c2 = _mm256_setzero_pd(), c3 = _mm256_setzero_pd();
    for (int k = 0; k < K; k += 2) {
        const double *b = &B[k];
        __m256d a = _mm256_loadu_pd(&A[k * lda]);
        c0 = _mm256_fmadd_pd(a, _mm256_broadcast_sd(b), c0); c1 = _mm256_fmadd_pd(a, _mm256_broadcast_sd(b + ldb), c1);
        c2 = _mm256_fmadd_pd(a, _mm256_broadcast_sd(b + 2 * ldb), c2);
        c3 = _mm256_fmadd_pd(a, _mm256_broadcast_sd(b + 3 * ldb), c3);
        a = _mm256_loadu_pd(&A[(k + 1) * lda]);
        c0 = _mm256_fmadd_pd(a, _mm256_broadcast_sd(b + 1), c0);
        c1 = _mm256_fmadd_pd(a, _mm256_broadcast_sd(b + 1 + ldb), c1);
        c2 = _mm256_fmadd_pd(a, _mm256_broadcast_sd(b + 1 + 2 * ldb), c2);
        c3 = _mm256_fmadd_pd(a, _mm256_broadcast_sd(b + 1 + 3 * ldb), c3);
    }
    _mm256_storeu_pd(&C[0], c0); _mm256_storeu_pd(&C[ldc], c1);
    _mm256_storeu_pd(&C[2 * ldc], c2); _mm256_storeu_pd(&C[3 * ldc], c3);
}
"""


def test_vector_accumulators_updated_by_fused_multiply_add_intrinsics_are_chains() -> None:
    """`c0 = _mm256_fmadd_pd(a, b, c0)` is a call, no `+=`: before intrinsics were read as one operation each, the
    update read as setting c0 anew, and a register-blocked GEMM's accumulators were no chain at all (yzhai-dgemm's
    kernel6, labelled dependency_chain, got only cache_miss_bound). Two fused multiply-adds a step: 8 cycles; not
    reassociable in place (three operands): the fix is more accumulators, independent_chains' saving."""
    assert _chains(VECTOR_ACCUMULATORS, "block4x4") == {(f"c{r}", 5): (2, 8.0, 0) for r in range(4)}


def test_vector_adds_split_and_integer_vector_adds_are_too_short_to_report() -> None:
    """`_mm256_add_pd(s, x)` adds an independent term (partial sums split it); an integer vector add is one cycle,
    under the chains' floor, as `s += x[i]` on an int is; a load into the accumulator restarts it: no chain."""
    sums = ("#include <immintrin.h>\n__m256d sum(const double *x, int n) { __m256d s = _mm256_setzero_pd();\n"
            " for (int i = 0; i < n; i += 4) s = _mm256_add_pd(s, _mm256_loadu_pd(x + i));\n return s; }\n")
    assert _chains(sums, "sum") == {("s", 3): (1, 4.0, 1)}
    integers = ("#include <immintrin.h>\n__m256i sum(const __m256i *x, int n) { __m256i s = _mm256_setzero_si256();\n"
                " for (int i = 0; i < n; i++) s = _mm256_add_epi32(s, x[i]);\n return s; }\n")
    assert _chains(integers, "sum") == {}
    masks = integers.replace("__m256i", "__m256d").replace("_mm256_setzero_si256", "_mm256_setzero_pd") \
        .replace("_mm256_add_epi32", "_mm256_and_pd")
    assert _chains(masks, "sum") == {}  # a logic instruction on double lanes is one cycle, not a floating add's 4
    loads = ("#include <immintrin.h>\nvoid copy(double *o, const double *x, int n) { __m256d s;\n"
             " for (int i = 0; i < n; i += 4) { s = _mm256_loadu_pd(x + i); _mm256_storeu_pd(o + i, s); } }\n")
    assert _chains(loads, "copy") == {}


def test_a_loop_carrying_nothing_has_no_chain() -> None:
    source = "void scale(float *o, const float *a, int n) {\n for (int i = 0; i < n; i++)\n  o[i] = a[i] * 2.0f;\n}\n"
    assert _chains(source, "scale") == {}


def test_the_latencies_by_kind_and_type() -> None:
    assert dependences.operation_latency("+", floating=False) == 1.0
    assert dependences.operation_latency("*=", floating=False) == 3.0
    assert dependences.operation_latency("+", floating=True) == 4.0
    assert dependences.operation_latency("min", floating=True) == 4.0


def test_the_loops_line_carries_the_chain_when_its_own_line_is_not_hot() -> None:
    """`std::min` inlined runs as <algorithm>'s code: callgrind gives its instructions to the header, and the
    chain's line may hold none. The loop's line carries the chain's facts too."""
    analysis = loops.analyze_loops(LINEAR_READING, "step", "cpp")
    facts = dict((name, value) for name, value, _ in loops.dependence_facts(analysis, 6))
    assert facts["static.chain_latency_cycles"] == 4.0 and facts["static.chain_loop_line"] == 6.0
    assert facts["static.chain_line"] == 8.0


# ---- the rule -------------------------------------------------------------------------------------------------------

def _line(number: int, code: str, ir: float, branches: float, **facts: float) -> HotLine:
    metrics = [CounterValue("Ir", ir, "inst"), CounterValue("Ir_self", ir, "inst"),
               CounterValue("Bc", branches, "branch")]
    metrics += [CounterValue(f"static.{name}", value, "") for name, value in facts.items()]
    return HotLine(line=number, code=code, share=0.0, dominant_stall="", metrics=metrics)


def _profile(latency: float, operations: float) -> Profile:
    """A loop of 1e6 steps (its line's branches), 6 instructions a step, carrying one chain."""
    chain = {"chain_latency_cycles": latency, "chain_operations": operations, "chain_reassociable": 1.0,
             "chain_line": 8.0, "chain_loop_line": 6.0}
    lines = [_line(6, "for (int k = 0; k < n; ++k) {", 3e6, 1e6, **chain),
             _line(8, "v = std::min(v, z);", 3e6, 0.0, **chain)]
    events = ("I1mr", "D1mr", "D1mw", "ILmr", "DLmr", "DLmw", "Bcm", "Bim")
    counters = [CounterValue(name, 0.0, "") for name in events]
    return Profile(machine="", tool_versions="", timing=Timing(1.0, 1.0, 1.0, 1, "monotonic_clock"), target="cpu",
                   kernel="step", counters=[CounterValue("Ir", 6e6, "inst"), *counters], hot_lines=lines)


def _chain(profile: Profile, **values: float):
    thresholds = registry.thresholds_for("cpu")
    for name, value in values.items():
        thresholds[name] = registry.Threshold(name, value, thresholds[name].unit, thresholds[name].reason)
    return next((d for d in diagnose(profile, thresholds) if d.name == "dependency_chain"), None)


def test_the_rule_fires_on_latency_not_on_the_count_of_operations() -> None:
    """One floating-point operation a step (4 cycles) is a chain at a 4-cycle threshold; three single-cycle
    integer operations (3 cycles) are not, though they are more operations."""
    assert _chain(_profile(4.0, 1.0), min_chain_latency_cycles=4.0) is not None
    assert _chain(_profile(3.0, 3.0), min_chain_latency_cycles=4.0) is None


def test_the_evidence_names_the_latency_and_says_the_time_is_an_estimate() -> None:
    """1e6 steps x 4 cycles = 4e6 cycles of chain, where callgrind counted 6e6 instructions on its lines: the
    severity is (1 - 1/2) of the chain's time against the kernel's estimated cycles."""
    chain = _chain(_profile(4.0, 1.0))
    assert chain is not None
    finding = next(f for f in chain.findings if f.metric == "chain_latency_cycles")
    assert finding.value == 4.0
    text = " ".join(chain.evidence)
    assert "about 4 cycles of latency" in text and "an estimate" in text and "1000000 steps x 4 cycles" in text
    assert abs(chain.severity - 0.5 * 4e6 / 6e6) < 1e-3  # rounded to 4 digits


def _in_order(profile: Profile) -> Profile:
    """The same loop as gcc reports a double sum at -O3: vectorised, its reduction kept in order (fold-left)."""
    for line in profile.hot_lines:
        line.metrics += [CounterValue("gcc.vectorized", 1.0, "flag"), CounterValue("gcc.vector_bytes", 32.0, "byte"),
                         CounterValue("gcc.fold_left_reduction", 1.0, "flag")]
    return profile


def _names(profile: Profile) -> list[str]:
    return [d.name for d in diagnose(profile, registry.thresholds_for("cpu"))]


def test_an_in_order_sum_whose_chain_is_reported_is_the_chain_s_with_both_fixes_named() -> None:
    """Scenario (INAF's array_reduction scan and multiply_arrays v0, Codee's PWR054): a floating-point sum gcc
    vectorises but keeps in source order. Its cost is the adds' latency, which dependency_chain estimates; the chain
    claims the lines from missed_vectorization, and its evidence names partial sums and `omp simd reduction`."""
    profile = _in_order(_profile(4.0, 1.0))
    chain = _chain(profile)
    assert chain is not None and any("fold-left" in line and "omp simd" in line for line in chain.evidence)
    assert "missed_vectorization" not in _names(profile)


def test_an_in_order_sum_no_chain_reports_is_missed_vectorization() -> None:
    """The chain's facts missing (its value's type unknown: a chain under min_chain_latency_cycles): gcc's in-order
    sum is still named, by missed_vectorization."""
    profile = _in_order(_profile(1.0, 1.0))
    assert _chain(profile) is None
    vector = next(d for d in diagnose(profile, registry.thresholds_for("cpu")) if d.name == "missed_vectorization")
    assert any("source order" in line for line in vector.evidence)
