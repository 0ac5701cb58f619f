"""A unit-stride walk that streams from DRAM costs its lines' transfer, not each miss's latency (issue 20, CPU side).
The branch programs of Pikus's book (art-of-efficient-programs, session 32) add the values whose random flag is set,
over arrays larger than the simulated last level: half the branches mispredict, and every 64-byte line is a D1 and
an LL miss. Charged at d1_miss_penalty + ll_miss_penalty a line (110 cycles), the streams outranked the branches;
the hardware prefetcher hides that latency, so a line whose D1 miss rate is a stream's (one miss per 64-byte line)
and whose every D1 miss also misses the last level now costs stream_line_cycles (15) a line, in the line's share
and in the kernel's total. Real C programs built with gcc and profiled under callgrind (the fixed simulated caches:
profiling/cpu/cache_model.py), with a twin that must keep cache_miss_bound: a walk touching one int a line, whose
misses no stream rate explains."""

from __future__ import annotations

from pathlib import Path

from tests.profiling.callgrind_programs import diagnosis_names, needs_tools, profile_function

# 16 MiB of ints and 4 MiB of flags, twice the simulated 8 MiB last level, walked once from DRAM
FLAGGED = """\
#include <stdio.h>
#include <stdlib.h>

#define N (1 << 22)

__attribute__((noinline)) long walk(const int *p, const unsigned char *b, long n) {
    long s = 0;
    for (long i = 0; i < n; i++) {
        if (b[i])
            s += p[i];
    }
    return s;
}

int main(void) {
    int *p = malloc(N * sizeof *p);
    unsigned char *b = malloc(N);
    unsigned x = 12345;
    for (long i = 0; i < N; i++) {
        x ^= x << 13; x ^= x >> 17; x ^= x << 5;
        p[i] = (int)(x & 1023);
        b[i] = (unsigned char)(x >> 31);
    }
    printf("%ld\\n", walk(p, b, N));
    free(p); free(b);
    return 0;
}
"""

# the same 16 MiB read one int per 64-byte line, 16 passes at successive offsets: every access misses D1 and the
# last level (a rate no unit-stride walk has), the order a loop interchange fixes
STRIDED = FLAGGED.replace("""    for (long i = 0; i < n; i++) {
        if (b[i])
            s += p[i];
    }""", """    for (long j = 0; j < 16; j++)
        for (long i = j; i < n; i += 16)
            s += p[i] & b[j];""")


@needs_tools
def test_a_dram_stream_costs_its_bandwidth_so_the_mispredicted_branch_ranks_first(tmp_path: Path) -> None:
    profile = profile_function(tmp_path, FLAGGED, "walk")
    names = diagnosis_names(profile)
    assert names[0] == "branch_mispredictions", names
    found = {d.name: d.severity for d in profile.diagnoses}
    # the stream is still a cost, at a fraction of its latency charge (0.39 before, 0.08 after on this program)
    assert found.get("cache_miss_bound", 0.0) < found["branch_mispredictions"] / 2


@needs_tools
def test_a_walk_against_the_layout_stays_cache_miss_bound(tmp_path: Path) -> None:
    names = diagnosis_names(profile_function(tmp_path, STRIDED, "walk"))
    assert names[0] == "cache_miss_bound", names
