"""Options of `perfforge optimize` and `perfforge serve`: one dataclass each, mirrored by the command line and a
YAML file (perfforge.config)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from inference.backends import AUTO, BACKENDS
from perfforge.errors import ConfigError
from perfforge.executor import ExecutorConfig
from perfforge.models import DEFAULT_MODEL, EMBEDDED_HELP
from perfforge.summary import SOURCES_HELP, split_sources


@dataclass
class OptimizeConfig:
    task: Path | None = field(default=None, metadata={
        "positional": True, "help": "task directory to optimise (holds task.toml); or use --command with --tasks"})
    out: Path = field(default=Path("perfforge-out/optimize"), metadata={
        "help": "output directory: report, patch, optimised file, every attempt (rerun to resume)"})
    backend: str = field(default="auto", metadata={
        "help": "where candidates come from: openai (any OpenAI-compatible --url), vllm (offline engine), "
                "transformers, or auto (openai with --url, else vllm if installed, else transformers)"})
    model: str = field(default=DEFAULT_MODEL, metadata={
        "help": f"with --url: the served model name; otherwise a local model directory, or {EMBEDDED_HELP}"})
    url: str | None = field(default=None, metadata={
        "help": "base URL of an OpenAI-compatible endpoint, e.g. http://127.0.0.1:8000/v1 (perfforge serve); several "
                "servers of the same model separated by commas share each round's candidates"})
    api_key: str = field(default="EMPTY", metadata={"help": "the endpoint's API key (local servers ignore it)"})
    request_timeout_s: float = field(default=600.0, metadata={"help": "seconds one generation request may take"})
    verbose: bool = field(default=False, metadata={
        "help": "show the in-process engine's own logs (vLLM's, transformers'); by default only warnings"})
    candidates: int = field(default=4, metadata={"help": "candidates sampled per round, in one batched request"})
    rounds: int = field(default=3, metadata={"help": "rounds of generate -> validate -> feed back"})
    keep_going: bool = field(default=False, metadata={
        "help": "run every round even after a proven improvement (default: stop after the round that found one)"})
    temperature: float = field(default=0.8, metadata={"help": "sampling temperature (0: greedy, one candidate)"})
    max_tokens: int = field(default=2048, metadata={"help": "tokens each candidate may generate"})
    seed: int = field(default=0, metadata={"help": "sampling seed of round 1 (round r uses seed + r - 1)"})
    constrain: bool = field(default=True, metadata={
        "help": "enforce the answer format while generating, so every answer parses (the in-process transformers "
                "backend; inference/constrained.py). --no-constrain: free generation"})
    sources: list[str] = field(default_factory=lambda: ["all"], metadata={"help": SOURCES_HELP})
    token_budget: int = field(default=400, metadata={"help": "tokens of the profile summary in the prompt"})
    formula: str | None = field(default=None, metadata={
        "help": "the bottleneck (a diagnosis name, see perfforge diagnose) to target; default: the most severe"})
    profile_candidates: bool = field(default=True, metadata={
        "help": "profile every improved candidate for counter deltas and the belief check"})
    bundle: bool = field(default=False, metadata={
        "help": "validate elsewhere: write each round's work (profile, candidates) as a bundle a GPU machine runs "
                "with one command, stop, and read its results when the command is run again"})
    executor: str = field(default="local", metadata={
        "help": "where candidates are judged: local (one at a time, here) or dask (a round's candidates at once "
                "over a Dask cluster's workers, one per GPU: --cluster, or a local one; docs/scale.md)"})
    cluster: str | None = field(default=None, metadata={
        "help": "address of a running Dask scheduler (tcp://host:8786) for --executor dask"})
    jobs: int = field(default=1, metadata={
        "help": "CPU workers of the local Dask cluster --executor dask starts without --cluster (plus one per GPU)"})
    apply: bool = field(default=False, metadata={
        "help": "commit the winning patch to a new branch of the git repository holding the task"})
    branch: str | None = field(default=None, metadata={
        "help": "with --apply: the branch name (default perfforge/optimize-<task>-<date>)"})
    command: str | None = field(default=None, metadata={
        "help": "optimise an application: profile this command, rank its kernels by time and optimise the first "
                "with a targeted bottleneck that has a task in --tasks"})
    workdir: Path = field(default=Path("."), metadata={"help": "with --command: directory the command runs in"})
    target: str = field(default="cpu", metadata={"help": "with --command: cpu or cuda"})
    top: int = field(default=5, metadata={"help": "with --command: how many of the costliest kernels to consider"})
    tasks: Path | None = field(default=None, metadata={
        "help": "with --command: a directory of task directories, one per kernel (matched by the task's kernel)"})

    def validate(self) -> None:
        if self.bundle and self.executor != "local":
            raise ConfigError("--bundle takes the hardware work elsewhere by hand: leave out --executor with it")
        ExecutorConfig.of(self.executor, self.jobs, self.cluster)
        if (self.task is None) == (self.command is None):
            raise ConfigError("give a task directory or --command (with --tasks), not both and not neither")
        if self.command is not None and self.tasks is None:
            raise ConfigError("--command needs --tasks: the directory of tasks that say how to check each kernel")
        if self.command is not None and self.target not in ("cpu", "cuda"):
            raise ConfigError(f"--target must be cpu or cuda with --command, got {self.target!r}")
        for name in ("candidates", "rounds", "max_tokens", "token_budget", "top"):
            if getattr(self, name) < 1:
                raise ConfigError(f"--{name.replace('_', '-')} must be at least 1")
        if self.temperature < 0:
            raise ConfigError("--temperature must be at least 0")
        if self.temperature == 0 and self.candidates > 1:
            raise ConfigError("--temperature 0 samples one candidate (greedy): give --candidates 1 or a temperature "
                              "above 0")
        if self.branch is not None and not self.apply:
            raise ConfigError("--branch names the branch that --apply makes: give --apply too")
        self.sources = split_sources(self.sources)  # an unknown insight source is an error before any profiling
        if self.backend != AUTO and self.backend not in BACKENDS:
            raise ConfigError(f"--backend {self.backend!r} is not a backend; choose one of {AUTO}, "
                              f"{', '.join(BACKENDS)}")
        if self.bundle and self.apply:
            raise ConfigError("--bundle stops before the verdicts exist; run --apply on the run that reads them")


@dataclass
class ServeConfig:
    model: str = field(default=DEFAULT_MODEL, metadata={
        "help": f"a local model directory, or {EMBEDDED_HELP}"})
    served_model_name: str | None = field(default=None, metadata={
        "help": "the name clients ask for (default: the embedded model's name, e.g. SmolLM2-135M-Instruct, else "
                "the directory's name)"})
    host: str = field(default="127.0.0.1", metadata={"help": "address to listen on"})
    port: int = field(default=8000, metadata={"help": "port to listen on"})
    lora: list[str] = field(default_factory=list, metadata={
        "help": "LoRA adapters served beside the model, as NAME=DIR (clients ask for NAME)"})
    runtime_lora: bool = field(default=False, metadata={
        "help": "allow loading adapters while serving (POST /v1/load_lora_adapter)"})
    max_lora_rank: int = field(default=16, metadata={"help": "the largest LoRA rank any adapter has"})
    max_model_len: int = field(default=4096, metadata={
        "help": "context length in tokens (at most the model's max_position_embeddings)"})
    dtype: str = field(default="auto", metadata={"help": "weights' dtype: auto (float32 on the CPU), float32, ..."})
    kv_cache_gib: int = field(default=1, metadata={"help": "on the CPU: GiB of KV cache (VLLM_CPU_KVCACHE_SPACE)"})
    startup_timeout_s: float = field(default=300.0, metadata={"help": "seconds to wait for the server to answer"})
    gpus: str | None = field(default=None, metadata={
        "help": "the GPUs this server uses (CUDA_VISIBLE_DEVICES, e.g. 1, or 0,1 with tensor parallelism); one "
                "server per GPU behind a comma-separated --url shares the work (docs/scale.md)"})

    def validate(self) -> None:
        for item in self.lora:
            name, sep, path = item.partition("=")
            if not sep or not name or not path:
                raise ConfigError(f"--lora {item!r}: write NAME=DIR (the adapter's name, then its directory)")
        if not 0 < self.port < 65536:
            raise ConfigError(f"--port {self.port} is not a port number")
