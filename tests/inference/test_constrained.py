"""Answers that always parse (inference/constrained.py): the answer format enforced while the tests' tiny chat model
(random weights: it never writes a fence of its own) samples, through transformers' generate and the backend."""

from __future__ import annotations

from pathlib import Path

import pytest

from inference.constrained import LABEL_TOKENS, format_processor
from perfforge.prompt import parse_answer

MESSAGES = [{"role": "user", "content": "Make this faster and answer with the whole file:\n```c\nvoid f(void) {}\n```"}]


def _sample(tiny_model: Path, *, constrained: bool, max_new_tokens: int, seeds: range) -> list[str]:
    return [text for text, _ in _sample_ids(tiny_model, constrained=constrained, max_new_tokens=max_new_tokens,
                                            seeds=seeds)]


def _sample_ids(tiny_model: Path, *, constrained: bool, max_new_tokens: int,
                seeds: range) -> list[tuple[str, list[int]]]:
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(tiny_model)
    model = AutoModelForCausalLM.from_pretrained(tiny_model).eval()
    inputs = tokenizer.apply_chat_template(MESSAGES, add_generation_prompt=True, return_tensors="pt", return_dict=True)
    prompt = int(inputs["input_ids"].shape[1])
    stops = [tokenizer.eos_token_id, tokenizer.convert_tokens_to_ids("<|im_end|>")]
    texts = []
    for seed in seeds:
        torch.manual_seed(seed)
        extra = {"logits_processor": format_processor(tokenizer, "c", stop_ids=stops, prompt_tokens=prompt,
                                                      max_new_tokens=max_new_tokens)} if constrained else {}
        with torch.no_grad():
            out = model.generate(**inputs, max_new_tokens=max_new_tokens, do_sample=True, temperature=1.0,
                                 num_return_sequences=2, pad_token_id=tokenizer.eos_token_id, eos_token_id=stops,
                                 **extra)
        texts += [(tokenizer.decode(row[prompt:], skip_special_tokens=True), row[prompt:].tolist()) for row in out]
    return texts


@pytest.mark.parametrize("max_new_tokens", [24, 120])
def test_every_sampled_answer_parses_when_constrained(tiny_model: Path, max_new_tokens: int) -> None:
    """Ten sampled answers of a model that writes noise: each reads as hypothesis, evidence and one closed code
    block, also when the budget leaves room for little more than the format itself (24 tokens)."""
    texts = _sample(tiny_model, constrained=True, max_new_tokens=max_new_tokens, seeds=range(5))
    for text in texts:
        answer = parse_answer(text, language="c")
        assert answer.ok, (answer.problem, text)
        assert text.startswith("Hypothesis:") and "\nEvidence:" in text and text.rstrip().endswith("```")
        assert answer.hypothesis or text.startswith("Hypothesis:\n")


def test_the_same_model_unconstrained_writes_no_readable_answer(tiny_model: Path) -> None:
    """The baseline the constraint is measured against (docs/training.md): the tiny model's own answers."""
    texts = _sample(tiny_model, constrained=False, max_new_tokens=120, seeds=range(5))
    assert sum(parse_answer(t, language="c").ok for t in texts) < len(texts)


def test_a_label_line_is_cut_at_its_cap(tiny_model: Path) -> None:
    """A hypothesis that runs on (noise has few newlines) is cut by a forced newline, so the file keeps its
    budget: the hypothesis line holds at most LABEL_TOKENS tokens of the model's."""
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(tiny_model)
    (newline,) = tokenizer.encode("\n", add_special_tokens=False)
    forced = len(tokenizer.encode("Hypothesis:", add_special_tokens=False))
    for _, ids in _sample_ids(tiny_model, constrained=True, max_new_tokens=600, seeds=range(2)):
        assert ids.index(newline) - forced <= LABEL_TOKENS


def test_the_transformers_backend_constrains_when_given_a_fence(tiny_model: Path) -> None:
    from inference.backends import TransformersBackend

    backend = TransformersBackend(str(tiny_model))
    constrained = backend.generate(MESSAGES, n=3, max_tokens=60, temperature=1.0, seed=3, fence="c")
    assert all(parse_answer(c.text, language="c").ok for c in constrained)
    assert all(c.finish_reason == "stop" for c in constrained)  # closed and stopped, not cut


def test_a_cuda_block_cannot_close_before_it_defines_and_launches_a_kernel(tiny_model: Path) -> None:
    """Scenario: SmolLM2 closed 30 of 48 CUDA answers on host-only code (no __global__ kernel), which the judge's
    static check rejects unread. In a CUDA block no token with a backtick may be taken (so no closing fence) until
    the code holds a __global__ kernel and a launch; a C block closes whenever it likes."""
    import torch
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(tiny_model)

    def ids(text: str) -> list[int]:
        return tokenizer.encode(text, add_special_tokens=False)

    backtick = ids("`")[0]

    def backtick_masked(fence: str, code: str) -> bool:
        walked = (ids("Hypothesis:") + ids(" h") + ids("\n") + ids("Evidence:") + ids(" e") + ids("\n")
                  + ids(f"```{fence}\n") + ids(code))
        processor = format_processor(tokenizer, fence, stop_ids=[tokenizer.eos_token_id], prompt_tokens=0,
                                     max_new_tokens=400)[0]
        for k in range(len(walked) + 1):  # one generation step per token, as generate() calls it
            scores = processor(torch.tensor([walked[:k]]), torch.zeros(1, len(tokenizer)))
        return bool(scores[0, backtick] == float("-inf"))

    host_only = "void add(float *a, int n) {\n    for (int i = 0; i < n; i++) a[i] += 1;\n}\n"
    kernel = "__global__ void add(float *a, int n) { a[threadIdx.x] += 1; }\n"
    assert backtick_masked("cuda", host_only)
    assert backtick_masked("cuda", kernel)  # defined, not launched yet
    assert not backtick_masked("cuda", kernel + "void run(float *a, int n) { add<<<1, n>>>(a, n); }\n")
    assert not backtick_masked("cuda", kernel + "void run(void **args) { cudaLaunchKernel((void *)add); }\n")
    assert not backtick_masked("c", host_only)


def test_the_servers_regex_asks_the_same_of_a_cuda_block() -> None:
    import re

    from inference.constrained import answer_regex

    def matches(fence: str, code: str) -> bool:
        return re.fullmatch(answer_regex(fence), f"Hypothesis: h\nEvidence: e\n```{fence}\n{code}\n```") is not None

    launch = "__global__ void k(int *a) { a[0] = 1; }\nvoid run(int *a) { k<<<1, 1>>>(a); }"
    assert matches("cuda", launch) and matches("cuda", "void run(int *a) { k<<<1, 1>>>(a); }\n__global__ void k();")
    assert not matches("cuda", "void run(int *a) { a[0] = 1; }") and not matches("cuda", "__global__ void k();")
    assert matches("c", "void run(int *a) { a[0] = 1; }")


@pytest.mark.parametrize("max_new_tokens", [40, 160])
def test_every_sampled_cuda_answer_parses_when_constrained(tiny_model: Path, max_new_tokens: int) -> None:
    """Noise never writes a kernel: a CUDA block runs on to the budget, where its fence is still forced in time."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(tiny_model)
    model = AutoModelForCausalLM.from_pretrained(tiny_model).eval()
    inputs = tokenizer.apply_chat_template(MESSAGES, add_generation_prompt=True, return_tensors="pt", return_dict=True)
    prompt = int(inputs["input_ids"].shape[1])
    stops = [tokenizer.eos_token_id, tokenizer.convert_tokens_to_ids("<|im_end|>")]
    torch.manual_seed(0)
    with torch.no_grad():
        out = model.generate(**inputs, max_new_tokens=max_new_tokens, do_sample=True, temperature=1.0,
                             num_return_sequences=3, pad_token_id=tokenizer.eos_token_id, eos_token_id=stops,
                             logits_processor=format_processor(tokenizer, "cuda", stop_ids=stops,
                                                               prompt_tokens=prompt, max_new_tokens=max_new_tokens))
    for row in out:
        text = tokenizer.decode(row[prompt:], skip_special_tokens=True)
        answer = parse_answer(text, language="cuda")
        assert answer.ok, (answer.problem, text)
