"""perf stat: the parser on output recorded on this project's CPU machine, and the real availability probe."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from profiling.cpu import perf_stat

DATA = Path(__file__).with_name("data")


def test_parses_recorded_output_with_unsupported_hardware_events() -> None:
    """Recorded with `perf stat -x, -e task-clock,context-switches,page-faults,cycles,instructions,branches,
    branch-misses` around a harness on the 2-core VM: software events count, hardware ones are <not supported>."""
    events = perf_stat.parse_perf_stat_csv((DATA / "perf_stat_software_and_unsupported.csv").read_text())
    by_name = {e.event: e for e in events}
    assert by_name["task-clock"].value == pytest.approx(158.67) and by_name["task-clock"].unit == "msec"
    assert by_name["page-faults"].value == 16961
    assert by_name["instructions"].value is None and by_name["instructions"].status == "not supported"
    counters = {c.name: c for c in perf_stat.counters_from_events(events)}
    assert set(counters) == {"perf.task-clock", "perf.context-switches", "perf.page-faults"}
    assert "perf.ipc" not in counters  # no cycles, no instructions: no ratio made up


def test_probe_output_of_this_machine_says_unsupported() -> None:
    assert not perf_stat.probe_says_supported((DATA / "perf_stat_instructions_unsupported.csv").read_text())


def test_probe_accepts_counted_instructions_and_derives_ratios() -> None:
    """perf's CSV layout for a machine with a PMU (value, unit, event, run time, % running, metric, metric unit);
    hand-written, as no machine here has one."""
    text = ("1000000,,cycles,500000,100.00,,\n2500000,,instructions,500000,100.00,2.50,insn per cycle\n"
            "400,,cache-references,500000,50.00,,\n100,,cache-misses,500000,50.00,25.00,of all cache refs\n"
            "50000,,branches,500000,100.00,,\n500,,branch-misses,500000,100.00,1.00,of all branches\n")
    assert perf_stat.probe_says_supported(text)
    counters = {c.name: c for c in perf_stat.counters_from_events(perf_stat.parse_perf_stat_csv(text))}
    assert counters["perf.ipc"].value == pytest.approx(2.5)
    assert counters["perf.cache_miss_rate"].value == pytest.approx(25.0)
    assert counters["perf.branch_miss_rate"].value == pytest.approx(1.0)
    assert counters["perf.cycles"].unit == "cycle"


@pytest.mark.skipif(shutil.which("perf") is None, reason="perf is not installed")
def test_availability_is_probed_once_and_matches_a_direct_probe(tmp_path: Path) -> None:
    import subprocess

    perf_stat.perf_stat_available.cache_clear()
    first = perf_stat.perf_stat_available()
    assert perf_stat.perf_stat_available() is first
    assert perf_stat.perf_stat_available.cache_info().hits == 1
    out = tmp_path / "probe.csv"
    subprocess.run(["perf", "stat", "-x,", "-o", str(out), "-e", "instructions", "true"], capture_output=True)
    assert first == (out.is_file() and perf_stat.probe_says_supported(out.read_text()))


def test_run_perf_stat_returns_nothing_where_perf_cannot_count(tmp_path: Path) -> None:
    if perf_stat.perf_stat_available():
        pytest.skip("this machine has hardware counters")
    assert perf_stat.run_perf_stat(Path("/nonexistent/bin"), [], tmp_path) == []
