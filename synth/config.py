"""Options of `perfforge synth patterns`, `perfforge synth commits` and `perfforge synth recipe`: one dataclass each,
mirrored by the command line and a YAML file (perfforge.config)."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from perfforge.errors import ConfigError
from perfforge.executor import ExecutorConfig

SYNTH_TARGETS = ("cpu", "cuda", "triton", "all")


@dataclass
class SynthPatternsConfig:
    out: Path = field(default=Path("perfforge-out/synth"), metadata={
        "help": "output directory: tasks/, checks/, pairs.parquet, stats.json, catalogue.md"})
    target: str = field(default="cpu", metadata={"help": "patterns of this target: cpu, cuda, triton or all "
                                                          "(cuda and triton need a GPU machine with nvcc and ncu)"})
    patterns: list[str] = field(default_factory=list, metadata={
        "help": "only these pattern ids (target/name); `perfforge synth list` names them"})
    instances: int = field(default=3, metadata={"help": "instances generated per pattern"})
    seed: int = field(default=0, metadata={"help": "first seed; instance k of a pattern uses seed + k"})
    timing: bool = field(default=True, metadata={
        "help": "require the fast version to be measurably faster (--no-timing: correctness and diagnosis only)"})
    check: bool = field(default=True, metadata={
        "help": "check instances not yet checked (--no-check: report and record only those already checked, "
                "e.g. on a GPU machine and brought back with scripts/synth_gpu.py --import)"})
    jobs: int = field(default=1, metadata={
        "help": "instances checked at once; CPU checks' timings share the cores and disturb each other, so keep 1 "
                "for reported CPU figures; GPU checks take the GPU in turns for their timings and profiles "
                "(profiling/device_turns.py) and overlap only their builds and set-ups"})
    executor: str = field(default="local", metadata={
        "help": "where checks run: local (--jobs processes here) or dask (a Dask cluster: --cluster, or a local one "
                "with --jobs CPU workers and a worker per GPU; docs/scale.md)"})
    cluster: str | None = field(default=None, metadata={
        "help": "address of a running Dask scheduler (tcp://host:8786) for --executor dask"})
    build_jobs: int = field(default_factory=lambda: os.cpu_count() or 1, metadata={
        "help": "compilers run at once ahead of the checks (builds may overlap; timings may not)"})
    progress: bool = field(default=True, metadata={"help": "show a progress bar"})

    def validate(self) -> None:
        if self.target not in SYNTH_TARGETS:
            raise ConfigError(f"--target must be one of {', '.join(SYNTH_TARGETS)}, got {self.target!r}")
        if self.instances < 1:
            raise ConfigError(f"--instances must be at least 1, got {self.instances}")
        if self.seed < 0:
            raise ConfigError(f"--seed must be non-negative, got {self.seed}")
        self.executor_config()

    def executor_config(self) -> ExecutorConfig:
        """The executor --executor, --jobs and --cluster name (one clear error for bad values)."""
        return ExecutorConfig.of(self.executor, self.jobs, self.cluster)


@dataclass
class SynthListConfig:
    target: str = field(default="all", metadata={"help": "list the patterns of this target: cpu, cuda, triton, all"})

    def validate(self) -> None:
        if self.target not in SYNTH_TARGETS:
            raise ConfigError(f"--target must be one of {', '.join(SYNTH_TARGETS)}, got {self.target!r}")


COMMIT_TARGETS = ("cpu", "cuda", "triton")  # targets a synthesised task can run on (hip: no machine to check it)
# The score at which mining calls a commit a performance change (mining.classify.PERF_THRESHOLD).
MINED_PERF_THRESHOLD = 0.5


@dataclass
class SynthCommitsConfig:
    pairs: Path | None = field(default=None, metadata={
        "positional": True, "help": "pairs.parquet of mined before/after pairs (perfforge mine's output)"})
    url: str | None = field(default=None, metadata={
        "help": "OpenAI-compatible endpoint serving the model, e.g. http://127.0.0.1:8000/v1 (vLLM)"})
    model: str | None = field(default=None, metadata={"help": "model name the endpoint serves"})
    api_key_env: str = field(default="PERFFORGE_API_KEY", metadata={
        "help": "environment variable holding the endpoint's API key (unset: no key, as vLLM expects)"})
    out: Path = field(default=Path("perfforge-out/synth-commits"), metadata={
        "help": "output directory: tasks/, judged/, pairs.parquet, stats.json"})
    limit: int | None = field(default=None, metadata={"help": "synthesise at most this many pairs (first chosen)"})
    targets: list[str] = field(default_factory=lambda: ["cpu"], metadata={
        "help": "targets of the pairs to synthesise: cpu, cuda, triton (comma- or space-separated); cuda and triton "
                "tasks are checked here, so ask for them only on a GPU machine with nvcc and ncu"})
    attempts: int = field(default=3, metadata={
        "help": "answers asked per pair; each retry is told why the previous task failed"})
    min_perf_score: float = field(default=MINED_PERF_THRESHOLD, metadata={
        "help": "mined pairs with a perf score below this (or category none) are not performance pairs"})
    max_tokens: int = field(default=4096, metadata={"help": "the longest answer asked of the model, in tokens"})
    temperature: float = field(default=0.2, metadata={
        "help": "sampling temperature (a little above 0 lets a retry differ from the failed answer)"})
    timeout_s: float = field(default=300.0, metadata={"help": "seconds to wait for one answer"})
    example: Path | None = field(default=None, metadata={
        "help": "task directory shown to the model as the example (default: the first of examples/tasks/<target>)"})
    progress: bool = field(default=True, metadata={"help": "show a progress bar"})

    def validate(self) -> None:
        if self.pairs is None:
            raise ConfigError("give the pairs.parquet to synthesise from (perfforge mine writes one)")
        if not self.url or not self.model:
            raise ConfigError("--url and --model are required: the OpenAI-compatible endpoint and its model name")
        self.targets = [t.strip() for item in self.targets for t in item.split(",") if t.strip()]
        unknown = [t for t in self.targets if t not in COMMIT_TARGETS]
        if unknown or not self.targets:
            raise ConfigError(f"--targets must name some of {', '.join(COMMIT_TARGETS)}, got {unknown or 'none'}")
        if self.attempts < 1:
            raise ConfigError(f"--attempts must be at least 1, got {self.attempts}")
        if self.limit is not None and self.limit < 0:
            raise ConfigError(f"--limit must be non-negative, got {self.limit}")
        if not 0.0 <= self.min_perf_score <= 1.0:
            raise ConfigError(f"--min-perf-score must be in [0, 1], got {self.min_perf_score}")
        if self.max_tokens < 1 or self.timeout_s <= 0 or self.temperature < 0:
            raise ConfigError("--max-tokens and --timeout-s must be positive, --temperature non-negative")

    def api_key(self) -> str:
        import os

        return os.environ.get(self.api_key_env) or "EMPTY"


@dataclass
class SynthRecipeConfig:
    recipe: Path | None = field(default=None, metadata={
        "positional": True, "help": "recipe TOML: repository, commit, build and benchmark commands, target, "
                                    "kernels (docs/synth_commits.md)"})
    out: Path = field(default=Path("perfforge-out/synth-recipe"), metadata={
        "help": "output directory: before/ and after/ (clones, build logs, profiles), comparison.json, "
                "comparison.md, pairs.parquet"})
    top: int | None = field(default=None, metadata={
        "help": "profile this many of the costliest kernels per side (overrides the recipe's top)"})

    def validate(self) -> None:
        if self.recipe is None:
            raise ConfigError("give the recipe TOML file (docs/synth_commits.md lists its fields)")
        if self.top is not None and self.top < 1:
            raise ConfigError(f"--top must be at least 1, got {self.top}")


@dataclass
class ImportKernelbenchConfig:
    checkout: Path | None = field(default=None, metadata={
        "positional": True, "help": "the root of a KernelBench checkout of yours (its KernelBench/level1..3/); "
                                    "nothing is downloaded"})
    out: Path = field(default=Path("perfforge-out/kernelbench-tasks"), metadata={
        "help": "directory the tasks are written under, one per problem"})
    level: list[int] = field(default_factory=lambda: [1], metadata={
        "help": "levels to import (1, 2, 3; level 4's whole Hugging Face models are not imported)"})
    problems: list[int] = field(default_factory=list, metadata={
        "help": "only these problem numbers (default: every problem of the levels)"})

    def validate(self) -> None:
        if self.checkout is None:
            raise ConfigError("give the root of your KernelBench checkout (the directory holding KernelBench/)")
        bad = [level for level in self.level if level not in (1, 2, 3)]
        if bad:
            raise ConfigError(f"--level {bad[0]}: expected 1, 2 or 3 (level 4 downloads Hugging Face models)")


@dataclass
class BaselineKernelbenchConfig:
    tasks: Path | None = field(default=None, metadata={
        "positional": True, "help": "a directory of tasks `perfforge import kernelbench` wrote"})
    out: Path = field(default=Path("perfforge-out/kernelbench-baseline.json"), metadata={
        "help": "the baseline JSON, in KernelBench's layout ({level: {problem file: timing}})"})
    mode: str = field(default="eager", metadata={"help": "eager, or compile (torch.compile of the reference)"})
    trials: int = field(default=100, metadata={"help": "timed forwards per problem (KernelBench times 100)"})
    warmup: int = field(default=3, metadata={"help": "untimed forwards before them"})
    # torch.compile spends minutes of CPU per problem before the first forward: preparing several at once is where
    # a whole level's compile baseline saves its time, and a lock keeps every timed forward alone on the device
    jobs: int = field(default=1, metadata={
        "help": "problems prepared (built, compiled) at once; their timed forwards still run one at a time, but "
                "beside the others' CPU load (compiled means read up to 24% high on an H100 host: report --jobs 1 "
                "figures)"})
    resume: bool = field(default=False, metadata={
        "help": "keep the problems --out already holds and measure only the others (an interrupted run goes on)"})

    def validate(self) -> None:
        if self.tasks is None:
            raise ConfigError("give the directory of tasks `perfforge import kernelbench` wrote")
        if self.jobs < 1:
            raise ConfigError(f"--jobs {self.jobs}: at least 1")
        if self.mode not in ("eager", "compile"):
            raise ConfigError(f"--mode {self.mode!r}: expected eager or compile")
        if self.trials < 1 or self.warmup < 0:
            raise ConfigError("--trials must be at least 1 and --warmup at least 0")
