"""barrier_stalls and idle_threads (issue 20): warps waiting at block barriers, and the tree over one element a
thread that makes them wait. Small profiles built here, each rule beside an innocent twin that must not fire."""

from __future__ import annotations

from dataclasses import replace

import pytest

from perfforge.records import CounterValue, Profile, Stall, Timing
from profiling.cuda import metrics as m
from profiling.diagnoses import diagnose, unmeasured


def profile(counters: dict[str, float], stalls: list[Stall]) -> Profile:
    return Profile(machine="H100", tool_versions="ncu", target="cuda", kernel="k", stalls=stalls,
                   timing=Timing(median_ms=0.5, p10_ms=0.49, p90_ms=0.51, trials=30, method="cuda_events"),
                   counters=[CounterValue(name, value, "") for name, value in counters.items()])


def ranked(p: Profile) -> list[str]:
    return [d.name for d in diagnose(p)]


# A block tree reduction whose threads each add two elements while loading (two load requests a warp), then halve
# the active threads with a __syncthreads per step: busy but under every unit's bound, a sixth of the samples at
# the barrier, no bank conflicts.
TREE = {m.SM_THROUGHPUT_PCT: 70.0, m.MEMORY_THROUGHPUT_PCT: 76.0, m.DRAM_THROUGHPUT_PCT: 50.0,
        m.L1_THROUGHPUT_PCT: 58.0, m.ISSUE_ACTIVE_PCT: 68.0, m.ACHIEVED_OCCUPANCY_PCT: 85.0,
        m.THEORETICAL_OCCUPANCY_PCT: 100.0, m.THREADS_PER_INST: 31.7, m.GRID_SIZE: 65536.0, m.BLOCK_SIZE: 256.0,
        m.GLOBAL_LD_REQUESTS: 2 * 65536.0 * 8, m.GLOBAL_LD_SECTORS: 4 * 2 * 65536.0 * 8,
        m.GLOBAL_LD_BYTES_PER_SECTOR: 32.0, m.DRAM_BYTES_READ: 32 * 4 * 2 * 65536.0 * 8,
        m.SHARED_WAVEFRONTS: 1.4e7, m.SHARED_BANK_CONFLICTS: 1e5, m.SHARED_EXCESSIVE_WAVEFRONTS: 0.0,
        m.PC_SAMPLE_COUNT: 1e4}
TREE_STALLS = [Stall("long_scoreboard", 0.31), Stall("short_scoreboard", 0.2), Stall("barrier", 0.16),
               Stall("wait", 0.15), Stall("not_selected", 0.06), Stall("selected", 0.05)]
# the same tree with one element a thread: one load request a warp, twice the blocks
ONE_EACH = {**TREE, m.GRID_SIZE: 131072.0}
# an elementwise kernel: one load a warp too, but nothing waits at a barrier
ELEMENTWISE_STALLS = [Stall("long_scoreboard", 0.7), Stall("short_scoreboard", 0.1), Stall("wait", 0.09),
                      Stall("selected", 0.03)]


def test_barrier_waits_name_barrier_stalls():
    found = diagnose(profile(TREE, TREE_STALLS))
    assert found[0].name == "barrier_stalls"
    assert found[0].severity == pytest.approx(0.16)  # the warps' share of time at the barrier
    assert "16% of sampled warp states wait at a block barrier" in " ".join(found[0].evidence)
    assert "idle_threads" not in ranked(profile(TREE, TREE_STALLS))  # two loads a warp: work per thread enough


@pytest.mark.parametrize("stalls", [
    [Stall("long_scoreboard", 0.6), Stall("short_scoreboard", 0.3), Stall("barrier", 0.05), Stall("wait", 0.05)],
    ELEMENTWISE_STALLS,
])
def test_few_barrier_waits_are_no_barrier_stalls(stalls):
    assert "barrier_stalls" not in ranked(profile(TREE, stalls))


def test_barrier_stalls_without_stall_samples_is_not_measured():
    counters = {k: v for k, v in TREE.items() if k != m.PC_SAMPLE_COUNT}
    assert "barrier_stalls" not in ranked(profile(counters, []))
    assert any(text.startswith("barrier_stalls: not measured") for text in unmeasured(profile(counters, [])))


def test_one_element_a_thread_before_the_tree_is_idle_threads_and_the_barriers_its_symptom():
    found = {d.name: d for d in diagnose(profile(ONE_EACH, TREE_STALLS))}
    assert ranked(profile(ONE_EACH, TREE_STALLS))[:2] == ["idle_threads", "barrier_stalls"]
    assert found["barrier_stalls"].severity == pytest.approx(0.08)  # weighed half, as a symptom
    assert any("see idle_threads" in line for line in found["barrier_stalls"].evidence)
    assert any("1.00 global load requests per warp" in line for line in found["idle_threads"].evidence)


@pytest.mark.parametrize(("counters", "stalls"), [
    (ONE_EACH, ELEMENTWISE_STALLS),  # one load a warp, no barrier: an elementwise kernel
    (TREE, TREE_STALLS),  # two loads a warp: each thread already adds elements while loading
])
def test_idle_threads_needs_one_load_a_warp_and_the_barriers_after_it(counters, stalls):
    assert "idle_threads" not in ranked(profile(counters, stalls))


def test_idle_threads_without_the_launch_size_is_not_measured():
    counters = {k: v for k, v in ONE_EACH.items() if k != m.GRID_SIZE}
    assert "idle_threads" not in ranked(profile(counters, TREE_STALLS))
    assert any(text.startswith("idle_threads: not measured (launch__grid_size") for text in unmeasured(
        profile(counters, TREE_STALLS)))
    # the barrier waits are still seen, at full weight: nothing says they are a symptom
    by_name = {d.name: d.severity for d in diagnose(profile(counters, TREE_STALLS))}
    assert by_name["barrier_stalls"] == pytest.approx(0.16)


def test_bank_conflicts_outrank_the_barrier_waits_they_cause():
    conflicted = {**ONE_EACH, m.L1_THROUGHPUT_PCT: 88.0, m.SHARED_BANK_CONFLICTS: 1.4e7,
                  m.SHARED_EXCESSIVE_WAVEFRONTS: 1.4e7, m.SHARED_WAVEFRONTS: 4.3e7}
    stalls = [replace(s, share=0.28) if s.reason == "short_scoreboard" else s for s in TREE_STALLS]
    assert ranked(profile(conflicted, stalls))[0] == "shared_memory_bank_conflicts"
