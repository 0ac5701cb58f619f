"""Two causes amh-code's held-out entries showed that the rules missed (issue 20, CPU side): Euclid's gcd, bound by
the latency of the integer division each step waits for (`missed_vectorization` ranked first: wrong), and a
recursive segment tree, whose calls callgrind filed under a second name (`_sum'2`) so the call overhead was never
seen. Each static fact is checked on small sources that have it and twins that do not; each rule on a real C
program built with gcc and profiled under callgrind in application mode, with a twin that must not get it."""

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


def _profile(tmp_path: Path, code: str, function: str) -> Profile:
    (tmp_path / "prog.c").write_text(code)
    subprocess.run(["gcc", "-O2", "-g", "prog.c", "-o", "prog"], cwd=tmp_path, check=True)
    profiles = profile_application("./prog", tmp_path, target="cpu", top=3, work_dir=tmp_path / "work")
    return next(p for p in profiles if p.kernel.split("(")[0] == function)


def _names(profile: Profile) -> list[str]:
    return [d.name for d in profile.diagnoses]


def test_the_division_rule_is_registered_with_documented_thresholds() -> None:
    thresholds = registry.thresholds_for("cpu")
    rule = registry.get_rule("slow_integer_division")
    assert rule.targets == ("cpu",) and "binary GCD" in rule.hint
    assert rule.check.__doc__ and len(rule.check.__doc__) > 80
    for entry in ("integer_division_cycles", "division_instructions"):
        assert entry in rule.thresholds
        assert thresholds[entry].unit and len(thresholds[entry].reason) > 40


# ---- the static fact: a division on a loop-carried chain ------------------------------------------------------------

CARRIED = {
    # amh-code's gcd/loop.cc: the remainder becomes the next divisor through std::swap
    "euclid_swap": ("int gcd(int a, int b) {\n    while (b > 0) {\n        a %= b;\n        std::swap(a, b);\n    }\n"
                    "    return a;\n}\n", "gcd", "cpp", 3),
    "euclid_temporary": ("int gcd(int a, int b) {\n  while (b) {\n    int t = a % b;\n    a = b;\n    b = t;\n  }\n"
                         "  return a;\n}\n", "gcd", "c", 3),
    # a polynomial hash reduced by a modulus known only at run time: each step's remainder feeds the next
    "hash_mod": ("unsigned hash(const unsigned char *x, int n, unsigned p) {\n  unsigned h = 0;\n"
                 "  for (int i = 0; i < n; i++)\n    h = (h * 31 + x[i]) % p;\n  return h;\n}\n", "hash", "c", 4),
    "digits_in_base": ("int f(int n, int base) {\n  int d = 0;\n  while (n) {\n    n /= base;\n    d++;\n  }\n"
                       "  return d;\n}\n", "f", "c", 4),
}
NOT_CARRIED = {
    # a macro divisor is a multiplication once compiled
    "macro_modulus": ("#define P 1000003\nunsigned hash(const unsigned char *x, int n) {\n  unsigned h = 0;\n"
                      "  for (int i = 0; i < n; i++)\n    h = (h * 31 + x[i]) % P;\n  return h;\n}\n", "hash", "c"),
    "const_local": ("int f(int n) {\n  const int base = 7;\n  int d = 0;\n  while (n) { n /= base; d++; }\n"
                    "  return d;\n}\n", "f", "c"),
    "literal": ("int f(int n) {\n  int d = 0;\n  while (n) { n /= 10; d++; }\n  return d;\n}\n", "f", "c"),
    # independent divisions: their latencies overlap
    "elementwise": ("void f(int *out, const int *x, int n, int k) {\n  for (int i = 0; i < n; i++)\n"
                    "    out[i] = x[i] % k;\n}\n", "f", "c"),
    "index": ("void f(float *out, const float *x, int n, int k) {\n  for (int i = 0; i < n; i++) {\n"
              "    int r = i % k;\n    out[i] = x[r];\n  }\n}\n", "f", "c"),
    # floating-point division: not an integer one (and gcc pipelines it)
    # a cast makes an integer quotient a floating-point one (Lemire's blog, 2019/05/07/simulate.cpp)
    "cast_to_double": ("double f(int n, int range) {\n  double p = 1.0;\n  for (int i = 0; i < n; i++)\n"
                       "    range = (double) (n - i) / range;\n  return p;\n}\n", "f", "c"),
    "floats": ("float f(float a, float b, int n) {\n  for (int i = 0; i < n; i++)\n    a = a / b;\n  return a;\n}\n",
               "f", "c"),
}


@pytest.mark.parametrize("case", sorted(CARRIED))
def test_a_division_whose_result_feeds_the_next_is_carried(case: str) -> None:
    source, function, language, line = CARRIED[case]
    found = loops.analyze_loops(source, function, language).divisions
    assert [d.line for d in found] == [line], found


@pytest.mark.parametrize("case", sorted(NOT_CARRIED))
def test_constant_divisors_and_independent_divisions_are_not(case: str) -> None:
    source, function, language = NOT_CARRIED[case]
    assert loops.analyze_loops(source, function, language).divisions == []


# ---- the rules on real programs ------------------------------------------------------------------------------------

GCD_MAIN = """
int main(int argc, char **argv) {
    (void)argv;
    int n = 4000, a[4000], b[4000];
    unsigned x = 12345 + argc;
    for (int i = 0; i < n; i++) {
        x = x * 1103515245u + 12345u; a[i] = (int)(x >> 1) % 1000000000;
        x = x * 1103515245u + 12345u; b[i] = (int)(x >> 1) % 1000000000;
    }
    volatile int sum = 0;
    for (int r = 0; r < 20; r++)
        for (int i = 0; i < n; i++) sum += gcd(a[i], b[i]);
    return sum & 1;
}
"""
EUCLID = """\
__attribute__((noinline)) int gcd(int a, int b) {
    while (b > 0) {
        int t = a % b;
        a = b;
        b = t;
    }
    return a;
}
""" + GCD_MAIN
# the fix amh-code's gcd chapter makes: shifts, count-trailing-zeros and subtraction, no division
BINARY = """\
__attribute__((noinline)) int gcd(int a, int b) {
    if (a == 0) return b;
    if (b == 0) return a;
    int az = __builtin_ctz(a), bz = __builtin_ctz(b), shift = az < bz ? az : bz;
    b >>= bz;
    while (a != 0) {
        a >>= az;
        int diff = b - a;
        az = __builtin_ctz(diff);
        b = a < b ? a : b;
        a = diff < 0 ? -diff : diff;
    }
    return b << shift;
}
""" + GCD_MAIN


@needs_tools
def test_euclids_gcd_is_bound_by_its_divisions(tmp_path: Path) -> None:
    """amh-code's gcd-loop: `missed_vectorization` ranked first (gcc cannot count the loop's iterations), whose
    hint points nowhere; the book's fix is binary GCD, which does without the division."""
    profile = _profile(tmp_path, EUCLID, "gcd")
    top = profile.diagnoses[0]
    assert top.name == "slow_integer_division", profile.diagnoses
    assert top.severity > 0.5 and "a % b" in " ".join(top.evidence)
    assert "missed_vectorization" not in _names(profile)  # the chain's loop is claimed: no vectoriser's loop


@needs_tools
def test_binary_gcd_has_no_division_to_blame(tmp_path: Path) -> None:
    profile = _profile(tmp_path, BINARY, "gcd")
    assert "slow_integer_division" not in _names(profile), profile.diagnoses


TREE_MAIN = """
int main(int argc, char **argv) {
    (void)argv;
    for (int v = 0; v < 4 * N; v++) t[v] = v & 7;
    volatile int s = 0;
    for (int i = 0; i < 20000; i++) s += query((i * 7919 + argc) % N);
    return s & 1;
}
"""
# amh-code's segtree/topdown-recursive.cc, in C: the prefix sum visits both children, one of which returns at once
RECURSIVE = """\
#define N 16384
int t[4 * N];
__attribute__((noinline)) int sum(int k, int v, int l, int r) {
    if (l >= k) return 0;
    if (r <= k) return t[v];
    int m = (l + r) / 2;
    return sum(k, 2 * v, l, m) + sum(k, 2 * v + 1, m, r);
}
__attribute__((noinline)) int query(int k) { return sum(k, 1, 0, N); }
""" + TREE_MAIN
# its topdown-iterative successor: one loop down the tree, no calls
ITERATIVE = """\
#define N 16384
int t[4 * N];
__attribute__((noinline)) int query(int k) {
    int v = 1, l = 0, r = N, s = 0;
    while (l < k) {
        if (r <= k) { s += t[v]; break; }
        int m = (l + r) / 2;
        if (k > m) { s += t[2 * v]; v = 2 * v + 1; l = m; }
        else { v = 2 * v; r = m; }
    }
    return s;
}
""" + TREE_MAIN


@needs_tools
def test_a_recursive_tree_walk_is_call_overhead(tmp_path: Path) -> None:
    """amh-code's segtree-topdown-recursive: callgrind filed the deeper calls under `sum'2` (90% of the
    instructions), so `sum` looked like one costly call from `query`; with one name per function its tens of
    instructions a call show, and the hint is the book's: a loop instead of the recursion."""
    profile = _profile(tmp_path, RECURSIVE, "sum")
    assert "call_overhead" in _names(profile)[:2], profile.diagnoses
    found = next(d for d in profile.diagnoses if d.name == "call_overhead")
    assert "calling itself (recursion)" in " ".join(found.evidence) and "recursion with a loop" in found.hint
    assert found.severity > 0.1
    assert profile.counter("recursive_calls_profiled") > profile.counter("kernel_calls_profiled") / 2


@needs_tools
def test_the_same_walk_as_a_loop_has_no_call_overhead(tmp_path: Path) -> None:
    profile = _profile(tmp_path, ITERATIVE, "query")
    assert "call_overhead" not in _names(profile), profile.diagnoses
