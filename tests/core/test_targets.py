"""The target registry: every spec is complete and consistent with itself, with the other specs, with the records'
Target enum, with the thresholds files and the docs, and task.toml's defaults come from it."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import pytest

import perfforge.records as records
from perfforge import targets, task
from perfforge.targets import TARGETS, TargetSpec, target_spec
from tests.profiling.conftest import write_task

ROOT = Path(__file__).resolve().parents[2]
THRESHOLDS = ROOT / "profiling" / "diagnoses" / "thresholds"
SPECS = TARGETS.values()


def test_the_runnable_targets_are_record_targets_in_task_order() -> None:
    assert TARGETS.names() == ("cpu", "cuda", "triton", "torch", "hip")  # the order TaskError's message lists them in
    assert set(TARGETS.names()) <= {t.value for t in records.Target}
    assert all(name == spec.name for name, spec in TARGETS.items())
    with pytest.raises(ValueError, match="not a perfforge.records.Target value"):
        dataclasses.replace(target_spec("cuda"), name="tpu")


@pytest.mark.parametrize("spec", SPECS, ids=lambda s: s.name)
def test_every_spec_is_complete(spec: TargetSpec) -> None:
    assert spec.languages and spec.suffixes and spec.compiler and spec.profiler and spec.key_counters
    assert all(isinstance(flag, str) and flag for flag in spec.flags)
    assert re.compile(spec.library_pattern).pattern  # a valid regex
    assert spec.thresholds is None or (THRESHOLDS / spec.thresholds).is_file(), spec.thresholds
    names, labels = zip(*spec.key_counters, strict=True)
    assert len(set(names)) == len(names) and len(set(labels)) == len(labels) and all(labels)


@pytest.mark.parametrize("spec", SPECS, ids=lambda s: s.name)
def test_its_suffixes_map_back_to_its_languages(spec: TargetSpec) -> None:
    assert all(suffix.startswith(".") for suffix in spec.suffixes)
    assert set(spec.suffixes.values()) == set(spec.languages)  # each suffix one of its languages, each language one
    for suffix, language in spec.suffixes.items():
        assert targets.language_of_suffix()[suffix] == language  # no other target claims the suffix otherwise
        assert spec.suffixes[targets.source_suffixes()[language]] == language


def test_targets_agree_with_each_other() -> None:
    """GPU targets run without an address-space limit (CUDA maps far more than it uses); CPU ones with one."""
    assert all((spec.memory_limit_bytes is None) == spec.gpu for spec in SPECS)
    assert targets.profiled_with("ncu") == ("cuda", "triton", "torch")  # triton and torch are profiled like cuda
    assert target_spec("triton").thresholds == target_spec("cuda").thresholds
    assert target_spec("triton").key_counters == target_spec("cuda").key_counters


def test_task_toml_reads_its_targets_languages_and_defaults_from_the_registry(tmp_path: Path) -> None:
    assert TARGETS.names() == task.TARGETS
    assert task.LANGUAGES == ("c", "cpp", "cuda", "python", "hip")  # the order TaskError's message lists them in
    assert task.LANGUAGE_OF_SUFFIX == {".c": "c", ".cpp": "cpp", ".cc": "cpp", ".cxx": "cpp", ".cu": "cuda",
                                       ".py": "python", ".hip": "hip"}
    root = write_task(tmp_path / "task")
    manifest = root / "task.toml"
    manifest.write_text(re.sub(r"\[build\]\n(.+\n)*", "", manifest.read_text()))  # no [build]: the defaults
    loaded = task.load_task(root)
    assert (loaded.build.compiler, loaded.build.flags) == (target_spec("cpu").compiler, target_spec("cpu").flags)
    assert loaded.build.compiler == "gcc" and loaded.build.flags == ("-O3", "-march=native", "-g")


def test_the_docs_list_every_target() -> None:
    text = (ROOT / "docs" / "targets.md").read_text(encoding="utf-8")
    current = text.split("## The current targets", 1)[1].split("\n## ", 1)[0]
    listed = re.findall(r"^\| `(\w+)` \|", current, re.MULTILINE)
    assert listed == list(TARGETS.names())
    for field in dataclasses.fields(TargetSpec):
        assert field.name == "name" or f"`{field.name}`" in text, field.name
