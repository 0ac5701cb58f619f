"""mining/judge.py: parsing the judge's JSON, applying it over the rules, and asking a real local HTTP endpoint."""

from __future__ import annotations

import socket
from collections import Counter

import pytest

import perfforge.llm_client
from mining.classify import PERF_THRESHOLD, Classification, classify_commit
from mining.config import JUDGE_DIFF_CHARS, MineConfig
from mining.gitlog import FileDiff
from mining.judge import (
    JUDGED_NOT_PERF_SCORE,
    JUDGED_PERF_SCORE,
    MAX_MESSAGE_CHARS,
    Judgement,
    apply_judgement,
    classify_with_judge,
    judge_answer,
    judge_client,
    judge_commit,
    judge_prompt,
    parse_judgement,
)
from perfforge.errors import BackendError
from perfforge.llm_client import ChatClient
from perfforge.records import Category, FoundBy
from tests.conftest import OpenAIEndpoint

MODEL = "judge-7b"
DIFF = FileDiff(path="src/sum.cu", status="modified", added_lines=["v += __shfl_down_sync(0xffffffff, v, 16);"],
                removed_lines=["atomicAdd(out, x[i]);"], patch="@@ -5 +5 @@\n-atomicAdd(out, x[i]);\n+v += ...")


# ---- parsing ------------------------------------------------------------------------------------------------------


def test_parse_valid_json() -> None:
    judgement = parse_judgement('{"is_perf": true, "category": "atomics", "reason": "warp shuffles replace atomics"}')
    assert judgement == Judgement(True, Category.ATOMICS, "warp shuffles replace atomics")


def test_parse_json_inside_prose_and_code_fences() -> None:
    text = ('Sure. Here is my answer:\n```json\n{\n  "is_perf": false,\n  "category": "NONE",\n'
            '  "reason": "a bug fix"\n}\n```\nLet me know if you need more.')
    assert parse_judgement(text) == Judgement(False, Category.NONE, "a bug fix")


def test_parse_fills_missing_category_and_reason_and_cuts_long_reasons() -> None:
    assert parse_judgement('{"is_perf": true}') == Judgement(True, Category.OTHER, "")
    assert len(parse_judgement('{"is_perf": true, "reason": "' + "x" * 500 + '"}').reason) == 200


@pytest.mark.parametrize("text", [
    "I think this is a performance change.",  # no JSON at all
    '{"is_perf": true, "category": "atomics",}',  # trailing comma
    "{is_perf: true}",  # unquoted key
    '{"category": "atomics", "reason": "no decision"}',  # is_perf missing
    "",
], ids=["prose", "trailing-comma", "unquoted", "no-is-perf", "empty"])
def test_parse_invalid_json_is_none(text: str) -> None:
    assert parse_judgement(text) is None


def test_parse_unknown_category_is_none() -> None:
    assert parse_judgement('{"is_perf": true, "category": "magic", "reason": "?"}') is None


def test_parse_is_perf_given_as_a_string_is_not_a_yes() -> None:
    """bool("false") is True: a string answer must not turn into a yes."""
    judgement = parse_judgement('{"is_perf": "false", "category": "none", "reason": "a refactor"}')
    assert judgement is None or judgement.is_perf is False


# ---- applying -----------------------------------------------------------------------------------------------------


RULES = Classification(perf_score=0.45, category=Category.NONE, evidence=["diff_constructs (+0.6): atomics (x)"])


def test_judged_yes_lands_above_the_threshold_with_its_category() -> None:
    judged = apply_judgement(RULES, Judgement(True, Category.ATOMICS, "warp reduction"))
    assert judged.perf_score == JUDGED_PERF_SCORE >= PERF_THRESHOLD
    assert judged.is_perf and judged.category == Category.ATOMICS
    assert judged.evidence == ["llm_judge: perf: warp reduction", *RULES.evidence]


def test_judged_yes_without_a_category_is_other() -> None:
    judged = apply_judgement(RULES, Judgement(True, Category.NONE, "faster"))
    assert judged.category == Category.OTHER


def test_judged_no_lands_below_the_threshold() -> None:
    rules = Classification(perf_score=0.6, category=Category.TILING, evidence=["message_technique_generic (+0.8): x"])
    judged = apply_judgement(rules, Judgement(False, Category.TILING, "renames a tile variable"))
    assert judged.perf_score == JUDGED_NOT_PERF_SCORE < PERF_THRESHOLD
    assert not judged.is_perf and judged.category == Category.NONE
    assert judged.evidence == ["llm_judge: not perf: renames a tile variable", *rules.evidence]


def test_prompt_holds_message_and_diff_cut_to_the_limit() -> None:
    huge = FileDiff(path="gen.cu", status="modified", patch="+x\n" * 10_000)
    system, user = judge_prompt("speed up sum", [DIFF, huge])
    assert system["role"] == "system" and '"is_perf"' in system["content"] and "atomics" in system["content"]
    assert user["content"].startswith("Commit message:\nspeed up sum\n\nDiff:\n--- src/sum.cu\n@@ -5 +5 @@")
    assert len(user["content"]) <= len("Commit message:\nspeed up sum\n\nDiff:\n") + JUDGE_DIFF_CHARS


# ---- a real endpoint ----------------------------------------------------------------------------------------------


@pytest.fixture
def endpoint(openai_endpoint: OpenAIEndpoint) -> OpenAIEndpoint:
    openai_endpoint.model = MODEL
    openai_endpoint.answer = '{"is_perf": true, "category": "atomics", "reason": "shuffles instead of atomics"}'
    return openai_endpoint


@pytest.fixture
def no_retry_delay(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(perfforge.llm_client, "RETRY_DELAYS_S", (0.0, 0.0))


def test_judge_commit_asks_the_endpoint_and_parses_its_answer(endpoint: OpenAIEndpoint) -> None:
    judgement = judge_commit(ChatClient(endpoint.base_url, MODEL, timeout_s=5.0), "rework reduce", [DIFF])
    assert judgement == Judgement(True, Category.ATOMICS, "shuffles instead of atomics")
    [request] = endpoint.requests
    assert request["path"] == "/v1/chat/completions" and request["auth"] == "Bearer EMPTY"
    assert (request["model"], request["max_tokens"], request["temperature"], request["n"]) == (MODEL, 200, 0.0, 1)
    assert [m["role"] for m in request["messages"]] == ["system", "user"]
    assert "rework reduce" in request["messages"][1]["content"]


def test_judge_commit_with_an_unparsable_answer_is_none(endpoint: OpenAIEndpoint) -> None:
    endpoint.answer = "It is hard to say without benchmarks."
    assert judge_commit(ChatClient(endpoint.base_url, MODEL, timeout_s=5.0), "rework reduce", [DIFF]) is None


def test_unknown_model_is_a_backend_error_naming_the_model(endpoint: OpenAIEndpoint, no_retry_delay: None) -> None:
    client = ChatClient(endpoint.base_url, "no-such-model", timeout_s=5.0)
    with pytest.raises(BackendError, match=r"does not serve model 'no-such-model' \(HTTP 404"):
        judge_commit(client, "rework reduce", [DIFF])
    assert len(endpoint.requests) == 1  # a 404 is not retried


def test_nothing_listening_is_a_backend_error(no_retry_delay: None) -> None:
    with socket.socket() as probe:  # a port that was free a moment ago, now closed again
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    client = ChatClient(f"http://127.0.0.1:{port}/v1", MODEL, timeout_s=5.0)
    with pytest.raises(BackendError, match=rf"http://127.0.0.1:{port}/v1/chat/completions is not answering"):
        judge_commit(client, "rework reduce", [DIFF])


def test_prompt_cut_to_a_smaller_limit_for_a_small_context() -> None:
    huge = FileDiff(path="gen.cu", status="modified", patch="+x\n" * 10_000)
    _, user = judge_prompt("speed up sum", [huge], max_diff_chars=500)
    assert len(user["content"]) == len("Commit message:\nspeed up sum\n\nDiff:\n") + 500


def test_the_answer_a_judge_learns_parses_back() -> None:
    answer = judge_answer(True, Category.TILING, "larger tiles in the GEMM")
    assert parse_judgement(answer) == Judgement(True, Category.TILING, "larger tiles in the GEMM")


def test_classify_with_judge_asks_only_in_the_band(endpoint: OpenAIEndpoint) -> None:
    config = MineConfig(judge_url=endpoint.base_url, judge_model=MODEL, judge_diff_chars=40)
    client, counts = ChatClient(endpoint.base_url, MODEL, timeout_s=5.0), Counter()
    confident, found_by = classify_with_judge("Update README", [], config, client, counts)
    assert confident.perf_score < config.judge_band_low and found_by is FoundBy.MINED_RULES and not counts
    shuffle = "v += __shfl_down_sync(0xffffffff, v, 16);"
    uncertain = FileDiff(path="sum.cu", status="modified", added_lines=[shuffle], removed_lines=["v += x;"],
                         hunks=[(["v += x;"], [shuffle])], patch=f"@@ -5 +5 @@\n-v += x;\n+{shuffle}\n" * 10)
    rules = classify_commit("rework sum\n\nwith a block reduction", [uncertain])
    assert config.judge_band_low <= rules.perf_score <= config.judge_band_high
    judged, found_by = classify_with_judge("rework sum\n\nwith a block reduction", [uncertain], config, client, counts)
    assert judged.is_perf and judged.category == Category.ATOMICS and found_by is FoundBy.MINED_LLM_JUDGE
    assert counts == Counter(asked=1, answered=1) + (Counter(changed_decision=1) if not rules.is_perf else Counter())
    [request] = endpoint.requests
    assert request["messages"][1]["content"].endswith("Diff:\n" + ("--- sum.cu\n" + uncertain.patch)[:40])


def test_a_huge_message_is_cut_too() -> None:
    _, user = judge_prompt("sync upstream\n" + "* a listed commit\n" * 5000, [DIFF])
    message = user["content"].removeprefix("Commit message:\n").partition("\n\nDiff:\n")[0]
    assert len(message) == MAX_MESSAGE_CHARS and message.startswith("sync upstream\n")


def test_judge_client_is_none_without_a_url_and_checks_the_endpoint_when_asked(endpoint: OpenAIEndpoint,
                                                                               no_retry_delay: None) -> None:
    assert judge_client(MineConfig()) is None
    client = judge_client(MineConfig(judge_url=endpoint.base_url, judge_model=MODEL))
    assert client is not None and not endpoint.requests  # made, not yet asked
    judge_client(MineConfig(judge_url=endpoint.base_url, judge_model=MODEL), check=True)
    assert len(endpoint.requests) == 1
    with pytest.raises(BackendError, match="does not serve model 'no-such-model'"):
        judge_client(MineConfig(judge_url=endpoint.base_url, judge_model="no-such-model"), check=True)
