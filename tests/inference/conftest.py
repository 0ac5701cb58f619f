"""Fixtures of the optimisation-loop tests: a scripted OpenAI-compatible endpoint and a small real CPU task.

The endpoint is a real HTTP server (http.server on 127.0.0.1, port 0, in a thread) that answers
POST /v1/chat/completions from a queue of scripted rounds: each request takes the next list of answer texts and
returns them as its choices (as many as the list holds, whatever `n` asked for), with a usage dict. Every request
body is recorded. A request for another model gets HTTP 404 with an OpenAI-style error, as vLLM answers; a request
after the script ran out gets HTTP 400, so that a test that asks the model once too often fails at once.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

import perfforge.llm_client
from perfforge.io import read_json  # noqa: F401 (re-exported for the tests)
from perfforge.records import Diagnosis, Profile, Timing
from tests.conftest import invoke, json_post_server  # noqa: F401 (invoke is re-exported)
from tests.profiling.conftest import FAST_C, SLOW_C, TASK_TOML, write_task

# The task's hang limit: small, so that a candidate that never returns costs seconds, yet well above what a correct
# check run takes (under 0.1 s at n=1536 on an idle machine; seconds when other jobs load the two cores and the
# sandbox's network namespaces). validate gives a candidate this limit before the oracle's duration is known.
TASK_TIMEOUT_S = 10
FAST_TASK_TOML = TASK_TOML.replace("timeout_s = 30", f"timeout_s = {TASK_TIMEOUT_S}")
assert FAST_TASK_TOML != TASK_TOML

# An answer is a text, or (text, finish_reason).
ScriptedAnswer = str | tuple[str, str]


@dataclass
class ScriptedEndpoint:
    """The scripted server's state: what it serves, what it still has to answer, what it received."""

    base_url: str = ""
    model: str = "scripted-model"
    rounds: list[list[ScriptedAnswer]] = field(default_factory=list)
    requests: list[dict[str, Any]] = field(default_factory=list)  # every POST body, in order (with "path")
    lock: threading.Lock = field(default_factory=threading.Lock)

    def script(self, *rounds: Sequence[ScriptedAnswer]) -> None:
        """Queue the answers of the next requests: one list of answers per request."""
        with self.lock:
            self.rounds.extend(list(answers) for answers in rounds)

    @property
    def completions(self) -> list[dict[str, Any]]:
        """The chat-completion requests for the served model (the ones that consumed a scripted round)."""
        return [r for r in self.requests if r["path"] == "/v1/chat/completions" and r.get("model") == self.model]

    def reply(self, path: str, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        with self.lock:
            self.requests.append({"path": path, **body})
            if path != "/v1/chat/completions":
                return 404, {"error": {"message": f"no route {path}", "type": "NotFoundError", "code": 404}}
            if body.get("model") != self.model:
                return 404, {"error": {"message": f"The model `{body.get('model')}` does not exist.",
                                       "type": "NotFoundError", "param": None, "code": 404}}
            if not self.rounds:
                return 400, {"error": {"message": "scripted endpoint: no scripted round left for this request",
                                       "type": "BadRequestError", "code": 400}}
            answers = self.rounds.pop(0)
        choices = []
        for index, answer in enumerate(answers):
            text, finish = (answer, "stop") if isinstance(answer, str) else answer
            choices.append({"index": index, "message": {"role": "assistant", "content": text},
                            "finish_reason": finish})
        prompt_tokens = sum(len(m.get("content", "")) for m in body.get("messages", [])) // 4
        completion_tokens = sum(len(c["message"]["content"]) // 4 for c in choices)
        return 200, {"id": f"chatcmpl-{len(self.requests)}", "object": "chat.completion", "model": self.model,
                     "choices": choices, "usage": {"prompt_tokens": prompt_tokens,
                                                   "completion_tokens": completion_tokens,
                                                   "total_tokens": prompt_tokens + completion_tokens}}


@contextlib.contextmanager
def serve_scripted(model: str = "scripted-model") -> Iterator[ScriptedEndpoint]:
    """A running scripted endpoint (the fixtures below wrap this for a test or a module)."""
    state = ScriptedEndpoint(model=model)
    with json_post_server(lambda path, body, headers: state.reply(path, body)) as url:
        state.base_url = url
        yield state


@pytest.fixture
def scripted_endpoint() -> Iterator[ScriptedEndpoint]:
    with serve_scripted() as endpoint:
        yield endpoint


@pytest.fixture(scope="module")
def module_endpoint() -> Iterator[ScriptedEndpoint]:
    """One scripted endpoint shared by a module's tests (for a pipeline run made once per module)."""
    with serve_scripted() as endpoint:
        yield endpoint


@pytest.fixture
def no_retry_wait(monkeypatch: pytest.MonkeyPatch) -> None:
    """A failing endpoint is reported after one try instead of after 4 s of back-off (opt-in: tests against a real
    server, which may answer 503 while loading, keep the retries)."""
    monkeypatch.setattr(perfforge.llm_client, "RETRY_DELAYS_S", ())


def write_cpu_task(root: Path, *, kernel: str = SLOW_C, fast: str = FAST_C) -> Path:
    """The matvec task of tests/profiling (column walk; the reference walks by row), hang limit TASK_TIMEOUT_S."""
    return write_task(root, kernel=kernel, fast=fast, toml=FAST_TASK_TOML)


@pytest.fixture
def cpu_task(tmp_path: Path) -> Path:
    return write_cpu_task(tmp_path / "task")


def optimize_argv(task: Path, out: Path, endpoint: ScriptedEndpoint, *extra: str, candidates: int = 1,
                  rounds: int = 1, model: str | None = None) -> list[str]:
    return ["optimize", str(task), "--url", endpoint.base_url, "--model", model or endpoint.model,
            "--candidates", str(candidates), "--rounds", str(rounds), "--out", str(out), *extra]


def hand_profile() -> Profile:
    """A small original's profile, as the loop stores it in out/original/profile.json."""
    return Profile(machine="test machine", tool_versions="gcc test",
                   timing=Timing(median_ms=6.5, p10_ms=6.3, p90_ms=7.0, trials=7, method="monotonic_clock"),
                   diagnoses=[Diagnosis(name="cache_miss_bound", severity=0.52,
                                        evidence=["D1_miss_rate = 25 % (>= 10) at line 5"],
                                        hint="walk memory in the order it is laid out")],
                   target="cpu", kernel="matvec", source_file="kernel.c")
