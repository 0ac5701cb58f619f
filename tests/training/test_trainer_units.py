"""The trainer's launch checks: one process per GPU, and one writer under a distributed launch."""

from __future__ import annotations

import pytest
import torch

from perfforge.errors import ConfigError
from training import trainer


def test_several_gpus_in_one_process_is_one_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 2)
    monkeypatch.delenv("WORLD_SIZE", raising=False)
    with pytest.raises(ConfigError, match="accelerate launch --num_processes 2"):
        trainer._one_gpu_per_process()
    monkeypatch.setenv("WORLD_SIZE", "2")  # under accelerate launch each process has its own GPU
    trainer._one_gpu_per_process()


def test_only_rank_zero_is_the_main_process(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("RANK", raising=False)
    assert trainer.is_main_process()
    monkeypatch.setenv("RANK", "1")
    assert not trainer.is_main_process()
    monkeypatch.setenv("RANK", "0")
    assert trainer.is_main_process()
