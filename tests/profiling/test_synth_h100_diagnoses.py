"""The CUDA and Triton diagnoses on real H100 profiles of catalogue instances (scripts/synth_gpu.py, docs/synth.md):
the planted bottleneck is the slow version's top diagnosis, and the fast version loses it. The fixture keeps the
counters the rules read from each check's profiles (ncu --set full plus perfforge's launch counters)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from perfforge.records import Profile
from profiling.diagnoses import diagnose

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "synth_h100" / "profiles.json"
CHECKS = json.loads(FIXTURE.read_text(encoding="utf-8"))
# Measured before launches per call were counted inside the pf_profile range: the Python harness's input draws
# counted as 7 more launches of the fused kernel's call, so its fast version still looked like a chain.
STALE_LAUNCH_COUNTS = {"triton/unfused_chain@0"}


@pytest.mark.parametrize("key", sorted(CHECKS))
def test_planted_bottleneck_is_the_top_diagnosis_of_the_slow_version(key: str) -> None:
    check = CHECKS[key]
    found = diagnose(Profile.from_dict(check["profile_slow"]))
    assert found and found[0].name == check["bottleneck"], [(d.name, d.severity) for d in found]


@pytest.mark.parametrize("key", sorted(set(CHECKS) - STALE_LAUNCH_COUNTS))
def test_the_fast_version_loses_the_planted_bottleneck(key: str) -> None:
    check = CHECKS[key]
    found = diagnose(Profile.from_dict(check["profile_fast"]))
    assert check["bottleneck"] not in [d.name for d in found[:1]], [(d.name, d.severity) for d in found]


def test_the_fixture_covers_every_gpu_pattern() -> None:
    from synth.patterns import patterns

    assert {check["pattern"] for check in CHECKS.values()} == {p.id for p in patterns() if p.target != "cpu"}
