"""The CUDA diagnoses on real ncu captures of the example tasks (tests/fixtures/ncu): the slow version's top
diagnosis is the task's planted bottleneck, and the known-good fast version no longer has it (or has it weaker)."""

from __future__ import annotations

import json
import statistics
import tomllib
from dataclasses import replace
from pathlib import Path

import pytest

from perfforge.records import CounterValue, HotLine, Profile, RooflinePoint, Stall, Timing
from profiling.cuda import launches as ln
from profiling.cuda import metrics as m
from profiling.cuda.profile import build_profile, profile_from_files
from profiling.cuda.raw_csv import read_raw_page
from profiling.diagnoses import RULES, diagnose, thresholds_for
from profiling.diagnoses.registry import _load_rule_modules

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "fixtures" / "ncu"
TASKS = ROOT / "examples" / "tasks" / "cuda"
TASK_DIRS = sorted(p for p in TASKS.iterdir() if (p / "task.toml").is_file())
REQUIRED = {"shared_memory_bank_conflicts", "uncoalesced_global_access", "atomic_contention", "low_occupancy",
            "register_spills", "branch_divergence", "dram_bound", "latency_bound", "compute_bound",
            "poor_cache_locality", "launch_overhead"}
NEW_RULES = {"unfused_elementwise_chain", "scalar_global_loads", "redundant_global_loads"}


def timing_of(capture: str) -> Timing:
    times_ms = json.loads((FIXTURES / f"{capture}.timing.json").read_text(encoding="utf-8"))["times_ms"]
    deciles = statistics.quantiles(times_ms, n=10)
    return Timing(median_ms=statistics.median(times_ms), p10_ms=deciles[0], p90_ms=deciles[-1], trials=len(times_ms),
                  method="cuda_events")


def load_profile(task: str, version: str, target: str = "cuda") -> Profile:
    capture = f"{task}.{version}"
    manifest = tomllib.loads((TASKS / task / "task.toml").read_text(encoding="utf-8"))
    device = json.loads((FIXTURES / "device.json").read_text(encoding="utf-8"))
    application = FIXTURES / f"{capture}.launches.csv"
    return profile_from_files(
        FIXTURES / f"{capture}.raw.csv", FIXTURES / f"{capture}.source.csv", timing=timing_of(capture),
        source_file=manifest["source"] if version == "slow" else manifest["reference"], machine=device["gpu"],
        tool_versions=device["ncu_version"], kernel=manifest["kernel"], target=target,
        application_csv=application if application.is_file() else None,
        copy_gbyte_per_s=device["copy"]["copy_gbyte_per_s"])


def bottleneck_of(task_dir: Path) -> str:
    return tomllib.loads((task_dir / "task.toml").read_text(encoding="utf-8"))["bottleneck"]


def test_required_rules_are_registered_for_cuda_and_triton():
    _load_rule_modules()
    cuda_rules = {name for name, rule in RULES.items() if {"cuda", "triton"} <= set(rule.targets)}
    assert cuda_rules >= REQUIRED | NEW_RULES


def test_thresholds_are_documented_and_used():
    _load_rule_modules()
    thresholds = thresholds_for("cuda")
    used = {name for rule in RULES.values() if "cuda" in rule.targets for name in rule.thresholds}
    assert used == set(thresholds)
    for threshold in thresholds.values():
        assert threshold.unit and len(threshold.reason) > 40


def test_every_planted_bottleneck_has_a_rule():
    assert {bottleneck_of(task) for task in TASK_DIRS} <= REQUIRED


@pytest.mark.parametrize("task_dir", TASK_DIRS, ids=lambda p: p.name)
def test_slow_version_top_diagnosis_is_the_planted_bottleneck(task_dir):
    diagnoses = diagnose(load_profile(task_dir.name, "slow"))
    assert diagnoses, "no rule fired"
    assert diagnoses[0].name == bottleneck_of(task_dir), [(d.name, d.severity) for d in diagnoses]
    assert diagnoses[0].severity >= 0.5
    assert diagnoses[0].findings and diagnoses[0].hint


@pytest.mark.parametrize("task_dir", TASK_DIRS, ids=lambda p: p.name)
def test_fast_version_no_longer_has_it(task_dir):
    slow = {d.name: d.severity for d in diagnose(load_profile(task_dir.name, "slow"))}
    fast = {d.name: d.severity for d in diagnose(load_profile(task_dir.name, "fast"))}
    planted = bottleneck_of(task_dir)
    assert fast.get(planted, 0.0) < 0.5 * slow[planted]


@pytest.mark.parametrize("task_dir", TASK_DIRS, ids=lambda p: p.name)
def test_severities_are_ranked_and_bounded(task_dir):
    for version in ("slow", "fast"):
        severities = [d.severity for d in diagnose(load_profile(task_dir.name, version))]
        assert all(0.0 <= s <= 1.0 for s in severities)
        assert severities == sorted(severities, reverse=True)


@pytest.mark.parametrize(("task", "line"), [("sum_atomic", 8), ("transpose_bank_conflicts", 19),
                                            ("transpose_naive", 9), ("parity_divergence", 21)])
def test_findings_cite_the_guilty_line(task, line):
    top = diagnose(load_profile(task, "slow"))[0]
    assert line in top.findings[0].lines
    assert f"line {line}" in top.evidence[0] or f"lines {line}" in top.evidence[0]


def test_low_occupancy_names_its_limit():
    top = diagnose(load_profile("stencil_big_smem", "slow"))[0]
    assert top.name == "low_occupancy"
    assert any("limited by shared memory: 1 block(s) per SM" in e for e in top.evidence)


def test_low_occupancy_of_a_tiny_grid_says_so():
    by_name = {d.name: d for d in diagnose(load_profile("rownorm_launches", "slow"))}
    assert any("grid too small" in e for e in by_name["low_occupancy"].evidence)


def test_launch_overhead_needs_the_application_mode_figures():
    with_launches = load_profile("rownorm_launches", "slow")
    assert "launch_overhead" in {d.name for d in diagnose(with_launches)}
    launch = read_raw_page(FIXTURES / "rownorm_launches.slow.raw.csv")[0]
    without = build_profile(launch, [], timing=with_launches.timing, source_file="kernel.cu", machine="",
                            tool_versions="")
    assert "launch_overhead" not in {d.name for d in diagnose(without)}


def test_regimes_of_the_fast_versions():
    assert diagnose(load_profile("transpose_naive", "fast"))[0].name == "dram_bound"
    assert diagnose(load_profile("parity_divergence", "fast"))[0].name == "compute_bound"


def test_triton_profiles_use_the_cuda_thresholds():
    cuda = diagnose(load_profile("sum_atomic", "slow"))
    triton = diagnose(replace(load_profile("sum_atomic", "slow"), target="triton"))
    assert [(d.name, d.severity) for d in triton] == [(d.name, d.severity) for d in cuda]


def test_a_profile_without_counters_gets_no_cuda_diagnosis():
    empty = Profile(machine="", tool_versions="", timing=timing_of("sum_atomic.slow"), target="cuda")
    assert diagnose(empty) == []


# The rules without an example task yet, on synthetic profiles: the figures a slow version with the problem
# should show (initial thresholds, to be calibrated on H100 captures of the catalogue's instances).

def synthetic(counters: dict[str, float], intensity: float | None = None) -> Profile:
    roofline = None if intensity is None else RooflinePoint(
        arithmetic_intensity_flop_per_byte=intensity, achieved_gflop_per_s=100.0, achieved_gbyte_per_s=2800.0,
        peak_gflop_per_s=60000.0, peak_gbyte_per_s=3350.0)
    return Profile(machine="H100", tool_versions="ncu", target="cuda", roofline=roofline,
                   timing=Timing(median_ms=0.2, p10_ms=0.19, p90_ms=0.21, trials=30, method="cuda_events"),
                   counters=[CounterValue(name, value, "") for name, value in counters.items()])


def names(profile: Profile) -> list[str]:
    return [d.name for d in diagnose(profile)]


CHAIN = {ln.LAUNCHES_PER_CALL: 3.0, ln.DISTINCT_KERNELS_PER_CALL: 3.0, ln.MEAN_LAUNCH_DURATION_US: 45.0,
         m.DRAM_THROUGHPUT_PCT: 90.0, m.MEMORY_THROUGHPUT_PCT: 90.0, m.SM_THROUGHPUT_PCT: 20.0,
         m.L1_THROUGHPUT_PCT: 25.0, m.GLOBAL_LD_REQUESTS: 1e6, m.GLOBAL_LD_SECTORS: 4e6, m.DRAM_BYTES_READ: 1.28e8}


def test_unfused_chain_fires_and_outranks_dram_bound():
    found = names(synthetic(CHAIN, intensity=0.125))
    assert found[0] == "unfused_elementwise_chain"
    assert "dram_bound" in found
    two = {d.name: d.severity for d in diagnose(synthetic({**CHAIN, ln.LAUNCHES_PER_CALL: 2.0}, intensity=0.125))}
    assert two["unfused_elementwise_chain"] > two["dram_bound"]


@pytest.mark.parametrize("change", [{ln.LAUNCHES_PER_CALL: 1.0}, {ln.LAUNCHES_PER_CALL: 512.0},
                                    {m.DRAM_THROUGHPUT_PCT: 30.0}])
def test_unfused_chain_needs_a_few_dram_bound_launches(change):
    assert "unfused_elementwise_chain" not in names(synthetic({**CHAIN, **change}, intensity=0.125))


def test_unfused_chain_not_for_arithmetic_heavy_kernels_or_without_launch_figures():
    assert "unfused_elementwise_chain" not in names(synthetic(CHAIN, intensity=20.0))
    without = {k: v for k, v in CHAIN.items() if k != ln.LAUNCHES_PER_CALL}
    assert "unfused_elementwise_chain" not in names(synthetic(without, intensity=0.125))


def test_launch_overhead_and_unfused_chain_do_not_overlap():
    many = {**CHAIN, ln.LAUNCHES_PER_CALL: 1024.0, ln.MEAN_LAUNCH_DURATION_US: 3.0}
    found = names(synthetic(many, intensity=0.125))
    assert "launch_overhead" in found and "unfused_elementwise_chain" not in found


# One byte per lane: a sector per warp-level load, every byte of it used; DRAM far from its bandwidth (the H100
# measurement of the uint8 image kernel).
NARROW = {m.GLOBAL_LD_REQUESTS: 1.835e6, m.GLOBAL_LD_SECTORS: 1.835e6, m.GLOBAL_LD_BYTES_PER_SECTOR: 32.0,
          m.ISSUE_ACTIVE_PCT: 25.4, m.SM_THROUGHPUT_PCT: 25.0, m.L1_THROUGHPUT_PCT: 15.1,
          m.MEMORY_THROUGHPUT_PCT: 20.5, m.DRAM_THROUGHPUT_PCT: 20.5, m.DRAM_BYTES_READ: 5.87e7}


def test_scalar_loads_fire_and_outrank_the_regimes():
    found = diagnose(synthetic(NARROW))
    assert found[0].name == "scalar_global_loads"
    assert found[0].severity > 0.6
    assert found[0].hint


@pytest.mark.parametrize("change", [
    {m.GLOBAL_LD_SECTORS: 8e6},  # fp32 scalar loads: 4 sectors per request, as fast as vectors on an H100
    {m.GLOBAL_LD_BYTES_PER_SECTOR: 4.0},  # a broadcast or strided load, not a narrow one
    {m.DRAM_THROUGHPUT_PCT: 85.0},  # already at DRAM's bandwidth: wider loads gain nothing
    {m.SM_THROUGHPUT_PCT: 80.0},  # compute-bound
    {m.GLOBAL_LD_REQUESTS: 0.0},
])
def test_scalar_loads_do_not_fire(change):
    assert "scalar_global_loads" not in names(synthetic({**NARROW, **change}))


def test_scalar_loads_silent_on_the_example_tasks():
    for task_dir in TASK_DIRS:
        for version in ("slow", "fast"):
            assert "scalar_global_loads" not in names(load_profile(task_dir.name, version)), (task_dir.name, version)


# A radius-8 stencil reading its 17 neighbours from global memory: ~5 sectors per warp load, 17 loads per
# output warp, one DRAM read of each input sector: ~21 sectors through L1 per DRAM sector; L1 saturated.
STENCIL = {m.GLOBAL_LD_SECTORS: 2.1e7, m.GLOBAL_ST_SECTORS: 1e6, m.DRAM_BYTES_READ: 3.2e7,
           m.SHARED_WAVEFRONTS: 0.0, m.L1_THROUGHPUT_PCT: 92.0, m.L1_HIT_RATE_PCT: 95.0,
           m.DRAM_THROUGHPUT_PCT: 55.0, m.MEMORY_THROUGHPUT_PCT: 92.0, m.SM_THROUGHPUT_PCT: 60.0,
           m.GLOBAL_LD_REQUESTS: 4.2e6, m.GLOBAL_LD_BYTES_PER_SECTOR: 25.6, m.ISSUE_ACTIVE_PCT: 55.0}


def test_redundant_loads_fire_and_outrank_the_regimes():
    found = diagnose(synthetic(STENCIL))
    assert found[0].name == "redundant_global_loads"
    by_name = {d.name: d.severity for d in found}
    assert by_name["redundant_global_loads"] > 0.6 >= by_name.get("dram_bound", 0.0)


@pytest.mark.parametrize("change", [
    {m.GLOBAL_LD_SECTORS: 1e6},  # each byte loaded once: streaming
    {m.GLOBAL_LD_SECTORS: 1e9},  # re-read for a whole matrix dimension: poor_cache_locality's case
    {m.L1_THROUGHPUT_PCT: 30.0},  # re-reads that cost nothing (issue 55%, L1 30%)
    {m.SHARED_WAVEFRONTS: 1e8},  # a tiled kernel doing its job through shared memory
    {m.DRAM_BYTES_READ: 0.0},
])
def test_redundant_loads_do_not_fire(change):
    assert "redundant_global_loads" not in names(synthetic({**STENCIL, **change}))


def test_redundant_loads_leave_the_naive_matmul_to_poor_cache_locality():
    found = names(load_profile("matmul_naive", "slow"))
    assert found[0] == "poor_cache_locality" and "redundant_global_loads" not in found


# Conflict-free shared memory as the bound: the H100 figures of SGEMM_CUDA's shared-memory-blocked kernel (its fix
# computes several results per thread from registers), and the catalogue's bank-conflict instances beside it.
SHARED_PIPE = {m.L1_THROUGHPUT_PCT: 93.4, m.SM_THROUGHPUT_PCT: 77.2, m.SHARED_WAVEFRONTS: 4.21e8,
               m.SHARED_EXCESSIVE_WAVEFRONTS: 0.0, m.SHARED_BANK_CONFLICTS: 1.3e6, m.DRAM_THROUGHPUT_PCT: 1.1,
               m.MEMORY_THROUGHPUT_PCT: 93.4}
SHARED_PIPE_STALLS = [Stall("mio_throttle", 0.54), Stall("not_selected", 0.17), Stall("long_scoreboard", 0.13),
                      Stall("barrier", 0.07), Stall("short_scoreboard", 0.01)]


def with_stalls(counters: dict[str, float], stalls: list[Stall]) -> Profile:
    return replace(synthetic(counters), stalls=stalls)


def test_a_conflict_free_shared_pipe_that_bounds_the_kernel_is_shared_memory_bound():
    found = diagnose(with_stalls(SHARED_PIPE, SHARED_PIPE_STALLS))
    assert found[0].name == "shared_memory_bound"
    assert "55% of sampled warp states wait on the shared-memory pipe" in " ".join(found[0].evidence)


@pytest.mark.parametrize(("change", "stalls"), [
    ({m.SHARED_EXCESSIVE_WAVEFRONTS: 3.8e8}, SHARED_PIPE_STALLS),  # bank conflicts: the other rule's
    ({m.L1_THROUGHPUT_PCT: 50.0}, SHARED_PIPE_STALLS),  # the unit is not the bound
    ({}, [Stall("long_scoreboard", 0.7), Stall("short_scoreboard", 0.2)]),  # the warps wait on global memory
    ({}, []),  # no stall samples: not measured
])
def test_shared_memory_bound_needs_a_busy_conflict_free_pipe_the_warps_wait_on(change, stalls):
    assert "shared_memory_bound" not in names(with_stalls({**SHARED_PIPE, **change}, stalls))


# A naive matmul whose threads walk rows (SGEMM_CUDA's first kernel on the H100): the L1 saturated serving the
# sectors each uncoalesced request wastes. Coalescing is the fix to make first; the L1 pressure is its symptom.
NAIVE_UNCOALESCED = {m.L1_THROUGHPUT_PCT: 99.1, m.DRAM_THROUGHPUT_PCT: 0.1, m.MEMORY_THROUGHPUT_PCT: 99.1,
                     m.SM_THROUGHPUT_PCT: 6.5, m.GLOBAL_LD_SECTORS: 1.65e9, m.GLOBAL_ST_SECTORS: 1.0e6,
                     m.GLOBAL_EXCESSIVE_SECTORS: 1.4e9, m.SHARED_WAVEFRONTS: 2.6e5, m.GLOBAL_LD_REQUESTS: 1.0e8}


def test_cache_pressure_of_uncoalesced_accesses_is_their_symptom():
    found = diagnose(synthetic(NAIVE_UNCOALESCED))
    assert [d.name for d in found][:2] == ["uncoalesced_global_access", "poor_cache_locality"]
    assert "the fix to make first" in " ".join(found[1].evidence)
    coalesced = diagnose(synthetic({**NAIVE_UNCOALESCED, m.GLOBAL_EXCESSIVE_SECTORS: 0.0}))
    assert coalesced[0].name == "poor_cache_locality"


# The interleaved reduction (How_to_optimize_in_GPU's reduce v0, cuda-samples' reduce0, CoffeeBeforeArch's diverged
# sum, measured alike on an H200): nvcc predicates the short body of `if (tid % (2*s) == 0)`, so ncu counts 31.87
# active threads per instruction (24.03 not predicated off) and the SM's busy issuing the modulo looks compute-bound.
INTERLEAVED = {m.THREADS_PER_INST: 31.87, m.THREADS_PER_INST_PRED_ON: 24.03, m.DIVERGENT_BRANCHES: 0.0,
               m.SM_THROUGHPUT_PCT: 78.66, m.ISSUE_ACTIVE_PCT: 79.18, m.MEMORY_THROUGHPUT_PCT: 37.0,
               m.FMA_PIPE_PCT: 20.5}


def interleaved(condition: str, share: float = 0.51) -> Profile:
    lines = [HotLine(20, "for(unsigned int s=1; s < blockDim.x; s *= 2) {", 0.15, "barrier"),
             HotLine(21, condition, share, "wait"), HotLine(22, "sdata[tid] += sdata[tid + s];", 0.12, "wait")]
    return replace(synthetic(INTERLEAVED), hot_lines=lines)


@pytest.mark.parametrize("condition", ["if (tid % (2*s) == 0) {", "if ((threadIdx.x % (2 * s)) == 0) {",
                                       "if ((tid & (2 * s - 1)) == 0) {"])
def test_a_branch_splitting_warps_by_thread_index_is_divergence_though_ncu_counts_full_warps(condition):
    found = diagnose(interleaved(condition))
    assert [d.name for d in found][:2] == ["branch_divergence", "compute_bound"]
    top = found[0]
    assert top.findings[0].lines == [21, 22]
    assert "not predicated off" in top.evidence[-1]


@pytest.mark.parametrize(("condition", "share"), [("if (tid % (2*s) == 0) {", 0.05),  # a cold branch
                                                  ("if (s % 64 == 0) {", 0.51),  # the same for every lane
                                                  ("if (tid < s) {", 0.51)])  # whole warps while s >= 32
def test_no_divergence_read_from_a_cold_branch_or_another_condition(condition, share):
    assert "branch_divergence" not in names(interleaved(condition, share))


# CoffeeBeforeArch's baseline matmul on an H200: each thread sums into its output element in global memory, loaded
# and stored at every k (1025 stores a warp launched, 2048 loads), 99% of the samples on that line.
ACCUMULATING = {m.GLOBAL_ST_REQUESTS: 33587200.0, m.GLOBAL_LD_REQUESTS: 67108864.0, m.GRID_SIZE: 1024.0,
                m.BLOCK_SIZE: 1024.0, m.SM_THROUGHPUT_PCT: 32.97, m.MEMORY_THROUGHPUT_PCT: 75.32,
                m.DRAM_THROUGHPUT_PCT: 0.15, m.L1_THROUGHPUT_PCT: 48.53}


def accumulating(update: str, loop: str = "for (int k = 0; k < N; k++) {", global_sectors: float = 3.0e8,
                 counters: dict[str, float] | None = None) -> Profile:
    lines = [HotLine(22, loop, 0.003, "not_selected"),
             HotLine(24, update, 0.99, "long_scoreboard",
                     [CounterValue("global_sectors", global_sectors, "sector")])]
    return replace(synthetic({**ACCUMULATING, **(counters or {})}), hot_lines=lines)


@pytest.mark.parametrize("update", ["c[row * N + col] += a[row * N + k] * b[k * N + col];",
                                    "c[row * N + col] = c[row * N + col] + a[row * N + k] * b[k * N + col];"])
def test_an_accumulator_kept_in_global_memory_is_named(update):
    top = diagnose(accumulating(update))[0]
    assert top.name == "accumulator_in_global_memory"
    assert top.findings[0].lines == [24]
    assert top.severity == pytest.approx(0.99 * 2 * 33587200 / (33587200 + 67108864), abs=1e-3)


@pytest.mark.parametrize(("update", "kwargs"), [
    # the output element changes with the loop: a row written once, element by element
    ("out_row[j] /= (float)sum;", {"loop": "for (int j = 0; j < C; j++) {"}),
    # a shared-memory tree: no global memory on the line, a store a block
    ("sdata[tid] += sdata[tid + s];", {"loop": "for (unsigned int s = 1; s < blockDim.x; s *= 2) {",
                                       "global_sectors": 0.0}),
    ("c[row * N + col] += a[row * N + k] * b[k * N + col];", {"counters": {m.GLOBAL_ST_REQUESTS: 32768.0}}),
    # no loop line above the update: nothing says the address repeats
    ("c[row * N + col] += a[row * N] * b[col];", {"loop": "int row = blockIdx.y * blockDim.y + threadIdx.y;"})])
def test_no_global_accumulator_where_the_address_changes_or_stays_on_chip(update, kwargs):
    assert "accumulator_in_global_memory" not in names(accumulating(update, **kwargs))
