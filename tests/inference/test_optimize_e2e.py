"""`perfforge optimize` end to end: the real CLI, the real loop and judge (gcc, validate's sandboxed runs, callgrind)
on a small CPU task, against a scripted OpenAI-compatible endpoint instead of a model.

One run (made once for the module) covers most verdicts: round 1 answers with five candidates (correct and faster,
does not compile, wrong output, never returns, no code block), round 2 (--keep-going) with a correct but slower one
and one cut off mid-block. Other tests resume copies of that run, so they ask nothing and judge little.
"""

from __future__ import annotations

import shutil
import socket
import subprocess
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

from perfforge.io import write_json
from perfforge.records import SCHEMA_VERSION
from tests.conftest import error_lines
from tests.inference.conftest import (
    FAST_TASK_TOML,
    ScriptedEndpoint,
    hand_profile,
    invoke,
    optimize_argv,
    read_json,
    write_cpu_task,
)
from tests.profiling.conftest import FAST_C, HARNESS_C, SLOW_C

pytestmark = pytest.mark.usefixtures(
    "judge_on_planned_rounds",  # the pipeline is the subject, not the judge's timing (tests/conftest.py)
    "no_retry_wait",  # a failing endpoint fails at once
)

FAST_ANSWER = f"""I will make the inner loop contiguous.

**Hypothesis:** swap the loops so each row of m is read contiguously and every cache line is used whole.
**Evidence:** cache_miss_bound: D1_miss_rate = 25 % at line 5, where the column walk strides by n floats.

```c
{FAST_C}```
"""

BAD_C = """\
void matvec(int n, const float *m, const float *w, float *out) {
    for (int i = 0; i < n; i++) out[i] = 0.0f
}
"""
BAD_ANSWER = f"Hypothesis: drop the accumulation.\nEvidence: cache_miss_bound.\n```c\n{BAD_C}```\n"

WRONG_C = """\
void matvec(int n, const float *m, const float *w, float *out) {
    for (int i = 0; i < n; i++) out[i] = 0;
}
"""
WRONG_ANSWER = f"Hypothesis: skip the product.\nEvidence: D1mr.\n```c\n{WRONG_C}```\n"

HANG_C = """\
void matvec(int n, const float *m, const float *w, float *out) {
    volatile int spin = 1;
    while (spin) { }
    for (int i = 0; i < n; i++) out[i] = 0.0f;
}
"""
HANG_ANSWER = f"Hypothesis: spin.\nEvidence: none.\n```c\n{HANG_C}```\n"

NO_CODE_ANSWER = "Hypothesis: swap the loops.\nEvidence: cache_miss_bound.\nThe loops should be swapped; no code here."

SLOWER_C = """\
void matvec(int n, const float *m, const float *w, float *out) {
    for (int rep = 0; rep < 3; rep++) {
        for (int i = 0; i < n; i++) out[i] = 0.0f;
        for (int j = 0; j < n; j++)
            for (int i = 0; i < n; i++)
                out[i] += m[(long)i * n + j] * w[j];
    }
}
"""
SLOWER_ANSWER = f"Hypothesis: recompute the product.\nEvidence: cache_miss_bound.\n```c\n{SLOWER_C}```\n"
CUT_OFF_ANSWER = "Hypothesis: unroll.\nEvidence: cache_miss_bound.\n```c\nvoid matvec(int n, const float *m,"

ROUND_1 = [FAST_ANSWER, BAD_ANSWER, WRONG_ANSWER, HANG_ANSWER, NO_CODE_ANSWER]
ROUND_2 = [SLOWER_ANSWER, (CUT_OFF_ANSWER, "length")]


class MainRun:
    def __init__(self, task: Path, out: Path, endpoint: ScriptedEndpoint, argv: list[str],
                 result: tuple[int, str, str]) -> None:
        self.task, self.out, self.endpoint, self.argv = task, out, endpoint, argv
        self.code, self.stdout, self.stderr = result
        self.requests = list(endpoint.completions)

    def attempt(self, round_number: int, candidate: int) -> dict[str, Any]:
        return read_json(self.out / "rounds" / f"{round_number:02d}" / f"c{candidate}" / "attempt.json")


@pytest.fixture(scope="module")
def main_run(tmp_path_factory: pytest.TempPathFactory, module_endpoint: ScriptedEndpoint) -> MainRun:
    base = tmp_path_factory.mktemp("main")
    task = write_cpu_task(base / "task")
    out = base / "out"
    module_endpoint.script(ROUND_1, ROUND_2)
    argv = optimize_argv(task, out, module_endpoint, "--keep-going", candidates=5, rounds=2)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr("perfforge.llm_client.RETRY_DELAYS_S", ())
        result = invoke(argv)
    return MainRun(task, out, module_endpoint, argv, result)


def copy_run(run: MainRun, to: Path) -> tuple[Path, list[str]]:
    """A copy of the main run's output directory and the same command writing there."""
    shutil.copytree(run.out, to)
    argv = list(run.argv)
    argv[argv.index("--out") + 1] = str(to)
    return to, argv


def without_paths(report: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in report.items() if k != "paths"}


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


# --- the main run ---------------------------------------------------------------------------------------------------


def test_main_run_exits_0_after_asking_twice_with_keep_going(main_run: MainRun) -> None:
    assert main_run.code == 0, main_run.stderr
    # --keep-going: round 2 was asked although round 1 proved an improvement
    assert len(main_run.requests) == 2
    first, second = main_run.requests
    assert (first["n"], first["seed"], first["temperature"], first["max_tokens"]) == (5, 0, 0.8, 2048)
    assert (second["n"], second["seed"]) == (5, 1)
    assert main_run.endpoint.rounds == []
    assert "matvec_colwalk: " in main_run.stdout and "round 1 candidate 1 of 7 candidate(s)" in main_run.stdout


def test_main_run_report(main_run: MainRun) -> None:
    report = read_json(main_run.out / "report.json")
    assert report["task"] == "matvec_colwalk" and report["target"] == "cpu" and report["kernel"] == "matvec"
    assert report["outcome"] == "improved"
    assert report["focus"] == "cache_miss_bound" == report["diagnoses"][0]["name"]
    assert report["rounds_run"] == 2
    assert report["model"] == f"openai:scripted-model@{main_run.endpoint.base_url}"
    counts = dict(report["counts"])
    assert counts.pop("slower", 0) + counts.pop("no_change", 0) == 1
    assert counts == {"build_failed": 1, "improved": 1, "incorrect": 1, "timeout": 1, "unparsable": 2}
    assert [(a["round"], a["candidate"]) for a in report["attempts"]] == [(1, 1), (1, 2), (1, 3), (1, 4), (1, 5),
                                                                          (2, 1), (2, 2)]
    best = report["best"]
    assert (best["round"], best["candidate"], best["status"]) == (1, 1, "improved")
    assert best["speedup"] > 1.0 and best["speedup_ci"][0] > 1.0
    assert best["candidate_ms"] < best["baseline_ms"]
    assert report["held_for_review"] == []
    # usage: the K candidates of a round share one prompt, counted once per round; the completion total is split
    expected_prompt = 0
    for request in main_run.requests:
        expected_prompt += sum(len(m["content"]) for m in request["messages"]) // 4
    assert report["tokens"]["prompt"] == expected_prompt > 0
    assert report["tokens"]["completion"] > 0
    markdown = (main_run.out / "report.md").read_text()
    assert markdown.startswith("# perfforge optimize: matvec_colwalk")
    assert "Targeted bottleneck: **cache_miss_bound**" in markdown and "```diff" in markdown
    # each candidate's code is linked from its row, with the tokens it took
    assert "[kernel.c](rounds/01/c1/kernel.c)" in markdown and "| tokens |" in markdown


def test_improved_candidate_is_profiled_and_its_belief_checked(main_run: MainRun) -> None:
    attempt = main_run.attempt(1, 1)
    assert attempt["status"] == "improved" and attempt["speedup"] > 1.0
    assert attempt["hypothesis"].startswith("swap the loops so each row of m is read contiguously")
    assert attempt["evidence"].startswith("cache_miss_bound: D1_miss_rate")
    assert "cache_miss_bound" in attempt["cited"]
    assert "line 5" in attempt["cited"]  # line 5 is a hot line of the original's profile
    assert attempt["belief"] in ("confirmed", "partly")
    assert "no profile of the candidate" not in attempt["belief_detail"]
    assert "cache_miss_bound" in attempt["belief_detail"]
    names = {d["name"] for d in attempt["counter_deltas"]}
    assert {"Ir", "D1mr"} <= names
    d1mr = next(d for d in attempt["counter_deltas"] if d["name"] == "D1mr")
    assert d1mr["after"] < d1mr["before"]  # the row walk misses the L1 far less
    assert isinstance(attempt["diagnoses_after"], list)
    assert attempt["code"] == FAST_C
    assert (main_run.out / "rounds" / "01" / "c1" / "kernel.c").read_text() == FAST_C
    assert attempt["model"] == f"openai:scripted-model@{main_run.endpoint.base_url}"
    assert attempt["bottleneck"] == "cache_miss_bound" and attempt["finish_reason"] == "stop"
    assert attempt["machine"]


def test_patch_and_optimized_file(main_run: MainRun, tmp_path: Path) -> None:
    patch = (main_run.out / "patch.diff").read_text()
    assert patch.startswith("--- a/kernel.c\n+++ b/kernel.c\n@@ ")
    assert (main_run.out / "optimized" / "kernel.c").read_text() == FAST_C
    # the patch applied to the original gives the best candidate
    (tmp_path / "kernel.c").write_text(SLOW_C)
    done = subprocess.run(["patch", "-p1", "-d", str(tmp_path)], input=patch, capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
    assert (tmp_path / "kernel.c").read_text() == FAST_C


def test_build_failure_reported_and_fed_back_in_round_2(main_run: MainRun) -> None:
    attempt = main_run.attempt(1, 2)
    assert attempt["status"] == "build_failed"
    assert "error: expected ';' before '}' token" in attempt["reason"]
    assert attempt["belief"] == "untested" and attempt["speedup"] is None
    # round 1's prompt had no feedback; round 2's lists every round-1 verdict, most recent first
    first = main_run.requests[0]["messages"][1]["content"]
    second = main_run.requests[1]["messages"][1]["content"]
    assert "Earlier attempts" not in first
    feedback = second[second.index("Earlier attempts"):second.index("The file kernel.c:")]
    assert "- round 1, candidate 2: build_failed" in feedback
    assert "claimed: drop the accumulation." in feedback
    assert "error: expected ';' before '}' token" in feedback
    order = [feedback.index(f"- round 1, candidate {k}:") for k in (5, 4, 3, 2, 1)]
    assert order == sorted(order)
    assert "- round 1, candidate 1: improved" in feedback and "counters: " in feedback
    # round 2 shows the best proven version, not the original
    assert "best proven version so far" in second
    assert FAST_C.rstrip() in second and SLOW_C.rstrip() not in second
    assert SLOW_C.rstrip() in first
    assert "Target this bottleneck: cache_miss_bound." in first
    # what the server received is what request.json keeps
    for number, request in enumerate(main_run.requests, start=1):
        saved = read_json(main_run.out / "rounds" / f"{number:02d}" / "request.json")
        assert saved["messages"] == request["messages"]


def test_wrong_output_is_incorrect(main_run: MainRun) -> None:
    attempt = main_run.attempt(1, 3)
    assert attempt["status"] == "incorrect"
    assert "output 'out'" in attempt["reason"] and "outside tolerance" in attempt["reason"]
    assert attempt["belief"] == "untested"


def test_hang_is_a_timeout(main_run: MainRun) -> None:
    attempt = main_run.attempt(1, 4)
    assert attempt["status"] == "timeout"
    assert "the candidate timed out after" in attempt["reason"]
    assert attempt["belief"] == "untested"


def test_answer_without_code_is_unparsable(main_run: MainRun) -> None:
    attempt = main_run.attempt(1, 5)
    assert attempt["status"] == "unparsable"
    assert attempt["reason"].startswith("no fenced code block")
    assert attempt["code"] == "" and attempt["hypothesis"] == "swap the loops."
    assert not (main_run.out / "rounds" / "01" / "c5" / "kernel.c").exists()
    cut = main_run.attempt(2, 2)
    assert cut["status"] == "unparsable" and "cut off" in cut["reason"]
    assert cut["finish_reason"] == "length"


def test_slower_candidate_refutes_its_belief(main_run: MainRun) -> None:
    attempt = main_run.attempt(2, 1)
    assert attempt["status"] in ("slower", "no_change")
    assert attempt["belief"] == "refuted"
    assert attempt["speedup"] is not None and attempt["speedup"] < 1.0
    assert attempt["counter_deltas"] == []  # only improved candidates are profiled


def test_attempts_parquet_matches_attempt_files(main_run: MainRun) -> None:
    rows = pq.read_table(main_run.out / "attempts.parquet").to_pylist()
    assert len(rows) == 7
    for row in rows:
        attempt = main_run.attempt(row["round"], row["candidate"])
        assert (row["status"], row["reason"], row["code"], row["belief"]) == (
            attempt["status"], attempt["reason"], attempt["code"], attempt["belief"])
        assert row["task"] == "matvec_colwalk" and row["schema_version"] == SCHEMA_VERSION
    assert rows[0]["cited"] == main_run.attempt(1, 1)["cited"]
    assert rows[0]["counter_deltas"] and rows[0]["counter_deltas"][0]["name"] == "Ir"


# --- resuming -------------------------------------------------------------------------------------------------------


def test_rerun_of_a_finished_run_asks_nothing_and_gives_the_same_report(main_run: MainRun, tmp_path: Path) -> None:
    out, argv = copy_run(main_run, tmp_path / "out")
    before = len(main_run.endpoint.requests)
    code, stdout, stderr = invoke(argv)
    assert code == 0, stderr
    assert len(main_run.endpoint.requests) == before
    assert "starting the openai backend" not in stderr and "round 1 candidate" not in stderr
    old, new = read_json(main_run.out / "report.json"), read_json(out / "report.json")
    assert without_paths(new) == without_paths(old)
    assert new["paths"]["attempts"] == str(out / "attempts.parquet")
    assert (out / "optimized" / "kernel.c").read_text() == FAST_C


def test_interrupted_round_rejudges_only_the_missing_candidate(main_run: MainRun, tmp_path: Path) -> None:
    out, argv = copy_run(main_run, tmp_path / "out")
    (out / "rounds" / "01" / "c3" / "attempt.json").unlink()
    before = len(main_run.endpoint.requests)
    code, _, stderr = invoke(argv)
    assert code == 0, stderr
    assert len(main_run.endpoint.requests) == before
    judged = [line for line in stderr.splitlines() if line.startswith("round ")]
    assert len(judged) == 1 and judged[0].startswith("round 1 candidate 3: incorrect: ")
    assert "c3: " in stderr and "c1: " not in stderr and "profiling the original" not in stderr
    again = read_json(out / "rounds" / "01" / "c3" / "attempt.json")
    assert again["status"] == "incorrect" and again["completion"] == WRONG_ANSWER
    assert without_paths(read_json(out / "report.json")) == without_paths(read_json(main_run.out / "report.json"))


def test_an_interrupt_keeps_every_candidate_already_judged(main_run: MainRun, tmp_path: Path,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    """Ctrl-C while candidate 3 is validated: candidate 2, judged before it, is on disk, and is not judged again."""
    import profiling.validate

    out, argv = copy_run(main_run, tmp_path / "out")
    for name in ("c2", "c3"):
        (out / "rounds" / "01" / name / "attempt.json").unlink()
    validate = profiling.validate.validate

    def interrupted_at_c3(task: Any, candidate: Path, work_dir: Path, **kw: Any) -> Any:
        if candidate.parent.name == "c3":
            raise KeyboardInterrupt
        return validate(task, candidate, work_dir, **kw)

    monkeypatch.setattr(profiling.validate, "validate", interrupted_at_c3)
    code, _, _ = invoke(argv)
    assert code == 130
    assert (out / "rounds" / "01" / "c2" / "attempt.json").is_file()
    assert not (out / "rounds" / "01" / "c3" / "attempt.json").exists()
    monkeypatch.setattr(profiling.validate, "validate", validate)
    code, _, stderr = invoke(argv)
    assert code == 0, stderr
    judged = [line for line in stderr.splitlines() if line.startswith("round ")]
    assert len(judged) == 1 and judged[0].startswith("round 1 candidate 3: ")


def test_apply_outside_a_git_repository_is_an_error(main_run: MainRun, tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(main_run.task.parent))  # never find a repository above
    _, argv = copy_run(main_run, tmp_path / "out")
    before = len(main_run.endpoint.requests)
    code, _, stderr = invoke([*argv, "--apply"])
    assert code == 2
    assert len(main_run.endpoint.requests) == before
    (line,) = error_lines(stderr)
    assert line.startswith(f"perfforge: error: --apply needs the task {main_run.task} inside a git repository")


# --- the endpoint failing -------------------------------------------------------------------------------------------


def seeded_out(out: Path) -> Path:
    """An output directory whose original is already profiled, so that the run goes straight to the model."""
    write_json(out / "original" / "profile.json", hand_profile().to_dict())
    return out


def test_endpoint_down_is_one_error_line(cpu_task: Path, tmp_path: Path,
                                         scripted_endpoint: ScriptedEndpoint) -> None:
    out = seeded_out(tmp_path / "out")
    url = f"http://127.0.0.1:{closed_port()}/v1"
    code, stdout, stderr = invoke(["optimize", str(cpu_task), "--url", url, "--model", "m", "--candidates", "2",
                                   "--out", str(out)])
    assert code == 2
    (line,) = error_lines(stderr)
    assert f"model endpoint {url}/chat/completions is not answering" in line
    assert "start the server or fix the URL" in line
    assert stdout == ""
    assert not (out / "rounds" / "01" / "completions.json").exists()
    assert not list(out.glob("rounds/*/c*/attempt.json")) and not (out / "report.json").exists()


def test_wrong_model_name_is_named_in_the_error(cpu_task: Path, tmp_path: Path,
                                                scripted_endpoint: ScriptedEndpoint) -> None:
    scripted_endpoint.script([FAST_ANSWER])
    out = seeded_out(tmp_path / "out")
    code, _, stderr = invoke(optimize_argv(cpu_task, out, scripted_endpoint, model="no-such-model"))
    assert code == 2
    (line,) = error_lines(stderr)
    assert "does not serve model 'no-such-model'" in line and "HTTP 404" in line
    assert [r["model"] for r in scripted_endpoint.requests] == ["no-such-model"]
    assert scripted_endpoint.rounds == [[FAST_ANSWER]]  # nothing was answered
    assert not (out / "report.json").exists()


def test_unknown_insight_source_is_a_user_error(cpu_task: Path, tmp_path: Path,
                                                scripted_endpoint: ScriptedEndpoint) -> None:
    out = seeded_out(tmp_path / "out")
    code, _, stderr = invoke(optimize_argv(cpu_task, out, scripted_endpoint, "--sources", "bogus"))
    assert code == 2
    (line,) = error_lines(stderr)
    assert "unknown summary source(s) 'bogus'" in line
    assert scripted_endpoint.requests == []


# --- default stop, --apply ------------------------------------------------------------------------------------------


def test_default_stops_after_an_improving_round_and_apply_commits_a_branch(
        make_repo: Any, tmp_path: Path, scripted_endpoint: ScriptedEndpoint) -> None:
    repo = make_repo("repo")
    repo.commit("add the task", {"task/kernel.c": SLOW_C, "task/harness.c": HARNESS_C, "task/fast.c": FAST_C,
                                 "task/task.toml": FAST_TASK_TOML})
    task = repo.path / "task"
    scripted_endpoint.script([FAST_ANSWER])  # a second request would get HTTP 400 and fail the run
    out = tmp_path / "out"
    code, stdout, stderr = invoke(optimize_argv(task, out, scripted_endpoint, "--no-profile-candidates", "--apply",
                                                "--branch", "perfforge/test-apply", rounds=3))
    assert code == 0, stderr
    assert len(scripted_endpoint.completions) == 1  # stopped after round 1 proved an improvement
    report = read_json(out / "report.json")
    assert report["rounds_run"] == 1 and report["outcome"] == "improved"
    attempt = read_json(out / "rounds" / "01" / "c1" / "attempt.json")
    assert attempt["counter_deltas"] == [] and "no profile of the candidate" in attempt["belief_detail"]
    assert f"applied: branch perfforge/test-apply in {repo.path}" in stdout

    def git(*args: str) -> str:
        return subprocess.run(["git", "-C", str(repo.path), *args], capture_output=True, text=True,
                              check=True).stdout

    assert git("rev-list", "--count", "main..perfforge/test-apply").strip() == "1"
    assert git("diff", "--name-only", "main", "perfforge/test-apply").split() == ["task/kernel.c"]
    assert git("show", "perfforge/test-apply:task/kernel.c") == FAST_C
    message = git("log", "-1", "--format=%B", "perfforge/test-apply")
    assert message.startswith("perfforge: optimise matvec (") and "Hypothesis: swap the loops" in message
    # the user's work tree and branch are untouched, and the temporary worktree is gone
    assert (task / "kernel.c").read_text() == SLOW_C
    assert git("status", "--porcelain") == ""
    assert git("rev-parse", "--abbrev-ref", "HEAD").strip() == "main"
    assert len(git("worktree", "list").splitlines()) == 1
