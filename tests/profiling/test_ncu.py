"""The ncu command lines and the parsers of ncu's CSV pages, on real captures (tests/fixtures/ncu, H100, ncu 2025.3.1).

Each fixture is the output of scripts/capture_ncu_fixtures.sh for an example task of examples/tasks/cuda; the
expected values below are facts of those kernels (block sizes, the line holding the atomic, the FLOP a matmul
must do), not values copied from the files.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from profiling.cuda import metrics as m
from profiling.cuda.hot_lines import hot_lines
from profiling.cuda.launches import launch_stats, rank_kernels, read_application_page
from profiling.cuda.ncu import (
    PROFILE_RANGE,
    NcuError,
    application_command,
    profile_and_export,
    profile_command,
    raw_page_command,
    run_ncu,
    source_page_command,
)
from profiling.cuda.raw_csv import NcuCsvError, parse_number, parse_raw_page, read_raw_page, select_launch
from profiling.cuda.roofline import roofline_point
from profiling.cuda.source_csv import cuda_rows_only, lines_of, parse_source_page, read_source_page
from profiling.cuda.stalls import stall_breakdown, stall_samples

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "fixtures" / "ncu"
TASKS = ROOT / "examples" / "tasks" / "cuda"
CAPTURES = sorted(p.name.removesuffix(".raw.csv") for p in FIXTURES.glob("*.raw.csv"))


def source_text(capture: str, line: int) -> str:
    """The text of a line of the captured version's source file, as it is in the repository."""
    task, version = capture.split(".")
    path = TASKS / task / ("kernel.cu" if version == "slow" else "fast.cu")
    return path.read_text(encoding="utf-8").splitlines()[line - 1].strip()


def test_every_task_version_was_captured():
    tasks = sorted(p.name for p in TASKS.iterdir() if (p / "task.toml").is_file())
    assert len(tasks) >= 5
    assert sorted(f"{t}.{v}" for t in tasks for v in ("fast", "slow")) == CAPTURES


def test_profile_command_keeps_clocks_and_profiles_only_the_nvtx_range(tmp_path):
    command = profile_command(["./bin", "profile", "n=8"], tmp_path / "r", kernel_regex="^transpose", launch_count=2)
    assert command[0] == "ncu" and command[-3:] == ["./bin", "profile", "n=8"]
    assert command[command.index("--nvtx-include") + 1] == f"{PROFILE_RANGE}/" and "--nvtx" in command
    assert command[command.index("--clock-control") + 1] == "none"
    assert command[command.index("--set") + 1] == "full"
    assert command[command.index("--kernel-name") + 1] == "regex:^transpose"
    assert command[command.index("--export") + 1] == str(tmp_path / "r")
    sections = profile_command(["./bin"], tmp_path / "r", sections=["SpeedOfLight", "Occupancy"])
    assert "--set" not in sections and sections.count("--section") == 2


def test_export_commands_ask_for_csv_in_base_units(tmp_path):
    report = tmp_path / "r.ncu-rep"
    raw = raw_page_command(report, ["gpu__time_duration.sum"])
    assert raw[raw.index("--page") + 1] == "raw" and "--csv" in raw
    assert raw[raw.index("--print-units") + 1] == "base" and raw[-1] == "gpu__time_duration.sum"
    source = source_page_command(report)
    assert source[source.index("--print-source") + 1] == "cuda,sass"
    app = application_command(["./app"], report)
    assert app[app.index("--metrics") + 1] == "gpu__time_duration.sum" and "--nvtx" not in app
    one_call = application_command(["./harness", "profile"], report, nvtx_range="pf_profile")
    assert one_call[one_call.index("--nvtx-include") + 1] == "pf_profile/" and one_call[-2:] == ["./harness", "profile"]


def test_capture_script_builds_its_commands_from_the_module():
    script = (ROOT / "scripts" / "capture_ncu_fixtures.sh").read_text(encoding="utf-8")
    assert "-m profiling.cuda.ncu" in script and "-m profiling.cuda.metrics" in script


@pytest.mark.parametrize(("text", "expected"), [("1,013,328,599,770.28", 1013328599770.28), ("65536.000000", 65536.0),
                                                ("9.0", 9.0), ("-3", -3.0), ("", None), ("n/a", None),
                                                ("(32, 8, 1)", None), ("1,2", None)])
def test_parse_number(text, expected):
    assert parse_number(text) == expected


@pytest.mark.parametrize("capture", CAPTURES)
def test_raw_page_has_every_metric_the_rules_read(capture):
    launches = read_raw_page(FIXTURES / f"{capture}.raw.csv")
    assert launches
    missing = [name for name in m.RAW_METRICS if name not in launches[0].counters and name not in m.SINCE_FIXTURES]
    assert missing == []


def test_raw_page_units_and_launch_identity():
    launch = select_launch(read_raw_page(FIXTURES / "transpose_naive.slow.raw.csv"), "transpose")
    assert launch.kernel == "transpose(const float *, float *, int)" and launch.kernel_base == "transpose"
    assert (launch.block_size, launch.grid_size) == ("(32, 8, 1)", "(256, 1024, 1)")  # n = 8192, blocks of 32x8
    assert launch.counters[m.DURATION].unit == "ns"
    assert launch.counters[m.DRAM_BYTES_READ].unit == "byte"
    assert launch.value(m.BLOCK_SIZE) == 256 and launch.value(m.GRID_SIZE) == 256 * 1024
    # the transpose reads and writes 8192 x 8192 floats (256 MiB each way); DRAM sees at least that
    assert launch.value(m.DRAM_BYTES_READ) >= 8192 * 8192 * 4
    assert launch.value(m.DRAM_BYTES_WRITE) >= 8192 * 8192 * 4 * 0.95
    # the naive transpose's stores use 4 of each sector's 32 bytes
    assert launch.value(m.GLOBAL_ST_BYTES_PER_SECTOR) == 4


def test_raw_page_with_several_kernels():
    launches = read_raw_page(FIXTURES / "rownorm_launches.slow.raw.csv")
    assert [launch.kernel_base for launch in launches] == ["rownorm_sum_squares", "rownorm_scale"]
    assert select_launch(launches, "rownorm_scale") is launches[1]
    assert select_launch(launches, "rownorm") is launches[0]  # a prefix picks the first match
    with pytest.raises(NcuCsvError, match="rownorm_scale"):
        select_launch(launches, "softmax")


def test_raw_page_rejects_other_text():
    with pytest.raises(NcuCsvError, match="not an ncu CSV page"):
        parse_raw_page("==PROF== Disconnected\nhello\n")


def test_raw_page_skips_profiler_messages_before_the_header():
    text = (FIXTURES / "sum_atomic.slow.raw.csv").read_text(encoding="utf-8")
    noisy = "==WARNING== Note: Running with unmodified GPU clocks.\n==PROF== Report: r.ncu-rep\n" + text
    assert parse_raw_page(noisy)[0].counters == parse_raw_page(text)[0].counters


@pytest.mark.parametrize("capture", CAPTURES)
def test_stall_shares_sum_to_one(capture):
    launch = read_raw_page(FIXTURES / f"{capture}.raw.csv")[0]
    stalls = stall_breakdown(launch)
    assert stalls and sum(s.share for s in stalls) == pytest.approx(1.0)
    assert all(0 < s.share <= 1 for s in stalls)
    assert [s.share for s in stalls] == sorted((s.share for s in stalls), reverse=True)
    # the breakdown covers every sampled warp (sample count = sum over reasons, within PC-sampling drops)
    assert sum(stall_samples(launch).values()) <= launch.value(m.PC_SAMPLE_COUNT)


@pytest.mark.parametrize("capture", CAPTURES)
def test_source_lines_are_the_repository_lines(capture):
    lines = read_source_page(FIXTURES / f"{capture}.source.csv")
    own = [line for line in lines if line.path.endswith(("kernel.cu", "fast.cu"))]
    assert own and sum(line.samples for line in own) > 0
    for line in own:
        assert line.code == source_text(capture, line.line)


def test_source_page_without_sass_rows_parses_the_same():
    full = (FIXTURES / "sum_atomic.slow.source.full.csv").read_text(encoding="utf-8")
    assert sum(1 for row in full.splitlines() if row.startswith('"","","0x')) > 5  # SASS rows present
    assert parse_source_page(cuda_rows_only(full)) == parse_source_page(full)
    assert cuda_rows_only(full) == (FIXTURES / "sum_atomic.slow.source.csv").read_text(encoding="utf-8")


def test_source_page_rejects_a_page_without_metrics():
    with pytest.raises(NcuCsvError, match="cuda,sass"):
        parse_source_page('"File Name","/k.cu"\n')


def test_source_page_with_two_functions_and_header_files():
    lines = read_source_page(FIXTURES / "rownorm_launches.slow.source.csv")
    assert {Path(line.path).name for line in lines} >= {"kernel.cu", "sm_30_intrinsics.hpp"}
    scale = lines_of(lines, "rownorm_scale")
    assert {line.line for line in scale} <= set(range(24, 28)) and scale
    assert all(line.function.startswith("rownorm_sum_squares") for line in lines_of(lines, "rownorm_sum"))


def _hot(capture: str) -> list:
    launch = read_raw_page(FIXTURES / f"{capture}.raw.csv")[0]
    lines = lines_of(read_source_page(FIXTURES / f"{capture}.source.csv"), launch.kernel_base)
    return hot_lines(lines, "kernel.cu" if capture.endswith("slow") else "fast.cu",
                     total_samples=sum(stall_samples(launch).values()))


def test_hot_lines_point_at_the_atomic():
    hot = _hot("sum_atomic.slow")
    atomic = next(h for h in hot if "atomicAdd" in h.code)
    assert atomic.line == 8 and atomic.share > 0.2
    assert all(0 <= h.share <= 1 for h in hot)
    assert [h.share for h in hot] == sorted((h.share for h in hot), reverse=True)


def test_hot_lines_carry_bank_conflicts_and_excess_sectors():
    conflicted = [h for h in _hot("transpose_bank_conflicts.slow") if h.metric("shared_excessive_wavefronts")]
    assert [h.line for h in conflicted] == [19]  # out[...] = tile[threadIdx.x][...]: the column read
    assert "tile[threadIdx.x][threadIdx.y + j]" in conflicted[0].code
    assert conflicted[0].dominant_stall in ("short_scoreboard", "mio_throttle")
    uncoalesced = [h for h in _hot("transpose_naive.slow") if h.metric("global_excessive_sectors")]
    assert [h.line for h in uncoalesced] == [9]
    assert not [h for h in _hot("transpose_naive.fast") if h.metric("global_excessive_sectors")]


def test_hot_lines_of_divergence_and_spills():
    divergent = [h.line for h in _hot("parity_divergence.slow") if h.metric("divergent_branches")]
    assert 21 in divergent  # if (i % 2 == 0)
    spill = _hot("small_matmul_spills.slow")
    assert spill[0].line == 21 and "fmaf" in spill[0].code


def test_roofline_of_the_matmuls_counts_the_flop_they_must_do():
    n = 2048
    for capture in ("matmul_naive.slow", "matmul_naive.fast"):
        launch = read_raw_page(FIXTURES / f"{capture}.raw.csv")[0]
        point = roofline_point(launch, copy_gbyte_per_s=3000.0)
        flop = point.achieved_gflop_per_s * 1e9 * launch.value(m.DURATION) * 1e-9
        assert flop == pytest.approx(2 * n**3, rel=0.01)
        assert 50e3 < point.peak_gflop_per_s < 80e3  # H100 SXM fp32: 2 x 16896 FMA/cycle x ~1.98 GHz
        assert point.peak_gbyte_per_s == 3000.0
        assert point.arithmetic_intensity_flop_per_byte > 100


def test_roofline_bandwidth_peak_falls_back_to_ncu():
    launch = read_raw_page(FIXTURES / "transpose_naive.fast.raw.csv")[0]
    point = roofline_point(launch)
    assert 3000 < point.peak_gbyte_per_s < 3500  # HBM3: 1280 byte/cycle x 2.6 GHz
    assert point.achieved_gbyte_per_s == pytest.approx(2 * 8192 * 8192 * 4 / launch.value(m.DURATION), rel=0.05)
    assert point.arithmetic_intensity_flop_per_byte == 0  # a copy does no floating-point work


def test_application_mode_ranks_kernels_by_time():
    launches = read_application_page(FIXTURES / "rownorm_launches.slow.launches.csv")
    ranked = rank_kernels(launches)
    assert {k.kernel for k in ranked} == {"rownorm_sum_squares", "rownorm_scale"}
    assert [k.launches for k in ranked] == [512, 512]  # one of each per row, rows = 512
    assert ranked[0].total_ms >= ranked[1].total_ms
    assert sum(k.share for k in ranked) == pytest.approx(1.0)
    assert all(0.001 < k.mean_ms < 0.02 for k in ranked)  # microsecond kernels
    assert rank_kernels(launches, top=1) == ranked[:1]
    stats = launch_stats(launches, calls=1)
    assert stats.launches_per_call == 1024
    assert stats.mean_launch_duration_us == pytest.approx(1e3 * sum(k.total_ms for k in ranked) / 1024)


def test_application_mode_needs_durations():
    launches = read_raw_page(FIXTURES / "sum_atomic.slow.raw.csv")
    for launch in launches:
        launch.counters.pop(m.DURATION)
    with pytest.raises(NcuCsvError, match="gpu__time_duration.sum"):
        rank_kernels(launches)


def test_device_record_of_the_capture():
    device = json.loads((FIXTURES / "device.json").read_text(encoding="utf-8"))
    assert device["copy"]["copy_gbyte_per_s"] > 1000
    assert "2025.3.1" in device["ncu_version"]


def test_profile_and_export_runs_the_three_commands(tmp_path):
    """A stand-in ncu that logs its arguments and prints a captured page, to check the wiring without a GPU. It
    logs beneath the work directory: ncu and the program it profiles may write nowhere else."""
    fake = tmp_path / "ncu"
    log = tmp_path / "work" / "calls.log"
    fake.write_text(f"""#!/bin/sh
echo "$*" >> {log}
case "$*" in
  *"--page raw"*) cat {FIXTURES / "sum_atomic.slow.raw.csv"} ;;
  *"--page source"*) cat {FIXTURES / "sum_atomic.slow.source.csv"} ;;
  *"--export"*) touch {tmp_path / "work" / "report.ncu-rep"} ;;
esac
""")
    fake.chmod(0o755)
    exports = profile_and_export(["./bin", "profile"], tmp_path / "work", kernel_regex="^sum", ncu=str(fake))
    calls = log.read_text().splitlines()
    assert len(calls) == 3 and calls[0].endswith("./bin profile") and "--nvtx-include pf_profile/" in calls[0]
    assert read_raw_page(exports.raw_csv)[0].kernel_base == "sum"
    assert any(line.line == 8 for line in read_source_page(exports.source_csv))


def test_run_ncu_reports_a_missing_or_failing_ncu(tmp_path):
    with pytest.raises(NcuError, match="not found"):
        run_ncu([str(tmp_path / "no-ncu"), "--version"], timeout_s=10)
    failing = tmp_path / "ncu"
    failing.write_text("#!/bin/sh\necho '==ERROR== no device' >&2\nexit 1\n")
    failing.chmod(0o755)
    with pytest.raises(NcuError, match="no device"):
        run_ncu([str(failing)], timeout_s=10)


def test_a_profile_that_matched_no_kernel_says_so(tmp_path):
    """ncu exits 0 and writes no report when its filters match no launch (a wrong name, a program that exits
    first): one error naming the filter and what ncu warned, not an `ncu --import` failure of a missing file."""
    fake = tmp_path / "ncu"
    fake.write_text("#!/bin/sh\necho '==WARNING== No kernels were profiled.'\n")
    fake.chmod(0o755)
    with pytest.raises(NcuError, match=r"ncu profiled no kernel: no launch matched '\^sgemm' inside the NVTX "
                                       r"range 'pf_profile' \(==WARNING== No kernels were profiled.\)"):
        profile_and_export(["./bin"], tmp_path / "work", kernel_regex="^sgemm", ncu=str(fake))


def test_a_failure_ncu_explains_on_stdout_is_in_the_error(tmp_path):
    fake = tmp_path / "ncu"
    fake.write_text("#!/bin/sh\necho '==ERROR== Report file is not valid'\nexit 1\n")
    fake.chmod(0o755)
    with pytest.raises(NcuError, match="Report file is not valid"):
        run_ncu([str(fake), "--import", "r.ncu-rep"], timeout_s=10)


@pytest.mark.parametrize(("ranked", "function_form", "selected"), [
    ("layernorm_forward_kernel1", "layernorm_forward_kernel1", True),
    ("layernorm_forward_kernel1", "layernorm_forward_kernel10", False),
    ("void cutlass::Kernel2<cutlass_80_simt_sgemm_256x128_8x4_nn_align1>", "Kernel2", True),
    ("void cutlass::Kernel2<cutlass_80_simt_sgemm_256x128_8x4_nn_align1>", "cutlass::Kernel2", True),
    ("void sgemm_shared_mem_block<32>", "sgemm_shared_mem_block", True),
])
def test_an_application_kernel_is_selected_by_its_function_name(ranked, function_form, selected):
    """SGEMM_CUDA's template kernels were ranked under the raw page's name ("void sgemm_shared_mem_block<32>") and
    then selected no launch: ncu matches "function" names ("sgemm_shared_mem_block"; seen on the H100, where its
    "demangled" form spells the argument `<(int)32>`). The pattern is the bare name, after any namespace."""
    from profiling.cuda.application import kernel_pattern

    assert bool(re.search(kernel_pattern(ranked), function_form)) is selected


@pytest.mark.parametrize(("ranked", "profiled", "same"), [
    ("void cutlass::Kernel2<cutlass_80_simt_sgemm_256x128_8x4_nn_align1>",
     "void Kernel2<cutlass_80_simt_sgemm_256x128_8x4_nn_align1>", True),
    ("void sgemm_shared_mem_block<32>", "void sgemm_shared_mem_block<(int)32>", True),
    ("void sgemm_shared_mem_block<32>", "void sgemm_shared_mem_block<64>", False),
    ("void cutlass::Kernel2<cutlass_80_simt_sgemm_256x128_8x4_nn_align1>",
     "void Kernel2<cutlass_80_simt_sgemm_128x128_8x4_nn_align1>", False),
])
def test_the_profiled_launch_is_recognised_as_the_ranked_one_in_either_spelling(ranked, profiled, same):
    """SGEMM_CUDA on the H100: cuBLAS's kernel was ranked as "void cutlass::Kernel2<...>" and its profiled launch
    read "void Kernel2<...>": the check that the profiled launch is the ranked one refused its own kernel. Another
    instantiation is still another kernel."""
    from profiling.cuda.application import same_kernel

    assert same_kernel(ranked, profiled) is same


def test_a_template_kernel_is_found_on_the_source_page_whatever_its_arguments_spelling():
    """The raw page named it "void sgemm_shared_mem_block<32>", the source page "void sgemm_shared_mem_block<(int)32>
    (int, ...)" (ncu 2025.3.1 on the H100): its lines are found by the bare function name."""
    from profiling.cuda.source_csv import SourceLine, lines_of

    page = [SourceLine(path="sgemm.cu", function="void sgemm_shared_mem_block<(int)32>(int, int, int, float, "
                       "const float *)", line=7, code="x")]
    assert lines_of(page, "void sgemm_shared_mem_block<32>") == page
    with pytest.raises(NcuCsvError, match="no function 'other_kernel'"):
        lines_of(page, "other_kernel")


def test_a_library_kernel_without_lineinfo_has_no_source_lines():
    """SGEMM_CUDA's runner also launches cuBLAS (built without -lineinfo); its source page holds only ncu's warning
    (captured on the H100). The application's other kernels must still be profiled: no lines, not an error."""
    from profiling.cuda.source_csv import lines_of, parse_source_page

    page = ("==WARNING== No lineinfo available to show CUDA-C source related to 'void Kernel2<cutlass_80_simt_sgemm_"
            "256x128_8x4_nn_align1>(Params)'.\n\n")
    assert parse_source_page(page) == []
    assert lines_of(parse_source_page(page), "void cutlass::Kernel2<cutlass_80_simt_sgemm_256x128_8x4_nn_align1>") == []
    with pytest.raises(NcuCsvError, match='no "Line No" header'):
        parse_source_page("\"ID\",\"Kernel Name\"\n")


def test_each_instantiation_of_one_kernel_name_is_profiled_at_its_own_launch():
    """Captured on the H200: KernelBench GELU's PyTorch launches are all vectorized_elementwise_kernel<4, ...>, one
    bare name; ncu's filter selects them all, so each ranked instantiation skips the earlier launches of the others."""
    from profiling.cuda.application import launch_skip

    launches = read_application_page(FIXTURES / "kb088_gelu_dead.launches.csv")
    ranked = [k.kernel for k in rank_kernels(launches, 3)]
    skips = [launch_skip(launches, name) for name in ranked]
    assert len(set(skips)) == 3 and skips[0] == 0
    for name, skip in zip(ranked, skips, strict=True):
        same = [x for x in launches if "vectorized_elementwise_kernel" in x.kernel]
        assert same[skip].kernel_base == name
    command = profile_command(["./prog"], Path("r"), kernel_regex="^k$", launch_count=1, launch_skip=skips[1])
    assert command[command.index("--launch-skip") + 1] == str(skips[1])


def test_a_kernel_that_cannot_be_profiled_leaves_the_others(monkeypatch, tmp_path):
    """One ranked kernel failing (a library's without line information, a name ncu spells otherwise) is reported and
    left out; the application's other kernels are still profiled. Only when none is does the error stand."""
    from profiling.cuda import application

    page = FIXTURES / "rownorm_launches.slow.launches.csv"
    monkeypatch.setattr(application.ncu, "export_application_page", lambda *a, **k: page)

    def profile(argv, workdir, kernel_dir, kernel, skip):
        if kernel.kernel == "rownorm_sum_squares":
            raise NcuCsvError("no \"Line No\" header")
        return kernel.kernel

    monkeypatch.setattr(application, "_profile_kernel", profile)
    said = []
    assert application.profile_cuda_application(["./app"], tmp_path, top=2, work_dir=tmp_path,
                                                 log=said.append) == ["rownorm_scale"]
    assert said == ['kernel rownorm_sum_squares: not profiled (no "Line No" header)']
    monkeypatch.setattr(application, "_profile_kernel", lambda *a: (_ for _ in ()).throw(NcuCsvError("none")))
    with pytest.raises(NcuCsvError, match="none"):
        application.profile_cuda_application(["./app"], tmp_path, top=2, work_dir=tmp_path, log=said.append)


def _profile_once(fake: str, work: str) -> str:
    """One profiling ncu run, in a process of its own (as a check or an eval run's judge would be)."""
    try:
        run_ncu([fake, "--set", "full", "./bin"], timeout_s=30, cwd=Path(work))
        return "ok"
    except NcuError as error:
        return str(error)


def test_two_processes_never_profile_on_one_gpu_at_once(tmp_path, monkeypatch):
    """Scenario: `perfforge synth patterns --jobs 3` on an H100 lost 37 of 42 CUDA checks to "ncu exited with
    status 9"; each ncu ran with a TMPDIR of its own, so ncu's own lock never saw the others. The stand-in ncu
    fails the same way when another profiling run is inside it; four processes profile at once and all succeed.
    An `--import` (reading a report) takes no lock and may run beside a profiling one."""
    import concurrent.futures
    import multiprocessing

    busy = tmp_path / "busy"
    fake = tmp_path / "ncu"
    fake.write_text(f"""#!/bin/sh
case "$*" in *--import*) exit 0 ;; esac
if ! mkdir {busy} 2>/dev/null; then echo '==ERROR== another profiler is running' >&2; exit 9; fi
sleep 0.3
rmdir {busy}
""")
    fake.chmod(0o755)
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", f"test-{tmp_path.name}")  # a lock of this test's own
    works = [tmp_path / f"w{i}" for i in range(4)]
    for work in works:
        work.mkdir()
    with concurrent.futures.ProcessPoolExecutor(4, mp_context=multiprocessing.get_context("spawn")) as pool:
        results = list(pool.map(_profile_once, [str(fake)] * 4, [str(w) for w in works]))
    assert results == ["ok"] * 4
    busy.mkdir()  # a profiling run in progress elsewhere: reading a report still goes ahead
    run_ncu([str(fake), "--import", "r.ncu-rep"], timeout_s=10, cwd=works[0])
