"""What `perfforge train` does with its config, and prints."""

from __future__ import annotations

import sys

from training.config import TrainConfig


def run_train(config: TrainConfig) -> int:
    from training.trainer import is_main_process, train

    def log(message: str) -> None:
        if is_main_process():  # under accelerate launch every process runs this; one speaks
            print(message, file=sys.stderr, flush=True)

    try:
        metrics = train(config, log=log)
    except KeyboardInterrupt:
        log(f"interrupted: checkpoints are kept in {config.out / 'checkpoints'}; run the same command to resume")
        return 130
    if not is_main_process():
        return 0
    first, last = metrics["first_logged_loss"], metrics["last_logged_loss"]
    losses = f"loss {first:.4f} -> {last:.4f}" if first is not None and last is not None else \
        f"train loss {metrics['train_loss']:.4f}"
    eval_loss = f", eval loss {metrics['eval_loss']:.4f}" if metrics.get("eval_loss") is not None else ""
    speed = f", {metrics['train_tokens_per_second']:.0f} tokens/s" if metrics.get("train_tokens_per_second") else ""
    print(f"{config.method}: {metrics['steps']} steps in {metrics['train_seconds']:.1f} s, {losses}{eval_loss}{speed}")
    for name in ("adapter", "model", "merged", "metrics.json", "splits.json"):
        path = config.out / name
        if path.exists():
            print(f"{name:>12}: {path}")
    return 0

