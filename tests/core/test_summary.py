"""The token-budgeted prompt summary of a Profile (perfforge.summary), on profiles built here."""

from __future__ import annotations

import random
import subprocess
import sys

import pytest

from perfforge.errors import PerfforgeError
from perfforge.records import CounterValue, Diagnosis, Finding, HotLine, Profile, RooflinePoint, Stall, Timing
from perfforge.summary import Source, estimate_tokens, parse_sources, summarize

BUDGETS = (40, 60, 90, 130, 180, 250, 400, 600, 5000)


def cuda_profile() -> Profile:
    """A naive transpose on an H200: uncoalesced writes, long-scoreboard stalls on the store line."""
    return Profile(
        machine="NVIDIA H200", tool_versions="ncu 2025.3.1", target="cuda", kernel="transpose",
        source_file="kernel.cu",
        timing=Timing(median_ms=1.05, p10_ms=1.04, p90_ms=1.07, trials=30, method="cuda_events"),
        counters=[
            CounterValue("dram__throughput.avg.pct_of_peak_sustained_elapsed", 31.5, "%"),
            CounterValue("sm__throughput.avg.pct_of_peak_sustained_elapsed", 12.25, "%"),
            CounterValue("launch__registers_per_thread", 16, "register/thread"),
            CounterValue("smsp__inst_executed.sum", 123456789, "inst"),
        ],
        stalls=[Stall("long_scoreboard", 0.62), Stall("lg_throttle", 0.2), Stall("barrier", 0.01),
                Stall("mio_throttle", 0.05), Stall("math_pipe_throttle", 0.04), Stall("wait", 0.03),
                Stall("not_selected", 0.03), Stall("selected", 0.02)],
        roofline=RooflinePoint(arithmetic_intensity_flop_per_byte=0.0, achieved_gflop_per_s=0.0,
                               achieved_gbyte_per_s=1512.0, peak_gflop_per_s=60000.0, peak_gbyte_per_s=4800.0),
        hot_lines=[
            HotLine(line=9, code="    if (x < n && y < n)", share=0.08, dominant_stall="wait"),
            HotLine(line=10, code="        out[x * n + y] = in[y * n + x];", share=0.81,
                    dominant_stall="long_scoreboard",
                    metrics=[CounterValue("stall_long_sb", 5120, "sample"),
                             CounterValue("global_store_excess_sectors", 7.5e6, "sector")]),
            HotLine(line=8, code="    int y = blockIdx.y * blockDim.y + threadIdx.y;", share=0.04,
                    dominant_stall="selected"),
        ],
        diagnoses=[
            Diagnosis(name="low_occupancy", severity=0.35, evidence=["achieved occupancy 31%"],
                      findings=[Finding("sm__warps_active.avg.pct_of_peak_sustained_active", 31.0, 50.0, "<", "%")],
                      hint="Raise occupancy: fewer registers or shared memory per block."),
            Diagnosis(name="uncoalesced_global_access", severity=0.82, evidence=["4 bytes per sector"],
                      findings=[Finding("smsp__sass_average_data_bytes_per_sector_mem_global_op_st", 4.0, 16.0, "<",
                                        "byte", [10])],
                      hint="Make consecutive threads touch consecutive addresses."),
        ],
    )


def cpu_profile() -> Profile:
    """A column-walking matrix-vector product under cachegrind: no stalls, no roofline peaks for GFLOP/s."""
    return Profile(
        machine="AMD EPYC 9554", tool_versions="valgrind-3.19.0", target="cpu", kernel="matvec",
        timing=Timing(median_ms=12.5, p10_ms=12.1, p90_ms=13.0, trials=20, method="monotonic_clock"),
        counters=[CounterValue("Ir", 3.2e8, "inst"), CounterValue("D1mr", 1.6e7, "miss"),
                  CounterValue("DLmr", 4.1e6, "miss")],
        roofline=RooflinePoint(arithmetic_intensity_flop_per_byte=0.5, achieved_gflop_per_s=1.3,
                               achieved_gbyte_per_s=2.6, peak_gflop_per_s=0.0, peak_gbyte_per_s=0.0),
        hot_lines=[HotLine(line=4, code="out[i] += m[(long)i * n + j] * w[j];", share=0.93, dominant_stall="",
                           metrics=[CounterValue("D1mr", 1.5e7, "miss")])],
        diagnoses=[Diagnosis(name="cache_miss_bound", severity=0.7, evidence=["D1 miss rate 9%"],
                             findings=[Finding("d1_miss_rate", 9.1, 5.0, ">", "%", [4])])],
    )


def compute_bound_profile() -> Profile:
    profile = cuda_profile()
    profile.roofline = RooflinePoint(arithmetic_intensity_flop_per_byte=64.0, achieved_gflop_per_s=45000.0,
                                     achieved_gbyte_per_s=703.125, peak_gflop_per_s=60000.0, peak_gbyte_per_s=4800.0)
    return profile


def word_count(text: str) -> int:
    return len(text.split())


def test_none_gives_the_timing_line_only() -> None:
    text = summarize(cuda_profile(), sources=["none"])
    assert text == "transpose [cuda] on NVIDIA H200: median 1.05 ms (p10 1.04, p90 1.07; 30 trials, cuda_events)"


def test_roofline_says_which_roof_bounds_and_how_close() -> None:
    text = summarize(cuda_profile(), sources=["roofline"])
    assert "roofline: 0 FLOP/byte; 0 of 60000 GFLOP/s, 1512 of 4800 GB/s" in text
    assert "memory-bound (ridge 12.5 FLOP/byte), at 31.5% of the memory roof" in text
    assert "compute-bound, at 75.0% of the compute roof" not in text
    assert "bottlenecks" not in text and "warp stalls" not in text and "line 10" not in text
    compute = summarize(compute_bound_profile(), sources=["roofline"])
    assert "compute-bound (ridge 12.5 FLOP/byte), at 75.0% of the compute roof" in compute
    assert "(no peaks: bound unknown)" in summarize(cpu_profile(), sources=["roofline"])


def test_counters_give_diagnoses_by_severity_with_findings_and_key_counters() -> None:
    text = summarize(cuda_profile(), sources=["counters"], token_budget=5000)
    lines = text.splitlines()
    assert lines[1] == "bottlenecks (most severe first):"
    assert lines[2] == ("1. uncoalesced_global_access (severity 0.82): Make consecutive threads touch consecutive "
                        "addresses.")
    assert lines[3] == "   - smsp__sass_average_data_bytes_per_sector_mem_global_op_st = 4 byte (< 16) at line 10"
    assert lines[4].startswith("2. low_occupancy (severity 0.35)")
    assert "counter: SM throughput = 12.25% (sm__throughput.avg.pct_of_peak_sustained_elapsed)" in lines
    assert "counter: registers per thread = 16 register/thread (launch__registers_per_thread)" in lines
    assert "smsp__inst_executed.sum" not in text  # not a key counter
    assert "roofline" not in text and "warp stalls" not in text


def test_stalls_give_the_breakdown_and_hot_lines_by_share() -> None:
    text = summarize(cuda_profile(), sources=["stalls"], token_budget=5000)
    assert ("warp stalls: long_scoreboard 62.0%, lg_throttle 20.0%, mio_throttle 5.0%, math_pipe_throttle 4.0%, "
            "not_selected 3.0%, wait 3.0%, other 3.0%") in text
    hot = [line for line in text.splitlines() if line.startswith("- line")]
    assert hot[0] == ("- line 10 (81.0%, long_scoreboard): out[x * n + y] = in[y * n + x]; "
                      "[stall_long_sb 5120; global_store_excess_sectors 7.5e+06]")
    assert [line.split()[2] for line in hot] == ["10", "9", "8"]
    assert "bottlenecks" not in text and "roofline" not in text


def test_cpu_profile_has_no_stall_names_and_its_own_key_counters() -> None:
    text = summarize(cpu_profile(), token_budget=5000)
    assert "- line 4 (93.0%): out[i] += m[(long)i * n + j] * w[j]; [D1mr 1.5e+07]" in text
    assert "warp stalls" not in text
    assert "counter: L1 data read misses = 1.6e+07 miss (D1mr)" in text
    assert "1. cache_miss_bound (severity 0.70)" in text


def test_all_holds_every_source() -> None:
    text = summarize(cuda_profile(), token_budget=5000)
    for part in ("roofline:", "1. uncoalesced_global_access", "2. low_occupancy", "warp stalls:", "- line 8",
                 "counter: DRAM throughput"):
        assert part in text
    assert text == summarize(cuda_profile(), sources=["roofline", "counters", "stalls"], token_budget=5000)
    assert text == summarize(cuda_profile(), sources="all", token_budget=5000)


@pytest.mark.parametrize(("count_tokens", "scale"), [(None, 1), (word_count, 1), (len, 4)])
@pytest.mark.parametrize("make_profile", [cuda_profile, cpu_profile])
def test_every_budget_is_kept_and_more_budget_never_loses_a_line(count_tokens, scale, make_profile) -> None:
    """Several budgets, with the default estimate and with callers' counters (words; characters, scaled)."""
    count = count_tokens or estimate_tokens
    full = summarize(make_profile(), token_budget=10**6, count_tokens=count_tokens).splitlines()
    previous: list[str] = []
    sizes = []
    for budget in (scale * b for b in BUDGETS):
        text = summarize(make_profile(), token_budget=budget, count_tokens=count_tokens)
        assert count(text) <= budget
        lines = text.splitlines()
        assert set(lines) <= set(full)  # whole lines only, never a cut one
        assert set(previous) <= set(lines)
        previous = lines
        sizes.append(len(lines))
    assert sizes[0] < sizes[-1] == len(full)  # the budget did bind, and a large one keeps everything


def test_a_tight_budget_keeps_the_top_diagnosis_first() -> None:
    head_and_top = summarize(cuda_profile(), sources=["counters"], token_budget=5000).splitlines()[:3]
    budget = estimate_tokens("\n".join(head_and_top))
    text = summarize(cuda_profile(), token_budget=budget)
    assert text.splitlines() == head_and_top
    assert "low_occupancy" not in text


def test_a_budget_below_the_timing_line_is_an_error() -> None:
    with pytest.raises(PerfforgeError, match="cannot hold even the timing line"):
        summarize(cuda_profile(), token_budget=5)


def test_same_input_gives_byte_identical_output_whatever_the_list_order() -> None:
    texts = set()
    for seed in range(5):
        profile = cuda_profile()
        rng = random.Random(seed)
        for items in (profile.diagnoses, profile.stalls, profile.hot_lines):
            rng.shuffle(items)
        for budget in (90, 400):
            texts.add((budget, summarize(profile, token_budget=budget)))
    assert len(texts) == 2


def test_an_unknown_source_names_the_valid_ones() -> None:
    with pytest.raises(PerfforgeError) as raised:
        summarize(cuda_profile(), sources=["roofline", "stall"])
    message = str(raised.value)
    assert "'stall'" in message
    for name in ("none", "roofline", "counters", "stalls", "all"):
        assert name in message
    with pytest.raises(PerfforgeError, match="valid sources"):
        parse_sources([])


def test_sources_parse_as_names_or_comma_separated() -> None:
    assert parse_sources("roofline, stalls") == {Source.ROOFLINE, Source.STALLS}
    assert parse_sources(["ALL"]) == {Source.ROOFLINE, Source.COUNTERS, Source.STALLS}
    assert parse_sources([Source.NONE]) == frozenset()


def test_token_estimate_counts_word_pieces() -> None:
    assert estimate_tokens("") == 0
    assert estimate_tokens("dram__throughput") == 1 + 2 + 3  # dram, two underscores, throughput
    assert estimate_tokens("1234567 ms") == 3 + 1
    assert estimate_tokens("a  b\n\tc") == 3


def test_the_summary_module_imports_nothing_heavy() -> None:
    code = ("import sys, perfforge.summary; heavy = {'torch', 'datasets', 'numpy', 'transformers'} & set(sys.modules);"
            "print(sorted(heavy))")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "[]"
