"""Training speed choices (training/speed.py): pure decisions tested without a GPU, and the packing they turn on
checked for cross-contamination on a real tiny model and trl's real padding-free collator."""

from __future__ import annotations

import pytest

from perfforge.errors import ConfigError
from training import speed

# SmolLM2-135M-Instruct's shape (its config.json) and a 7B Llama's.
SMOLLM2 = speed.ModelShape(parameters=134_515_008, layers=30, hidden=576, intermediate=1536, vocab=49152)
LLAMA_7B = speed.ModelShape(parameters=6_738_415_616, layers=32, hidden=4096, intermediate=11008, vocab=32000)
GIB = 1 << 30


def choose(**overrides: object) -> speed.SpeedChoices:
    settings = dict(method="sft", packing=None, kernels="auto", gradient_checkpointing=None, gpu=True,
                    model_type="llama", shape=SMOLLM2, tokens_per_step=4 * 2048, gpu_memory_bytes=80 * GIB,
                    installed=True)
    settings.update(overrides)
    return speed.resolve(**settings)  # type: ignore[arg-type]


def test_on_a_gpu_auto_packs_fuses_and_keeps_activations_of_a_small_model() -> None:
    choices = choose()
    assert choices.packing and choices.liger and not choices.gradient_checkpointing
    assert any("GiB against 70% of 80 GiB" in reason for reason in choices.reasons)


def test_on_the_cpu_auto_changes_nothing() -> None:
    choices = choose(gpu=False, gpu_memory_bytes=0)
    assert not choices.packing and not choices.liger and not choices.gradient_checkpointing


def test_activations_that_do_not_fit_turn_checkpointing_on() -> None:
    assert choose(shape=LLAMA_7B, tokens_per_step=8 * 4096, gpu_memory_bytes=40 * GIB).gradient_checkpointing
    assert not choose(shape=LLAMA_7B, tokens_per_step=1 * 512, gpu_memory_bytes=80 * GIB).gradient_checkpointing


def test_full_finetuning_counts_master_weights_gradients_and_optimiser_states() -> None:
    """A 7B Llama whose bf16 weights and short steps fit 80 GiB under LoRA does not fit fully fine-tuned (16 bytes a
    parameter: 100 GiB before activations), so checkpointing turns on and the reason names what was counted."""
    lora = choose(shape=LLAMA_7B, tokens_per_step=1 * 512, gpu_memory_bytes=80 * GIB)
    full = choose(shape=LLAMA_7B, tokens_per_step=1 * 512, gpu_memory_bytes=80 * GIB, full=True)
    assert not lora.gradient_checkpointing and full.gradient_checkpointing
    assert any("weights, gradients, optimiser states and activations" in reason for reason in full.reasons)
    assert not choose(full=True).gradient_checkpointing  # SmolLM2: 2 GiB of states


def test_the_estimate_grows_with_the_tokens_of_a_step_and_counts_no_logits() -> None:
    """trl's chunked LM head keeps no logits: a model with a larger vocabulary needs no more activations."""
    assert speed.activation_bytes(SMOLLM2, 8192) == 2 * speed.activation_bytes(SMOLLM2, 4096)
    wide = speed.ModelShape(**{**SMOLLM2.__dict__, "vocab": 262144})
    assert speed.activation_bytes(wide, 8192) == speed.activation_bytes(SMOLLM2, 8192)


def test_explicit_settings_win_over_auto() -> None:
    choices = choose(packing=False, kernels="none", gradient_checkpointing=True)
    assert not choices.packing and not choices.liger and choices.gradient_checkpointing


def test_auto_leaves_out_liger_where_it_cannot_run() -> None:
    assert not choose(installed=False).liger
    assert not choose(model_type="gpt2").liger
    assert not choose(method="dpo").packing


@pytest.mark.parametrize(("overrides", "message"), [
    ({"kernels": "liger", "gpu": False}, "needs a CUDA GPU"),
    ({"kernels": "liger", "installed": False}, "pip install liger-kernel"),
    ({"kernels": "liger", "model_type": "gpt2"}, "does not patch model type 'gpt2'"),
    ({"packing": True, "method": "dpo"}, "SFT only"),
])
def test_a_setting_this_machine_cannot_honour_is_one_clear_error(overrides: dict, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        choose(**overrides)


def test_a_packed_row_attends_within_each_example_only() -> None:
    """trl's padding-free collator packs two examples into one row (no attention mask, position ids restarting at
    0); each example's logits in the packed row equal its logits alone, so no token saw the other example. The
    forward runs as trl's SFTTrainer.compute_loss runs it, with use_cache=False: transformers looks for packed
    rows only where there is no cache."""
    import torch
    from trl.trainer.sft_trainer import DataCollatorForLanguageModeling

    from tests.inference.tiny_model import TINY_SHAPE, build_tokenizer, random_chat_model

    tokenizer = build_tokenizer()
    model = random_chat_model(tokenizer, TINY_SHAPE, initializer_range=0.2).eval()
    model.config._attn_implementation = "sdpa"
    first = tokenizer("for (int i = 0; i < n; ++i) out[i] = a[i] * b[i];")["input_ids"]
    second = tokenizer("__global__ void k(float *x) { x[threadIdx.x] += 1.0f; }")["input_ids"]
    batch = DataCollatorForLanguageModeling(pad_token_id=tokenizer.pad_token_id, padding_free=True)(
        [{"input_ids": first}, {"input_ids": second}])
    assert "attention_mask" not in batch and batch["input_ids"].shape == (1, len(first) + len(second))
    with torch.no_grad():
        packed = model(input_ids=batch["input_ids"], position_ids=batch["position_ids"], use_cache=False).logits[0]
        alone = [model(input_ids=torch.tensor([ids])).logits[0] for ids in (first, second)]
    torch.testing.assert_close(packed[:len(first)], alone[0], rtol=1e-4, atol=1e-4)
    torch.testing.assert_close(packed[len(first):], alone[1], rtol=1e-4, atol=1e-4)
    # and the check can fail: the same row with one running position sequence mixes the examples
    with torch.no_grad():
        mixed = model(input_ids=batch["input_ids"], use_cache=False).logits[0]
    assert not torch.allclose(mixed[len(first):], alone[1], rtol=1e-4, atol=1e-4)


def test_patches_of_the_modeling_modules_end_with_the_training() -> None:
    """liger-kernel replaces functions and classes of a family's transformers module (Gemma 3: apply_rotary_pos_emb,
    Gemma3RMSNorm, Gemma3MLP, and with no model the causal LM's forward): a model of that family loaded after an
    in-process training (iterate's next round of sampling) must not run them. The patches are made here by hand,
    as liger makes them, inside the block training runs in."""
    from transformers.models.gemma3 import modeling_gemma3

    from training.trainer import modeling_modules_restored

    rope, norm, forward = (modeling_gemma3.apply_rotary_pos_emb, modeling_gemma3.Gemma3RMSNorm,
                           modeling_gemma3.Gemma3ForCausalLM.forward)
    with modeling_modules_restored():
        modeling_gemma3.apply_rotary_pos_emb = lambda *args, **kwargs: None
        modeling_gemma3.Gemma3RMSNorm = type("Patched", (), {})
        modeling_gemma3.Gemma3ForCausalLM.forward = lambda self, *args, **kwargs: None
        assert modeling_gemma3.apply_rotary_pos_emb is not rope
    assert modeling_gemma3.apply_rotary_pos_emb is rope and modeling_gemma3.Gemma3RMSNorm is norm
    assert modeling_gemma3.Gemma3ForCausalLM.forward is forward
