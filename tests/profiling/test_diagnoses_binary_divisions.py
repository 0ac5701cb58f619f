"""Integer divisions read from the compiled code (issue 20, CPU side): johnysswlab's hash map spends its lookups
in `key % size`, one division a lookup, none waiting on another, and slow_integer_division, which read only the
source's loop-carried divisions, said nothing. The binary's `div` instructions per source line (objdump) times
the line's runs now count every division the compiler left, at the divider's throughput. Real C programs built
with gcc and profiled under callgrind, with twins that must not get it: a power-of-two table indexed by a mask,
and a modulus by a constant, which gcc turns into a multiplication."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from perfforge.records import Profile
from profiling.application import profile_application
from profiling.cpu.disassembly import LineCode, parse_listing
from profiling.diagnoses import registry

needs_tools = pytest.mark.skipif(any(shutil.which(tool) is None for tool in ("valgrind", "gcc", "objdump")),
                                 reason="CPU profiles need gcc, valgrind and objdump")

LISTING = """
prog:     file format elf64-x86-64

Disassembly of section .text:

0000000000001200 <count_hits>:
count_hits():
/tmp/x/prog.c:11
    1200:\tendbr64
/tmp/x/prog.c:7 (discriminator 2)
    1204:\tmov    (%rdi),%rcx
    1207:\txor    %edx,%edx
    1209:\tdivq   %rcx
/tmp/x/other.c:7
    120c:\tidivl  %esi
    120e:\tdivsd  %xmm1,%xmm0
/tmp/x/prog.c:8
    1212:\tdivsd  %xmm1,%xmm0
    1216:\tret
    1217:\tnopw   0x0(%rax,%rax,1)
"""


def test_the_listing_gives_each_lines_instructions_and_integer_divisions() -> None:
    """Lines of another file of the binary do not count; SSE's divsd is no integer division; padding after the
    return is never executed."""
    assert parse_listing(LISTING, "prog.c") == {11: LineCode(1, 0), 7: LineCode(3, 1), 8: LineCode(2, 0)}


INLINED = LISTING + """
0000000000001300 <main>:
main():
/tmp/x/prog.c:7
    1300:\timul   $0x10624dd3,%rax,%rax
    1304:\tshr    $0x26,%rax
    1308:\timul   $0x3e8,%eax,%eax
    130c:\tsub    %eax,%ecx
/tmp/x/prog.c:12
    1310:\tcall   1200 <count_hits>
"""


def test_a_line_inlined_elsewhere_counts_only_the_kernels_own_code() -> None:
    """Scenario (lemire's fastrange, held out in session 29): the kernel `x % n` is a global function that its
    benchmark also inlines, with constant sizes, as multiplications; callgrind counts the kernel's own
    instructions, so the line's division share must come from the kernel's code (1 in 3), not from every copy
    (1 in 7; in fastrange, 500 divisions a call read as 16). A line the kernel lacks still counts every copy."""
    assert parse_listing(INLINED, "prog.c")[7] == LineCode(7, 1)
    code = parse_listing(INLINED, "prog.c", "count_hits")
    assert code[7] == LineCode(3, 1)
    assert code[12] == LineCode(1, 0)
    assert parse_listing(INLINED.replace("<count_hits>:", "<count_hits.constprop.0>:"), "prog.c", "count_hits")[7] \
        == LineCode(3, 1)


HASH = """#include <stdio.h>
#include <stdlib.h>

struct table { unsigned long buckets; int *slots; };

static int lookup(const struct table *t, unsigned long key) {
    unsigned long at = INDEX;
    return t->slots[at];
}

long count_hits(const struct table *t, const unsigned long *keys, int n) {
    long hits = 0;
    for (int i = 0; i < n; i++)
        hits += lookup(t, keys[i]);
    return hits;
}

int main(int argc, char **argv) {
    struct table t = {SIZE, 0};
    t.slots = calloc(t.buckets, sizeof *t.slots);
    for (unsigned long i = 0; i < t.buckets; i += 3) t.slots[i] = 1;
    int n = 200000;
    unsigned long *keys = malloc(n * sizeof *keys);
    srand(2);
    for (int i = 0; i < n; i++) keys[i] = (unsigned long)rand() * 7919u;
    printf("%ld\\n", count_hits(&t, keys, n));
    return 0;
}
"""


def _hash_profile(tmp_path: Path, index: str, size: str) -> Profile:
    (tmp_path / "prog.c").write_text(HASH.replace("INDEX", index).replace("SIZE", size))
    subprocess.run(["gcc", "-O2", "-g", "prog.c", "-o", "prog"], cwd=tmp_path, check=True)
    profiles = profile_application("./prog", tmp_path, target="cpu", top=2, work_dir=tmp_path / "work")
    return next(p for p in profiles if p.kernel.split("(")[0] == "count_hits")


@needs_tools
def test_a_modulus_by_a_run_time_size_a_lookup_is_slow_integer_division(tmp_path: Path) -> None:
    """The size is read from the table (and made unknowable at compile time by argc): one `div` a lookup."""
    profile = _hash_profile(tmp_path, "key % t->buckets", "1021 + (argc > 5)")
    line = next(x for x in profile.hot_lines if x.line == 7)
    # 200,000 lookups; the estimate assumes the line's instructions run equally often (one is hoisted)
    assert 100_000 < (line.metric("binary.divisions") or 0) <= 200_000
    first = profile.diagnoses[0]
    assert first.name == "slow_integer_division"
    assert first.findings[0].lines == [7]
    assert "fastrange" in registry.get_rule("slow_integer_division").hint


@needs_tools
def test_a_power_of_two_table_indexed_by_a_mask_has_no_division(tmp_path: Path) -> None:
    profile = _hash_profile(tmp_path, "key & (t->buckets - 1)", "1024u << (argc > 5)")
    assert not any(x.metric("binary.divisions") for x in profile.hot_lines)
    assert "slow_integer_division" not in [d.name for d in profile.diagnoses]


@needs_tools
def test_a_modulus_by_a_constant_compiles_to_a_multiplication(tmp_path: Path) -> None:
    profile = _hash_profile(tmp_path, "key % 1021", "1021")
    assert not any(x.metric("binary.divisions") for x in profile.hot_lines)
    assert "slow_integer_division" not in [d.name for d in profile.diagnoses]


INLINED_PROGRAM = """#include <stdio.h>
#include <stdlib.h>

unsigned modsum(const unsigned *z, unsigned n, const unsigned *keys, int count) {
    unsigned sum = 0;
    for (int j = 0; j < count; j++)
        sum += z[keys[j] % n];
    return sum;
}

unsigned demo(const unsigned *z, const unsigned *keys, int count) {
    unsigned total = 0;
    for (int r = 0; r < 4; r++)
        total += modsum(z, 1000, keys, count) + modsum(z, 4096, keys, count) + modsum(z, 999, keys, count);
    return total;
}

int main(int argc, char **argv) {
    int count = 20000;
    unsigned n = 1000 + (argc > 5);
    unsigned *z = calloc(n, sizeof *z), *keys = malloc(count * sizeof *keys);
    for (int i = 0; i < count; i++) keys[i] = (unsigned)rand();
    unsigned (*volatile kernel)(const unsigned *, unsigned, const unsigned *, int) = modsum;
    unsigned s = 0;
    for (int r = 0; r < 20; r++) s += kernel(z, n, keys, count);
    printf("%u %u\\n", s, argc > 9 ? demo(z, keys, count) : 0);
    return 0;
}
"""


@needs_tools
def test_a_kernel_its_benchmark_also_inlines_with_constant_sizes_is_slow_integer_division(tmp_path: Path) -> None:
    """Scenario: `modsum` runs through a function pointer with a run-time size (one `div` a key), and `demo`, never
    run, inlines it three times with constant sizes (multiplications, shifts): before the kernel's own code was
    preferred, line 7's 246 instructions in the binary held 1 division, and 20,000 divisions a call read as 325."""
    (tmp_path / "prog.c").write_text(INLINED_PROGRAM)
    subprocess.run(["gcc", "-O3", "-march=x86-64-v3", "-g", "prog.c", "-o", "prog"], cwd=tmp_path, check=True)
    profiles = profile_application("./prog", tmp_path, target="cpu", top=2, work_dir=tmp_path / "work")
    profile = next(p for p in profiles if p.kernel.split("(")[0] == "modsum")
    line = next(x for x in profile.hot_lines if x.line == 7)
    assert 10_000 < (line.metric("binary.divisions") or 0) <= 20_000
    assert profile.diagnoses[0].name == "slow_integer_division"


REMAINDERS_PROGRAM = """#include <stdio.h>
#include <stdlib.h>

void remainders(const int *in, int *out, int n, long divisor) {
    for (int i = 0; i < n; i++) out[i] = in[i] % divisor;
}

int main(int argc, char **argv) {
    int n = 4096;
    int *in = malloc(n * sizeof *in), *out = malloc(n * sizeof *out);
    for (int i = 0; i < n; i++) in[i] = rand();
    void (*volatile kernel)(const int *, int *, int, long) = remainders;
    long s = 0;
    for (int r = 0; r < 300; r++) { kernel(in, out, n, 1245 + (argc > 5)); s += out[r]; }
    printf("%ld\\n", s);
    return 0;
}
"""


@needs_tools
def test_a_loop_left_scalar_by_its_division_is_slow_integer_division_not_missed_vectorization(
        tmp_path: Path) -> None:
    """Scenario (CoffeeBeforeArch's strength_reduction baseMod, held out): `out[i] = in[i] % divisor`, the divisor
    known only at run time. gcc leaves the loop scalar because no x86 vector instruction divides integers, and
    missed_vectorization (0.50) ranked above slow_integer_division (0.47) although vector code needs the division
    gone first: the division claims the line, and says the loop is left scalar as well."""
    (tmp_path / "prog.c").write_text(REMAINDERS_PROGRAM)
    subprocess.run(["gcc", "-O3", "-march=x86-64-v3", "-g", "prog.c", "-o", "prog"], cwd=tmp_path, check=True)
    profiles = profile_application("./prog", tmp_path, target="cpu", top=2, work_dir=tmp_path / "work")
    profile = next(p for p in profiles if p.kernel.split("(")[0] == "remainders")
    line = next(x for x in profile.hot_lines if x.line == 5)
    assert line.metric("binary.divisions") and line.metric("gcc.vectorized") == 0.0
    names = [d.name for d in profile.diagnoses]
    assert names[0] == "slow_integer_division" and "missed_vectorization" not in names
    assert any("no x86 vector instruction divides integers" in e for e in profile.diagnoses[0].evidence)


INLINES_LISTING = """
0000000000001c10 <baseline(benchmark::State&)>:
baseline(benchmark::State&):
/tmp/w/src/dedup.cpp:38
    1c10:\tpush   %r15
std::__find_if(int*, int*, int const&):
/usr/include/c++/12/bits/stl_algobase.h:2072
inlined by /usr/include/c++/12/bits/stl_algo.h:3884 (_ZSt4findIPiiET_S1_S1_RKT0_)
inlined by /tmp/w/src/dedup.cpp:40 (_ZL8baselineRN9benchmark5StateE)
    1c20:\tcmp    (%rax),%edx
    1c22:\tidivl  %ecx
inlined by /tmp/w/src/dedup.cpp:41 (_ZL8baselineRN9benchmark5StateE)
    1c24:\tje     1c40 <baseline(benchmark::State&)+0x30>
/usr/include/c++/12/bits/stl_vector.h:1123
    1c26:\tmov    (%rdi),%rax
"""


def test_an_inlined_headers_code_belongs_to_the_source_line_whose_call_inlined_it() -> None:
    """objdump --inlines' chains: the header's instructions count on the first source line of their chain (40, then
    41 for a chain printed afresh after an instruction), and the header locations map to those lines; a location
    with no source line in its chain (stl_vector.h:1123 here, no chain) belongs to none."""
    from profiling.cpu.disassembly import _by_function

    code = parse_listing(INLINES_LISTING, "dedup.cpp", "baseline")
    assert code == {38: LineCode(1, 0), 40: LineCode(2, 1), 41: LineCode(1, 0)}
    inlined = _by_function(INLINES_LISTING, "dedup.cpp")["baseline"].inlined
    assert inlined == {("/usr/include/c++/12/bits/stl_algobase.h", 2072): {40, 41}}


@pytest.mark.parametrize("reason, claimed", [("unsupported_type", True), ("function_call", False)])
def test_a_division_claims_only_a_loop_nothing_else_keeps_scalar(reason: str, claimed: bool) -> None:
    """The review's case: `for (i = 0; i < n / m; i++) a[i] = g(a[i]);` puts the hoisted `div` on the loop's line,
    and gcc leaves the loop scalar for the call: the division is no reason the loop stays scalar, so
    missed_vectorization keeps it and the division's evidence does not promise vector code."""
    from perfforge.records import CounterValue, HotLine, Timing
    from profiling.diagnoses import diagnose

    metrics = {"Ir": 6e5, "Ir_self": 6e5, "static.loop_depth": 1.0, "static.outer_loop_line": 5.0,
               "binary.divisions": 4e4, "gcc.vectorized": 0.0, f"gcc.missed.{reason}": 1.0}
    line = HotLine(line=5, code="for (...) a[i] = f(a[i] % m);", share=0.6, dominant_stall="",
                   metrics=[CounterValue(name, value, "") for name, value in metrics.items()])
    profile = Profile(machine="test", tool_versions="", timing=Timing(5.0, 4.9, 5.1, 30, "monotonic_clock"),
                      target="cpu", kernel="k", hot_lines=[line],
                      counters=[CounterValue("Ir", 1e6, "inst"), CounterValue("cpu_cores", 1.0, "core")])
    found = {d.name: d for d in diagnose(profile)}
    assert "slow_integer_division" in found
    assert ("missed_vectorization" not in found) == claimed
    said = any("no x86 vector instruction" in e for e in found["slow_integer_division"].evidence)
    assert said == claimed
