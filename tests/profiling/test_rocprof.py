"""The rocprofv3 CSV parser (profiling/hip/rocprof.py) on hand-written fixtures in both documented layouts
(tests/fixtures/rocprof/README.md says where each layout comes from)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from profiling.hip import RocprofError, kernel_times, load_profile, load_profiles, read_run
from profiling.hip.rocprof import base_name, unit_of

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "rocprof"
OLD = FIXTURES / "rocm6.2_multipass"
NEW = FIXTURES / "rocm_newer"


def counters_of(profile) -> dict[str, tuple[float, str]]:
    return {c.name: (c.value, c.unit) for c in profile.counters}


def test_kernels_are_ranked_by_traced_time() -> None:
    ranked = kernel_times(read_run(OLD))
    assert [(k.base_name, k.dispatches) for k in ranked] == [("transpose_naive", 4), ("fill_kernel", 2)]
    assert ranked[0].total_ms == pytest.approx(4.35)
    assert ranked[0].median_ms == pytest.approx(1.075)
    assert [k.base_name for k in kernel_times(read_run(NEW))] == ["reduce_shared", "ns::axpy"]


def test_timing_comes_from_the_kernel_trace() -> None:
    profile = load_profile(OLD, "transpose_naive")
    assert profile.target == "hip" and profile.kernel == "transpose_naive"
    assert profile.machine == "AMD Instinct MI210 (gfx90a)"
    t = profile.timing
    assert (t.trials, t.method) == (4, "rocprofv3_kernel_trace")
    assert (t.median_ms, t.p10_ms, t.p90_ms) == pytest.approx((1.075, 1.015, 1.17))


def test_counters_of_separate_passes_are_averaged_per_kernel_with_units() -> None:
    counters = counters_of(load_profile(OLD, "transpose_naive"))
    assert counters["GRBM_GUI_ACTIVE"] == (pytest.approx(1_675_000), "cycle")  # mean of four dispatches
    assert counters["SQ_WAVES"] == (262144, "wave")
    assert counters["SQ_INSTS_VALU"] == (5242880, "inst")
    assert counters["TCC_HIT"] == (3_000_000, "request")  # from the second pass (pmc_2/)
    assert counters["FETCH_SIZE"] == (262144, "KB")
    assert counters["L2CacheHit"] == (pytest.approx(75.0), "%")
    assert counters["dram_bytes"] == (2 * 262144 * 1024, "byte")
    assert counters["dram_gbyte_per_s"][0] == pytest.approx(2 * 262144 * 1024 / 1.075e-3 / 1e9)
    assert counters["valu_insts_per_wave"] == (pytest.approx(20.0), "inst/wave")
    fill = counters_of(load_profile(OLD, "fill_kernel"))
    assert fill["GRBM_GUI_ACTIVE"][0] == pytest.approx(500_000)  # another kernel's rows never mix in
    assert fill["L2CacheHit"][0] == 0.0


def test_newer_layout_lds_bank_conflicts_use_the_agents_cu_count() -> None:
    profile = load_profile(NEW, "reduce_shared")
    counters = counters_of(profile)
    assert profile.machine == "AMD Instinct MI300X (gfx942)"
    assert counters["SQ_LDS_BANK_CONFLICT"] == (pytest.approx(260_000), "cycle")
    assert counters["LDSBankConflict"][0] == pytest.approx(100 * 260_000 / 1_000_000 / 304)
    assert profile.timing.median_ms == pytest.approx(0.51)  # the trace, not the slower counter pass


def test_without_a_trace_timing_falls_back_to_the_counter_pass_and_says_so(tmp_path: Path) -> None:
    shutil.copy2(NEW / "5151_counter_collection.csv", tmp_path)
    profile = load_profile(tmp_path, "reduce_shared")
    assert profile.timing.method == "rocprofv3_counter_collection"
    assert profile.timing.median_ms == pytest.approx(0.62)
    assert profile.timing.trials == 2
    assert profile.machine == ""


def test_the_costliest_kernel_is_the_default_and_templates_and_namespaces_match() -> None:
    assert load_profile(NEW).kernel == "reduce_shared"
    assert load_profile(NEW, "axpy").kernel == "ns::axpy"
    assert [p.kernel for p in load_profiles(OLD)] == ["transpose_naive", "fill_kernel"]
    assert base_name("void ns::axpy<float, 4>(float*, float const*, int)") == "ns::axpy"
    assert base_name("void k<Foo<int>, 2>(Foo<int>*)") == "k"


def test_an_unknown_kernel_names_the_ones_there() -> None:
    with pytest.raises(RocprofError, match="no kernel 'transpose_tiled'.*fill_kernel, transpose_naive"):
        load_profile(OLD, "transpose_tiled")


def test_old_layout_counters_without_a_trace_cannot_be_timed(tmp_path: Path) -> None:
    shutil.copytree(OLD / "pmc_1", tmp_path / "pmc_1")
    with pytest.raises(RocprofError, match="--kernel-trace"):
        load_profile(tmp_path)


def test_a_csv_missing_a_column_is_refused_naming_it(tmp_path: Path) -> None:
    text = (NEW / "5151_kernel_trace.csv").read_text().replace('"End_Timestamp"', '"Finish"', 1)
    (tmp_path / "9_kernel_trace.csv").write_text(text)
    with pytest.raises(RocprofError, match="missing column.*End_Timestamp"):
        read_run(tmp_path)


def test_an_empty_directory_says_how_to_run_rocprofv3(tmp_path: Path) -> None:
    with pytest.raises(RocprofError, match="--kernel-trace and --pmc"):
        read_run(tmp_path)


def test_units_of_summed_and_prefixed_counters() -> None:
    assert unit_of("TCC_HIT_sum") == "request"
    assert unit_of("SQ_INSTS_VMEM_RD") == "inst"
    assert unit_of("SQ_WAVE_CYCLES") == "quad-cycle"
    assert unit_of("SOMETHING_NEW") == ""
