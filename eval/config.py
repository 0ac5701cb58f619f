"""Options of `perfforge eval`: one dataclass, mirrored by the command line and a YAML file (perfforge.config)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from perfforge.errors import ConfigError
from perfforge.executor import ExecutorConfig
from perfforge.models import DEFAULT_MODEL, EMBEDDED_HELP
from perfforge.summary import parse_sources

# The Opal paper's ablation of what the prompt shows: nothing, the roofline, the counters, the stalls and
# per-line costs, everything.
SOURCES_ABLATION = ("none", "roofline", "counters", "stalls", "all")


@dataclass
class EvalConfig:
    out: Path = field(default=Path("perfforge-out/eval"), metadata={
        "help": "output directory: results.parquet (one row per task, configuration, variant and seed), runs/, "
                "report.md, report.html (rerun to resume)"})
    suites: list[str] = field(default_factory=lambda: ["catalogue"], metadata={
        "help": "what to evaluate on: catalogue (instances of the pattern catalogue: --target, --patterns, "
                "--instances, --seed-base), tasks:DIR (a directory of task directories), mined:DIR (tasks made "
                "from mined commits; their reference is the human-optimised version), kernelbench:DIR (the "
                "problems of your KernelBench checkout, as torch tasks)"})
    target: str = field(default="cpu", metadata={"help": "catalogue suite: patterns of this target (cpu, cuda, "
                                                         "triton, all)"})
    patterns: list[str] = field(default_factory=list, metadata={
        "help": "catalogue suite: only these pattern ids (target/name); default every pattern of --target"})
    instances: int = field(default=1, metadata={"help": "catalogue suite: instances per pattern"})
    seed_base: int = field(default=300, metadata={
        "help": "catalogue suite: first instance seed (pick seeds the training data did not use; perfforge synth "
                "starts at 0)"})
    models: list[str] = field(default_factory=lambda: ["base"], metadata={
        "help": "model configurations: base (--base-model), NAME=DIR (a LoRA adapter, or a perfforge train output "
                "directory holding adapter/ and splits.json; served beside the base model; or a fully fine-tuned "
                "model: its train output directory with model/, or the model directory, --backend transformers), "
                "NAME=URL#MODEL (any OpenAI-compatible endpoint)"})
    human: bool = field(default=True, metadata={
        "help": "measure each task's reference (human-optimised) version as the configuration 'human'"})
    base_model: str = field(default=DEFAULT_MODEL, metadata={
        "help": f"the base model: a local model directory, or {EMBEDDED_HELP}"})
    url: str | None = field(default=None, metadata={
        "help": "an already running perfforge serve (vLLM) endpoint serving the base model and the adapters by "
                "name, or several such servers (one per GPU) separated by commas, which share each request's "
                "candidates; without it, eval starts one when a model has to answer"})
    sources: list[str] = field(default_factory=lambda: ["all"], metadata={
        "help": "the prompt's insight sources, one variant each (comma-join sources for one variant: "
                "roofline,counters); --ablate-sources runs none, roofline, counters, stalls and all"})
    ablate_sources: bool = field(default=False, metadata={
        "help": f"ablation of the prompt's insight sources: {', '.join(SOURCES_ABLATION)} (Opal)"})
    candidates: list[int] = field(default_factory=lambda: [4], metadata={
        "help": "candidates per round, one variant each (fewer candidates are also read from round 1 of a "
                "larger run: the report's candidates ablation)"})
    rounds: int = field(default=2, metadata={
        "help": "most rounds per run (the report's rounds ablation reads rounds 1..N from each run)"})
    seeds: list[int] = field(default_factory=lambda: [0], metadata={"help": "sampling seeds, one run each"})
    temperature: float = field(default=0.8, metadata={"help": "sampling temperature"})
    max_tokens: int = field(default=1024, metadata={"help": "tokens each candidate may generate"})
    constrain: bool = field(default=True, metadata={
        "help": "enforce the answer format while sampling (the in-process transformers backend; "
                "inference/constrained.py); --no-constrain: free generation, to measure what the format costs or "
                "saves (write it to another --out: runs are resumed by model, variant and seed alone)"})
    token_budget: int = field(default=400, metadata={"help": "tokens of the profile summary in the prompt"})
    generalise: bool = field(default=True, metadata={
        "help": "re-measure each best candidate (and the reference) on every input configuration of its task"})
    bundle: bool = field(default=False, metadata={
        "help": "measure elsewhere: write the hardware work as bundles a GPU machine runs with one command "
                "(python3 -m profiling.bundle ...), stop, and read the results when rerun"})
    executor: str = field(default="local", metadata={
        "help": "where verdicts and profiles run: local (one at a time, here) or dask (fanned out over a Dask "
                "cluster's workers, one per GPU: --cluster, or a local one; docs/scale.md)"})
    cluster: str | None = field(default=None, metadata={
        "help": "address of a running Dask scheduler (tcp://host:8786) for --executor dask"})
    jobs: int = field(default=1, metadata={
        "help": "CPU workers of the local Dask cluster --executor dask starts without --cluster (plus one per GPU)"})
    kernelbench_problems: list[str] = field(default_factory=list, metadata={
        "help": "kernelbench suite: only these problems, as LEVEL/ID (1/88 2/76); default every problem of the "
                "checkout"})
    baseline_eager: Path | None = field(default=None, metadata={
        "help": "kernelbench suite: the eager baseline JSON (perfforge baseline kernelbench --mode eager, or "
                "KernelBench's published results/timing/<GPU>/ file); with --baseline-compile, the report also "
                "reads every kernelbench row against torch.compile (eval/baselines.py)"})
    baseline_compile: Path | None = field(default=None, metadata={
        "help": "kernelbench suite: the torch.compile baseline JSON of the same GPU (--mode compile)"})
    report: bool = field(default=True, metadata={"help": "write report.md and report.html from the results"})
    title: str = field(default="perfforge evaluation", metadata={"help": "the report's title"})
    request_timeout_s: float = field(default=900.0, metadata={"help": "seconds one generation request may take"})
    servers: int = field(default=1, metadata={
        "help": "vLLM servers eval starts when a model has to answer (without --url): server i on GPU i, each "
                "request's candidates shared among them (a machine's GPUs, one model copy each)"})
    backend: str = field(default="vllm", metadata={
        "help": "what answers for base and the adapters: vllm (a server eval starts, or --url) or transformers "
                "(in process, each configuration's model loaded once with its adapter merged, a request's "
                "candidates sampled as one batch on the GPU when torch sees one: for machines without vLLM's GPU "
                "build)"})

    parallel_runs: int = field(default=1, metadata={
        "help": "runs measured at once, in threads of this process: their generations batched together on each "
                "in-process model (--backend transformers) or sent to the server at once, their judges at once on "
                "this machine's cores (timings share the cores: keep it well under their count; the tasks' "
                "originals are measured at once too)"})

    def validate(self) -> None:
        if self.parallel_runs < 1:
            raise ConfigError("--parallel-runs must be at least 1")
        if self.parallel_runs > 1 and (self.bundle or self.executor != "local"):
            raise ConfigError("--parallel-runs judges runs at once on this machine: leave out --bundle and "
                              "--executor with it (or leave it out to fan candidates out over the executor)")
        if self.bundle and self.executor != "local":
            raise ConfigError("--bundle takes the hardware work elsewhere by hand: leave out --executor with it")
        self.executor_config()
        if self.backend not in ("vllm", "transformers"):
            raise ConfigError(f"--backend must be vllm or transformers, got {self.backend!r}")
        if self.backend == "transformers" and (self.url is not None or self.servers > 1):
            raise ConfigError("--backend transformers loads the models in this process: leave out --url and "
                              "--servers")
        if self.servers > 1 and self.url is not None:
            raise ConfigError("--servers starts eval's own servers; with --url, list every running server in it "
                              "(comma-separated) instead")
        for name in ("instances", "rounds", "max_tokens", "token_budget", "servers"):
            if getattr(self, name) < 1:
                raise ConfigError(f"--{name.replace('_', '-')} must be at least 1")
        if not self.candidates or min(self.candidates) < 1:
            raise ConfigError("--candidates must list numbers of at least 1")
        if self.temperature <= 0 and max(self.candidates) > 1:
            raise ConfigError("--temperature 0 samples one candidate: give --candidates 1 or a temperature above 0")
        if self.target not in ("cpu", "cuda", "triton", "all"):
            raise ConfigError(f"--target must be cpu, cuda, triton or all, got {self.target!r}")
        for variant in self.source_variants():
            parse_sources(variant.split(","))  # an unknown source is an error before anything runs
        if not self.models and not self.human:
            raise ConfigError("nothing to evaluate: give --models or keep --human")
        if (self.baseline_eager is None) != (self.baseline_compile is None):
            raise ConfigError("--baseline-eager and --baseline-compile go together: speedups against torch.compile "
                              "need both files' times of the same GPU")

    def source_variants(self) -> list[str]:
        return list(SOURCES_ABLATION) if self.ablate_sources else list(self.sources)

    def executor_config(self) -> ExecutorConfig:
        """The executor --executor, --jobs and --cluster name (one clear error for bad values)."""
        return ExecutorConfig.of(self.executor, self.jobs, self.cluster)
