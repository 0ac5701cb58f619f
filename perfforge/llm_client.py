"""A small client for any OpenAI-compatible chat endpoint (vLLM, llama.cpp's server, a commercial API).

Standard library only, so every stage (and the GPU machine, which lacks the model stack) can import it.
Timeouts and retries are explicit; an endpoint that is down, or does not serve the named model, raises
BackendError with a message that says which and what to change.
"""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass
from typing import Any

from perfforge.errors import BackendError

# Back-off between retries, seconds: transient failures (a server still loading, a 503 under load) usually
# clear within a few seconds; three tries keep a dead endpoint from stalling a run for long.
RETRY_DELAYS_S = (1.0, 3.0)


class EndpointDown(BackendError):
    """The endpoint did not answer after the retries (refused connections, timeouts, 5xx): another endpoint of the
    same model may take the request (perfforge.llm_pool)."""


@dataclass(frozen=True)
class Completion:
    """One choice of a chat completion, with what it cost."""

    text: str
    finish_reason: str  # "stop", or "length" when max_tokens cut it
    # this choice's tokens (when the server gives only the total of n choices: shared out by text length)
    completion_tokens: int
    prompt_tokens: int


@dataclass
class ChatClient:
    base_url: str  # e.g. http://127.0.0.1:8000/v1
    model: str
    api_key: str = "EMPTY"
    timeout_s: float = 120.0

    def chat(self, messages: list[dict[str, str]], *, max_tokens: int = 512, temperature: float = 0.0,
             n: int = 1) -> list[str]:
        """The n completions' texts for one chat request."""
        return [c.text for c in self.complete(messages, max_tokens=max_tokens, temperature=temperature, n=n)]

    def complete(self, messages: list[dict[str, str]], *, max_tokens: int = 512, temperature: float = 0.0,
                 n: int = 1, seed: int | None = None, regex: str | None = None) -> list[Completion]:
        """The n completions of one chat request (n samples in one request: the server batches them). regex: the
        completions must match it (vLLM's structured outputs; other servers may refuse the field)."""
        body: dict[str, Any] = {"model": self.model, "messages": messages, "max_tokens": max_tokens,
                                "temperature": temperature, "n": n}
        if seed is not None:
            body["seed"] = seed
        if regex is not None:
            body["structured_outputs"] = {"regex": regex}
        response = self._post("/chat/completions", body)
        try:
            choices = response["choices"]
            usage = response.get("usage") or {}
            prompt_tokens = int(usage.get("prompt_tokens", 0))
            texts = [choice["message"]["content"] or "" for choice in choices]
            shares = token_shares(int(usage.get("completion_tokens", 0)), texts, cap=max_tokens)
            return [Completion(text, str(choice.get("finish_reason") or ""), tokens, prompt_tokens)
                    for text, choice, tokens in zip(texts, choices, shares, strict=True)]
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise BackendError(f"{self.base_url} answered without choices ({exc}); is it OpenAI-compatible?") from None

    def _post(self, route: str, body: dict[str, Any]) -> dict[str, Any]:
        url = self.base_url.rstrip("/") + route
        data = json.dumps(body).encode()
        last_error = ""
        for delay in (*RETRY_DELAYS_S, None):
            request = urllib.request.Request(url, data=data, method="POST", headers={
                "Content-Type": "application/json", "Authorization": f"Bearer {self.api_key}"})
            try:
                with urllib.request.urlopen(request, timeout=self.timeout_s) as reply:
                    return json.loads(reply.read().decode())
            except urllib.error.HTTPError as exc:
                detail = exc.read().decode(errors="replace")[:300]
                if exc.code == 404 and not urllib.parse.urlsplit(self.base_url).path.rstrip("/").endswith("/v1"):
                    # A server without the OpenAI routes at this path answers 404 to any model name.
                    raise BackendError(f"{url} answered HTTP 404: the URL {self.base_url} probably lacks /v1 (an "
                                       "OpenAI-compatible base URL ends with it, e.g. http://127.0.0.1:8000/v1)") \
                        from None
                if exc.code == 404 or (exc.code == 400 and "model" in detail.lower()):
                    raise BackendError(f"{url} does not serve model {self.model!r} (HTTP {exc.code}: {detail}); "
                                       "pass the served model name") from None
                if exc.code < 500 and exc.code != 429:
                    raise BackendError(f"{url} refused the request (HTTP {exc.code}): {detail}") from None
                last_error = f"HTTP {exc.code}: {detail}"
            except (urllib.error.URLError, TimeoutError, ConnectionError, json.JSONDecodeError) as exc:
                last_error = str(getattr(exc, "reason", exc))
            if delay is not None:
                time.sleep(delay)
        raise EndpointDown(f"model endpoint {url} is not answering ({last_error}); start the server or fix the URL")


def token_shares(total: int, texts: list[str], *, cap: int | None = None) -> list[int]:
    """An OpenAI-compatible server reports one completion-token total for n choices: each choice's share of it in
    proportion to its text's length (a long answer took more tokens than a short one), none above `cap` (the
    request's max_tokens: characters per token vary, a share may not), summing to the total where the caps allow."""
    if not texts:
        return []
    lengths = [len(text) or 1 for text in texts]
    shares = [total * length // sum(lengths) for length in lengths]
    for i in sorted(range(len(texts)), key=lambda k: -lengths[k])[:total - sum(shares)]:
        shares[i] += 1  # the rounding remainder, to the longest texts
    if cap is not None:
        excess = sum(max(0, s - cap) for s in shares)
        shares = [min(s, cap) for s in shares]
        for i in sorted(range(len(texts)), key=lambda k: -lengths[k]):
            moved = min(excess, cap - shares[i])
            shares[i], excess = shares[i] + moved, excess - moved
    return shares
