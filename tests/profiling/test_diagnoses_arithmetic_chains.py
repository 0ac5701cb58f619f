"""dependency_chain through arithmetic (issue 20, CPU side: perf-ninja's dep_chains_2, hardware-effects'
data-dependency): a value updated from its own last value in several dependent operations each iteration or each
call (a generator's state, four `acc += ...` a step) makes iterations wait on each other whatever the core's
width. The static fact is checked on small sources that have it and twins that do not; the rule on real C programs
built with gcc and profiled under callgrind in application mode, each with an innocent twin."""

from __future__ import annotations

from pathlib import Path

from profiling.cpu import loops
from profiling.diagnoses import registry
from tests.profiling.callgrind_programs import diagnosis_names, needs_tools, profile_function


def _chains(source: str, function: str, language: str = "c") -> dict[str, tuple[int, int, int, str]]:
    """target -> (loop line, operations, reassociable updates, callee) of the function's chains."""
    return {c.target: (c.loop_line, c.operations, c.reassociable, c.callee)
            for c in loops.analyze_loops(source, function, language).chains}


def _latencies(source: str, function: str, language: str = "c") -> dict[str, float]:
    """target -> estimated latency in cycles a step of the function's chains."""
    return {c.target: c.latency_cycles for c in loops.analyze_loops(source, function, language).chains}


# ---- static facts ---------------------------------------------------------------------------------------------------

XORSHIFT = """\
#include <cstdint>
struct XorShift32 {
  uint32_t val;
  uint32_t gen() {
    val ^= (val << 13);
    val ^= (val >> 17);
    val ^= (val << 5);
    return val;
  }
};
template <class RNG>
void motion(float *x, int n, int steps, uint32_t seed) {
  RNG rng(seed);
  for (int s = 0; s < steps; s++)
    for (int i = 0; i < n; i++) {
      uint32_t r = rng.gen();
      x[i] += r * 1e-9f;
    }
}
"""


def test_a_generator_state_updated_in_six_dependent_operations_is_a_chain_across_calls() -> None:
    """perf-ninja's dep_chains_2: the member `val` outlives each call of gen(), and each of its three updates
    reads the last one's result through a shift and an xor: six operations a call, each waiting for the one
    before, and the next call's first waits for this call's last."""
    assert _chains(XORSHIFT, "gen", "cpp") == {"val": (0, 6, 0, "")}
    # the loop calling it carries that chain from one iteration to the next (reported at the call)
    assert _chains(XORSHIFT, "motion", "cpp") == {"val": (15, 6, 0, "gen")}


def test_the_same_steps_on_a_parameter_passed_by_value_are_no_chain_across_calls() -> None:
    """A hash of its argument keeps nothing from one call to the next: the calls are independent."""
    source = "unsigned mix(unsigned x) { x ^= x << 13; x ^= x >> 17; x ^= x << 5; return x; }\n"
    assert _chains(source, "mix") == {}


FOUR_ADDS = """\
void sum(double *m, const double *src, long n, int version) {
    for (long j = 0; j + 1 < n; j++) {
        if (version == 0) {
            m[0] += src[j];
            m[0] += src[j];
            m[0] += src[j + 1];
            m[0] += src[j + 1];
        } else {
            m[0] += src[j];
            m[1] += src[j];
        }
    }
}
"""


def test_four_additions_into_one_location_a_step_are_a_reassociable_chain_of_four() -> None:
    """hardware-effects' data-dependency: four `memory[0] += ...` a step wait on each other; each adds a term that
    does not read memory[0], so the chain can be cut into four partial sums. Only one branch of an `if` runs:
    the longer counts, not both. A single floating-point addition a step (m[1]) is a chain of one operation, four
    cycles: reported, as a floating-point reduction is (the rule leaves a memory location's to
    accumulator_in_memory)."""
    assert _chains(FOUR_ADDS, "sum") == {"m[0]": (2, 4, 4, ""), "m[1]": (2, 1, 1, "")}
    assert _latencies(FOUR_ADDS, "sum") == {"m[0]": 16.0, "m[1]": 4.0}


def test_values_set_each_iteration_or_at_an_element_the_loop_moves_are_no_chain() -> None:
    """A value the iteration sets before reading (a hash of the index) and an element indexed by the loop carry
    nothing from one iteration to the next."""
    source = """\
void fill(unsigned *out, int n) {
    unsigned h;
    for (int i = 0; i < n; i++) {
        h = i * 2654435761u;
        h ^= h << 13;
        h ^= h >> 17;
        out[i] += h;
        out[i] ^= out[i] >> 3;
    }
}
"""
    assert _chains(source, "fill") == {}


def test_constant_steps_of_a_pointer_are_an_induction_variable_not_a_chain() -> None:
    """how-to-optimize-gemm's PackMatrixA: `*a_to++ = ...` four times a step is one add of 32 once compiled (the
    increments fold into the stores' offsets); it was reported as a chain of four."""
    source = """\
void pack(int k, const double *a, int lda, double *a_to) {
    for (int j = 0; j < k; j++) {
        const double *p = &a[j * lda];
        *a_to++ = *p;
        *a_to++ = *(p + 1);
        *a_to++ = *(p + 2);
        *a_to += 4;
        a_to += 1;
    }
}
"""
    assert _chains(source, "pack") == {}


# ---- the rule on real profiles --------------------------------------------------------------------------------------

HEAD = "#include <stdio.h>\n#include <stdlib.h>\n"
MOVE_MAIN = """
int main(void) {
    int n = 1000;
    float *x = calloc(n, sizeof(float)), *v = malloc(n * sizeof(float));
    for (int i = 0; i < n; i++) v[i] = 1.0f / (i + 1);
    move(x, v, n, 200);
    printf("%f\\n", x[7]);
    return 0;
}
"""
GENERATOR = HEAD + """\
static unsigned state = 2463534242u;
static inline unsigned next(void) {
    state ^= state << 13;
    state ^= state >> 17;
    state ^= state << 5;
    return state;
}
__attribute__((noinline)) void move(float *x, const float *v, int n, int steps) {
    for (int s = 0; s < steps; s++)
        for (int i = 0; i < n; i++) {
            unsigned r = next();
            x[i] += (float)(r & 1023) * v[i];
        }
}
""" + MOVE_MAIN
# The same six operations on a hash of the indices: each iteration's value is its own.
HASHED = HEAD + """\
static inline unsigned mix(unsigned h) {
    h ^= h << 13;
    h ^= h >> 17;
    h ^= h << 5;
    return h;
}
__attribute__((noinline)) void move(float *x, const float *v, int n, int steps) {
    for (int s = 0; s < steps; s++)
        for (int i = 0; i < n; i++) {
            unsigned r = mix((unsigned)(s * n + i) * 2654435761u);
            x[i] += (float)(r & 1023) * v[i];
        }
}
""" + MOVE_MAIN




@needs_tools
def test_a_loop_drawing_from_a_shift_xor_generator_is_a_dependency_chain(tmp_path: Path) -> None:
    """dep_chains_2 in C: the generator's state chain is inlined into the loop. gcc reports the loop not
    vectorised, but vectorising is not the fix: each lane would need a generator of its own, which is
    dependency_chain's fix (several independent generators), so the chain's loop is claimed from
    missed_vectorization."""
    profile = profile_function(tmp_path, GENERATOR, "move")
    assert diagnosis_names(profile)[:1] == ["dependency_chain"], profile.diagnoses
    assert "missed_vectorization" not in diagnosis_names(profile), profile.diagnoses
    chain = profile.diagnoses[0]
    assert any(f.metric == "chain_latency_cycles" and f.value == 6 for f in chain.findings), chain.evidence
    assert any("an estimate" in line for line in chain.evidence), chain.evidence


@needs_tools
def test_the_same_operations_on_a_hash_of_the_index_are_no_dependency_chain(tmp_path: Path) -> None:
    profile = profile_function(tmp_path, HASHED, "move")
    assert "dependency_chain" not in diagnosis_names(profile), profile.diagnoses


SUM_MAIN = """
int main(void) {
    long n = 200000;
    double *src = malloc(n * sizeof(double)), m[4] = {0, 0, 0, 0};
    for (long i = 0; i < n; i++) src[i] = 1.0 / (i + 1);
    sum(m, src, n);
    printf("%f\\n", m[0] + m[1] + m[2] + m[3]);
    return 0;
}
"""
ONE_LOCATION = HEAD + """\
__attribute__((noinline)) void sum(double *m, const double *src, long n) {
    for (long j = 0; j + 1 < n; j++) {
        m[0] += src[j];
        m[0] += src[j];
        m[0] += src[j + 1];
        m[0] += src[j + 1];
    }
}
""" + SUM_MAIN
FOUR_LOCATIONS = HEAD + """\
__attribute__((noinline)) void sum(double *m, const double *src, long n) {
    for (long j = 0; j + 1 < n; j++) {
        m[0] += src[j];
        m[1] += src[j];
        m[2] += src[j + 1];
        m[3] += src[j + 1];
    }
}
""" + SUM_MAIN


@needs_tools
def test_four_additions_into_one_location_rank_the_chain_above_the_memory_accumulator(tmp_path: Path) -> None:
    """hardware-effects' data-dependency: accumulator_in_memory came first. Keeping memory[0] in a register
    would leave four dependent floating-point adds a step; four partial sums overlap them (its fix, version 1,
    keeps them in memory), so the chain claims its lines from accumulator_in_memory: with accumulator_saving at
    0.75 the two rules' estimates tie (3/4 of the lines' instructions each) and the order would be the
    registry's."""
    profile = profile_function(tmp_path, ONE_LOCATION, "sum")
    names = diagnosis_names(profile)
    assert names[:1] == ["dependency_chain"], profile.diagnoses
    assert "accumulator_in_memory" not in names, profile.diagnoses


@needs_tools
def test_four_independent_accumulators_are_no_dependency_chain(tmp_path: Path) -> None:
    """Version 1 of data-dependency: each location gets one addition a step, four chains that overlap."""
    profile = profile_function(tmp_path, FOUR_LOCATIONS, "sum")
    names = diagnosis_names(profile)
    assert "dependency_chain" not in names, profile.diagnoses
    assert names[:1] == ["accumulator_in_memory"], profile.diagnoses


def test_the_chain_threshold_is_documented() -> None:
    thresholds = registry.thresholds_for("cpu")
    entry = thresholds["min_chain_latency_cycles"]
    assert entry.unit == "cycle" and len(entry.reason) > 80
    assert "min_chain_latency_cycles" in registry.get_rule("dependency_chain").thresholds
    assert "min_chain_operations" not in thresholds  # replaced: one threshold, in cycles


# ---- recursion down pointers ---------------------------------------------------------------------------------------

POINTER_TREE = """\
#include <cstdio>
#include <cstdlib>
const int N = 1 << 18;
struct segtree {
    int lb, rb;
    int s = 0;
    segtree *l = nullptr, *r = nullptr;
    segtree(int lb, int rb) : lb(lb), rb(rb) {
        if (lb + 1 < rb) {
            int t = (lb + rb) / 2;
            l = new segtree(lb, t);
            r = new segtree(t, rb);
        }
    }
    __attribute__((noinline)) void add(int k, int x) {
        s += x;
        if (l != nullptr) {
            if (k < l->rb)
                l->add(k, x);
            else
                r->add(k, x);
        }
    }
};
int main() {
    segtree root(0, N);
    srand(1);
    for (int q = 0; q < 200000; q++) root.add(rand() % N, 1);
    printf("%d\\n", root.s);
    return 0;
}
"""
# amh-code's fix: the same tree laid out implicitly in an array, children at 2v and 2v + 1.
IMPLICIT_TREE = """\
#include <cstdio>
#include <cstdlib>
const int N = 1 << 18;
int t[4 * N];
__attribute__((noinline)) void add(int k, int x, int v = 1, int l = 0, int r = N) {
    t[v] += x;
    if (l + 1 < r) {
        int m = (l + r) / 2;
        if (k < m)
            add(k, x, 2 * v, l, m);
        else
            add(k, x, 2 * v + 1, m, r);
    }
}
int main() {
    srand(1);
    for (int q = 0; q < 200000; q++) add(rand() % N, 1);
    printf("%d\\n", t[1]);
    return 0;
}
"""


def test_a_member_function_recursing_through_its_child_pointers_is_a_pointer_chase() -> None:
    """amh-code's segtree-pointers: `l->add(k, x)` calls add on the node whose address this call loads from its
    own node (a member pointer); recursing on an index computed from the arguments (`add(k, x, 2 * v, ...)`) is
    not."""
    chases = loops.analyze_loops(POINTER_TREE, "add", "cpp").recursive_chases
    assert [(c.line, c.loop_line, c.variable) for c in chases] == [(19, 15, "l"), (21, 15, "r")]
    assert loops.analyze_loops(IMPLICIT_TREE, "add", "cpp").recursive_chases == []


def test_a_free_function_recursing_on_a_loaded_child_is_a_pointer_chase() -> None:
    source = """\
struct node { struct node *left, *right; int v; };
int depth(struct node *n) { return n ? 1 + depth(n->left) : 0; }
"""
    assert [c.variable for c in loops.analyze_loops(source, "depth").recursive_chases] == ["n->left"]


@needs_tools
def test_descending_a_pointer_tree_by_recursion_is_a_dependency_chain(tmp_path: Path) -> None:
    """segtree-pointers: cache_miss_bound came first (its nodes miss D1), whose hint (walk memory in order, block)
    does not apply; each level's node address is the last level's load. The chase claims the lines from
    cache_miss_bound as a loop's chase does."""
    profile = profile_function(tmp_path, POINTER_TREE, "add", cpp=True)
    assert diagnosis_names(profile)[:1] == ["dependency_chain"], profile.diagnoses
    assert "cache_miss_bound" not in diagnosis_names(profile), profile.diagnoses


@needs_tools
def test_descending_an_implicit_array_tree_is_no_dependency_chain(tmp_path: Path) -> None:
    profile = profile_function(tmp_path, IMPLICIT_TREE, "add", cpp=True)
    assert "dependency_chain" not in diagnosis_names(profile), profile.diagnoses
