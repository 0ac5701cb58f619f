"""`perfforge eval` end to end: the real CLI, suites, loop, judges (gcc, validate's sandboxed runs, callgrind) on a
small CPU task with a human-optimised reference, against a scripted OpenAI-compatible endpoint instead of a model.

One evaluation (made once for the module) measures the original and the reference, runs one model configuration
for one round of two candidates (correct and faster; wrong output), re-measures the winner on both input
configurations and writes the table. Other tests resume copies of it, or run the same work as bundles.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from eval.commands import pending_bundles
from eval.results import load
from perfforge.records import EvalRecord
from tests.inference.conftest import (  # noqa: F401 (no_retry_wait is a fixture)
    ScriptedEndpoint,
    invoke,
    no_retry_wait,
    serve_scripted,
    write_cpu_task,
)
from tests.inference.test_optimize_e2e import FAST_ANSWER, WRONG_ANSWER

pytestmark = pytest.mark.usefixtures(
    "judge_on_planned_rounds",  # the pipeline is the subject, not the judge's timing (tests/conftest.py)
    "no_retry_wait",  # a failing endpoint fails at once
)

ROOT = Path(__file__).resolve().parents[2]


def eval_argv(tasks: Path, out: Path, endpoint: ScriptedEndpoint, *extra: str) -> list[str]:
    return ["eval", "--suites", f"tasks:{tasks}", "--models", f"ep={endpoint.base_url}#{endpoint.model}",
            "--candidates", "2", "--rounds", "1", "--out", str(out), "--no-report", *extra]


class MainEval:
    def __init__(self, tasks: Path, out: Path, endpoint: ScriptedEndpoint, result: tuple[int, str, str]) -> None:
        self.tasks, self.out, self.endpoint = tasks, out, endpoint
        self.code, self.stdout, self.stderr = result
        self.rows = {row.configuration: row for row in load(out / "results.parquet")}


@pytest.fixture(scope="module")
def main_eval(tmp_path_factory: pytest.TempPathFactory) -> MainEval:
    root = tmp_path_factory.mktemp("eval")
    tasks = root / "tasks"
    write_cpu_task(tasks / "matvec")
    with serve_scripted() as endpoint:
        endpoint.script([FAST_ANSWER, WRONG_ANSWER])
        result = invoke(eval_argv(tasks, root / "out", endpoint))
        return MainEval(tasks, root / "out", endpoint, result)


def test_eval_exits_0_with_a_row_per_configuration(main_eval: MainEval) -> None:
    assert main_eval.code == 0, main_eval.stderr
    assert sorted(main_eval.rows) == ["ep", "human"]
    assert "2 row(s) added" in main_eval.stdout
    assert len(main_eval.endpoint.completions) == 1


def test_human_reference_row(main_eval: MainEval) -> None:
    human = main_eval.rows["human"]
    assert (human.kind, human.variant, human.seed, human.suite) == ("reference", "", 0, "tasks")
    assert human.status == "improved" and human.correct
    assert human.speedup is not None and human.speedup > 1.0
    assert human.speedup_ci_low is not None and human.speedup_ci_low <= human.speedup <= human.speedup_ci_high
    assert len(human.config_names) == 2 and human.default_config in human.config_names
    assert all(s is not None and s > 0 for s in human.config_speedups)
    assert human.bottleneck == "cache_miss_bound"
    assert (main_eval.out / human.profile_before).is_file()


def test_model_row_counts_every_attempt(main_eval: MainEval) -> None:
    row: EvalRecord = main_eval.rows["ep"]
    assert (row.kind, row.variant, row.seed) == ("model", "sources=all;candidates=2;rounds=1", 0)
    assert row.status == "improved" and row.correct
    assert row.speedup is not None and row.speedup > 1.0 and row.belief
    assert (row.attempts, row.compiled, row.correct_candidates, row.improved_candidates) == (2, 2, 1, 1)
    assert row.attempt_statuses == ["improved", "incorrect"]
    assert row.attempt_speedups[1] is None and row.attempt_speedups[0] == row.speedup
    assert row.completion_tokens > 0 and row.prompt_tokens > 0
    assert len(row.config_speedups) == 2 and all(s is not None for s in row.config_speedups)
    assert (main_eval.out / row.profile_after).is_file()  # the winner's profile, kept by the loop
    assert (main_eval.out / row.run_dir / "report.md").is_file()


def test_rerun_asks_nothing_and_adds_nothing(main_eval: MainEval, tmp_path: Path) -> None:
    out = tmp_path / "out"
    shutil.copytree(main_eval.out, out)
    with serve_scripted() as endpoint:  # an empty script: any request would fail the run
        code, stdout, stderr = invoke(eval_argv(main_eval.tasks, out, endpoint))
        assert code == 0, stderr
        assert endpoint.completions == []
    assert "0 row(s) added" in stdout
    assert [r.key for r in load(out / "results.parquet")] == [r.key for r in load(main_eval.out / "results.parquet")]


def test_bundles_take_the_work_elsewhere_and_come_back(main_eval: MainEval, tmp_path: Path) -> None:
    """--bundle: measure, round 1 and the generalisation check each wait for `python3 -m profiling.bundle`."""
    out = tmp_path / "out"
    with serve_scripted() as endpoint:
        endpoint.script([FAST_ANSWER])
        argv = eval_argv(main_eval.tasks, out, endpoint, "--bundle", "--candidates", "1", "--no-human")
        passes = 0
        while True:
            code, stdout, stderr = invoke(argv)
            assert code == 0, stderr
            pending = pending_bundles(out)
            if not pending:
                break
            passes += 1
            assert passes <= 3, stdout
            ran = subprocess.run([sys.executable, "-m", "profiling.bundle", *map(str, pending)], cwd=ROOT,
                                 capture_output=True, text=True, timeout=600)
            assert ran.returncode == 0, ran.stderr
    assert passes == 3  # the original's profile, round 1, the winner on every input configuration
    (row,) = load(out / "results.parquet")
    assert row.status == "improved" and len(row.config_speedups) == 2


@pytest.mark.parametrize(("argv", "message"), [
    (["--models", "x=/no/such/adapter"], "holds no adapter_config.json"),
    (["--models", "x=http://127.0.0.1:1/v1"], "name the endpoint's model"),
    (["--suites", "catalogs"], "write catalogue, tasks:DIR, mined:DIR or kernelbench:DIR"),
    (["--sources", "roofline,colour"], "unknown summary source"),
    (["--parallel-runs", "0"], "--parallel-runs must be at least 1"),
    (["--parallel-runs", "2", "--bundle"], "--parallel-runs judges runs at once on this machine"),
])
def test_bad_input_is_one_error_line(tmp_path: Path, argv: list[str], message: str) -> None:
    code, _, stderr = invoke(["eval", "--out", str(tmp_path / "out"), *argv])
    assert code == 2
    assert message in stderr and len(stderr.strip().splitlines()) == 1


def test_rerun_writes_the_report_from_the_table(main_eval: MainEval, tmp_path: Path) -> None:
    out = tmp_path / "out"
    shutil.copytree(main_eval.out, out)
    with serve_scripted() as endpoint:
        code, stdout, stderr = invoke(eval_argv(main_eval.tasks, out, endpoint, "--report", "--title", "e2e"))
    assert code == 0, stderr
    markdown = (out / "report.md").read_text()
    assert "e2e" in markdown and "human" in markdown and "ep" in markdown
    assert "data:image/png;base64," in (out / "report.html").read_text()
    assert "report.html" in stdout


def test_a_second_evaluation_on_the_same_directory_is_refused(tmp_path: Path) -> None:
    import fcntl

    out = tmp_path / "out"
    out.mkdir()
    with (out / ".lock").open("w") as held:
        fcntl.flock(held, fcntl.LOCK_EX | fcntl.LOCK_NB)  # as a running evaluation holds it
        code, _, stderr = invoke(["eval", "--out", str(out)])
    assert code == 2 and "another perfforge eval is running" in stderr
    assert len(stderr.strip().splitlines()) == 1


def test_eval_compare_reads_the_runs_every_configuration_finished(main_eval: MainEval) -> None:
    """scripts/eval_compare.py, the comparison behind docs/eval_cpu_h100.md, on the module's evaluation: one run of
    `ep`, correct (the fast answer) and proven faster; the candidate differs from the original."""
    sys.path.insert(0, str(ROOT / "scripts"))
    from eval_compare import compare

    report = compare([main_eval.out], ["ep"])
    assert report["runs_finished"] == {"ep": 1} and report["runs_compared"] == 1
    summary = report["splits"]["all"]["ep"]
    assert (summary["runs"], summary["candidates"], summary["correct"], summary["fast_1"]) == (1, 2, 1.0, 1.0)
    assert summary["correct_ci95"] == [1.0, 1.0]
    assert report["copies"]["ep"] == {"correct_candidates": 1, "identical_to_the_original": 0}
    assert report["statuses"]["human"] == {"improved": 1}


def test_parallel_runs_measure_and_run_at_once_and_resume(tmp_path: Path) -> None:
    """eval --parallel-runs 2 on two tasks: the scripted endpoint answers a request only once a second one is in
    flight (a barrier), so runs made one after the other would fail; both tasks' runs of both seeds finish, each
    with its row in one uncorrupted table, every run's lines marked with its number, and a rerun adds nothing."""
    import threading

    from tests.conftest import json_post_server
    from tests.inference.conftest import FAST_TASK_TOML
    from tests.profiling.conftest import write_task

    for name in ("matvec_a", "matvec_b"):
        write_task(tmp_path / "tasks" / name, toml=FAST_TASK_TOML.replace('"matvec_colwalk"', f'"{name}"'))
    state = ScriptedEndpoint()
    together = threading.Barrier(2, timeout=60)

    def reply(path: str, body: dict, headers: object) -> tuple[int, dict]:
        if path == "/v1/chat/completions":
            together.wait()  # BrokenBarrierError (a 500, the run fails) unless another run asks at the same time
        return state.reply(path, body)

    with json_post_server(reply) as url:
        state.base_url = url
        state.script(*[[WRONG_ANSWER]] * 4)
        argv = [*eval_argv(tmp_path / "tasks", tmp_path / "out", state, "--parallel-runs", "2", "--no-human",
                           "--no-generalise", "--seeds", "0", "1"), "--candidates", "1"]
        code, _, stderr = invoke(argv)
        assert code == 0, stderr
        rows = load(tmp_path / "out" / "results.parquet")
        assert sorted((r.task, r.seed, r.status) for r in rows) == [
            (task, seed, "incorrect") for task in ("matvec_a", "matvec_b") for seed in (0, 1)]
        assert all(f"[{n}]     round 1:" in stderr for n in range(1, 5))
        code, stdout, stderr = invoke(argv)
        assert code == 0 and "0 row(s) added" in stdout, stderr
    assert len(state.completions) == 4
