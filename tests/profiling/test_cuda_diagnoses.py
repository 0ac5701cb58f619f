"""The CUDA diagnoses on real ncu captures of the example tasks (tests/fixtures/ncu): the slow version's top
diagnosis is the task's planted bottleneck, and the known-good fast version no longer has it (or has it weaker)."""

from __future__ import annotations

import json
import statistics
import tomllib
from dataclasses import replace
from pathlib import Path

import pytest

from perfforge.records import Profile, Timing
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
    assert cuda_rules >= REQUIRED


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
