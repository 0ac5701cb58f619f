"""profiling/ knows every profiler a target spec names, and the diagnoses and thresholds agree with the specs."""

from __future__ import annotations

import dataclasses
import platform
from pathlib import Path

import pytest

from perfforge.errors import PerfforgeError
from perfforge.targets import TARGETS, TargetSpec, target_spec
from perfforge.task import Task, load_task
from profiling.application import APPLICATION_PROFILERS, profile_application
from profiling.diagnoses import RULES, thresholds_for
from profiling.profile import PROFILERS, profile_build_flags, profiler_for
from tests.profiling.conftest import write_task


@pytest.fixture
def cpu_task(tmp_path: Path) -> Task:
    return load_task(write_task(tmp_path / "t"))


@pytest.mark.parametrize("spec", TARGETS.values(), ids=lambda s: s.name)
def test_every_target_names_a_profiler_profiling_knows(spec: TargetSpec) -> None:
    assert spec.profiler in PROFILERS, f"{spec.name}: profiler {spec.profiler!r} is not in profiling.profile.PROFILERS"
    assert profiler_for(spec.name) is PROFILERS.get(spec.profiler)


def test_application_mode_is_keyed_by_the_same_profilers() -> None:
    assert set(APPLICATION_PROFILERS.names()) <= {spec.profiler for spec in TARGETS.values()}
    assert set(APPLICATION_PROFILERS.names()) == {"callgrind", "ncu"}  # cpu and cuda, as the configs offer


def test_hip_has_no_runnable_profiler_yet(cpu_task: Task, tmp_path: Path) -> None:
    hip_task = dataclasses.replace(cpu_task, target="hip")
    with pytest.raises(PerfforgeError,
                       match=r"no profiler for target 'hip' yet \(profilers: cpu, cuda, triton, torch\)"):
        profiler_for("hip")(hip_task, None, None, None, tmp_path)  # type: ignore[arg-type]
    with pytest.raises(PerfforgeError, match="no application mode for target 'hip'.*cpu, cuda, triton"):
        profile_application("true", tmp_path, target="hip", top=1, work_dir=tmp_path / "w")


def test_diagnoses_and_thresholds_agree_with_the_specs() -> None:
    """A target has thresholds exactly when some rule applies to it, and every rule's targets are targets."""
    for spec in TARGETS.values():
        has_rules = any(spec.name in rule.targets for rule in RULES.values())
        assert has_rules == (spec.thresholds is not None), spec.name
        used = {name for rule in RULES.values() if spec.name in rule.targets for name in rule.thresholds}
        assert used <= set(thresholds_for(spec.name)), (spec.name, used - set(thresholds_for(spec.name)))
    assert all(set(rule.targets) <= set(TARGETS.names()) for rule in RULES.values())
    assert thresholds_for("opencl") == {}  # a mined, non-runnable target's profile gets no thresholds, no error


def test_profile_builds_drop_avx512_only_under_valgrind(cpu_task: Task) -> None:
    march = dataclasses.replace(cpu_task, build=dataclasses.replace(cpu_task.build, flags=("-O3", "-march=native")))
    assert target_spec(march.target).profiler == "callgrind"
    expected = ("-mno-avx512f",) if platform.machine() in ("x86_64", "AMD64") else ()
    assert profile_build_flags(march) == expected
    assert profile_build_flags(dataclasses.replace(march, target="cuda")) == ()
