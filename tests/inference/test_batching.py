"""Several runs' requests answered in one batch: Shared (the engine lent to runs in threads: iterate --jobs, eval
--parallel-runs) gathers the requests that wait for the engine, and the transformers backend answers a batch in
one generate() call, its prompts left-padded to one width. A batch must give each request what it would get alone
(greedy), keep each request's own answer format and budget, and give each thread its own answers or error."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from inference.backends import Backend, Request, Shared, make_backend
from perfforge.errors import BackendError
from perfforge.llm_client import Completion
from perfforge.prompt import parse_answer

SYSTEM = {"role": "system", "content": "You optimise kernels."}
PROMPTS = ["Make it faster.", "Make this loop faster: for (i = 0; i < n; i++) s += a[i] * b[i];",
           "Unroll it."]  # three prompt lengths: the shorter ones are padded in a batch


def _request(text: str, **settings: object) -> Request:
    values: dict = {"n": 1, "max_tokens": 12, "temperature": 0.0, **settings}
    return Request([SYSTEM, {"role": "user", "content": text}], **values)


def test_a_batch_gives_each_request_what_it_gets_alone(tiny_model: Path) -> None:
    """Greedy answers of three prompts of different lengths, alone and in one batch (one with two candidates):
    the same text, token count and prompt length. Padding on the wrong side, or padded positions not masked,
    changes what the shorter prompts' rows generate."""
    backend = make_backend("transformers", str(tiny_model))
    requests = [_request(PROMPTS[0], n=2), _request(PROMPTS[1], max_tokens=16), _request(PROMPTS[2])]
    alone = [backend.generate_many([r])[0] for r in requests]
    together = backend.generate_many(requests)
    assert [len(c) for c in together] == [2, 1, 1]
    assert len({c.prompt_tokens for c in together[:2] for c in c}) == 2  # the prompts' own lengths, not the padding
    for one, batched in zip(alone, together, strict=True):
        assert [(c.text, c.completion_tokens, c.prompt_tokens, c.finish_reason) for c in batched] == \
            [(c.text, c.completion_tokens, c.prompt_tokens, c.finish_reason) for c in one]


def test_each_request_of_a_batch_keeps_its_format_and_budget(tiny_model: Path) -> None:
    """One batch mixing a constrained request of a small budget, a free one and a constrained one of a larger
    budget, sampled: the constrained answers parse within their own budgets (the closing fence forced at 24 tokens
    while the batch runs on to 120), the free one is cut at its 40 (the random model writes no format)."""
    backend = make_backend("transformers", str(tiny_model))
    short, free, long = backend.generate_many([
        _request(PROMPTS[0], n=2, max_tokens=24, temperature=1.0, seed=3, fence="c"),
        _request(PROMPTS[1], max_tokens=40, temperature=1.0),
        _request(PROMPTS[2], max_tokens=120, temperature=1.0, fence="c")])
    for completion in [*short, *long]:
        answer = parse_answer(completion.text)
        assert answer.code and not answer.problem, completion.text
    assert all(c.completion_tokens <= 24 for c in short) and long[0].completion_tokens <= 120
    assert free[0].completion_tokens <= 40 and parse_answer(free[0].text).problem


class _Engine(Backend):
    """Answers each request with its own prompt; the first batch waits for `release` (so the others queue)."""

    name = "test-batching-engine"

    def __init__(self, fail: bool = False) -> None:
        super().__init__("engine")
        self.fail, self.entered, self.release = fail, threading.Event(), threading.Event()
        self.batches: list[list[str]] = []

    def generate(self, messages: list[dict[str, str]], *, n: int, max_tokens: int, temperature: float,
                 seed: int | None = None, fence: str | None = None) -> list[Completion]:
        raise AssertionError("Shared asks for batches")

    def generate_many(self, requests: list[Request]) -> list[list[Completion]]:
        self.batches.append([r.messages[-1]["content"] for r in requests])
        self.entered.set()
        assert self.release.wait(30)
        if self.fail:
            raise RuntimeError("CUDA out of memory")
        return [[Completion(r.messages[-1]["content"], "stop", 1, 1)] * r.n for r in requests]


def _ask(shared: Shared, text: str, answers: dict[str, object]) -> threading.Thread:
    def ask() -> None:
        try:
            answers[text] = [c.text for c in shared.generate([{"role": "user", "content": text}], n=2,
                                                             max_tokens=8, temperature=1.0)]
        except Exception as error:  # noqa: BLE001 (what the thread got is the test's to check)
            answers[text] = error

    thread = threading.Thread(target=ask)
    thread.start()
    return thread


def _queue_behind_a_running_batch(engine: _Engine) -> tuple[dict[str, object], list[threading.Thread]]:
    shared, answers = Shared(engine), {}
    threads = [_ask(shared, "first", answers)]
    assert engine.entered.wait(30)  # "first" is being generated: the others must wait
    threads += [_ask(shared, f"run {i}", answers) for i in range(4)]
    deadline = time.monotonic() + 30
    while len(shared.waiting) < 4 and time.monotonic() < deadline:
        time.sleep(0.01)
    engine.release.set()
    for thread in threads:
        thread.join(30)
    return answers, threads


def test_requests_that_wait_for_the_engine_go_as_one_batch() -> None:
    engine = _Engine()
    answers, _ = _queue_behind_a_running_batch(engine)
    assert [len(b) for b in engine.batches] == [1, 4]  # one engine call for the four that waited, not four
    assert answers == {text: [text, text] for text in ["first", *(f"run {i}" for i in range(4))]}


def test_an_engine_error_reaches_every_request_of_its_batch() -> None:
    """An out-of-memory error (or any) in a batch is raised in each waiting thread, none left hanging."""
    engine = _Engine(fail=True)
    answers, threads = _queue_behind_a_running_batch(engine)
    assert not any(thread.is_alive() for thread in threads)
    assert len(answers) == 5 and all(isinstance(a, RuntimeError) for a in answers.values())


@pytest.mark.parametrize("gather_s", [0.0, 0.5])
def test_a_lone_request_is_answered(gather_s: float) -> None:
    engine = _Engine()
    engine.release.set()
    assert [c.text for c in Shared(engine, gather_s=gather_s).generate(
        [{"role": "user", "content": "x"}], n=1, max_tokens=4, temperature=0.0)] == ["x"]
    assert engine.batches == [["x"]]


def test_an_engine_that_answers_part_of_a_batch_fails_every_request() -> None:
    """A faulty engine returned fewer answer lists than requests: the leader raised on its own, and the other
    requests of the batch, no longer waiting nor answered, led empty batches and returned no candidates, silently.
    Every request of that batch must end with the error."""

    class Short(_Engine):
        def generate_many(self, requests: list[Request]) -> list[list[Completion]]:
            return super().generate_many(requests)[:1]

    engine = Short()
    answers, threads = _queue_behind_a_running_batch(engine)
    assert not any(thread.is_alive() for thread in threads)
    assert answers["first"] == ["first", "first"]  # alone in its batch: answered
    assert all(isinstance(answers[f"run {i}"], BackendError) for i in range(4)), answers
    assert [len(b) for b in engine.batches] == [1, 4]  # no empty batch led by a stranded request


def test_a_model_on_the_gpu_generates_in_the_devices_turn(tiny_model: Path) -> None:
    """iterate --jobs on a GPU machine: the in-process model generates while other threads' GPU verdicts time
    kernels; their rules would read the model's kernels as a candidate's hidden work and reject a fair candidate.
    On the GPU a generation waits for the device's turn (the lock GPU verdicts hold); on the CPU it does not."""
    from profiling.device_turns import GPU_TURNS

    backend = make_backend("transformers", str(tiny_model))
    assert backend._device_turn() is not GPU_TURNS  # on the CPU: nothing to wait for
    backend.device = "cuda"  # as on a GPU machine (the turn is taken before any tensor moves)
    entered = threading.Event()

    def generate() -> None:
        with backend._device_turn():
            entered.set()

    with GPU_TURNS:  # a GPU verdict is timing
        waiting = threading.Thread(target=generate)
        waiting.start()
        assert not entered.wait(0.5)
    assert entered.wait(10)
    waiting.join()
