"""synth/from_commits.py: `perfforge synth commits` end to end against a local OpenAI-compatible endpoint that
answers with a prepared task, and the parsing and policy checks of answers."""

from __future__ import annotations

from pathlib import Path

import pyarrow.parquet as pq
import pytest

import perfforge.llm_client
from perfforge.cli import main
from perfforge.io import read_json, write_parquet
from perfforge.records import PAIR_FEATURES, PairRecord, as_row, code_hash
from synth.config import SynthCommitsConfig
from synth.from_commits import (
    AttemptFailed,
    Outcome,
    build_messages,
    load_generated_task,
    parse_answer,
    select_pairs,
    write_task_files,
)
from tests.conftest import OpenAIEndpoint

MODEL = "test-model"

# The mined commit: a matrix product in i-j-k order (the inner loop walks a column of b) reordered to i-k-j.
BEFORE = """\
void matmul(const float *a, const float *b, float *c, int n) {
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++) {
            float sum = 0.0f;
            for (int k = 0; k < n; k++) sum += a[i * n + k] * b[k * n + j];
            c[i * n + j] = sum;
        }
}
"""
AFTER = """\
void matmul(const float *a, const float *b, float *c, int n) {
    for (int i = 0; i < n; i++) {
        for (int j = 0; j < n; j++) c[i * n + j] = 0.0f;
        for (int k = 0; k < n; k++) {
            float aik = a[i * n + k];
            for (int j = 0; j < n; j++) c[i * n + j] += aik * b[k * n + j];
        }
    }
}
"""
# The fast version of a wrong answer: its k loop stops one short.
WRONG_AFTER = AFTER.replace("k < n; k++) {", "k < n - 1; k++) {")

# The model's harness: the example task's, which follows the protocol (the configs set n).
HARNESS = (Path(__file__).resolve().parents[2] / "examples" / "tasks" / "cpu" / "matmul_loop_order"
           / "harness.c").read_text(encoding="utf-8")
# Small sizes keep the check to seconds; at n=192 the i-j-k order is still several times slower (it cannot
# vectorise and strides through b).
TASK_TOML = """\
name = "matmul_from_commit"
target = "cpu"
language = "c"
source = "kernel.c"
kernel = "matmul"
harness = "harness.c"
reference = "fast.c"
description = "i-j-k matrix product reordered to i-k-j"

[build]
compiler = "gcc"
flags = ["-O3", "-march=native", "-mno-avx512f", "-g"]

[[outputs]]
name = "c"
dtype = "float32"
rtol = 1e-5
atol = 1e-5

[[configs]]
name = "small"
params = { n = 48 }
[[configs]]
name = "default"
params = { n = 192 }
default = true

[work]
flops = "2 * n * n * n"
bytes = "3 * 4 * n * n"

[validate]
trials = 10
rounds = 3
"""


def answer(files: dict[str, str], prose: str = "Here is the task.\n\n") -> str:
    """An answer in the asked format: `### name` then one fenced block per file."""
    return prose + "\n".join(f"### {name}\n```\n{text}```\n" for name, text in files.items())


GOOD_FILES = {"task.toml": TASK_TOML, "kernel.c": BEFORE, "fast.c": AFTER, "harness.c": HARNESS}
GOOD_ANSWER = answer(GOOD_FILES)


def mined_row(**changes: object) -> dict:
    record = PairRecord(
        repo="example/kernels", repo_url="https://example.com/kernels.git", commit="c" * 40, parent="p" * 40,
        date="2024-01-03T12:00:00+00:00", path="src/matmul.c", licence="MIT", found_by="mined:rules",
        language="c", target="cpu", kernel_name="matmul", kernel_kind="host_function", function_before=BEFORE,
        function_after=AFTER, file_before=BEFORE, file_after=AFTER, diff="", code_hash=code_hash(BEFORE, AFTER),
        perf_score=0.9, category="memory_access", evidence=["message: loop order"],
        message="matmul: reorder loops to i-k-j so the inner loop is contiguous")
    row = as_row(record)
    row.update(changes)
    return row


@pytest.fixture
def mined_pairs(tmp_path: Path) -> Path:
    """One CPU performance pair, plus a non-performance pair and a CUDA pair that a CPU run must skip."""
    path = tmp_path / "mine" / "pairs.parquet"
    rows = [mined_row(), mined_row(category="none", perf_score=0.1, kernel_name="other"),
            mined_row(target="cuda", language="cuda", kernel_name="matmul_gpu")]
    write_parquet(path, rows, PAIR_FEATURES)
    return path


@pytest.fixture(autouse=True)
def no_retry_delays(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(perfforge.llm_client, "RETRY_DELAYS_S", (0.0, 0.0))


def run(mined: Path, out: Path, endpoint: OpenAIEndpoint, *extra: str, model: str = MODEL) -> int:
    return main(["synth", "commits", str(mined), "--url", endpoint.base_url, "--model", model, "--out", str(out),
                 "--no-progress", *extra])


def judged(out: Path) -> list[dict]:
    return [read_json(p) for p in sorted((out / "judged").glob("*.json"))]


# ---- end to end ---------------------------------------------------------------------------------------------------


def test_a_valid_task_is_kept_as_a_synthetic_commit_record_and_resume_skips_it(
        mined_pairs: Path, tmp_path: Path, openai_endpoint: OpenAIEndpoint, capsys) -> None:
    openai_endpoint.answer = GOOD_ANSWER
    out = tmp_path / "out"
    assert run(mined_pairs, out, openai_endpoint) == 0
    (result,) = judged(out)
    assert result["outcome"] == "kept", result["attempts"][-1]["reason"]
    check = result["attempts"][0]["check"]
    assert check["speedup"] > 1.2 and check["profile_slow"] and check["profile_fast"]
    assert (out / "tasks" / result["id"] / "fast.c").read_text() == AFTER
    rows = pq.read_table(out / "pairs.parquet").to_pylist()
    assert len(rows) == 1
    row = rows[0]
    assert row["found_by"] == "synthetic:commit" and row["commit"] == "c" * 40 and row["parent"] == "p" * 40
    assert (row["repo"], row["licence"], row["category"]) == ("example/kernels", "MIT", "memory_access")
    assert row["message"].startswith("matmul: reorder loops") and row["date"] == "2024-01-03T12:00:00+00:00"
    assert row["verified_speedup"] > 1.2 and row["profile_before"] and row["kernel_name"] == "matmul"
    stats = read_json(out / "stats.json")
    assert stats["kept"] == 1 and stats["skipped"] == {"not_perf": 1, "target_cuda": 1}
    prompt = openai_endpoint.requests[0]["messages"][1]["content"]
    assert "perfforge_harness.h" in prompt and BEFORE in prompt and AFTER in prompt and "### task.toml" in prompt
    assert "kept" in capsys.readouterr().err

    asked = len(openai_endpoint.requests)
    assert run(mined_pairs, out, openai_endpoint) == 0  # resumed: the judged pair is not asked again
    assert len(openai_endpoint.requests) == asked
    assert read_json(out / "stats.json")["kept"] == 1 and len(pq.read_table(out / "pairs.parquet")) == 1


def test_garbage_is_recorded_as_unparsable_and_the_reason_is_fed_back(
        mined_pairs: Path, tmp_path: Path, openai_endpoint: OpenAIEndpoint) -> None:
    openai_endpoint.answer = "I am sorry, I cannot write C code today."
    out = tmp_path / "out"
    assert run(mined_pairs, out, openai_endpoint, "--attempts", "2") == 0
    (result,) = judged(out)
    assert result["outcome"] == "unparsable" and "no task.toml block" in result["reason"]
    assert [a["outcome"] for a in result["attempts"]] == ["unparsable", "unparsable"]
    retry = openai_endpoint.requests[1]["messages"]
    assert retry[-2] == {"role": "assistant", "content": openai_endpoint.answer}
    assert "no task.toml block" in retry[-1]["content"]
    assert read_json(out / "stats.json")["outcomes"] == {"unparsable": 1}
    assert len(pq.read_table(out / "pairs.parquet")) == 0


def test_a_wrong_fast_version_is_recorded_as_incorrect(
        mined_pairs: Path, tmp_path: Path, openai_endpoint: OpenAIEndpoint) -> None:
    openai_endpoint.answer = answer({**GOOD_FILES, "fast.c": WRONG_AFTER})
    out = tmp_path / "out"
    assert run(mined_pairs, out, openai_endpoint, "--attempts", "1") == 0
    (result,) = judged(out)
    assert result["outcome"] == "incorrect", result["reason"]
    assert result["reason"].startswith("incorrect:") and result["attempts"][0]["detail"]
    assert len(pq.read_table(out / "pairs.parquet")) == 0


def test_a_build_failure_is_recorded_with_the_compiler_error(
        mined_pairs: Path, tmp_path: Path, openai_endpoint: OpenAIEndpoint) -> None:
    openai_endpoint.answer = answer({**GOOD_FILES, "fast.c": AFTER.replace("float aik", "flot aik")})
    out = tmp_path / "out"
    assert run(mined_pairs, out, openai_endpoint, "--attempts", "1") == 0
    (result,) = judged(out)
    assert result["outcome"] == "build_failed" and "flot" in result["reason"] + result["attempts"][0]["detail"]


def test_a_wrong_model_name_gives_one_error_line_and_records_nothing(
        mined_pairs: Path, tmp_path: Path, openai_endpoint: OpenAIEndpoint, capsys) -> None:
    out = tmp_path / "out"
    assert run(mined_pairs, out, openai_endpoint, model="no-such-model") == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "does not serve model 'no-such-model'" in err[0]
    assert judged(out) == [] and read_json(out / "stats.json")["judged"] == 0  # the pair stays to be asked


def test_an_endpoint_that_is_down_gives_one_error_line_and_keeps_finished_work(
        mined_pairs: Path, tmp_path: Path, openai_endpoint: OpenAIEndpoint, capsys) -> None:
    two = tmp_path / "two.parquet"
    write_parquet(two, [mined_row(), mined_row(kernel_name="matmul2")], PAIR_FEATURES)
    out = tmp_path / "out"
    openai_endpoint.answer = "no files here"
    assert run(two, out, openai_endpoint, "--attempts", "1", "--limit", "1") == 0
    capsys.readouterr()
    assert main(["synth", "commits", str(two), "--url", "http://127.0.0.1:9/v1", "--model", MODEL,
                 "--out", str(out), "--no-progress"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "is not answering" in err[0]
    assert len(judged(out)) == 1 and read_json(out / "stats.json")["judged"] == 1


# ---- pieces -------------------------------------------------------------------------------------------------------


def test_parse_accepts_names_in_headings_or_info_strings_and_refuses_bad_ones() -> None:
    text = ("**task.toml**\n```toml\nname = 'x'\n```\n\nThe slow one, kernel.c:\n```c\nint f;\n```\n"
            "```c title=\"fast.c\"\nint g;\n```\n")
    assert parse_answer(text) == {"task.toml": "name = 'x'\n", "kernel.c": "int f;\n", "fast.c": "int g;\n"}
    with pytest.raises(AttemptFailed) as unsafe:
        parse_answer("### ../../evil.c\n```c\nint x;\n```\n### task.toml\n```\n```\n")
    assert unsafe.value.outcome == Outcome.UNSAFE
    with pytest.raises(AttemptFailed) as cut:
        parse_answer("### task.toml\n```toml\nname = 'x'\n")
    assert cut.value.outcome == Outcome.UNPARSABLE and "ends inside a code block" in cut.value.reason
    with pytest.raises(AttemptFailed) as twice:
        parse_answer("### task.toml\n```\n```\n### task.toml\n```\n```\n")
    assert "given twice" in twice.value.reason
    with pytest.raises(AttemptFailed) as script:
        parse_answer("### run.sh\n```\nrm -rf /\n```\n")
    assert script.value.outcome == Outcome.UNSAFE


@pytest.mark.parametrize(("change", "outcome", "words"), [
    (('compiler = "gcc"', 'compiler = "sh"'), Outcome.UNSAFE, "compiler 'sh' is not allowed"),
    (('"-g"]', '"-g", "-wrapper", "sh,-c"]'), Outcome.UNSAFE, "-wrapper"),
    (('target = "cpu"', 'target = "cuda"'), Outcome.INVALID_TASK, "the commit's is 'cpu'"),
    (('reference = "fast.c"\n', ""), Outcome.INVALID_TASK, "names no reference"),
    (("[[outputs]]", "[[outputz]]"), Outcome.INVALID_TASK, "invalid task"),
], ids=["compiler", "wrapper-flag", "target", "no-reference", "bad-manifest"])
def test_generated_manifests_are_held_to_the_policy(tmp_path: Path, change: tuple[str, str], outcome: Outcome,
                                                    words: str) -> None:
    files = {**GOOD_FILES, "task.toml": TASK_TOML.replace(*change)}
    directory = write_task_files(tmp_path / "task", files)
    with pytest.raises(AttemptFailed) as failed:
        load_generated_task(directory, files, "cpu")
    assert failed.value.outcome == outcome and words in failed.value.reason


def test_a_valid_manifest_loads_with_an_unnamed_bottleneck_and_capped_trials(tmp_path: Path) -> None:
    files = {**GOOD_FILES, "task.toml": TASK_TOML.replace("trials = 10", "trials = 1000000\ntimeout_s = 86400")}
    task = load_generated_task(write_task_files(tmp_path / "task", files), files, "cpu")
    assert task.reference == "fast.c" and task.bottleneck == "unnamed" and task.pattern is None
    assert task.validate.trials == 100 and task.validate.timeout_s == 120.0 and task.validate.rounds == 3


def test_selection_limit_and_prompt(tmp_path: Path) -> None:
    config = SynthCommitsConfig(pairs=tmp_path, url="http://x", model="m", targets=["cpu,cuda"], limit=1)
    config.validate()
    rows = [mined_row(), mined_row(target="cuda"), mined_row(category="none")]
    chosen, skipped = select_pairs(rows, config)
    assert len(chosen) == 1 and skipped == {"not_perf": 1, "over_limit": 1}
    example = Path(__file__).resolve().parents[2] / "examples" / "tasks" / "cpu" / "matmul_loop_order"
    messages = build_messages(mined_row(), example, "FORMAT", [("old answer", "build_failed: x")])
    assert [m["role"] for m in messages] == ["system", "user", "assistant", "user"]
    assert "### harness.c" in messages[1]["content"] and "build_failed: x" in messages[3]["content"]
