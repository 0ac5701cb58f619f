"""Options of `perfforge train`: one dataclass, mirrored by the command line and a YAML file (perfforge.config).

Our LoRA fields become peft's LoraConfig in one place (training.trainer.lora_config); the trainer fields become
trl's SFTConfig / DPOConfig in training.trainer.trainer_args. Defaults suit a CPU (fp32, no gradient checkpointing,
STACK.md: trl's own defaults fail there); on a GPU `precision: auto` turns on bf16, and packing, fused kernels and
gradient checkpointing are chosen for speed by training.speed.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from perfforge.errors import ConfigError
from perfforge.models import DEFAULT_MODEL, EMBEDDED_HELP
from perfforge.summary import SOURCES_HELP, parse_sources

METHODS = ("sft", "dpo")
FINETUNES = ("lora", "full")
PRECISIONS = ("auto", "fp32", "bf16", "fp16")
KERNELS = ("auto", "liger", "none")


@dataclass
class TrainConfig:
    data: list[Path] = field(default_factory=list, metadata={
        "positional": True, "help": "datasets: pairs.parquet (mining, synthesis) or attempts.parquet (perfforge "
                                    "optimize), or directories holding them"})
    out: Path = field(default=Path("perfforge-out/train"), metadata={
        "help": "output directory: adapter/, checkpoints/, splits.json, metrics.json (rerun to resume)"})
    method: str = field(default="sft", metadata={"help": "sft (prompt -> code after) or dpo (preference pairs of "
                                                         "verified attempts)"})
    base_model: str = field(default=DEFAULT_MODEL, metadata={
        "help": f"a local Hugging Face model directory, or {EMBEDDED_HELP}"})
    # --- the examples
    sources: list[str] = field(default_factory=lambda: ["all"], metadata={"help": SOURCES_HELP})
    token_budget: int = field(default=400, metadata={"help": "tokens of the profile summary in each prompt"})
    max_code_chars: int = field(default=6000, metadata={
        "help": "skip examples whose code before or after is longer (they would not fit max_length)"})
    eval_fraction: float = field(default=0.2, metadata={
        "help": "share of repository/pattern groups held out for evaluation (never of random rows)"})
    holdout: list[str] = field(default_factory=list, metadata={
        "help": "patterns (target/name) or repositories always held out, whatever eval_fraction draws"})
    split_seed: int = field(default=0, metadata={"help": "seed of the group-to-split draw"})
    finetune: str = field(default="lora", metadata={
        "help": "lora (an adapter, written to adapter/) or full (every weight, fp32 master weights: a whole model "
                "directory written to model/, which --base-model and eval's --models NAME=DIR take)"})
    # --- LoRA
    lora_r: int = field(default=8, metadata={"help": "LoRA rank"})
    lora_alpha: int = field(default=16, metadata={"help": "LoRA alpha (scale = alpha / r)"})
    lora_dropout: float = field(default=0.05, metadata={"help": "LoRA dropout"})
    lora_target_modules: str = field(default="all-linear", metadata={
        "help": "modules to adapt: all-linear, or comma-separated names (q_proj,v_proj)"})
    # --- the trainer
    max_steps: int = field(default=-1, metadata={"help": "optimiser steps (-1: use epochs)"})
    epochs: float = field(default=1.0, metadata={"help": "passes over the training split"})
    learning_rate: float = field(default=2e-4, metadata={"help": "peak learning rate"})
    batch_size: int = field(default=4, metadata={"help": "examples per device per step"})
    gradient_accumulation: int = field(default=1, metadata={"help": "steps accumulated per optimiser step"})
    max_length: int = field(default=2048, metadata={"help": "tokens per example (longer ones are truncated)"})
    packing: bool | None = field(default=None, metadata={
        "help": "pack several examples into one row, without padding and without attention across examples "
                "(keeps completion-only loss; default: on for SFT on a GPU, off on the CPU)"})
    kernels: str = field(default="auto", metadata={
        "help": "fused training kernels: auto (liger-kernel on a CUDA GPU where it is installed and patches the "
                "model), liger, none"})
    precision: str = field(default="auto", metadata={"help": "auto (bf16 on a GPU that has it, fp32 on the CPU), "
                                                             "fp32, bf16, fp16"})
    gradient_checkpointing: bool | None = field(default=None, metadata={
        "help": "recompute activations to save memory (default: on a GPU only where the estimated activations "
                "would not fit, training/speed.py; off on the CPU)"})
    logging_steps: int = field(default=5, metadata={"help": "log the loss every N steps"})
    save_steps: int = field(default=50, metadata={"help": "checkpoint every N steps (resume point)"})
    seed: int = field(default=0, metadata={"help": "training seed"})
    beta: float = field(default=0.1, metadata={"help": "dpo: strength of the preference (DPO's beta)"})
    dpo_sft_weight: float = field(default=0.0, metadata={
        "help": "dpo: weight of a supervised term on the chosen answers added to DPO's loss (RPO: trl's loss_type "
                "sigmoid + sft), to keep the policy writing well-formed code; 0: DPO alone. Measured without it on "
                "an H100: Gemma-3-270M after 3 epochs of DPO at 5e-5 built 23 of 70 answers (docs/training.md)"})
    merge: bool = field(default=False, metadata={"help": "LoRA: also write the merged model (base + adapter) to "
                                                         "merged/"})

    def validate(self) -> None:
        if not self.data:
            raise ConfigError("give at least one dataset (a pairs.parquet, an attempts.parquet or a directory)")
        if self.method not in METHODS:
            raise ConfigError(f"--method must be one of {', '.join(METHODS)}, got {self.method!r}")
        if self.finetune not in FINETUNES:
            raise ConfigError(f"--finetune must be one of {', '.join(FINETUNES)}, got {self.finetune!r}")
        if self.kernels not in KERNELS:
            raise ConfigError(f"--kernels must be one of {', '.join(KERNELS)}, got {self.kernels!r}")
        if self.precision not in PRECISIONS:
            raise ConfigError(f"--precision must be one of {', '.join(PRECISIONS)}, got {self.precision!r}")
        if not 0.0 <= self.eval_fraction < 1.0:
            raise ConfigError("--eval-fraction must be in [0, 1)")
        for name in ("lora_r", "lora_alpha", "batch_size", "gradient_accumulation", "max_length", "logging_steps",
                     "save_steps", "token_budget"):
            if getattr(self, name) < 1:
                raise ConfigError(f"--{name.replace('_', '-')} must be at least 1")
        if not 0.0 <= self.lora_dropout < 1.0:
            raise ConfigError(f"--lora-dropout must be in [0, 1), got {self.lora_dropout}")
        if self.dpo_sft_weight < 0:
            raise ConfigError(f"--dpo-sft-weight must be 0 or more, got {self.dpo_sft_weight}")
        if self.learning_rate <= 0:
            raise ConfigError(f"--learning-rate must be above 0, got {self.learning_rate}")
        if self.max_steps == -1 and self.epochs <= 0:
            raise ConfigError(f"--epochs must be above 0 (or give --max-steps), got {self.epochs}")
        if self.max_steps == 0 or self.max_steps < -1:
            raise ConfigError("--max-steps must be a positive number of steps, or -1 to train by --epochs")
        parse_sources(self.sources)

