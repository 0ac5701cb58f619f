"""Loading task.toml: defaults, and one clear error naming the field for each kind of malformed manifest."""

from __future__ import annotations

from pathlib import Path

import pytest

from perfforge.task import TaskError, load_task
from tests.profiling.conftest import TASK_TOML, write_task


@pytest.fixture
def cpu_task_dir(tmp_path: Path) -> Path:
    return write_task(tmp_path / "task")


def test_loads_the_manifest_with_defaults(cpu_task_dir: Path) -> None:
    task = load_task(cpu_task_dir / "task.toml")
    assert (task.name, task.target, task.language, task.kernel) == ("matvec_colwalk", "cpu", "c", "matvec")
    assert task.config().name == "default" and task.config().args() == ["n=1536"]
    assert task.outputs[0].rtol == 1e-4 and task.outputs[0].atol == 1e-5  # float32 defaults
    assert task.work.evaluate({"n": 10}) == (200.0, 480.0)
    assert task.reference_path == cpu_task_dir / "fast.c"


@pytest.mark.parametrize(("edit", "message"), [
    (lambda t: t.replace('target = "cpu"', 'target = "gpu"'), "field 'target' must be one of cpu, cuda"),
    (lambda t: t.replace('kernel = "matvec"\n', ""), "field 'kernel' is required"),
    (lambda t: t.replace('source = "kernel.c"', 'source = "missing.c"'), "field 'source' names 'missing.c'"),
    (lambda t: t.split("[[outputs]]")[0] + "[[configs]]" + t.split("[[configs]]", 1)[1], "[[outputs]] is required"),
    (lambda t: t.replace('dtype = "float32"', 'dtype = "float32"\nrtol = 0.01'), "too loose for float32"),
    (lambda t: t.replace('dtype = "float32"', 'dtype = "complex"'), "field 'dtype' must be one of"),
    (lambda t: t.replace("seeds = 5", "seeds = 1"), "seeds must be at least 5"),
    (lambda t: t.replace("calls = 2", "calls = 1"), "calls must be at least 2"),
    (lambda t: t.replace("calls = 2", 'calls = 2\ndistribution = "gaussian"'), "distribution 'gaussian' is not one"),
    # the cpu target is served, so the distribution is accepted there; a harness-drawn target refuses it below
    (lambda t: t.replace('flops = "2 * n * n"', 'flops = "2 * m"'), "[work] cannot be evaluated"),
    (lambda t: t.replace('flops = "2 * n * n"', 'flops = "__import__(1)"'), "[work] cannot be evaluated"),
    (lambda t: t + "\ncolour = 1\n", "unknown field(s) colour"),
    (lambda t: t.replace("params = { n = 48 }", 'params = { n = "big" }'), "params must be a table of numbers"),
    (lambda t: t + "\n[[", "is not valid TOML"),
])
def test_malformed_manifest_names_the_field(tmp_path: Path, edit, message: str) -> None:
    task_dir = write_task(tmp_path / "task", toml=edit(TASK_TOML))
    with pytest.raises(TaskError, match=None) as info:
        load_task(task_dir)
    assert message in str(info.value)


def test_missing_directory_and_manifest(tmp_path: Path) -> None:
    with pytest.raises(TaskError, match="does not exist"):
        load_task(tmp_path / "nope")
    with pytest.raises(TaskError, match="has no task.toml"):
        load_task(tmp_path)


def test_unknown_config_lists_the_known_ones(cpu_task_dir: Path) -> None:
    with pytest.raises(TaskError, match="configs: small, default"):
        load_task(cpu_task_dir).config("huge")


@pytest.mark.parametrize("kernel", ["matvecc", "matvec|transpose", "mat"])
def test_a_kernel_the_source_does_not_define_is_a_task_error(tmp_path: Path, kernel: str) -> None:
    """A misspelt kernel used to load and fail later as an empty profile; C names are exact (no prefix)."""
    task_dir = write_task(tmp_path / "task", toml=TASK_TOML.replace('kernel = "matvec"', f'kernel = "{kernel}"'))
    missing = kernel.split("|")[-1]
    with pytest.raises(TaskError, match=rf"field 'kernel' names '{missing}', which is not a function in kernel.c"):
        load_task(task_dir)


def test_every_example_task_names_a_kernel_its_source_defines() -> None:
    """CUDA names are prefixes (rownorm_launches' rownorm), launchers count, '|' lists are checked name by name."""
    for manifest in sorted(Path(__file__).resolve().parents[2].glob("examples/tasks/*/*/task.toml")):
        load_task(manifest)


def test_a_mixed_distribution_needs_a_target_whose_judge_draws(tmp_path: Path) -> None:
    served = write_task(tmp_path / "served", toml=TASK_TOML.replace("calls = 2", 'calls = 2\ndistribution = "mixed"'))
    assert load_task(served).validate.distribution.value == "mixed"
    hip = TASK_TOML.replace('target = "cpu"', 'target = "hip"')
    hip = hip.replace("calls = 2", 'calls = 2\ndistribution = "mixed"')
    with pytest.raises(TaskError, match="needs a target whose inputs the judge draws"):
        load_task(write_task(tmp_path / "hip", toml=hip))
