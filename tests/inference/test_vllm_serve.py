"""`perfforge serve` for real: vLLM's OpenAI server on a tiny random chat model built here (tiny_model.py), with a
LoRA adapter trained by `perfforge train` served beside it and loaded again at run time, and `perfforge optimize`
driven against it end to end.

One server serves every test of the module (a start costs ~30 s and ~4 GB on the CPU). Nothing is downloaded.
"""

from __future__ import annotations

import importlib.util
import json
import socket
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from inference.config import ServeConfig
from inference.serve import Server, load_adapter
from perfforge.cli import main
from perfforge.io import read_json
from perfforge.llm_client import ChatClient
from tests.profiling.conftest import write_task
from tests.training.conftest import write_pairs

pytestmark = pytest.mark.skipif(importlib.util.find_spec("vllm") is None,
                                reason="vllm is not installed: the OpenAI server under test is vLLM's")

NAME = "tiny"  # the base model's served name
ADAPTER = "tiny-lora"  # the adapter served from the start
LATE = "late"  # the same adapter, loaded while the server runs
GREEDY_TOKENS = 16
LORA_RANK = 8  # the adapter's rank, and the server's max_lora_rank
MESSAGES = [{"role": "system", "content": "You are a performance engineer."},
            {"role": "user", "content": "Make this loop faster:\n```c\nfor (int j = 0; j < n; j++) s += a[j];\n```"}]
# Every status an attempt may carry: the verdict's (perfforge.verdict.Status) or the loop's "unparsable".
STATUSES = {"improved", "no_change", "slower", "needs_review", "correct", "incorrect", "crashed", "timeout",
            "build_failed", "rejected", "task_invalid", "unparsable"}


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture(scope="module")
def tiny_lora(tiny_model: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A LoRA adapter (r=8 on q_proj and v_proj, within the server's max_lora_rank) trained by `perfforge train` on
    the hand-written pairs of tests/training: a few SFT steps at a learning rate high enough that the adapter
    changes the greedy output (peft starts B at zero; a gentle run would leave the answer as the base's)."""
    root = tmp_path_factory.mktemp("tiny-lora")
    pairs = write_pairs(root / "data" / "pairs.parquet")
    out = root / "train"
    code = main(["train", str(pairs), "--base-model", str(tiny_model), "--out", str(out), "--max-steps", "6",
                 "--batch-size", "2", "--learning-rate", "2e-2", "--max-length", "512", "--lora-r", str(LORA_RANK),
                 "--lora-target-modules", "q_proj,v_proj", "--eval-fraction", "0", "--logging-steps", "3",
                 "--save-steps", "100"])
    assert code == 0
    config = read_json(out / "adapter" / "adapter_config.json")
    assert config["r"] == LORA_RANK and sorted(config["target_modules"]) == ["q_proj", "v_proj"]
    return out / "adapter"


@pytest.fixture(scope="module")
def server(tiny_model: Path, tiny_lora: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """The module's one server: the tiny model, the adapter served beside it, and run-time loading allowed."""
    config = ServeConfig(model=str(tiny_model), served_model_name=NAME, port=free_port(),
                         lora=[f"{ADAPTER}={tiny_lora}"], runtime_lora=True, max_lora_rank=LORA_RANK,
                         max_model_len=1024, dtype="float32", kv_cache_gib=1, startup_timeout_s=300)
    config.validate()
    with pytest.MonkeyPatch.context() as patch:
        # vLLM CPU binds its worker to one core of its choosing (core 0 here, whatever else runs there); a second
        # server or a busy job on that core starves the start-up for minutes. Unbound, one thread: the tiny model
        # needs no more, and the scheduler puts it where there is room.
        patch.setenv("VLLM_CPU_OMP_THREADS_BIND", "nobind")
        patch.setenv("OMP_NUM_THREADS", "1")
        server = Server(config, tmp_path_factory.mktemp("serve") / "vllm.log")
        try:
            server.start()  # the environment is read here
        except BaseException:  # an interrupted start-up leaves the server running otherwise (its own session)
            server.stop()
            raise
    try:
        yield server
    finally:
        server.stop()


def get_json(url: str) -> Any:
    with urllib.request.urlopen(url, timeout=30) as reply:
        return json.loads(reply.read().decode())


def served_models(url: str) -> set[str]:
    return {entry["id"] for entry in get_json(url + "/models")["data"]}


def served_greedy_ids(url: str, model: str, messages: list[dict[str, str]], tokens: int = GREEDY_TOKENS) -> list[int]:
    """The token ids of the server's greedy answer, exactly `tokens` of them (EOS does not stop it)."""
    body = {"model": model, "messages": messages, "max_tokens": tokens, "temperature": 0.0, "ignore_eos": True,
            "logprobs": True, "return_tokens_as_token_ids": True}
    request = urllib.request.Request(url + "/chat/completions", data=json.dumps(body).encode(), method="POST",
                                     headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=120) as reply:
        choice = json.loads(reply.read().decode())["choices"][0]
    return [int(entry["token"].removeprefix("token_id:")) for entry in choice["logprobs"]["content"]]


def hf_greedy_ids(model: Any, tokenizer: Any, messages: list[dict[str, str]], tokens: int = GREEDY_TOKENS) -> list[int]:
    """transformers' greedy continuation of the chat-templated prompt: argmax, token by token, no stop."""
    import torch

    ids = tokenizer.apply_chat_template(messages, add_generation_prompt=True, return_tensors="pt",
                                        return_dict=True)["input_ids"]
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # beside the server's engine on 2 cores (STACK.md)
    try:
        with torch.no_grad():
            for _ in range(tokens):
                following = model(ids).logits[0, -1].argmax().reshape(1, 1)
                ids = torch.cat([ids, following], dim=1)
    finally:
        torch.set_num_threads(threads)
    return ids[0, -tokens:].tolist()


def test_models_lists_the_model_and_the_adapter(server: Server) -> None:
    models = served_models(server.url)
    assert NAME in models and ADAPTER in models
    assert server.name == NAME


def test_one_request_gives_n_completions_with_usage(server: Server) -> None:
    completions = ChatClient(server.url, NAME, timeout_s=120).complete(MESSAGES, max_tokens=12, temperature=0.8,
                                                                       n=3, seed=1)
    assert len(completions) == 3
    for completion in completions:
        assert 0 < completion.completion_tokens <= 12
        assert completion.prompt_tokens > 0
        assert completion.finish_reason in ("stop", "length")
    # The prompt is the chat template's rendering: more tokens than the messages' text alone.
    assert completions[0].prompt_tokens > 10


def test_optimize_against_the_server(server: Server, tmp_path: Path) -> None:
    """The whole loop against a real endpoint: a random model writes garbage, and the loop records it honestly."""
    task = write_task(tmp_path / "task")
    out = tmp_path / "out"
    code = main(["optimize", str(task), "--url", server.url, "--model", NAME, "--candidates", "2", "--rounds", "1",
                 "--max-tokens", "64", "--out", str(out), "--no-profile-candidates"])
    assert code == 0
    report = read_json(out / "report.json")
    attempts = report["attempts"]
    assert len(attempts) == 2
    assert [(a["round"], a["candidate"]) for a in attempts] == [(1, 1), (1, 2)]
    for attempt in attempts:
        assert attempt["status"] in STATUSES
        assert attempt["reason"]  # every verdict says why
        assert 0 < attempt["completion_tokens"] <= 64
        if attempt["status"] == "unparsable":  # expected of a random model: no closed code block
            assert "code block" in attempt["reason"]
    assert report["outcome"] == "no_improvement" and report["best"] is None
    assert sum(report["counts"].values()) == 2
    assert report["model"] == f"openai:{NAME}@{server.url}"
    request = read_json(out / "rounds" / "01" / "request.json")
    assert request["n"] == 2 and request["max_tokens"] == 64
    assert len(read_json(out / "rounds" / "01" / "completions.json")) == 2

    import pyarrow.parquet as pq

    table = pq.read_table(out / "attempts.parquet")
    assert table.num_rows == 2
    assert sorted(table.column("status").to_pylist()) == sorted(a["status"] for a in attempts)
    assert not (out / "patch.diff").exists()


def test_served_adapter_greedy_equals_the_merged_model(server: Server, tiny_model: Path, tiny_lora: Path) -> None:
    import torch
    from peft import PeftModel
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(tiny_model)
    base = AutoModelForCausalLM.from_pretrained(tiny_model, dtype=torch.float32).eval()
    base_ids = hf_greedy_ids(base, tokenizer, MESSAGES)
    merged = PeftModel.from_pretrained(base, tiny_lora).merge_and_unload().eval()
    merged_ids = hf_greedy_ids(merged, tokenizer, MESSAGES)

    served_base = served_greedy_ids(server.url, NAME, MESSAGES)
    served_adapter = served_greedy_ids(server.url, ADAPTER, MESSAGES)
    assert served_base == base_ids  # the server runs the model transformers runs
    assert served_adapter == merged_ids  # and applies the adapter as peft's merge does
    assert served_adapter != served_base  # the adapter changes the output: the comparison above means something


def test_adapter_loaded_at_run_time(server: Server, tiny_lora: Path) -> None:
    assert LATE not in served_models(server.url)
    load_adapter(server.url, LATE, tiny_lora)
    assert LATE in served_models(server.url)
    assert served_greedy_ids(server.url, LATE, MESSAGES) == served_greedy_ids(server.url, ADAPTER, MESSAGES)


def test_sigterm_to_perfforge_serve_stops_vllm_with_it(tiny_model: Path, tmp_path: Path) -> None:
    """`kill` (or timeout, CI cancellation, Slurm) of `perfforge serve` once left vLLM running without a parent:
    three processes and ~4 GB. Killed while vLLM starts, once its engine process exists (the moment most likely to
    leave one behind, and 30 s sooner than waiting for it to serve); its own server, apart from the module's."""
    import signal
    import time

    from tests.conftest import spawn_perfforge

    port = free_port()
    run = spawn_perfforge(["serve", "--model", str(tiny_model), "--port", str(port), "--max-model-len", "512"],
                          tmp_path, env={"VLLM_CPU_OMP_THREADS_BIND": "nobind", "OMP_NUM_THREADS": "1"})
    deadline = time.monotonic() + 240
    while len(run.processes()) < 3 and run.process.poll() is None and time.monotonic() < deadline:
        time.sleep(0.5)  # perfforge, vLLM's API server (in a session of its own) and its engine core
    assert len(run.processes()) >= 3, run.process.communicate()
    run.process.send_signal(signal.SIGTERM)
    _, stderr = run.process.communicate(timeout=60)
    assert run.process.returncode == 130, stderr
    assert stderr.strip().splitlines()[-1] == "interrupted", stderr
    assert run.left_behind() == []


def test_the_served_model_keeps_the_answer_format_through_structured_outputs(server: Server) -> None:
    """vLLM's structured outputs with inference.constrained.answer_regex: the tiny random model, which never writes
    the format of its own, answers in it; a closed block parses. The budget is not enforced by the server: an
    answer cut by max_tokens may leave its block open (the in-process backend closes it in time)."""
    import re

    from inference.backends import OpenAIBackend
    from inference.constrained import answer_regex
    from perfforge.prompt import parse_answer

    backend = OpenAIBackend(NAME, url=server.url, timeout_s=120, structured=True)
    assert backend.constrains()
    completions = backend.generate(MESSAGES, n=4, max_tokens=300, temperature=1.0, seed=2, fence="c")
    for completion in completions:
        assert completion.text.startswith("Hypothesis:"), completion.text[:200]
        if completion.finish_reason == "stop":
            assert re.fullmatch(answer_regex("c"), completion.text), completion.text
            assert parse_answer(completion.text, language="c").ok
    free = OpenAIBackend(NAME, url=server.url, timeout_s=120).generate(MESSAGES, n=4, max_tokens=60, temperature=1.0,
                                                                      seed=2, fence="c")
    assert not all(c.text.startswith("Hypothesis:") for c in free)  # not structured: the model's own noise
