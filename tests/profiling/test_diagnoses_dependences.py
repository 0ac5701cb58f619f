"""Diagnoses beyond the catalogue's patterns (issue 20, CPU side): indirect-branch mispredictions, loops already
vectorised by hand, accumulators in memory, pointer chases, calls too small to pay for themselves and per-thread
counters sharing a cache line. Each rule's static fact is checked on a small source that has it and one that does
not; each rule on a real C program built with gcc and profiled under callgrind in application mode, with an
innocent twin that must not get the diagnosis."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from perfforge.records import Profile
from profiling.application import profile_application
from profiling.cpu import loops
from profiling.diagnoses import registry

needs_tools = pytest.mark.skipif(shutil.which("valgrind") is None or shutil.which("gcc") is None,
                                 reason="CPU profiles need gcc and valgrind")
NEW_RULES = ("accumulator_in_memory", "dependency_chain", "call_overhead", "false_sharing")
HEAD = "#include <stdio.h>\n#include <stdlib.h>\n"


def _profile(tmp_path: Path, code: str, function: str, flags: tuple[str, ...] = (), top: int = 3,
             compiler: str = "gcc") -> Profile:
    source = "prog.c" if compiler == "gcc" else "prog.cpp"
    (tmp_path / source).write_text(code)
    subprocess.run([compiler, "-O2", "-g", *flags, source, "-o", "prog", "-lm", "-lpthread"], cwd=tmp_path,
                   check=True)
    profiles = profile_application("./prog", tmp_path, target="cpu", top=top, work_dir=tmp_path / "work")
    return next(p for p in profiles if p.kernel.split("(")[0] == function)


def _names(profile: Profile) -> list[str]:
    return [d.name for d in profile.diagnoses]


def test_new_rules_are_registered_with_documented_thresholds() -> None:
    thresholds = registry.thresholds_for("cpu")
    for name in NEW_RULES:
        rule = registry.get_rule(name)
        assert rule.targets == ("cpu",) and rule.hint
        assert rule.check.__doc__ and len(rule.check.__doc__) > 80  # the mechanism, in the check's docstring
        for entry in rule.thresholds:
            assert thresholds[entry].unit and len(thresholds[entry].reason) > 40


# ---- static facts ---------------------------------------------------------------------------------------------------

HAND_VECTOR = """\
#include <emmintrin.h>
typedef union { __m128d v; double d[2]; } v2df_t;
void add4(double *c, const double *a, const double *b, int k) {
    v2df_t acc, x;
    acc.v = _mm_setzero_pd();
    for (int p = 0; p < k; p++) {
        x.v = _mm_load_pd(a + 2 * p);
        acc.v += x.v * _mm_loaddup_pd(b + p);
    }
    _mm_store_pd(c, acc.v);
}
"""
SCALAR = """\
void add4(double *c, const double *a, const double *b, int k) {
    for (int p = 0; p < k; p++)
        c[p] = a[p] * b[p];
}
"""


def test_a_loop_written_with_vector_types_is_hand_vectorised() -> None:
    assert loops.analyze_loops(HAND_VECTOR, "add4").vector_loops == {6}
    assert loops.analyze_loops(SCALAR, "add4").vector_loops == set()


ACCUMULATE = """\
#define C(i, j) c[(j) * ldc + (i)]
void dot(double *c, const double *a, const double *b, int k, int ldc) {
    for (int p = 0; p < k; p++) {
        C(0, 1) += a[p] * b[p];
        c[0] += a[p];
        c[p] += b[p];
    }
    double s = 0.0;
    double local[2] = {0.0, 0.0};
    for (int p = 0; p < k; p++) {
        s += a[p] * b[p];
        local[1] += a[p];
    }
    c[1] = s + local[1];
}
"""


def test_an_update_of_memory_at_an_address_its_loop_does_not_change_is_an_accumulator() -> None:
    found = loops.analyze_loops(ACCUMULATE, "dot").accumulators
    # the macro access and c[0] accumulate in memory; c[p] moves with the loop; the local scalar and the local
    # array (which gcc keeps in registers) do not count
    assert [(a.line, a.target) for a in found] == [(4, "C(0, 1)"), (5, "c[0]")]


def test_an_accumulator_behind_a_restrict_pointer_is_not_in_memory() -> None:
    """Reviewer's case: with `float *restrict out`, gcc keeps out[i] in a register over j (nothing aliases it)."""
    source = """\
void mv(int n, const float *a, const float *x, float *%s out) {
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++)
            out[i] += a[i * n + j] * x[j];
}
"""
    assert [a.target for a in loops.analyze_loops(source % "", "mv").accumulators] == ["out[i]"]
    for qualifier in ("restrict", "__restrict__"):
        assert loops.analyze_loops(source % qualifier, "mv").accumulators == []


CHASE = """\
struct node { int value; struct node *next; };
int walk(struct node *head, const int *perm, int n) {
    int s = 0;
    for (struct node *p = head; p; p = p->next)
        s += p->value;
    int i = 0;
    for (int k = 0; k < n; k++) {
        i = perm[i];
        s += i;
    }
    int m = n;
    while (m != 0) {
        s += m % 10;
        m = m / 10;
    }
    return s;
}
"""


def test_a_variable_stepped_to_a_value_loaded_through_it_is_a_pointer_chase() -> None:
    chases = loops.analyze_loops(CHASE, "walk").chases
    # p = p->next and i = perm[i]; m = m / 10 is a serial recurrence without a load
    assert [(c.line, c.variable) for c in chases] == [(4, "p"), (8, "i")]


def test_a_chase_through_a_node_the_loop_computes_from_its_index_is_a_pointer_chase() -> None:
    """johnysswlab's binary tree of nodes in a pool, reached by index: `node = (node_t *) (base + id); id =
    node->left;` steps id to a value loaded through a pointer computed from it (a miss before: no chase, so no
    dependency chain). The interleaved lookup, which steps an array element (`ids[i] = node->left`), is not one, and
    neither is a local computed from something else."""
    source = """\
struct node_t { int value; unsigned left, right; };
int find(const char *base, unsigned root, int value) {
    unsigned id = root;
    while (id != 0) {
        const struct node_t *node = (const struct node_t *) (base + id);
        if (value < node->value) id = node->left;
        else if (value > node->value) id = node->right;
        else return 1;
    }
    return 0;
}
void find_all(const char *base, unsigned *ids, const int *values, int n, const struct node_t *other) {
    for (int i = 0; i < n; i++) {
        const struct node_t *node = (const struct node_t *) (base + ids[i]);
        ids[i] = node->left;
        const struct node_t *fixed = other + i;
        unsigned next = fixed->right;
        ids[0] = next;
    }
}
unsigned walk(const char *base, int n) {
    unsigned id = 0;
    const struct node_t *node = (const struct node_t *) base;
    for (int i = 0; i < n; i++) {
        for (int k = 0; k < 2; k++) {
            const struct node_t *node = (const struct node_t *) (base + id + k);
            id += node->value;
        }
        id = node->left;
    }
    return id;
}
"""
    assert [(c.line, c.variable) for c in loops.analyze_loops(source, "find").chases] == [(6, "id"), (7, "id")]
    assert loops.analyze_loops(source, "find_all").chases == []
    # the outer loop's update reads the outer `node`, not the inner loop's (which is computed from id)
    assert loops.analyze_loops(source, "walk").chases == []


SLOTS = """\
#include <omp.h>
struct slot { PAD long value; };
void count(const long *x, int n, long *counts, struct slot *spread) {
#pragma omp parallel
    {
        int t = omp_get_thread_num();
        long local = 0;
#pragma omp for
        for (int i = 0; i < n; i++) {
            counts[t] += x[i] & 1;
            spread[t].value += x[i] & 2;
            local += x[i];
        }
        counts[t + 1] = local;
    }
}
"""


def test_a_write_to_a_thread_indexed_slot_in_a_parallel_loop_is_found() -> None:
    writes = loops.analyze_loops(SLOTS.replace("PAD", ""), "count").slot_writes
    # both slots written in the loop; not the write after it (once per thread), not the thread's local
    assert [(w.line, w.array) for w in writes] == [(10, "counts"), (11, "spread")]
    # a structure aligned to a cache line gives each thread a line of its own
    padded = loops.analyze_loops(SLOTS.replace("PAD", "_Alignas(64)"), "count").slot_writes
    assert [(w.line, w.array) for w in padded] == [(10, "counts")]


THREADS = """\
#include <future>
#include <thread>
#include <vector>
void work(int tid, int step, long *counts, long reps) {
    int slot = tid * step;
    for (long r = 0; r < reps; r++)
        for (int i = 0; i < 1; i++)
            counts[slot + i]++;
}
void part(int tid, const float *x, float *out, int chunk) {
    int begin = tid * chunk;
    for (int i = 0; i < chunk; i++)
        out[begin + i] = 2 * x[begin + i];
}
void tally(int tid, long *counts, int n) {
    for (int i = 0; i < n; i++)
        counts[tid] += i;
}
void run(long *counts, const float *x, float *out, int n) {
    std::vector<std::thread> threads;
    for (int i = 0; i < 4; i++)
        threads.emplace_back(work, i, 1, counts, 1000L);
    for (int t = 0; t < 4; t++) {
        std::thread worker(part, t, x, out, n / 4);
        worker.join();
    }
    std::vector<std::future<void>> done;
    for (int k = 0; k < 4; k++)
        done.push_back(std::async(std::launch::async, tally, k, counts, n));
    work(0, 1, counts, 10);
    for (auto &thread : threads) thread.join();
}
"""


def test_a_thread_function_rewriting_its_own_slot_is_found() -> None:
    """hardware-effects' false-sharing: threads started with emplace_back(work, i, ...) increment their own counter,
    `memory[tid * increment + i]`, again and again; std::async with a launch policy counts too."""
    assert [(w.line, w.array) for w in loops.analyze_loops(THREADS, "work", "cpp").slot_writes] == [(8, "counts")]
    assert [(w.line, w.array) for w in loops.analyze_loops(THREADS, "tally", "cpp").slot_writes] == [(17, "counts")]


def test_a_trip_count_every_thread_start_passes_as_a_literal_is_known() -> None:
    """hardware-effects' false-sharing as it is written: the inner loop's bound is a parameter, `i < size`, which
    every start passes the literal 1 (`threads.emplace_back(thread_fn, i, increment, memory, 1)`): the thread
    rewrites one slot, not a chunk. Not when a start passes a larger count, a variable, or two different counts."""
    source = (THREADS.replace("for (int i = 0; i < 1; i++)", "for (int i = 0; i < size; i++)")
              .replace("long *counts, long reps)", "long *counts, long reps, int size)")
              .replace("threads.emplace_back(work, i, 1, counts, 1000L);",
                       "threads.emplace_back(work, i, 1, counts, 1000L, SIZES);"))

    def found(sizes: str, more: str = "") -> list[tuple[int, str]]:
        text = source.replace("SIZES", sizes).replace("worker.join();", "worker.join();" + more)
        return [(w.line, w.array) for w in loops.analyze_loops(text, "work", "cpp").slot_writes]

    assert found("1") == [(8, "counts")]
    assert found("64") == [] and found("n") == []
    assert found("1", "\n        std::thread(work, t, 1, counts, 1L, 2).join();") == []


NOT_SLOTS = """\
#include <thread>
#include <vector>
struct alignas(64) Slot { long v; };
typedef Slot padded_t;
Slot globals[8];
padded_t aliased[8];
thread_local long mine[8];
void steps(int t, int chunk, float *out, int n_steps) {
    int begin = t * chunk;
    for (int s = 0; s < n_steps; s++)
        for (int i = 0; i < chunk; i++)
            out[begin + i] *= 0.5f;
}
void rows(int tid, int T, const double *A, const double *B, double *C, int N) {
    for (int i = tid; i < N; i += T)
        for (int j = 0; j < N; j++)
            for (int k = 0; k < N; k++)
                C[i * N + j] += A[i * N + k] * B[k * N + j];
}
void spmv(int tid, int chunk, const int *rowptr, const double *v, double *y) {
    int begin = tid * chunk, end = begin + chunk;
    for (int r = begin; r < end; r++)
        for (int k = rowptr[r]; k < rowptr[r + 1]; k++)
            y[r] += v[k];
}
void padded(int tid, long n) {
    for (long i = 0; i < n; i++) {
        globals[tid].v++;
        aliased[tid].v++;
        mine[tid]++;
    }
}
void own_buffer(int tid, double **bufs, const double *x, long n) {
    double *buffer = bufs[tid];
    for (long i = 0; i < n; i++)
        buffer[0] += x[i];
}
void run(const double *A, const double *B, double *C, float *out, const int *rowptr, const double *v, double *y,
         double **bufs) {
    std::vector<std::thread> threads;
    for (int t = 0; t < 4; t++) {
        threads.emplace_back(steps, t, 64, out, 10);
        threads.emplace_back(rows, t, 4, A, B, C, 64);
        threads.emplace_back(spmv, t, 16, rowptr, v, y);
        threads.emplace_back(padded, t, 100L);
        threads.emplace_back(own_buffer, t, bufs, v, 100L);
    }
    for (auto &thread : threads) thread.join();
}
"""


@pytest.mark.parametrize("function", ["steps", "rows", "spmv", "padded", "own_buffer"])
def test_threads_that_share_no_line_are_not_false_sharing(function: str) -> None:
    """The review's false positives (a helper, on the first version): a thread's own chunk rewritten every time
    step, rows dealt out cyclically (a loop counter started from the index is no slot), a CSR row block, elements
    padded to a line (the structure, its typedef, a global), thread-local storage, and a buffer of the thread's own
    reached through a pointer loaded from a table."""
    assert loops.analyze_loops(NOT_SLOTS, function, "cpp").slot_writes == []


def test_a_bin_chosen_by_the_data_inside_the_threads_slots_is_false_sharing() -> None:
    """An OpenMP histogram with four bins per thread, `h[tid * 4 + (x[i] & 3)]++`: the loop's counter places the
    write only through a loaded value, so the thread's 16 bytes are rewritten again and again."""
    source = SLOTS.replace("counts[t] += x[i] & 1;", "counts[t * 4 + (x[i] & 3)]++;")
    assert [(w.line, w.array) for w in loops.analyze_loops(source, "count").slot_writes] == [(10, "counts"),
                                                                                              (11, "spread")]


@pytest.mark.parametrize(("source", "language"), [
    ("vos(int tid) = delete;\nvoid wo(int tid, long *c) { for (;;) c[tid]++; }\n", "cpp"),  # a body-less definition
    ("long vos(long *c) { return " + " + ".join(["c[0]"] * 1500) + "; }\n", "c"),  # deeper than the walks recurse
])
def test_source_the_analysis_cannot_read_gives_no_facts_and_no_exception(source: str, language: str) -> None:
    """The review's two crashes (a helper's fuzzing; both older than the thread rules): a kernel's source must
    profile, with or without static facts."""
    assert not loops.analyze_loops(source, "vos", language).function_found


def test_a_thread_writing_its_own_chunk_is_not() -> None:
    """A thread writing its chunk element by element (`out[begin + i]` over i) shares a line only at the chunk's
    ends: the address changes in every loop around the write."""
    assert loops.analyze_loops(THREADS, "part", "cpp").slot_writes == []
    # a function called directly, never started as a thread, has no thread index
    assert loops.analyze_loops(THREADS.replace("threads.emplace_back(work, i,", "work(i,")
                               .replace("std::async(std::launch::async, tally, k,", "std::async(tally, 0,"),
                               "work", "cpp").slot_writes == []
    assert loops.analyze_loops(THREADS.replace("std::async(std::launch::async, tally, k,", "std::async(tally, 0,"),
                               "tally", "cpp").slot_writes == []


# ---- rules on real profiles -----------------------------------------------------------------------------------------

INDIRECT = HEAD + """\
typedef long (*op_t)(long);
__attribute__((noinline)) long inc(long x) { return x + 1; }
__attribute__((noinline)) long twice(long x) { return x * 2; }
__attribute__((noinline)) long neg(long x) { return -x; }
__attribute__((noinline)) long half(long x) { return x / 2; }
__attribute__((noinline)) long apply(op_t *ops, int n, long v) {
    for (int i = 0; i < n; i++)
        v = ops[i](v) & 0xffff;
    return v;
}
int main(void) {
    int n = 100000;
    op_t table[4] = {inc, twice, neg, half};
    op_t *ops = malloc(n * sizeof(op_t));
    srand(1);
    for (int i = 0; i < n; i++) ops[i] = table[SELECT];
    printf("%ld\\n", apply(ops, n, 1) + apply(ops, n, 2));
    return 0;
}
"""


@needs_tools
def test_an_indirect_call_whose_target_changes_is_a_branch_misprediction(tmp_path: Path) -> None:
    """perf-ninja's virtual_call_mispredict: the rule read conditional branches only and missed an indirect call
    mispredicting most of the time."""
    profile = _profile(tmp_path, INDIRECT.replace("SELECT", "rand() % 4"), "apply", top=6)
    top = profile.diagnoses[0]
    assert top.name == "branch_mispredictions", profile.diagnoses
    assert top.findings[0].lines == [10]
    assert "indirect" in " ".join(top.evidence) and "type" in top.hint


@needs_tools
def test_an_indirect_call_to_one_target_is_no_misprediction(tmp_path: Path) -> None:
    profile = _profile(tmp_path, INDIRECT.replace("SELECT", "0"), "apply", top=6)
    assert "branch_mispredictions" not in _names(profile), profile.diagnoses


VECTOR_MAIN = """
int main(void) {
    int n = 4096;
    double *y = aligned_alloc(64, n * sizeof(double)), *x = aligned_alloc(64, n * sizeof(double));
    for (int i = 0; i < n; i++) { x[i] = i % 7; y[i] = i % 5; }
    for (int r = 0; r < 200; r++) axpy(y, x, 0.5, n);
    printf("%f\\n", y[n / 2]);
    return 0;
}
"""
AXPY_BY_HAND = HEAD + """\
#include <emmintrin.h>
typedef union { __m128d v; double d[2]; } v2df_t;
__attribute__((noinline)) void axpy(double *y, const double *x, double a, int n) {
    v2df_t va, vx, vy;
    va.v = _mm_set1_pd(a);
    for (int i = 0; i < n; i += 2) {
        vx.v = _mm_load_pd(x + i);
        vy.v = _mm_load_pd(y + i);
        vy.v += va.v * vx.v;
        _mm_store_pd(y + i, vy.v);
    }
}
""" + VECTOR_MAIN
# The same update written as scalar code with a loop-carried dependence gcc cannot vectorise (y[i] reads y[i-1]).
AXPY_SCALAR = HEAD + """\
__attribute__((noinline)) void axpy(double *y, const double *x, double a, int n) {
    for (int i = 1; i < n; i++)
        y[i] = y[i - 1] * 0.25 + a * x[i];
}
""" + VECTOR_MAIN


@needs_tools
def test_a_loop_vectorised_by_hand_is_no_missed_vectorization(tmp_path: Path) -> None:
    """how-to-optimize-gemm's MMult_4x4_10 to 14: SSE registers by hand, which gcc reports as not vectorised."""
    profile = _profile(tmp_path, AXPY_BY_HAND, "axpy")
    assert any(h.metric("static.hand_vectorized") for h in profile.hot_lines)
    assert "missed_vectorization" not in _names(profile), profile.diagnoses


@needs_tools
def test_a_scalar_loop_gcc_did_not_vectorise_still_is(tmp_path: Path) -> None:
    profile = _profile(tmp_path, AXPY_SCALAR, "axpy")
    assert not any(h.metric("static.hand_vectorized") for h in profile.hot_lines)
    assert "missed_vectorization" in _names(profile), profile.diagnoses


DOT_MAIN = """
int main(void) {
    int k = 2000;
    double *a = malloc(k * sizeof(double)), *b = malloc(k * sizeof(double)), c[4] = {0};
    for (int i = 0; i < k; i++) { a[i] = i % 3; b[i] = i % 5; }
    for (int r = 0; r < 300; r++) dot(c, a, b, k);
    printf("%f\\n", c[0]);
    return 0;
}
"""
DOT_IN_MEMORY = HEAD + """\
__attribute__((noinline)) void dot(double *c, const double *a, const double *b, int k) {
    for (int p = 0; p < k; p++)
        c[0] += a[p] * b[p];
}
""" + DOT_MAIN
DOT_IN_REGISTER = HEAD + """\
__attribute__((noinline)) void dot(double *c, const double *a, const double *b, int k) {
    double s = c[0];
    for (int p = 0; p < k; p++)
        s += a[p] * b[p];
    c[0] = s;
}
""" + DOT_MAIN


@needs_tools
def test_accumulating_into_memory_is_accumulator_in_memory(tmp_path: Path) -> None:
    """how-to-optimize-gemm's MMult_1x4_5 / 4x4_5: `C(0, j) += A(0, p) * B(p, j)` over p; the fix (1x4_6)
    accumulates in registers. c may alias a and b, so gcc keeps c[0] in memory."""
    profile = _profile(tmp_path, DOT_IN_MEMORY, "dot")
    top = profile.diagnoses[0]
    assert top.name == "accumulator_in_memory", profile.diagnoses
    assert top.findings[0].lines == [5]
    # the accumulator claims its line from missed_vectorization (the loop header may still count there)
    vector = [d for d in profile.diagnoses if d.name == "missed_vectorization"]
    assert all(5 not in f.lines for d in vector for f in d.findings)


@needs_tools
def test_accumulating_into_a_register_is_not(tmp_path: Path) -> None:
    profile = _profile(tmp_path, DOT_IN_REGISTER, "dot")
    assert "accumulator_in_memory" not in _names(profile), profile.diagnoses


LIST_MAIN = """
int main(void) {
    int n = 300000;  /* 16-byte nodes: 4.8 MB, beyond D1, within the simulated LL */
    struct node *nodes = malloc(n * sizeof(struct node));
    int *order = malloc(n * sizeof(int));
    for (int i = 0; i < n; i++) order[i] = i;
    srand(1);
    for (int i = n - 1; i > 0; i--) { int j = rand() % (i + 1), t = order[i]; order[i] = order[j]; order[j] = t; }
    for (int i = 0; i < n; i++) {
        nodes[order[i]].value = i;
        nodes[order[i]].next = i + 1 < n ? &nodes[order[i + 1]] : NULL;
    }
    printf("%ld\\n", walk(&nodes[order[0]], nodes, n));
    return 0;
}
"""
LIST_CHASE = HEAD + """\
struct node { long value; struct node *next; };
__attribute__((noinline)) long walk(struct node *head, struct node *all, int n) {
    long s = 0;
    for (struct node *p = head; p; p = p->next)
        s += p->value;
    return s;
}
""" + LIST_MAIN
ARRAY_WALK = HEAD + """\
struct node { long value; struct node *next; };
__attribute__((noinline)) long walk(struct node *head, struct node *all, int n) {
    long s = 0;
    for (int i = 0; i < n; i++)
        s += all[i].value;
    return s;
}
""" + LIST_MAIN


@needs_tools
def test_walking_a_shuffled_list_is_a_dependency_chain(tmp_path: Path) -> None:
    """perf-ninja's dep_chains_1: cache_miss_bound came first, whose hint (walk memory in order, block) does not
    apply to a list; each node's address comes from the previous node's load."""
    profile = _profile(tmp_path, LIST_CHASE, "walk")
    top = profile.diagnoses[0]
    assert top.name == "dependency_chain", profile.diagnoses
    assert "cache_miss_bound" not in _names(profile)  # the chase claims its lines
    # and from missed_vectorization too: no vectoriser walks a list, each step waits for the last load
    assert "missed_vectorization" not in _names(profile), profile.diagnoses


@needs_tools
def test_walking_the_nodes_as_an_array_is_no_dependency_chain(tmp_path: Path) -> None:
    profile = _profile(tmp_path, ARRAY_WALK, "walk")
    assert "dependency_chain" not in _names(profile), profile.diagnoses


SORT_MAIN = """
int main(void) {
    int n = 20000;
    int *x = malloc(n * sizeof(int));
    srand(1);
    for (int i = 0; i < n; i++) x[i] = rand();
    SORT;
    printf("%d\\n", x[n / 2]);
    return 0;
}
"""
QSORT = HEAD + """\
int cmp(const void *a, const void *b) {
    int x = *(const int *)a, y = *(const int *)b;
    return (x > y) - (x < y);
}
""" + SORT_MAIN.replace("SORT", "qsort(x, n, sizeof(int), cmp)")
# The same comparison inlined into a sort of its own: one call sorts everything.
SHELLSORT = HEAD + """\
__attribute__((noinline)) void cmp(int *x, int n) {
    for (int gap = n / 2; gap > 0; gap /= 2)
        for (int i = gap; i < n; i++) {
            int v = x[i], j = i;
            for (; j >= gap && x[j - gap] > v; j -= gap)
                x[j] = x[j - gap];
            x[j] = v;
        }
}
""" + SORT_MAIN.replace("SORT", "cmp(x, n)")


@needs_tools
def test_a_comparator_called_through_a_pointer_is_call_overhead(tmp_path: Path) -> None:
    """perf-ninja's function_inlining_1: qsort's comparator, a few instructions a call, can never be inlined."""
    profile = _profile(tmp_path, QSORT, "cmp")
    assert "call_overhead" in _names(profile)[:3], profile.diagnoses
    found = next(d for d in profile.diagnoses if d.name == "call_overhead")
    assert found.severity > 0.2


@needs_tools
def test_a_function_doing_all_the_work_in_one_call_has_no_call_overhead(tmp_path: Path) -> None:
    profile = _profile(tmp_path, SHELLSORT, "cmp")
    assert "call_overhead" not in _names(profile), profile.diagnoses


COUNT_MAIN = """
int main(void) {
    int n = 400000;
    long *x = malloc(n * sizeof(long)), counts[8] = {0};
    for (int i = 0; i < n; i++) x[i] = i * 2654435761u;
    count(x, n, counts);
    printf("%ld\\n", counts[0] + counts[1]);
    return 0;
}
"""
COUNT_SHARED = HEAD + """\
#include <omp.h>
__attribute__((noinline)) void count(const long *x, int n, long *counts) {
#pragma omp parallel num_threads(2)
    {
        int t = omp_get_thread_num();
#pragma omp for
        for (int i = 0; i < n; i++)
            counts[t] += (x[i] >> 3) & 1;
    }
}
""" + COUNT_MAIN
COUNT_LOCAL = HEAD + """\
#include <omp.h>
__attribute__((noinline)) void count(const long *x, int n, long *counts) {
#pragma omp parallel num_threads(2)
    {
        int t = omp_get_thread_num();
        long local = 0;
#pragma omp for
        for (int i = 0; i < n; i++)
            local += (x[i] >> 3) & 1;
        counts[t] = local;
    }
}
""" + COUNT_MAIN


@needs_tools
def test_per_thread_counters_in_one_array_are_false_sharing(tmp_path: Path) -> None:
    """perf-ninja's false_sharing_1: threads add into their own element of one array; callgrind runs them on one
    core, so the coherence misses are estimated from the writes."""
    profile = _profile(tmp_path, COUNT_SHARED, "count._omp_fn.0", flags=("-fopenmp",))
    top = profile.diagnoses[0]
    assert top.name == "false_sharing", profile.diagnoses
    assert top.findings[0].lines == [10]
    assert "accumulator_in_memory" not in _names(profile)  # the shared slot is the cause, not the register


THREAD_COUNTERS = """\
#include <cstdio>
#include <thread>
#include <vector>
__attribute__((noinline)) void work(int tid, long *counts, const long *data) {
    for (long r = 0; r < 200000; r++)
        counts[tid] += data[r & 63];
}
int main() {
    static long counts[64], data[64];
    for (int i = 0; i < 64; i++) data[i] = i;
    std::vector<std::thread> threads;
    for (int i = 0; i < 2; i++)
        threads.emplace_back(work, i, counts, data);
    for (auto &thread : threads) thread.join();
    std::printf("%ld\\n", counts[0] + counts[1]);
    return 0;
}
"""


@needs_tools
def test_counters_of_std_threads_on_one_line_are_false_sharing(tmp_path: Path) -> None:
    """std::thread workers add into their own counter, `counts[tid]` (data that may alias keeps the add in memory);
    the thread index reaches the function as the spawning loop's variable."""
    profile = _profile(tmp_path, THREAD_COUNTERS, "work", compiler="g++")
    assert profile.diagnoses[0].name == "false_sharing", profile.diagnoses
    assert profile.diagnoses[0].findings[0].lines == [6]


@needs_tools
def test_per_thread_counters_kept_local_are_not(tmp_path: Path) -> None:
    profile = _profile(tmp_path, COUNT_LOCAL, "count._omp_fn.0", flags=("-fopenmp",))
    assert "false_sharing" not in _names(profile), profile.diagnoses


DOT_IN_ORDER = HEAD + """\
__attribute__((noinline)) double dot(const double *a, const double *b, int k) {
    double s = 0;
    for (int p = 0; p < k; p++)
        s += a[p] * b[p];
    return s;
}

int main(int argc, char **argv) {
    int k = 4000 + (argc > 5);  /* unknown at compile time: no clone of dot for a constant k */
    double *a = malloc(k * sizeof(double)), *b = malloc(k * sizeof(double)), t = 0;
    for (int i = 0; i < k; i++) { a[i] = i % 3; b[i] = i % 5; }
    for (int r = 0; r < 300; r++) t += dot(a, b, k);
    printf("%f\\n", t);
    return 0;
}
"""


@needs_tools
def test_a_sum_gcc_vectorises_but_keeps_in_order_is_named_as_the_chain_it_is(tmp_path: Path) -> None:
    """Scenario (Codee's PWR054, held out in session 28, and INAF's multiply_arrays v0): gcc -O3 reports the double
    dot product's loop as vectorised, with an in-order (fold-left) reduction: the loads and products use vectors,
    the adds stay scalar, one after another. The profile now records it, dependency_chain (the adds' latency)
    names it with both fixes, and missed_vectorization leaves the chain's lines to it. Under -ffast-math gcc
    reassociates the sum: no in-order sum is left to name."""
    profile = _profile(tmp_path, DOT_IN_ORDER, "dot", ("-O3", "-march=x86-64-v3"))
    assert any(h.metric("gcc.fold_left_reduction") for h in profile.hot_lines)
    chain = next(d for d in profile.diagnoses if d.name == "dependency_chain")
    assert any("fold-left" in line for line in chain.evidence)
    assert "missed_vectorization" not in _names(profile), profile.diagnoses
    fast = _profile(tmp_path, DOT_IN_ORDER, "dot", ("-O3", "-march=x86-64-v3", "-ffast-math"))
    assert not any(h.metric("gcc.fold_left_reduction") for h in fast.hot_lines)
    assert "missed_vectorization" not in _names(fast), fast.diagnoses


PIPELINE = HEAD + """\
#ifndef VERSION
#define VERSION v0.c
#endif
#define STR(x) #x
#define XSTR(x) STR(x)
int main(int argc, char **argv) {
    int N = 4000 + (argc > 5);
    double *array1 = malloc(2 * N * sizeof(double)), *array2 = array1 + N;
    for (int i = 0; i < 2 * N; i++) array1[i] = i % 7;
    double total = 0;
    for (int k = 0; k < 300; k++) {
        fflush(stdout);  /* the timing loop's clock calls: gcc does not vectorise across them */
        double sum = 0;
#include XSTR(VERSION)
        total += sum;
    }
    printf("%f\\n", total);
    return 0;
}
"""
V0 = """\
//
{
  for ( int i = 0; i < N; i++ )
    sum += array1[i] * array2[i];
}
"""


@needs_tools
def test_a_loop_in_a_file_included_into_main_gets_its_chain_and_vectoriser_facts(tmp_path: Path) -> None:
    """Scenario (INAF's multiply_arrays v0, session 28's miss): main `#include`s v0.c, a block holding the dot
    product, inside its timing loop (through a macro). Its hot lines are v0.c's, which defines no function: they
    carried no loop fact and nothing was diagnosed. Read as a body that declares what main declares, `sum` is a
    double: the loop carries a 4-cycle chain, and gcc's in-order sum is named."""
    (tmp_path / "v0.c").write_text(V0)
    profile = _profile(tmp_path, PIPELINE, "main", ("-O3", "-march=x86-64-v3"))
    assert Path(profile.source_file).name == "v0.c"
    line = next(h for h in profile.hot_lines if h.line == 4)
    assert line.metric("static.loop_depth") == 1 and line.metric("static.chain_latency_cycles") == 4
    assert line.metric("gcc.fold_left_reduction") == 1
    assert _names(profile)[0] == "dependency_chain", profile.diagnoses
