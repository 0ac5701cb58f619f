"""Options of `perfforge iterate` (iteration/expert.py): one dataclass, mirrored by the command line and a YAML file
(perfforge.config)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from perfforge.errors import ConfigError
from perfforge.models import DEFAULT_MODEL, EMBEDDED_HELP
from training.config import FINETUNES, TrainConfig


@dataclass
class IterateConfig:
    """`perfforge iterate`: expert iteration (iteration/expert.py). Sampling options mirror `perfforge optimize`,
    training options `perfforge train` (the ones a round sets; the rest keep train's defaults)."""

    tasks: list[Path] = field(default_factory=list, metadata={
        "positional": True, "help": "training tasks: task directories, or directories holding them (held-out tasks "
                                    "belong to perfforge eval, never here)"})
    out: Path = field(default=Path("perfforge-out/iterate"), metadata={
        "help": "output directory: iterate.json and one directory per round (rerun to resume)"})
    base_model: str = field(default=DEFAULT_MODEL, metadata={
        "help": f"a local Hugging Face model directory, or {EMBEDDED_HELP}: "
                "every round fine-tunes this model afresh"})
    seed_data: list[Path] = field(default_factory=list, metadata={
        "help": "datasets (pairs.parquet, attempts.parquet) trained on before round 1 and kept in every round's mix"})
    rounds: int = field(default=2, metadata={"help": "rounds of sample -> keep proven improvements -> fine-tune"})
    samples: int = field(default=4, metadata={"help": "candidates sampled per task and sampling seed in a round"})
    seeds: int = field(default=1, metadata={
        "help": "sampling seeds per task in a round (round r uses seeds (r-1)*N .. r*N-1: no draw repeats)"})
    backend: str = field(default="auto", metadata={
        "help": "where a round's model runs: vllm (offline engine) or transformers (auto: vllm if installed)"})
    temperature: float = field(default=0.8, metadata={"help": "sampling temperature"})
    max_tokens: int = field(default=1024, metadata={"help": "tokens each candidate may generate"})
    constrain: bool = field(default=True, metadata={"help": "enforce the answer format while generating"})
    max_steps: int = field(default=50, metadata={"help": "optimiser steps of each round's fine-tuning"})
    learning_rate: float = field(default=2e-4, metadata={"help": "peak learning rate of each round's fine-tuning"})
    batch_size: int = field(default=4, metadata={"help": "examples per device per step"})
    max_length: int = field(default=2048, metadata={"help": "tokens per example"})
    lora_target_modules: str = field(default="all-linear", metadata={
        "help": "modules to adapt: all-linear, or comma-separated names (q_proj,v_proj)"})
    holdout: list[str] = field(default_factory=list, metadata={
        "help": "patterns (target/name) or repositories no round trains on, though the seed data holds them (their "
                "tasks belong to perfforge eval: a training task of one is an error)"})
    finetune: str = field(default=TrainConfig.finetune, metadata={
        "help": "each round's fine-tuning: lora (sampled from the merged model) or full (every weight)"})
    lora_r: int = field(default=TrainConfig.lora_r, metadata={"help": "LoRA rank of each round's fine-tuning"})
    lora_alpha: int = field(default=TrainConfig.lora_alpha, metadata={"help": "LoRA alpha (scale = alpha / r)"})
    jobs: int = field(default=1, metadata={
        "help": "training tasks sampled and judged at once: the model generates for one at a time, the judges of "
                "the others run meanwhile (a GPU machine's host cores judge while its GPU generates)"})

    def validate(self) -> None:
        if not self.tasks:
            raise ConfigError("give at least one training task (a task directory or a directory of tasks)")
        for name in ("rounds", "samples", "seeds", "max_tokens", "max_steps", "batch_size", "max_length", "lora_r",
                     "lora_alpha", "jobs"):
            if getattr(self, name) < 1:
                raise ConfigError(f"--{name.replace('_', '-')} must be at least 1")
        if self.finetune not in FINETUNES:
            raise ConfigError(f"--finetune must be one of {', '.join(FINETUNES)}, got {self.finetune!r}")
        if self.temperature <= 0:
            raise ConfigError("--temperature must be above 0: expert iteration samples several candidates")
        if self.learning_rate <= 0:
            raise ConfigError(f"--learning-rate must be above 0, got {self.learning_rate}")
