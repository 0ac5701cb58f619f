"""Answers written elsewhere, replayed as a configuration's (`--models NAME=answers:DIR`): found by task name or in
KernelBench's sample layout, judged like any candidate end to end, and a task without one is an unparsable row."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from eval.configurations import answer_for, parse
from eval.results import load
from perfforge.errors import ConfigError
from perfforge.task import load_task
from tests.inference.conftest import FAST_C, invoke, write_cpu_task


def test_an_answers_configuration_needs_a_directory(tmp_path: Path) -> None:
    (configuration,) = parse([f"mine=answers:{tmp_path}"])
    assert configuration.answers == tmp_path and not configuration.served
    with pytest.raises(ConfigError, match="not a directory of answers"):
        parse([f"mine=answers:{tmp_path / 'missing'}"])


def test_answers_are_found_by_task_name_or_as_kernelbench_samples(tmp_path: Path) -> None:
    task = load_task(write_cpu_task(tmp_path / "task"))
    answers = tmp_path / "answers"
    answers.mkdir()
    assert answer_for(answers, task) is None
    (answers / f"{task.name}.c").write_text("// mine\n")
    assert answer_for(answers, task) == "// mine\n"
    (answers / f"{task.name}.c").unlink()
    (task.root / "kernelbench.json").write_text(json.dumps({"level": 2, "problem_id": 76,
                                                            "problem_file": "76_Gemm_Add_ReLU.py"}))
    for sample in (3, 1, 10):
        (answers / f"level_2_problem_76_sample_{sample}_kernel.py").write_text(f"# sample {sample}\n")
    (answers / "level_2_problem_7_sample_0_kernel.py").write_text("# another problem\n")
    assert answer_for(answers, task) == "# sample 1\n"


def test_replayed_answers_are_judged_like_a_models(tmp_path: Path) -> None:
    """Two tasks, one answer (the fast version): an improved row, judged and profiled through the loop, and an
    unparsable row for the task without an answer; no model server is started."""
    tasks = tmp_path / "tasks"
    solved = load_task(write_cpu_task(tasks / "matvec"))
    other = write_cpu_task(tasks / "matvec_again")
    toml = other / "task.toml"
    toml.write_text(toml.read_text().replace(f'name = "{solved.name}"', 'name = "matvec_again"'))
    answers = tmp_path / "answers"
    answers.mkdir()
    (answers / f"{solved.name}.c").write_text(FAST_C)
    code, stdout, stderr = invoke(["eval", "--suites", f"tasks:{tasks}", "--models", f"written=answers:{answers}",
                                   "--no-human", "--no-generalise", "--out", str(tmp_path / "out"), "--no-report"])
    assert code == 0, stderr
    rows = {row.task: row for row in load(tmp_path / "out" / "results.parquet")}
    assert rows[solved.name].status == "improved" and rows[solved.name].speedup > 1.0
    assert (rows[solved.name].candidates, rows[solved.name].rounds, rows[solved.name].attempts) == (1, 1, 1)
    assert rows[solved.name].model.startswith("answers:")
    assert rows["matvec_again"].status == "unparsable" and not rows["matvec_again"].correct
