"""The pattern catalogue's generators: every pattern's instances are valid, distinct tasks; every CPU pattern's
instance passes the pipeline check with its planted bottleneck as the top diagnosis; the Triton instances are
correct under Triton's interpreter.

The pipeline check here runs without timing (`check_task(..., timing=False)`): correctness of the fast version
against the slow one, and the profile and diagnoses of the slow one, which do not depend on how busy the machine
is. Speedups are measured by `perfforge synth patterns` on a quiet machine, where a timing can be trusted.
"""

from __future__ import annotations

import dataclasses
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from perfforge.task import load_task
from synth.catalogue import instance_digest
from synth.check import check_task
from synth.instance import Instance, write_task
from synth.patterns import generate, patterns

SEEDS = range(8)
ALL_PATTERNS = [p.id for p in patterns()]
CPU_PATTERNS = [p.id for p in patterns(target="cpu")]
TRITON_PATTERNS = [p.id for p in patterns(target="triton")]
# The CPU instance each pattern is checked with: seed 0 unless its default config is slow to profile.
CPU_CHECK_SEED = {"cpu/loop_order": 1}
# Every pattern draws many choices: at least this many distinct instances of 8 seeds.
MIN_DISTINCT = 6


def test_the_catalogue_has_the_cpu_and_triton_patterns() -> None:
    bottlenecks = {p.bottleneck for p in patterns(target="cpu")}
    assert {"cache_miss_bound", "loop_invariant_work", "missing_parallelism", "missed_vectorization",
            "poor_data_layout", "branch_mispredictions"} <= bottlenecks
    assert {p.bottleneck for p in patterns(target="triton")} >= {"uncoalesced_global_access",
                                                                 "unfused_elementwise_chain"}


@pytest.mark.parametrize("pattern_id", ALL_PATTERNS)
def test_instances_are_valid_distinct_tasks(pattern_id: str, tmp_path: Path) -> None:
    instances = [generate(pattern_id, seed) for seed in SEEDS]
    for instance in instances:
        task = load_task(write_task(instance, tmp_path / f"s{instance.seed}"))
        assert (task.pattern, task.pattern_seed, task.bottleneck) == (pattern_id, instance.seed, instance.bottleneck)
        assert task.reference_path is not None and task.reference_path.read_text() == instance.fast
        assert instance.slow != instance.fast
        assert task.config().params  # a default config with parameters
    assert generate(pattern_id, 3) == instances[3]  # deterministic
    distinct = {instance_digest(i) for i in instances}
    assert len(distinct) >= MIN_DISTINCT, f"{pattern_id}: only {len(distinct)} distinct tasks of 8 seeds"


@pytest.mark.parametrize("pattern_id", CPU_PATTERNS)
def test_cpu_instance_is_kept_with_the_planted_bottleneck_on_top(pattern_id: str, tmp_path: Path) -> None:
    instance = generate(pattern_id, CPU_CHECK_SEED.get(pattern_id, 0))
    task = load_task(write_task(instance, tmp_path / "task"))
    check = check_task(task, tmp_path / "work", timing=False)
    assert check.kept, check.reason
    assert check.top_diagnosis == instance.bottleneck, check.diagnoses


def _small(instance: Instance) -> Instance:
    """The instance with its small configuration only (the interpreter runs every element in Python)."""
    return dataclasses.replace(instance, configs=[{**c, "default": True} for c in instance.configs
                                                  if c["name"] == "small"])


def test_triton_instances_are_correct_under_the_interpreter(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("torch")
    pytest.importorskip("triton")
    from profiling.validate import validate

    monkeypatch.setenv("TRITON_INTERPRET", "1")
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")
    assert TRITON_PATTERNS

    def judge(pattern_id: str) -> tuple[str, bool, str]:
        directory = tmp_path / pattern_id.replace("/", "__")
        task = load_task(write_task(_small(generate(pattern_id, 0)), directory / "task"))
        assert task.reference_path is not None
        verdict = validate(task, task.reference_path, directory / "work", timing=False)
        return pattern_id, verdict.correct, verdict.reason

    with ThreadPoolExecutor(max_workers=2) as pool:  # each validation waits on its harness processes
        results = list(pool.map(judge, TRITON_PATTERNS))
    wrong = [(pattern_id, reason) for pattern_id, correct, reason in results if not correct]
    assert not wrong


def test_interpreted_triton_is_never_timed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Times under TRITON_INTERPRET=1 are Python's, not a GPU's: a correct candidate is correct, never faster."""
    pytest.importorskip("torch")
    pytest.importorskip("triton")
    from perfforge.verdict import Status
    from profiling.validate import validate

    monkeypatch.setenv("TRITON_INTERPRET", "1")
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")
    task = load_task(write_task(_small(generate(TRITON_PATTERNS[0], 0)), tmp_path / "task"))
    verdict = validate(task, task.reference_path, tmp_path / "work", timing=True)
    assert verdict.status == Status.CORRECT and verdict.speedup is None, verdict.reason
    assert "not timed (Triton's CPU interpreter" in verdict.reason
