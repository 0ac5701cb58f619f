"""`perfforge train`: LoRA or full fine-tuning with trl (SFTTrainer, or DPOTrainer for preference pairs; peft for
LoRA).

    OUT/splits.json        which groups (patterns, repositories) went to train and to eval, and the counts
    OUT/checkpoints/       trl's checkpoints: a rerun resumes from the last one
    OUT/adapter/           the LoRA adapter (peft format: `perfforge serve --lora NAME=OUT/adapter` serves it)
    OUT/merged/            with --merge: base model + adapter as one model directory
    OUT/model/             --finetune full instead of adapter/: the whole fine-tuned model (fp32) and its tokenizer
    OUT/metrics.json       losses (first and last logged, eval), steps, tokens (without padding) per second, the
                           settings and the speed choices

The model trains in fp32 on the CPU and in bf16 on a GPU that has it (precision auto; full fine-tuning keeps fp32
master weights there and computes in bf16 autocast); on a GPU, padding-free
packing, liger-kernel's fused kernels and gradient checkpointing are chosen for speed (training.speed, recorded in
metrics.json's "speed"). Completion-only loss: trl masks the prompt tokens of prompt/completion datasets (STACK.md:
verified with trl 1.16). Multi-GPU: `accelerate launch -m perfforge.cli train ...` (docs/training.md).
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import time
from collections.abc import Iterator
from dataclasses import asdict
from pathlib import Path
from typing import Any

from perfforge.errors import ConfigError, PerfforgeError
from perfforge.io import atomic_dir, read_json, write_json
from perfforge.models import resolve_model
from training import speed
from training.config import TrainConfig
from training.examples import Example, load_examples
from training.splits import assign_splits, split


def lora_config(config: TrainConfig) -> Any:
    """Our LoRA fields as peft's LoraConfig (the one place they are translated)."""
    from peft import LoraConfig

    targets = config.lora_target_modules
    modules: str | list[str] = targets if targets == "all-linear" else [m.strip() for m in targets.split(",")]
    return LoraConfig(r=config.lora_r, lora_alpha=config.lora_alpha, lora_dropout=config.lora_dropout,
                      target_modules=modules, task_type="CAUSAL_LM")


def precision_flags(config: TrainConfig) -> dict[str, Any]:
    """bf16/fp16 and use_cpu for trl's config, from the precision and the machine (gradient checkpointing: the
    explicit setting, or the CPU's off; on a GPU `speed_choices` decides once the model's shape is known)."""
    import torch

    gpu = torch.cuda.is_available()
    precision = config.precision
    if precision == "auto":
        precision = "bf16" if gpu and torch.cuda.is_bf16_supported() else "fp32"
    if precision in ("bf16", "fp16") and not gpu:
        raise PerfforgeError(f"--precision {precision} needs a GPU; on the CPU use fp32 (or auto)")
    return {"bf16": precision == "bf16", "fp16": precision == "fp16", "use_cpu": not gpu,
            "gradient_checkpointing": bool(config.gradient_checkpointing)}


def speed_choices(config: TrainConfig, model: Any) -> speed.SpeedChoices:
    """Packing, fused kernels and gradient checkpointing for this model on this machine (training.speed)."""
    import torch

    gpu = torch.cuda.is_available()
    memory = torch.cuda.get_device_properties(0).total_memory if gpu else 0
    sequences = 2 if config.method == "dpo" else 1  # DPO runs the chosen and the rejected answer in one step
    return speed.resolve(method=config.method, packing=config.packing, kernels=config.kernels,
                         gradient_checkpointing=config.gradient_checkpointing, gpu=gpu,
                         model_type=getattr(model.config, "model_type", ""),
                         shape=speed.ModelShape.of(model) if gpu else None,
                         tokens_per_step=sequences * config.batch_size * config.max_length, gpu_memory_bytes=memory,
                         installed=speed.liger_installed(), full=config.finetune == "full")


def trainer_args(config: TrainConfig, flags: dict[str, Any], choices: speed.SpeedChoices | None = None) -> Any:
    """trl's SFTConfig or DPOConfig from our fields, precision_flags and the speed choices (None: the explicit
    settings, nothing fused; the eval split is evaluated once, after training). Tokens are counted without
    padding, so a packed and a padded run's tokens per second compare."""
    from trl import DPOConfig, SFTConfig

    if choices is not None:
        flags = {**flags, "gradient_checkpointing": choices.gradient_checkpointing,
                 "use_liger_kernel": choices.liger}
    packing = bool(config.packing) if choices is None else choices.packing

    common = dict(output_dir=str(config.out / "checkpoints"), max_steps=config.max_steps,
                  num_train_epochs=config.epochs, learning_rate=config.learning_rate,
                  per_device_train_batch_size=config.batch_size, per_device_eval_batch_size=config.batch_size,
                  gradient_accumulation_steps=config.gradient_accumulation, logging_steps=config.logging_steps,
                  save_steps=config.save_steps, save_total_limit=2, seed=config.seed, report_to="none",
                  max_length=config.max_length, eval_strategy="no", include_num_input_tokens_seen="non_padding",
                  **flags)
    if config.method == "dpo":
        if config.dpo_sft_weight > 0:  # RPO: DPO's sigmoid loss plus the chosen answers' negative log-likelihood
            return DPOConfig(beta=config.beta, loss_type=["sigmoid", "sft"],
                             loss_weights=[1.0, config.dpo_sft_weight], **common)
        return DPOConfig(beta=config.beta, **common)
    return SFTConfig(packing=packing, completion_only_loss=True, **common)


def prepare(config: TrainConfig) -> tuple[list[Example], list[Example], dict[str, Any]]:
    """The examples, split by group; the split's description (written to splits.json)."""
    examples = load_examples(config.data, method=config.method, sources=config.sources,
                             token_budget=config.token_budget, max_code_chars=config.max_code_chars)
    assignment = assign_splits(examples, eval_fraction=config.eval_fraction, holdout=config.holdout,
                               seed=config.split_seed)
    train, held = split(examples, assignment)
    if not train:
        raise PerfforgeError(f"every one of the {len(examples)} examples fell in the eval split; lower "
                             "--eval-fraction or hold out fewer groups")
    description = {"groups": dict(sorted(assignment.items())), "train_examples": len(train),
                   "eval_examples": len(held), "eval_fraction": config.eval_fraction, "holdout": config.holdout,
                   "split_seed": config.split_seed}
    return train, held, description


def train(config: TrainConfig, log=print) -> dict[str, Any]:  # noqa: ANN001 (a print-like callable)
    """Train (or resume), save the adapter (and the merged model), and return the metrics written."""
    import datasets
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from transformers.trainer_utils import get_last_checkpoint

    checkpoints = config.out / "checkpoints"
    resume = get_last_checkpoint(str(checkpoints)) if checkpoints.is_dir() else None
    if resume:
        log(f"resuming from {resume}")
        if _finished(config, Path(resume)):
            log(f"already trained to --max-steps {config.max_steps}: nothing to do")
            return read_json(config.out / "metrics.json")
    _one_gpu_per_process()
    flags = precision_flags(config)  # a precision this machine cannot train in fails before any work
    train_examples, eval_examples, description = prepare(config)
    if is_main_process():
        write_json(config.out / "splits.json", description)
    log(f"{description['train_examples']} training and {description['eval_examples']} eval examples "
        f"({sum(v == 'eval' for v in description['groups'].values())} of {len(description['groups'])} groups "
        "held out)")
    model_dir = resolve_model(config.base_model)
    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    train_examples, eval_examples = fitting(train_examples, eval_examples, tokenizer, config.max_length, log)
    model = AutoModelForCausalLM.from_pretrained(model_dir, dtype=_load_dtype(flags, config.finetune))
    train_set = datasets.Dataset.from_list([e.row() for e in train_examples])
    eval_set = datasets.Dataset.from_list([e.row() for e in eval_examples]) if eval_examples else None
    choices = speed_choices(config, model)
    log("; ".join(choices.reasons))
    with modeling_modules_restored():  # liger-kernel's patches end with the training
        trainer = _trainer(config, flags, choices, model, tokenizer, train_set, eval_set)
        if len(trainer.train_dataset) == 0:
            raise PerfforgeError(f"no training example fits --max-length {config.max_length} tokens (trl drops "
                                 "examples whose prompt alone fills it); raise --max-length")
        started = time.monotonic()
        result = trainer.train(resume_from_checkpoint=resume)
        seconds = time.monotonic() - started
        metrics = _metrics(config, trainer, result, seconds, eval_set, str(model_dir))  # every rank evaluates
        metrics["speed"] = choices.as_dict()
        if trainer.is_world_process_zero():  # under accelerate launch, one process writes the outputs
            if config.finetune == "full":
                _save_model(trainer.model, tokenizer, config.out / "model")
            else:
                _save_adapter(trainer, config.out / "adapter")
            if config.merge and config.finetune == "lora":
                _save_model(trainer.model.merge_and_unload(), tokenizer, config.out / "merged")
            write_json(config.out / "metrics.json", metrics)
    trainer.accelerator.wait_for_everyone()
    return metrics


@contextlib.contextmanager
def modeling_modules_restored() -> Iterator[None]:
    """Put back what transformers' modeling modules held when the block ends. liger-kernel patches the modules of
    the model's family, not only the model it is given (for Gemma 3: the module's apply_rotary_pos_emb,
    Gemma3RMSNorm and Gemma3MLP; with no model, the causal LM class's forward), so a model of that family loaded
    later in the same process (iterate samples each round after training it) would generate through the training
    kernels. Iterate's Gemma-3 samples after an in-process training were garbage past the second row of a batch,
    while the same SFT weights in the eval's process (no training there) were clean: the likely cause, not yet
    confirmed on a GPU (docs/eval_cpu_h100.md)."""
    modules = [module for name, module in list(sys.modules.items())
               if name.startswith("transformers.models.") and ".modeling_" in name and module is not None]
    saved = [(module, dict(vars(module))) for module in modules]
    forwards = [(cls, cls.__dict__["forward"]) for module in modules for cls in list(vars(module).values())
                if isinstance(cls, type) and cls.__module__ == module.__name__ and "forward" in cls.__dict__]
    try:
        yield
    finally:
        for module, names in saved:
            current = vars(module)
            for name, value in names.items():
                if current.get(name) is not value:
                    setattr(module, name, value)
        for cls, forward in forwards:
            if cls.__dict__.get("forward") is not forward:
                cls.forward = forward


def _one_gpu_per_process() -> None:
    """trl refuses the nn.DataParallel that Trainer falls back to when one process sees several GPUs; say how to
    launch instead of failing deep inside the trainer."""
    import torch

    visible = torch.cuda.device_count() if torch.cuda.is_available() else 0
    if visible > 1 and "WORLD_SIZE" not in os.environ:
        raise ConfigError(f"{visible} GPUs are visible to one process: launch one process per GPU with `accelerate "
                          f"launch --num_processes {visible} -m perfforge.cli train ...`, or pick one GPU with "
                          "CUDA_VISIBLE_DEVICES=0")


def is_main_process() -> bool:
    """True unless this is a secondary process of a distributed launch (accelerate/torchrun set RANK)."""
    return int(os.environ.get("RANK", "0")) == 0


def _finished(config: TrainConfig, checkpoint: Path) -> bool:
    """A rerun of a finished command: its last checkpoint reached --max-steps and its outputs are written."""
    state = checkpoint / "trainer_state.json"
    if config.max_steps < 1 or not state.is_file() or not (config.out / "metrics.json").is_file():
        return False
    return read_json(state).get("global_step", 0) >= config.max_steps and (config.out / output_dir(config)).is_dir()


def output_dir(config: TrainConfig) -> str:
    """What a finished training leaves: the adapter (LoRA) or the whole model (full)."""
    return "model" if config.finetune == "full" else "adapter"


def _load_dtype(flags: dict[str, Any], finetune: str = "lora") -> Any:
    """The weights' dtype: fp32 unless LoRA trains in bf16/fp16 (a bf16 checkpoint would otherwise keep bf16
    weights on the CPU, where precision auto means fp32). Full fine-tuning updates every weight: fp32 master
    weights, which small updates of bf16 ones would round away, with the step computed in bf16 autocast."""
    import torch

    if finetune == "full":
        return torch.float32
    return torch.bfloat16 if flags["bf16"] else torch.float16 if flags["fp16"] else torch.float32


def fitting(train_examples: list[Example], eval_examples: list[Example], tokenizer: Any, max_length: int,
            log=print) -> tuple[list[Example], list[Example]]:  # noqa: ANN001 (a print-like callable)
    """The examples whose whole conversation fits max_length tokens. trl cuts a longer one at max_length: its answer
    loses the closing fence and the end-of-turn token, and a model trained on it never learns to stop."""
    def fits(example: Example) -> bool:
        answers = [example.completion] + ([example.rejected] if example.rejected else [])
        return all(_token_count(tokenizer, example.prompt + answer) <= max_length for answer in answers)

    kept_train = [e for e in train_examples if fits(e)]
    kept_eval = [e for e in eval_examples if fits(e)]
    dropped = len(train_examples) + len(eval_examples) - len(kept_train) - len(kept_eval)
    if dropped:
        log(f"{dropped} examples longer than --max-length {max_length} tokens left out (cut, they would teach no "
            "end of answer); raise --max-length or lower --max-code-chars to keep them")
    if not kept_train:
        raise PerfforgeError(f"no training example fits --max-length {max_length} tokens; raise --max-length or "
                             "lower --max-code-chars")
    return kept_train, kept_eval


def _token_count(tokenizer: Any, messages: list[dict[str, str]]) -> int:
    encoded = tokenizer.apply_chat_template(messages, tokenize=True)
    return len(encoded["input_ids"] if hasattr(encoded, "keys") else encoded)


def _trainer(config: TrainConfig, flags: dict[str, Any], choices: speed.SpeedChoices, model: Any, tokenizer: Any,
             train_set: Any, eval_set: Any) -> Any:
    from trl import DPOTrainer, SFTTrainer

    cls = DPOTrainer if config.method == "dpo" else SFTTrainer
    try:
        return cls(model=model, args=trainer_args(config, flags, choices), train_dataset=train_set,
                   eval_dataset=eval_set, processing_class=tokenizer,
                   peft_config=lora_config(config) if config.finetune == "lora" else None)
    except ValueError as exc:  # peft's NoMatchingPeftModuleError is one: no module of the model matches
        if "target_module" not in str(exc).lower() and "target module" not in str(exc).lower():
            raise
        raise ConfigError(f"--lora-target-modules {config.lora_target_modules}: {str(exc).splitlines()[0]}") from None


def _metrics(config: TrainConfig, trainer: Any, result: Any, seconds: float, eval_set: Any,
             model_dir: str) -> dict[str, Any]:
    losses = [entry["loss"] for entry in trainer.state.log_history if "loss" in entry]
    metrics: dict[str, Any] = {
        "method": config.method, "finetune": config.finetune, "base_model": model_dir,
        "steps": trainer.state.global_step,
        "trainable_parameters": sum(p.numel() for p in trainer.model.parameters() if p.requires_grad),
        "train_loss": result.training_loss, "first_logged_loss": losses[0] if losses else None,
        "last_logged_loss": losses[-1] if losses else None, "losses": losses,
        "train_seconds": round(seconds, 3), "processes": trainer.args.world_size,
        "train_samples_per_second": (result.metrics or {}).get("train_samples_per_second"),
        "settings": json.loads(json.dumps(asdict(config), default=str)),  # paths as strings
    }
    # after a resume the counter includes the earlier session's tokens; this session's rate uses its own
    tokens = getattr(trainer.state, "num_input_tokens_seen", 0) - getattr(trainer, "_initial_num_input_tokens_seen", 0)
    metrics["train_tokens"] = tokens
    metrics["train_tokens_per_second"] = round(tokens / max(seconds, 1e-9), 1) if tokens else None
    if eval_set is not None:
        metrics["eval_loss"] = trainer.evaluate().get("eval_loss")
    return metrics


def _save_adapter(trainer: Any, target: Path) -> None:
    """The adapter, written beside and renamed into place (a crash never leaves half an adapter)."""
    with atomic_dir(target) as staging:
        trainer.model.save_pretrained(str(staging))


def _save_model(model: Any, tokenizer: Any, target: Path) -> None:
    """A whole model with its tokenizer (fully fine-tuned, or base + adapter merged): a model directory like the
    base model's, renamed into place."""
    with atomic_dir(target) as staging:
        model.save_pretrained(str(staging))
        tokenizer.save_pretrained(str(staging))
