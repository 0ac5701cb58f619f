"""Several endpoints of one model used as one (perfforge/llm_pool.py), against real local HTTP servers."""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

from inference.backends import OpenAIBackend
from perfforge import llm_client
from perfforge.errors import BackendError
from perfforge.llm_pool import SEED_STRIDE, ChatPool, shares, split_urls
from tests.conftest import json_post_server

MODEL = "pool-model"
MESSAGES = [{"role": "user", "content": "make it faster"}]


class Server:
    """A chat server answering each request with n choices naming itself and the request's seed, after a delay."""

    def __init__(self, name: str, delay_s: float = 0.0, model: str = MODEL) -> None:
        self.name, self.delay_s, self.model = name, delay_s, model
        self.requests: list[dict[str, Any]] = []
        self.lock = threading.Lock()

    def reply(self, path: str, body: dict[str, Any], headers: Any) -> tuple[int, dict[str, Any]]:
        with self.lock:
            self.requests.append(body)
        if body.get("model") != self.model:
            return 404, {"error": {"message": f"The model `{body.get('model')}` does not exist."}}
        time.sleep(self.delay_s)
        choices = [{"index": i, "message": {"role": "assistant", "content": f"{self.name} seed {body.get('seed')}"},
                    "finish_reason": "stop"} for i in range(body["n"])]
        return 200, {"choices": choices, "usage": {"prompt_tokens": 3, "completion_tokens": 2 * body["n"]}}


@contextlib.contextmanager
def servers(*made: Server) -> Iterator[list[str]]:
    with contextlib.ExitStack() as stack:
        yield [stack.enter_context(json_post_server(server.reply)) for server in made]


def dead_url() -> str:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{probe.getsockname()[1]}/v1"  # nothing listens once the probe is closed


@pytest.fixture(autouse=True)
def no_retry_waits(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(llm_client, "RETRY_DELAYS_S", (0.0,))


def test_a_request_is_shared_among_the_servers_and_its_parts_run_at_once() -> None:
    a, b = Server("a", delay_s=0.4), Server("b", delay_s=0.4)
    with servers(a, b) as urls:
        started = time.monotonic()
        completions = ChatPool(urls, MODEL).complete(MESSAGES, n=5, seed=7)
        elapsed_s = time.monotonic() - started
    assert [r["n"] for r in a.requests] == [3] and [r["n"] for r in b.requests] == [2]
    assert [c.text for c in completions] == [f"a seed {7 + SEED_STRIDE}"] * 3 + [f"b seed {7 + 2 * SEED_STRIDE}"] * 2
    assert elapsed_s < 0.75  # both parts in flight together: one server's delay, not two
    assert ChatPool(urls, MODEL).complete(MESSAGES, n=0) == []


def test_concurrent_callers_go_to_the_least_loaded_server() -> None:
    a, b = Server("a", delay_s=0.3), Server("b", delay_s=0.3)
    with servers(a, b) as urls:
        pool = ChatPool(urls, MODEL)
        results: list[str] = []
        callers = [threading.Thread(target=lambda: results.extend(c.text.split()[0] for c in pool.complete(
            MESSAGES, n=1))) for _ in range(2)]
        for caller in callers:
            caller.start()
            time.sleep(0.05)  # the second caller asks while the first one's request is in flight
        for caller in callers:
            caller.join()
    assert sorted(results) == ["a", "b"]


def test_a_server_that_stops_answering_hands_its_part_to_the_others() -> None:
    a = Server("a")
    with servers(a) as (url,):
        pool = ChatPool([dead_url(), url], MODEL)
        first = pool.complete(MESSAGES, n=4)
        second = pool.complete(MESSAGES, n=2)
    assert [c.text.split()[0] for c in first] == ["a"] * 4 and len(second) == 2
    assert [r["n"] for r in a.requests] == [2, 2, 2]  # its own part, then the dead one's, then all of the next


def test_when_every_server_is_down_the_request_fails_with_one_line() -> None:
    with pytest.raises(BackendError, match=r"none of the 2 endpoints of 'pool-model' is answering"):
        ChatPool([dead_url(), dead_url()], MODEL).complete(MESSAGES, n=2)


def test_a_server_that_does_not_serve_the_model_is_a_configuration_error_not_a_failover() -> None:
    with servers(Server("a"), Server("b", model="other")) as urls, \
            pytest.raises(BackendError, match="does not serve model 'pool-model'"):
        ChatPool(urls, MODEL).complete(MESSAGES, n=2)


def test_the_openai_backend_takes_several_comma_separated_servers() -> None:
    a, b = Server("a"), Server("b")
    with servers(a, b) as urls:
        backend = OpenAIBackend(MODEL, url=",".join(urls))
        completions = backend.generate(MESSAGES, n=4, max_tokens=8, temperature=0.8, seed=1)
    assert len(completions) == 4 and len(a.requests) == len(b.requests) == 1
    assert backend.describe() == f"openai:{MODEL}@{urls[0]},{urls[1]}"


def test_shares_are_even_and_the_remainder_goes_to_the_least_loaded() -> None:
    assert shares(5, [0, 0]) == [3, 2]
    assert shares(5, [1, 0]) == [2, 3]
    assert shares(1, [0, 0, 0]) == [1, 0, 0]
    assert shares(4, [2, 2]) == [2, 2]


@pytest.mark.parametrize(("text", "message"), [(" , ", "names no endpoint"),
                                                ("http://a/v1,http://a/v1", "names an endpoint twice")])
def test_bad_url_lists_are_one_line(text: str, message: str) -> None:
    with pytest.raises(BackendError, match=message):
        split_urls(text)

