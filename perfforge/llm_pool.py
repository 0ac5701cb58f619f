"""Several OpenAI-compatible endpoints serving one model, used as one (issue 23: one server per GPU, or per
tensor-parallel group, behind the loop and eval).

A request for n candidates is shared out: each endpoint that is up gets a part (as even as possible, the larger
parts to the endpoints with the fewest requests in flight from this process, counted when assigned, so callers in
several threads spread over the servers too), the parts run at once, and the completions come back in part order.
Standard library only, like perfforge.llm_client.

Seeds: part i of a request seeded s is seeded s + i * SEED_STRIDE, so every part draws differently. The parts'
sizes depend on n and the number of servers up only, so a run is reproducible for a given list of servers whatever
the load (which part a server runs may change; the draws do not). Not across different numbers of servers.

Failures: an endpoint that stops answering (llm_client.EndpointDown, after its own retries) is left out for
DOWN_COOL_OFF_S and its part goes to the others; when every endpoint is down, each is tried once more, then the
request fails with one line naming them. Any other refusal (a model the endpoint does not serve, a malformed
request) is a configuration error and is raised at once, as from a single endpoint.
"""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from perfforge.errors import BackendError
from perfforge.llm_client import ChatClient, Completion, EndpointDown

SEED_STRIDE = 1_000_003  # a prime far above any seed a run uses: the parts' seeds never meet another request's
DOWN_COOL_OFF_S = 60.0  # a server that died is usually restarted in minutes; try it again after a minute


def split_urls(text: str) -> list[str]:
    """The endpoints of a --url value: one base URL, or several separated by commas."""
    urls = [part.strip() for part in text.split(",") if part.strip()]
    if not urls:
        raise BackendError(f"--url {text!r} names no endpoint; give a base URL such as http://127.0.0.1:8000/v1")
    if len(set(urls)) != len(urls):
        raise BackendError(f"--url names an endpoint twice ({text}); give each server once")
    return urls


def shares(n: int, loads: list[int]) -> list[int]:
    """n candidates over endpoints with these in-flight loads: as even as possible, the remainder to the least
    loaded (ties to the earlier endpoint); endpoints beyond n get none."""
    base, extra = divmod(n, len(loads))
    order = sorted(range(len(loads)), key=lambda i: (loads[i], i))
    parts = [base] * len(loads)
    for i in order[:extra]:
        parts[i] += 1
    return parts


class ChatPool:
    """ChatClient's complete() over several endpoints of one model (see the module docstring)."""

    def __init__(self, base_urls: list[str], model: str, *, api_key: str = "EMPTY", timeout_s: float = 120.0) -> None:
        self.clients = [ChatClient(url, model, api_key=api_key, timeout_s=timeout_s) for url in base_urls]
        self.model = model
        self._lock = threading.Lock()
        self._in_flight = [0] * len(self.clients)
        self._down_until = [0.0] * len(self.clients)

    @property
    def base_url(self) -> str:
        return ",".join(client.base_url for client in self.clients)

    def complete(self, messages: list[dict[str, str]], *, max_tokens: int = 512, temperature: float = 0.0,
                 n: int = 1, seed: int | None = None, regex: str | None = None) -> list[Completion]:
        if n < 1:
            return []
        request = {"messages": messages, "max_tokens": max_tokens, "temperature": temperature, "regex": regex}
        done: dict[int, list[Completion]] = {}  # part number -> its completions
        pending = {0: n}  # part number -> candidates still to get; part numbers only grow (their seeds differ)
        next_part = 1
        retried_all = False
        while pending:
            up = self._up()
            if not up and not retried_all:  # every server failed once: try them all again before giving up
                retried_all, up = True, list(range(len(self.clients)))
            if not up:
                raise BackendError(f"none of the {len(self.clients)} endpoints of {self.model!r} is answering "
                                   f"({self.base_url}); start the servers or fix --url")
            work = []  # (part, endpoint, count)
            with self._lock:
                for count in pending.values():
                    # the parts' sizes depend on n and the servers up only (reproducible); the larger parts go to the
                    # least loaded servers, counted as taken at once so that callers at the same moment spread
                    order = sorted(up, key=lambda i: (self._in_flight[i], i))
                    for endpoint, part_count in zip(order, shares(count, [0] * len(up)), strict=True):
                        if part_count:
                            work.append((next_part, endpoint, part_count))
                            self._in_flight[endpoint] += 1
                            next_part += 1
            pending = {}
            with ThreadPoolExecutor(max_workers=len(work)) as threads:
                futures = [(part, endpoint, count, threads.submit(self._one, endpoint, request, count,
                                                                  None if seed is None else seed + part * SEED_STRIDE))
                           for part, endpoint, count in work]
                for part, endpoint, count, future in futures:
                    try:
                        done[part] = future.result()
                    except EndpointDown:
                        with self._lock:
                            self._down_until[endpoint] = time.monotonic() + DOWN_COOL_OFF_S
                        pending[part] = count
        return [completion for part in sorted(done) for completion in done[part]]

    def _up(self) -> list[int]:
        now = time.monotonic()
        with self._lock:
            return [i for i, until in enumerate(self._down_until) if until <= now]

    def _one(self, endpoint: int, request: dict[str, Any], n: int, seed: int | None) -> list[Completion]:
        """One part on one server (counted in flight from when it was assigned)."""
        try:
            return self.clients[endpoint].complete(request["messages"], max_tokens=request["max_tokens"],
                                                   temperature=request["temperature"], n=n, seed=seed,
                                                   regex=request["regex"])
        finally:
            with self._lock:
                self._in_flight[endpoint] -= 1
