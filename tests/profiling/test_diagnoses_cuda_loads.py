"""scalar_global_loads read against the arithmetic pipe, not the SM's busiest sub-unit; redundant_global_loads
weighed by the warps' wait on the re-reads when no unit is busy with them, and as the symptom of uncoalesced
access (issue 20). Small profiles built here, each beside an innocent twin that must not fire."""

from __future__ import annotations

import pytest

from perfforge.records import CounterValue, Profile, Stall, Timing
from profiling.cuda import metrics as m
from profiling.diagnoses import diagnose


def profile(counters: dict[str, float], stalls: list[Stall] | None = None) -> Profile:
    return Profile(machine="H100", tool_versions="ncu", target="cuda", kernel="k", stalls=list(stalls or []),
                   timing=Timing(median_ms=0.2, p10_ms=0.19, p90_ms=0.21, trials=30, method="cuda_events"),
                   counters=[CounterValue(name, value, "") for name, value in counters.items()])


def by_name(p: Profile) -> dict[str, float]:
    return {d.name: d.severity for d in diagnose(p)}


def ranked(p: Profile) -> list[str]:
    return [d.name for d in diagnose(p)]


# bf16 loads, one element a lane (two sectors a request, every byte used), DRAM far from its bandwidth; the SM's
# busiest sub-unit is issuing the per-element load and index instructions, the FMA pipe a quarter busy.
BF16_ISSUE_BUSY = {m.GLOBAL_LD_REQUESTS: 6e5, m.GLOBAL_LD_SECTORS: 1.0e6, m.GLOBAL_LD_BYTES_PER_SECTOR: 27.0,
                   m.SM_THROUGHPUT_PCT: 62.0, m.FMA_PIPE_PCT: 27.0, m.ISSUE_ACTIVE_PCT: 66.0,
                   m.MEMORY_THROUGHPUT_PCT: 20.0, m.DRAM_THROUGHPUT_PCT: 15.0, m.L1_THROUGHPUT_PCT: 16.0,
                   m.DRAM_BYTES_READ: 1.3e7}


def test_narrow_loads_whose_instructions_keep_the_sm_busy_are_scalar_global_loads():
    found = by_name(profile(BF16_ISSUE_BUSY))
    assert ranked(profile(BF16_ISSUE_BUSY))[0] == "scalar_global_loads"
    assert found["scalar_global_loads"] > found["compute_bound"]


@pytest.mark.parametrize("change", [
    {m.FMA_PIPE_PCT: 85.0},  # the arithmetic is the bound: wider loads gain nothing
    {m.GLOBAL_LD_SECTORS: 2.4e6},  # fp32, four sectors a request: not narrow
])
def test_scalar_loads_stay_silent_where_the_arithmetic_bounds_the_kernel(change):
    assert "scalar_global_loads" not in ranked(profile({**BF16_ISSUE_BUSY, **change}))


def test_without_the_pipe_figure_the_sm_throughput_stands_in():
    counters = {k: v for k, v in BF16_ISSUE_BUSY.items() if k != m.FMA_PIPE_PCT}
    assert "scalar_global_loads" not in ranked(profile(counters))  # SM 62% >= compute_bound_pct: the old reading
    assert "scalar_global_loads" in ranked(profile({**counters, m.SM_THROUGHPUT_PCT: 40.0}))


# A warp per row reading its row three times from global memory (mean, variance, normalise): each DRAM sector
# loaded five times through L1, neither L1 nor issue busy, four fifths of the samples waiting on the loads.
THREE_PASSES = {m.GLOBAL_LD_REQUESTS: 1e6, m.GLOBAL_LD_SECTORS: 4e6, m.GLOBAL_LD_BYTES_PER_SECTOR: 32.0,
                m.GLOBAL_ST_SECTORS: 8e5, m.GLOBAL_EXCESSIVE_SECTORS: 0.0, m.DRAM_BYTES_READ: 32 * 8e5,
                m.SHARED_WAVEFRONTS: 1e5, m.L1_THROUGHPUT_PCT: 29.0, m.ISSUE_ACTIVE_PCT: 43.0,
                m.SM_THROUGHPUT_PCT: 37.0, m.FMA_PIPE_PCT: 15.0, m.MEMORY_THROUGHPUT_PCT: 40.0,
                m.DRAM_THROUGHPUT_PCT: 40.0, m.L1_HIT_RATE_PCT: 60.0}
WAITING = [Stall("long_scoreboard", 0.8), Stall("wait", 0.06), Stall("not_selected", 0.03), Stall("selected", 0.03)]


def test_re_reads_the_warps_wait_on_are_redundant_global_loads():
    found = diagnose(profile(THREE_PASSES, WAITING))
    assert found[0].name == "redundant_global_loads"
    assert found[0].severity == pytest.approx(0.8 * (4e6 + 8e5) / (4e6 + 8e5 + 1e5) * (1 - 1 / 5), abs=1e-3)
    assert any(line.startswith("global_load_wait_share = 0.8") for line in found[0].evidence)
    assert by_name(profile(THREE_PASSES, WAITING))["redundant_global_loads"] > by_name(
        profile(THREE_PASSES, WAITING))["latency_bound"]


@pytest.mark.parametrize(("change", "stalls"), [
    ({}, [Stall("long_scoreboard", 0.45), Stall("wait", 0.3), Stall("selected", 0.25)]),  # little waiting
    ({m.GLOBAL_LD_SECTORS: 8e5}, WAITING),  # each sector loaded once: streaming, however long the wait
    ({}, []),  # no stall samples and no busy unit: nothing to weigh the re-reads by
])
def test_re_reads_neither_a_unit_nor_the_warps_wait_on_are_not_redundant(change, stalls):
    assert "redundant_global_loads" not in ranked(profile({**THREE_PASSES, **change}, stalls))


def test_re_read_sectors_of_uncoalesced_access_are_its_symptom():
    """One thread per row: each request wastes most of its sectors and the L1 serves them again; coalescing is the
    fix, and the re-reads weigh half behind it."""
    uncoalesced = {**THREE_PASSES, m.GLOBAL_LD_SECTORS: 2e7, m.GLOBAL_EXCESSIVE_SECTORS: 1.7e7,
                   m.GLOBAL_LD_BYTES_PER_SECTOR: 4.0, m.L1_THROUGHPUT_PCT: 70.0, m.DRAM_BYTES_READ: 32 * 1e6}
    stalls = [Stall("long_scoreboard", 0.97), Stall("wait", 0.02), Stall("selected", 0.01)]
    found = {d.name: d for d in diagnose(profile(uncoalesced, stalls))}
    assert ranked(profile(uncoalesced, stalls))[0] == "uncoalesced_global_access"
    assert found["redundant_global_loads"].severity < found["uncoalesced_global_access"].severity
    assert any("see uncoalesced_global_access" in line for line in found["redundant_global_loads"].evidence)


# A warp re-reading the rows it could keep in registers, once per output it computes (llm.c's attention_backward/3
# on the H200: 153 load sectors per DRAM sector, issue 82%, SM 78%, L1 38%): between a stencil's neighbourhood and a
# product's whole dimension (the naive matmul's 1024), the re-reads are the cost, ahead of the busy SM they cause.
ROW_REREADS = {m.GLOBAL_LD_REQUESTS: 1e6, m.GLOBAL_LD_SECTORS: 1.53e7, m.GLOBAL_LD_BYTES_PER_SECTOR: 32.0,
               m.GLOBAL_ST_SECTORS: 3e5, m.GLOBAL_EXCESSIVE_SECTORS: 0.0, m.DRAM_BYTES_READ: 32 * 1e5,
               m.SHARED_WAVEFRONTS: 1.5e5, m.L1_THROUGHPUT_PCT: 38.0, m.ISSUE_ACTIVE_PCT: 82.0,
               m.SM_THROUGHPUT_PCT: 78.0, m.FMA_PIPE_PCT: 40.0, m.MEMORY_THROUGHPUT_PCT: 38.0,
               m.DRAM_THROUGHPUT_PCT: 1.4, m.L1_HIT_RATE_PCT: 95.0}
ROW_STALLS = [Stall("long_scoreboard", 0.46), Stall("wait", 0.2), Stall("selected", 0.2), Stall("not_selected", 0.14)]


def test_rows_re_read_per_output_are_redundant_global_loads_ahead_of_the_busy_sm():
    found = ranked(profile(ROW_REREADS, ROW_STALLS))
    assert found[0] == "redundant_global_loads", found
    assert "compute_bound" in found


def test_a_whole_dimension_re_read_is_not_a_neighbourhood():
    """The naive product's 1024 reads per DRAM sector stay above the cap: missing tiling, not re-read rows."""
    product = {**ROW_REREADS, m.GLOBAL_LD_SECTORS: 1.024e8}
    assert "redundant_global_loads" not in ranked(profile(product, ROW_STALLS))
