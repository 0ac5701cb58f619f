"""Model backends: where candidates come from.

Three backends behind one interface, `Backend.generate(messages, n=...)` -> n Completions:
  openai        any OpenAI-compatible endpoint (`perfforge serve`, vLLM, llama.cpp's server, a commercial API);
                the n samples go in one request, which the server batches
  vllm          vLLM's offline engine in the process (one batched call for the n samples)
  transformers  transformers' generate in the process: the fallback when neither of the others is there
`make_backend` picks one by name; "auto" takes openai when a URL is given, else vllm when it is installed, else
transformers. The model stacks are imported only by the backend that needs them.
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import os
import threading
import time
import warnings
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from perfforge.errors import BackendError, ConfigError, PerfforgeError
from perfforge.llm_client import ChatClient, Completion
from perfforge.llm_pool import ChatPool, split_urls
from perfforge.models import resolve_model
from perfforge.prompt import FENCE_LANGUAGE

AUTO = "auto"
# How long a run that finds a shared engine free waits for other runs' requests to join its batch: a generation
# takes tens of seconds, and requests made at once (after judges that ended together) come milliseconds apart.
GATHER_S = 0.25


@dataclass(frozen=True)
class Request:
    """One generate() call's arguments, for a batch of them (Backend.generate_many)."""

    messages: list[dict[str, str]]
    n: int
    max_tokens: int
    temperature: float
    seed: int | None = None
    fence: str | None = None


class Backend(ABC):
    """A model that answers chat messages with n sampled completions."""

    name: str = ""

    def __init__(self, model: str) -> None:
        self.model = model

    @abstractmethod
    def generate(self, messages: list[dict[str, str]], *, n: int, max_tokens: int, temperature: float,
                 seed: int | None = None, fence: str | None = None) -> list[Completion]:
        """n completions of one chat. fence: the answer format's code-block language, to enforce the format while
        generating where the backend can (inference/constrained.py; None: free generation)."""

    def generate_many(self, requests: list[Request]) -> list[list[Completion]]:
        """Each request's completions. Engines in the process override it with one batched call (several runs'
        requests at once, Shared); elsewhere the requests go one after the other."""
        return [self.generate(r.messages, n=r.n, max_tokens=r.max_tokens, temperature=r.temperature, seed=r.seed,
                              fence=r.fence) for r in requests]

    def constrains(self) -> bool:
        """Whether generate() enforces the answer format when given a fence."""
        return False

    def count_tokens(self) -> Callable[[str], int] | None:
        """The model tokenizer's count, where the backend has one in the process (for exact prompt budgets)."""
        return None

    def describe(self) -> str:
        return f"{self.name}:{self.model}"

    def close(self) -> None:  # noqa: B027 (backends that hold no engine have nothing to release)
        """Release the model (engines hold GBs)."""


@dataclass
class _Waiting:
    """A request handed to Shared, and what became of it."""

    request: Request
    done: bool = False
    completions: list[Completion] = field(default_factory=list)
    error: BaseException | None = None


class Shared(Backend):
    """One engine lent to several loop runs (expert iteration samples every task of a round from one model; eval
    --parallel-runs N runs N at once): each run's close() is a no-op; the lender closes the engine once, with
    close_engine().

    Runs in several threads batch: while the engine generates for one, the requests of the others wait, and the
    first of them to get the engine next takes every waiting request into one generate_many call (an in-process
    engine answers a batch of 12 requests in about the time of one). gather_s: how long a thread that finds the
    engine free waits for others' requests to join it. Sampling is reproducible for a request generated alone; in a
    batch it depends on the batch (the seed is the first request's, and the rows draw from one generator)."""

    def __init__(self, engine: Backend, *, gather_s: float = 0.0) -> None:
        super().__init__(engine.model)
        self.engine, self.gather_s = engine, gather_s
        self.lock = threading.Lock()  # the engine: one batch at a time
        self.queue_lock = threading.Lock()  # the waiting requests
        self.waiting: list[_Waiting] = []

    def generate(self, messages: list[dict[str, str]], *, n: int, max_tokens: int, temperature: float,
                 seed: int | None = None, fence: str | None = None) -> list[Completion]:
        mine = _Waiting(Request(messages, n, max_tokens, temperature, seed, fence))
        with self.queue_lock:
            self.waiting.append(mine)
        with self.lock:
            if not mine.done:  # no batch took it while this thread waited for the engine: it leads the next one
                if self.gather_s > 0:
                    time.sleep(self.gather_s)
                with self.queue_lock:
                    batch, self.waiting = self.waiting, []
                self._run(batch)
        if mine.error is not None:
            raise mine.error
        return mine.completions

    def _run(self, batch: list[_Waiting]) -> None:
        """Generate for the batch; every request of it ends answered or with the error, none left waiting."""
        try:
            answers = self.engine.generate_many([w.request for w in batch])
            if len(answers) != len(batch):
                raise BackendError(f"{self.engine.describe()} answered {len(answers)} of a batch of {len(batch)} "
                                   "requests")
            for waiting, completions in zip(batch, answers, strict=True):
                waiting.completions, waiting.done = completions, True
        except BaseException as error:  # noqa: BLE001 (every request of the batch fails with it, in its own thread)
            for waiting in batch:
                if not waiting.done:
                    waiting.error, waiting.done = error, True

    def constrains(self) -> bool:
        return self.engine.constrains()

    def count_tokens(self) -> Callable[[str], int] | None:
        return self.engine.count_tokens()

    def describe(self) -> str:
        return self.engine.describe()

    def close(self) -> None:
        """Kept open for the next run."""

    def close_engine(self) -> None:
        self.engine.close()


BACKENDS: dict[str, type[Backend]] = {}


def backend(cls: type[Backend]) -> type[Backend]:
    """Register a backend class under its name (a duplicate name is an error)."""
    if not issubclass(cls, Backend) or not cls.name:
        raise TypeError(f"{cls!r} is not a named Backend")
    if cls.name in BACKENDS:
        raise ValueError(f"backend {cls.name!r} is registered twice")
    BACKENDS[cls.name] = cls
    return cls


@backend
class OpenAIBackend(Backend):
    name = "openai"

    def __init__(self, model: str, *, url: str, api_key: str = "EMPTY", timeout_s: float = 300.0,
                 structured: bool = False) -> None:
        super().__init__(model)
        urls = split_urls(url)
        # several servers of one model (comma-separated): each request's candidates are shared among them
        self.client = ChatClient(urls[0], model, api_key=api_key, timeout_s=timeout_s) if len(urls) == 1 else \
            ChatPool(urls, model, api_key=api_key, timeout_s=timeout_s)
        self.structured = structured  # the server takes vLLM's structured outputs (perfforge serve's does)

    def generate(self, messages: list[dict[str, str]], *, n: int, max_tokens: int, temperature: float,
                 seed: int | None = None, fence: str | None = None) -> list[Completion]:
        from inference.constrained import answer_regex

        regex = answer_regex(fence) if fence is not None and self.structured else None
        return self.client.complete(messages, max_tokens=max_tokens, temperature=temperature, n=n, seed=seed,
                                    regex=regex)

    def constrains(self) -> bool:
        return self.structured

    def describe(self) -> str:
        return f"openai:{self.model}@{self.client.base_url}"


def gpu_present() -> bool:
    return Path("/dev/nvidiactl").exists()


def engine_dtype(dtype: str) -> str:
    """The dtype vLLM is given, the same for `perfforge serve` and the in-process engine: "auto" is float32 on the
    CPU, vLLM CPU's tested dtype here (STACK.md; vLLM's own auto downcasts to bfloat16, which needs AVX512-BF16)."""
    return "float32" if dtype == "auto" and not gpu_present() else dtype


def capped_model_len(requested: int, model_dir: Path) -> int:
    """The context length asked for, capped at the model's max_position_embeddings (vLLM refuses more)."""
    try:
        limit = int(json.loads((model_dir / "config.json").read_text()).get("max_position_embeddings", 0))
    except (OSError, ValueError, AttributeError, TypeError):  # unreadable, or not a mapping with a number
        limit = 0
    return min(requested, limit) if limit else requested


@backend
class VLLMBackend(Backend):
    """vLLM's offline engine. On the CPU it needs VLLM_CPU_KVCACHE_SPACE (GiB; 1 is plenty for small models), and
    the calling script needs an `if __name__ == "__main__":` guard (vLLM spawns its workers)."""

    name = "vllm"

    def __init__(self, model: str, *, max_model_len: int = 4096, dtype: str = "auto", verbose: bool = False) -> None:
        super().__init__(model)
        os.environ.setdefault("VLLM_CPU_KVCACHE_SPACE", "1")
        os.environ.setdefault("VLLM_NO_USAGE_STATS", "1")
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        # The engine runs in this process, not in a child of its own: a Ctrl-C (which reaches the whole process
        # group) then interrupts one process that stops cleanly, instead of also killing an engine process that
        # prints its own traceback after ours has said "interrupted".
        os.environ.setdefault("VLLM_ENABLE_V1_MULTIPROCESSING", "0")
        if not verbose:
            # ~175 lines of engine start-up logs (its warnings included: advice on LD_PRELOAD, Triton, thread
            # binding, none of it ours to act on) bury the loop's own lines; --verbose brings them back.
            os.environ.setdefault("VLLM_LOGGING_LEVEL", "ERROR")
            warnings.filterwarnings("ignore", module=r"vllm\.")
        from vllm import LLM

        model_dir = resolve_model(model)
        self.llm = LLM(model=str(model_dir), max_model_len=capped_model_len(max_model_len, model_dir),
                       dtype=engine_dtype(dtype), enforce_eager=True)
        self.tokenizer = self.llm.get_tokenizer()

    def generate(self, messages: list[dict[str, str]], *, n: int, max_tokens: int, temperature: float,
                 seed: int | None = None, fence: str | None = None) -> list[Completion]:
        return self.generate_many([Request(messages, n, max_tokens, temperature, seed, fence)])[0]

    def generate_many(self, requests: list[Request]) -> list[list[Completion]]:
        """One chat call for every request: vLLM batches the conversations, each with its own sampling."""
        from vllm import SamplingParams

        params = [SamplingParams(n=r.n, temperature=r.temperature, max_tokens=r.max_tokens, seed=r.seed)
                  for r in requests]
        outputs = self.llm.chat([r.messages for r in requests], sampling_params=params, use_tqdm=False)
        return [[Completion(o.text, str(o.finish_reason or ""), len(o.token_ids), len(output.prompt_token_ids or []))
                 for o in output.outputs] for output in outputs]

    def count_tokens(self) -> Callable[[str], int] | None:
        return lambda text: len(self.tokenizer.encode(text, add_special_tokens=False))

    def close(self) -> None:
        del self.llm


@backend
class TransformersBackend(Backend):
    """transformers' generate, in fp32 on the CPU (or the GPU when torch sees one); a request's n candidates are
    one batch. adapter: a LoRA adapter merged into the loaded weights."""

    name = "transformers"

    def __init__(self, model: str, *, verbose: bool = False, adapter: Path | None = None) -> None:
        # the rows' model names the adapter too: two configurations of one base model are told apart
        super().__init__(model if adapter is None else f"{model}+{adapter}")
        import torch
        import transformers
        from transformers import AutoModelForCausalLM, AutoTokenizer

        if not verbose:  # loading notices and generation-config warnings; --verbose brings them back
            transformers.logging.set_verbosity_error()

        path = resolve_model(model)
        self.tokenizer = AutoTokenizer.from_pretrained(path)
        if not self.tokenizer.chat_template:
            raise PerfforgeError(f"model {model} has no chat template; give a chat (instruct) model")
        self.device = "cuda" if torch.cuda.is_available() else "cpu"
        model_obj = AutoModelForCausalLM.from_pretrained(path, dtype=torch.float32)
        if adapter is not None:  # a LoRA adapter merged into this copy: generation runs at the base model's speed
            from peft import PeftModel

            model_obj = PeftModel.from_pretrained(model_obj, str(adapter)).merge_and_unload()
        self.model_obj = model_obj.to(self.device).eval()

    def generate(self, messages: list[dict[str, str]], *, n: int, max_tokens: int, temperature: float,
                 seed: int | None = None, fence: str | None = None) -> list[Completion]:
        return self.generate_many([Request(messages, n, max_tokens, temperature, seed, fence)])[0]

    def generate_many(self, requests: list[Request]) -> list[list[Completion]]:
        """One generate() call per sampling temperature among the requests, every candidate of them a row."""
        by_temperature: dict[float, list[int]] = {}
        for index, request in enumerate(requests):
            by_temperature.setdefault(request.temperature, []).append(index)
        answers: list[list[Completion]] = [[] for _ in requests]
        for temperature, indices in by_temperature.items():
            batch = self._batch([requests[i] for i in indices], temperature)
            for index, completions in zip(indices, batch, strict=True):
                answers[index] = completions
        return answers

    def _batch(self, requests: list[Request], temperature: float) -> list[list[Completion]]:
        """The requests' prompts left-padded to one width (a request's n candidates are n rows of its prompt), so
        every row's new tokens start at the same column; a row is cut at its own request's max_tokens."""
        import torch

        prompts = [list(self.tokenizer.apply_chat_template(r.messages, add_generation_prompt=True,
                                                            return_dict=True)["input_ids"]) for r in requests]
        rows = [index for index, request in enumerate(requests) for _ in range(request.n)]
        width = max(len(ids) for ids in prompts)
        pad = self.tokenizer.pad_token_id if self.tokenizer.pad_token_id is not None else self.tokenizer.eos_token_id
        input_ids = torch.tensor([[pad] * (width - len(prompts[i])) + prompts[i] for i in rows], device=self.device)
        attention = torch.tensor([[0] * (width - len(prompts[i])) + [1] * len(prompts[i]) for i in rows],
                                 device=self.device)
        budgets = [requests[i].max_tokens for i in rows]
        if requests[0].seed is not None:
            torch.manual_seed(requests[0].seed)
        sampling = {"do_sample": True, "temperature": temperature} if temperature > 0 else {"do_sample": False}
        fences = [requests[i].fence for i in rows]
        if any(fence is not None for fence in fences):
            from inference.constrained import format_processor

            sampling["logits_processor"] = format_processor(self.tokenizer, fences, stop_ids=self._stop_ids(),
                                                            prompt_tokens=width, max_new_tokens=budgets)
        with self._device_turn(), torch.no_grad():
            out = self.model_obj.generate(input_ids=input_ids, attention_mask=attention, max_new_tokens=max(budgets),
                                          pad_token_id=pad, **sampling)
        answers: list[list[Completion]] = [[] for _ in requests]
        eos = self.tokenizer.eos_token_id
        for index, budget, row in zip(rows, budgets, out[:, width:], strict=True):
            ids = row.tolist()
            stopped = eos in ids[:budget]
            ids = ids[:ids.index(eos)] if stopped else ids[:budget]
            answers[index].append(Completion(self.tokenizer.decode(ids, skip_special_tokens=True),
                                             "stop" if stopped else "length", len(ids), len(prompts[index])))
        return answers

    def _device_turn(self):  # noqa: ANN202 (a context manager)
        """On the GPU, the device's turn that GPU verdicts in other threads of this process take too (their rules
        would read this model's kernels as a candidate's hidden work); on the CPU, nothing to wait for."""
        if self.device != "cuda":
            return contextlib.nullcontext()
        from profiling.device_turns import GPU_TURNS

        return GPU_TURNS

    def count_tokens(self) -> Callable[[str], int] | None:
        return lambda text: len(self.tokenizer.encode(text, add_special_tokens=False))

    def constrains(self) -> bool:
        return True

    def _stop_ids(self) -> list[int]:
        """The ids that end an answer: the tokenizer's end of sequence first (what the format forces), then the
        generation config's."""
        configured = self.model_obj.generation_config.eos_token_id
        more = configured if isinstance(configured, list) else [configured] if configured is not None else []
        return [i for i in [self.tokenizer.eos_token_id, *more] if i is not None]


def installed(module: str) -> bool:
    return importlib.util.find_spec(module) is not None


class ReplayBackend(Backend):
    """Answers written elsewhere (by hand, by another tool, KernelBench samples made with a commercial model),
    replayed as the model's: one completion holding the file in the answer format, whatever was asked, so the
    loop judges, profiles and records it like any candidate. `code` None: no answer for this task (an empty
    completion, which the loop records as unparsable)."""

    name = "answers"

    def __init__(self, source: str, code: str | None, language: str) -> None:
        super().__init__(source)
        self.code, self.language = code, language

    def generate(self, messages: list[dict[str, str]], *, n: int, max_tokens: int, temperature: float,
                 seed: int | None = None, fence: str | None = None) -> list[Completion]:
        if self.code is None:
            return [Completion("", "stop", 0, 0)]
        fence = FENCE_LANGUAGE.get(self.language, "")
        return [Completion(f"```{fence}\n{self.code.rstrip()}\n```\n", "stop", 0, 0)]


def make_backend(kind: str, model: str, *, url: str | None = None, api_key: str = "EMPTY",
                 timeout_s: float = 300.0, max_model_len: int = 4096, verbose: bool = False,
                 structured: bool = False, adapter: Path | None = None) -> Backend:
    """The backend `kind` names (or the one "auto" picks) for `model`. structured: the URL's server takes vLLM's
    structured outputs (perfforge serve's does), so the answer format can be enforced there too."""
    if kind == AUTO:
        kind = "openai" if url else "vllm" if installed("vllm") else "transformers"
    if kind not in BACKENDS:
        raise ConfigError(f"unknown backend {kind!r}; choose one of {AUTO}, {', '.join(BACKENDS)}")
    if kind == "openai":
        if not url:
            raise ConfigError("the openai backend needs --url (e.g. http://127.0.0.1:8000/v1 from perfforge serve)")
        return OpenAIBackend(model, url=url, api_key=api_key, timeout_s=timeout_s, structured=structured)
    needed = "vllm" if kind == "vllm" else "transformers"
    if not installed(needed):
        raise ConfigError(f"the {kind} backend needs {needed}, which is not installed; install it or give "
                          "--url of a served model")
    if kind == "vllm":
        return VLLMBackend(model, max_model_len=max_model_len, verbose=verbose)
    return TransformersBackend(model, verbose=verbose, adapter=adapter)
