"""How `perfforge train` trains fast on a GPU without changing what it learns: padding-free packing, fused kernels,
and gradient checkpointing only where the activations would not fit.

Each choice is exact up to floating-point rounding, so it changes tokens per second, not the loss a step reaches:
- **Packing without cross-contamination.** trl's best-fit-decreasing packing puts several examples in one row and
  drops the padding; the collator sends no attention mask but position ids that restart at 0 for each example, and
  transformers' mask builder (masking_utils.find_packed_sequence_indices) turns those restarts into a
  block-diagonal causal mask, so no token attends across examples (tests/training/test_speed.py checks the
  logits of a packed row against each example alone).
- **Fused kernels** from liger-kernel (RMSNorm, RoPE, SwiGLU), on CUDA only: they are Triton kernels. Its fused
  linear + cross-entropy is not used: trl 1.16 turns it off and computes the loss through its own chunked LM head
  (`add_fused_lm_head`), so no step keeps the whole logits, with or without liger.
- **Gradient checkpointing** recomputes the forward pass in the backward one (a third more compute, and many more
  launches for small models); it is turned on only when the estimated activations do not fit.

All decisions are pure functions of the configuration, the model's shape and the GPU's memory (tested without a
GPU); `resolve` is the one place they are made, and metrics.json records what was chosen.
"""

from __future__ import annotations

import importlib.util
from dataclasses import dataclass
from typing import Any

from perfforge.errors import ConfigError

# The model families liger-kernel 0.8 patches by model_type (liger_kernel.transformers.monkey_patch's table): the
# two models that reach these machines (llama for SmolLM2, gemma3_text for Gemma-3-270M) and their neighbours.
LIGER_MODEL_TYPES = frozenset({"llama", "mistral", "mixtral", "gemma", "gemma2", "gemma3", "gemma3_text", "qwen2",
                               "qwen3", "phi3", "olmo2", "granite"})

# Share of the GPU's memory the estimate may fill before checkpointing is turned on: the estimate leaves out the
# allocator's fragmentation, cuBLAS workspaces and the CUDA context (about 0.5-1 GiB), hence the margin.
MEMORY_SHARE = 0.7
BF16_BYTES = 2
# Full fine-tuning keeps fp32 master weights (4 bytes), their fp32 gradients (4) and AdamW's two moments (8) per
# parameter; bf16 autocast computes the step.
FULL_FINETUNE_BYTES = 16


@dataclass(frozen=True)
class ModelShape:
    """What the activation estimate needs of a decoder-only model's config."""

    parameters: int
    layers: int
    hidden: int
    intermediate: int
    vocab: int

    @classmethod
    def of(cls, model: Any) -> ModelShape:
        config = getattr(model.config, "text_config", None) or model.config
        return cls(parameters=sum(p.numel() for p in model.parameters()), layers=config.num_hidden_layers,
                   hidden=config.hidden_size, intermediate=getattr(config, "intermediate_size", 4 * config.hidden_size),
                   vocab=config.vocab_size)


def activation_bytes(shape: ModelShape, tokens_per_step: int) -> int:
    """Activations kept for the backward pass of one step without recomputation, in bytes (bf16).

    Per token and layer, after Korthikanti et al. 2022 ("Reducing activation recomputation in large transformer
    models", table 2) with an attention kernel that keeps no score matrix (SDPA's flash and memory-efficient
    backends): attention 11h (inputs of the QKV and output projections, Q, K, V, the output) plus two norms 4h,
    and a gated MLP's input 2h plus gate, up and activation outputs 6i, where the paper's GELU MLP has 19h. No
    logits: trl 1.16's SFT and DPO trainers compute the loss through their own chunked LM head
    (add_fused_lm_head), which never keeps them whole, with or without liger-kernel."""
    per_token_layer = (17 * shape.hidden + 6 * shape.intermediate)  # bytes in bf16: the coefficients count bytes
    return tokens_per_step * shape.layers * per_token_layer


def needs_checkpointing(shape: ModelShape, tokens_per_step: int, gpu_memory_bytes: int, *, full: bool = False) -> bool:
    """Whether the weights and the step's activations would exceed MEMORY_SHARE of the GPU. With LoRA the weights are
    bf16 and the adapter's own parameters, gradients and optimiser states (a fraction of a percent) are left out;
    full fine-tuning counts FULL_FINETUNE_BYTES per parameter."""
    return _estimate_bytes(shape, tokens_per_step, full=full) > MEMORY_SHARE * gpu_memory_bytes


def _estimate_bytes(shape: ModelShape, tokens_per_step: int, *, full: bool = False) -> int:
    per_parameter = FULL_FINETUNE_BYTES if full else BF16_BYTES
    return per_parameter * shape.parameters + activation_bytes(shape, tokens_per_step)


def liger_installed() -> bool:
    return importlib.util.find_spec("liger_kernel") is not None


@dataclass(frozen=True)
class SpeedChoices:
    """What `resolve` chose, with the reason for each (recorded in metrics.json)."""

    packing: bool
    liger: bool
    gradient_checkpointing: bool
    reasons: tuple[str, ...]

    def as_dict(self) -> dict[str, Any]:
        return {"packing": self.packing, "liger_kernel": self.liger,
                "gradient_checkpointing": self.gradient_checkpointing, "reasons": list(self.reasons)}


def resolve(*, method: str, packing: bool | None, kernels: str, gradient_checkpointing: bool | None, gpu: bool,
            model_type: str, shape: ModelShape | None, tokens_per_step: int, gpu_memory_bytes: int,
            installed: bool, full: bool = False) -> SpeedChoices:
    """The speed settings of one training run. None and "auto" mean: what is fastest here without changing the
    loss. Raises ConfigError for a setting this machine or model cannot honour (liger asked for on the CPU, not
    installed, or for a model family it does not patch)."""
    reasons = []
    sft = method == "sft"
    if packing is None:
        packing = gpu and sft
        reasons.append("packing " + ("on: padding-free, no attention across examples" if packing else
                                     "off: " + ("DPO pairs are not packed" if not sft else "the CPU default")))
    elif packing and not sft:
        raise ConfigError("--packing applies to SFT only: DPO compares whole chosen and rejected answers")
    if kernels == "liger":
        if not gpu:
            raise ConfigError("--kernels liger needs a CUDA GPU (its kernels are Triton's); use --kernels none")
        if not installed:
            raise ConfigError("--kernels liger: liger-kernel is not installed; `pip install liger-kernel` "
                              "(docs/training.md), or use --kernels none")
        if model_type not in LIGER_MODEL_TYPES:
            raise ConfigError(f"--kernels liger: liger-kernel does not patch model type {model_type!r}; "
                              "use --kernels none")
        liger = True
    elif kernels == "auto":
        liger = gpu and installed and model_type in LIGER_MODEL_TYPES
        reasons.append("liger-kernel " + ("on" if liger else "off: " + (
            "no CUDA GPU" if not gpu else "not installed" if not installed else f"model type {model_type!r}")))
    else:
        liger = False
    if gradient_checkpointing is None:
        if not gpu or shape is None:
            gradient_checkpointing = False
            reasons.append("gradient checkpointing off: the CPU default")
        else:
            gradient_checkpointing = needs_checkpointing(shape, tokens_per_step, gpu_memory_bytes, full=full)
            estimate = _estimate_bytes(shape, tokens_per_step, full=full)
            reasons.append(f"gradient checkpointing {'on' if gradient_checkpointing else 'off'}: weights"
                           + (", gradients, optimiser states" if full else "") + " and "
                           f"activations {estimate / 2**30:.1f} GiB against {MEMORY_SHARE:.0%} of "
                           f"{gpu_memory_bytes / 2**30:.0f} GiB")
    return SpeedChoices(packing=packing, liger=liger, gradient_checkpointing=gradient_checkpointing,
                        reasons=tuple(reasons))
