"""The model configurations an evaluation compares, and the endpoint that answers for them.

    base            the base model (--base-model), served by a vLLM server eval starts (or --url), or loaded
                    in process with --backend transformers
    NAME=DIR        a LoRA adapter served beside the base model on the same server (merged into its own copy of
                    the base model with --backend transformers); DIR is the adapter, or a
                    perfforge train output directory (adapter/ and splits.json: its held-out patterns label
                    the catalogue suite's split)
    NAME=DIR        a fully fine-tuned model (perfforge train --finetune full): DIR is its train output directory
                    (model/ and splits.json) or the model directory itself; loaded in process with --backend
                    transformers (a served evaluation cannot serve it beside the base model: serve it yourself and
                    give NAME=URL#MODEL)
    NAME=URL#MODEL  any OpenAI-compatible endpoint, asked for MODEL
    NAME=answers:DIR  answers written elsewhere, replayed as the model's (one candidate, one round): DIR holds
                    <task name>.<suffix> per task, or KernelBench's samples (level_L_problem_P_sample_S_kernel.py,
                    the lowest S) for kernelbench tasks; a task without one is an unparsable row

The human-optimised reference is not a model: it is the configuration "human" (eval.runner measures it).
"""

from __future__ import annotations

import contextlib
import os
import threading
from dataclasses import dataclass
from pathlib import Path

from perfforge.errors import ConfigError
from perfforge.io import read_json, write_json
from perfforge.task import Task
from synth.kernelbench import META_FILE as KERNELBENCH_META_FILE

HUMAN = "human"
BASE = "base"
ADAPTER_FILE = "adapter_config.json"
MODEL_FILE = "config.json"  # a Hugging Face model directory's
ANSWERS_PREFIX = "answers:"


@dataclass(frozen=True)
class ModelConfiguration:
    """A model that answers through the optimisation loop: the name rows carry, and how to reach it."""

    name: str
    adapter: Path | None = None  # a LoRA adapter served beside the base model
    url: str | None = None  # an external endpoint's base URL
    model: str | None = None  # the model name an external endpoint serves
    training_run: Path | None = None  # the perfforge train directory the adapter (or model) came from
    model_dir: Path | None = None  # a whole fine-tuned model, answering in place of the base model
    answers: Path | None = None  # a directory of answers written elsewhere, replayed (answer_for)

    @property
    def served(self) -> bool:
        """Answered by the server eval starts (or --url), not by an external endpoint nor by replayed answers."""
        return self.url is None and self.answers is None


def parse(specs: list[str]) -> list[ModelConfiguration]:
    configurations = [_parse_one(spec) for spec in specs]
    names = [c.name for c in configurations]
    for name in names:
        if names.count(name) > 1 or name == HUMAN:
            raise ConfigError(f"--models: the name {name!r} is used twice or is reserved; give each configuration "
                              "its own name")
    return configurations


def _parse_one(spec: str) -> ModelConfiguration:
    if spec == BASE:
        return ModelConfiguration(BASE)
    name, sep, value = spec.partition("=")
    if not sep or not name or not value or "/" in name:
        raise ConfigError(f"--models {spec!r}: write base, NAME=ADAPTER_DIR, NAME=URL#MODEL or NAME=answers:DIR")
    if value.startswith(ANSWERS_PREFIX):
        directory = Path(value[len(ANSWERS_PREFIX):])
        if not directory.is_dir():
            raise ConfigError(f"--models {spec!r}: {directory} is not a directory of answers")
        return ModelConfiguration(name, answers=directory)
    if value.startswith(("http://", "https://")):
        url, _, model = value.partition("#")
        if not model:
            raise ConfigError(f"--models {spec!r}: name the endpoint's model after '#': NAME=URL#MODEL")
        return ModelConfiguration(name, url=url, model=model)
    path = Path(value)
    if (path / ADAPTER_FILE).is_file():
        return ModelConfiguration(name, adapter=path)
    if (path / "adapter" / ADAPTER_FILE).is_file():
        return ModelConfiguration(name, adapter=path / "adapter", training_run=path)
    if (path / "model" / MODEL_FILE).is_file():
        return ModelConfiguration(name, model_dir=path / "model", training_run=path)
    if (path / MODEL_FILE).is_file():
        return ModelConfiguration(name, model_dir=path)
    raise ConfigError(f"--models {spec!r}: {path} holds no {ADAPTER_FILE} (nor adapter/{ADAPTER_FILE}) and no "
                      f"model ({MODEL_FILE}, model/{MODEL_FILE}); give a LoRA adapter, a model directory or a "
                      "perfforge train output directory")


def answer_for(directory: Path, task: Task) -> str | None:
    """The answer a directory holds for `task`: <task name><the source's suffix>, or for a KernelBench task its
    samples' file (level_L_problem_P_sample_S_kernel.py, the lowest S); None when there is none."""
    own = directory / f"{task.name}{task.source_path.suffix}"
    if own.is_file():
        return own.read_text(encoding="utf-8", errors="replace")
    meta = task.root / KERNELBENCH_META_FILE
    if meta.is_file():
        info = read_json(meta)
        samples = sorted(directory.glob(f"level_{info['level']}_problem_{info['problem_id']}_sample_*_kernel.py"),
                         key=lambda path: int(path.name.split("_sample_")[1].split("_")[0]))
        if samples:
            return samples[0].read_text(encoding="utf-8", errors="replace")
    return None


def trained_patterns(configurations: list[ModelConfiguration]) -> dict[str, str]:
    """pattern id -> train or eval, from the splits.json of every training run under evaluation. A pattern any
    run trained on counts as trained: a held-out pattern must be unseen by every adapter compared."""
    groups: dict[str, str] = {}
    for configuration in configurations:
        path = configuration.training_run / "splits.json" if configuration.training_run else None
        if path is None or not path.is_file():
            continue
        for group, side in read_json(path).get("groups", {}).items():
            kind, _, pattern = group.partition(":")  # pattern:cpu/loop_order, repo:owner/name
            if kind == "pattern":
                _join(groups, pattern, side)
    return groups


TRAINED_FILE = "trained_patterns.json"


def remembered_patterns(out: Path, now: dict[str, str]) -> dict[str, str]:
    """The trained patterns of every training run evaluated into `out`: those of earlier evaluations (kept in
    OUT/trained_patterns.json) joined with this one's. The table holds the rows of them all, so a later
    evaluation of fewer configurations (the base model alone, another seed) keeps its rows' splits."""
    path = out / TRAINED_FILE
    groups: dict[str, str] = read_json(path) if path.is_file() else {}
    for pattern, side in now.items():
        _join(groups, pattern, side)
    write_json(path, groups)
    return groups


def _join(groups: dict[str, str], pattern: str, side: str) -> None:
    if groups.get(pattern) != "train":  # a pattern any run trained on counts as trained
        groups[pattern] = side


class Endpoints:
    """Backends for the configurations; the served ones share one vLLM server, started on first need (a resumed
    evaluation whose answers are all on disk starts none) and stopped on exit, or with backend "transformers" are
    each loaded in this process on first need (the base model, with the configuration's adapter merged)."""

    def __init__(self, configurations: list[ModelConfiguration], *, base_model: str, url: str | None,
                 timeout_s: float, log_dir: Path, servers: int = 1, backend: str = "vllm",
                 log=print, gather_s: float = 0.0) -> None:  # noqa: ANN001 (a print-like callable)
        self.configurations = {c.name: c for c in configurations}
        whole = [c for c in configurations if c.model_dir is not None]
        if whole and backend != "transformers":
            raise ConfigError(f"--models {whole[0].name}: a fully fine-tuned model is evaluated in process (--backend "
                              "transformers); a served evaluation serves adapters beside the base model, so serve "
                              f"{whole[0].model_dir} yourself (perfforge serve --model DIR) and give "
                              f"{whole[0].name}=URL#MODEL")
        self.base_model, self.url, self.timeout_s, self.log_dir, self.log = base_model, url, timeout_s, log_dir, log
        self.servers, self.kind = servers, backend
        # --backend transformers: each configuration's model, loaded once and shared by the runs (Shared batches
        # the requests of runs made at once, waiting gather_s for them to join)
        self._loaded: dict[str, object] = {}
        self._loading = threading.Lock()
        self.gather_s = gather_s
        self._stack = contextlib.ExitStack()
        self._server_url: str | None = url
        self._base_name: str | None = None

    def __enter__(self) -> Endpoints:
        return self

    def __exit__(self, *exc: object) -> None:
        self._stack.close()

    def backend(self, name: str):  # noqa: ANN201 (an inference.backends.Backend)
        from inference.backends import make_backend

        configuration = self.configurations[name]
        if not configuration.served:
            return make_backend("openai", configuration.model, url=configuration.url, timeout_s=self.timeout_s)
        if self.kind == "transformers":
            from inference.backends import Shared

            with self._loading:
                if name not in self._loaded:
                    model = str(configuration.model_dir or self.base_model)
                    adapter = f" with the adapter {configuration.adapter} merged" if configuration.adapter else ""
                    self.log(f"loading {model}{adapter} for {name} (transformers, in process) ...")
                    engine = make_backend("transformers", model, adapter=configuration.adapter)
                    self._loaded[name] = Shared(engine, gather_s=self.gather_s)
                return self._loaded[name]
        with self._loading:  # the server starts once, whichever run asks first
            url, base = self._served()
        model = base if configuration.name == BASE else configuration.name
        # our own vLLM server (or the one --url names for the served configurations) takes structured outputs
        return make_backend("openai", model, url=url, timeout_s=self.timeout_s, structured=True)

    def _served(self) -> tuple[str, str]:
        if self._base_name is None:
            if self.url is not None:
                self._base_name = self._name_at(self.url)
            else:
                self._server_url, self._base_name = self._start()
        return self._server_url or "", self._base_name

    def _start(self) -> tuple[str, str]:
        """Start the servers (one, or one per GPU with --servers): the URL list their requests are shared over."""
        from inference.config import ServeConfig
        from inference.serve import Server

        adapters = [f"{c.name}={c.adapter}" for c in self.configurations.values() if c.adapter is not None]
        started = []
        for index in range(self.servers):
            config = ServeConfig(model=self.base_model, lora=adapters, port=_free_port(),
                                 gpus=_gpu(index) if self.servers > 1 else None)
            log_name = "vllm.log" if self.servers == 1 else f"vllm_{index}.log"
            server = Server(config, self.log_dir / log_name)
            where = f" on GPU {index}" if self.servers > 1 else ""
            self.log(f"starting vLLM for {server.model_dir}{where} with {len(adapters)} adapter(s) "
                     f"(log: {server.log_path}) ...")
            self._stack.enter_context(server)
            started.append(server)
        return ",".join(server.url for server in started), started[0].name

    def _name_at(self, url: str) -> str:
        """The base model's name at an endpoint eval did not start: the name perfforge serve gives it."""
        from inference.config import ServeConfig
        from inference.serve import resolve_model, served_name

        self.log(f"asking {url} for the base model and the adapters by name")
        return served_name(ServeConfig(model=self.base_model), resolve_model(self.base_model))


def _gpu(index: int) -> str:
    """The GPU server `index` runs on: the index-th of those this process may use (CUDA_VISIBLE_DEVICES, e.g. 2,3
    on a shared node), else GPU `index`."""
    visible = [g.strip() for g in os.environ.get("CUDA_VISIBLE_DEVICES", "").split(",") if g.strip()]
    if not visible:
        return str(index)
    if index >= len(visible):
        raise ConfigError(f"--servers asks for a server on GPU {index + 1} of {len(visible)} visible "
                          f"(CUDA_VISIBLE_DEVICES={','.join(visible)}); lower --servers")
    return visible[index]


def _free_port() -> int:
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]
