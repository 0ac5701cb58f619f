"""eval's --backend transformers: each configuration's model loaded in this process (the base model; an adapter
merged into its own copy), a request's candidates sampled as one batch, for machines where vLLM has no GPU build.
The tiny random chat model of tests/inference and a LoRA adapter made here with peft, its B matrices set so that it
changes the output."""

from __future__ import annotations

from pathlib import Path

import pytest

from eval.config import EvalConfig
from eval.configurations import BASE, Endpoints, ModelConfiguration
from perfforge.errors import ConfigError

MESSAGES = [{"role": "user", "content": "Make this loop faster: for (i = 0; i < n; i++) s += a[i];"}]


@pytest.fixture(scope="module")
def adapter(tiny_model: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    import torch
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM

    torch.manual_seed(0)
    model = AutoModelForCausalLM.from_pretrained(tiny_model, dtype=torch.float32)
    peft_model = get_peft_model(model, LoraConfig(r=4, lora_alpha=8, target_modules=["q_proj", "v_proj"]))
    with torch.no_grad():  # peft starts B at zero (the adapter would change nothing)
        for name, parameter in peft_model.named_parameters():
            if "lora_B" in name:
                parameter.normal_(0.0, 0.5)
    out = tmp_path_factory.mktemp("adapter") / "adapter"
    peft_model.save_pretrained(out)
    return out


def _greedy(endpoints: Endpoints, name: str) -> list[str]:
    completions = endpoints.backend(name).generate(MESSAGES, n=1, max_tokens=12, temperature=0.0)
    return [c.text for c in completions]


def test_base_and_adapter_answer_in_process(tiny_model: Path, adapter: Path, tmp_path: Path) -> None:
    import torch
    from peft import PeftModel
    from transformers import AutoModelForCausalLM, AutoTokenizer

    configurations = [ModelConfiguration(BASE), ModelConfiguration("ft", adapter=adapter)]
    logged: list[str] = []
    with Endpoints(configurations, base_model=str(tiny_model), url=None, timeout_s=60, log_dir=tmp_path,
                   backend="transformers", log=logged.append) as endpoints:
        base, tuned = _greedy(endpoints, BASE), _greedy(endpoints, "ft")
        assert endpoints.backend("ft") is endpoints.backend("ft")  # loaded once
        assert endpoints.backend("ft").model == f"{tiny_model}+{adapter}"  # the rows tell the two apart
        assert endpoints.backend(BASE).model == str(tiny_model)
        assert endpoints.backend("ft").constrains()  # the answer format can be enforced in process
    assert base != tuned  # the adapter is applied
    assert len(logged) == 2 and "merged" in logged[1]
    assert not (tmp_path / "vllm.log").exists()  # no server
    # the merged copy answers as peft's own model with the adapter attached does
    tokenizer = AutoTokenizer.from_pretrained(tiny_model)
    reference = PeftModel.from_pretrained(AutoModelForCausalLM.from_pretrained(tiny_model, dtype=torch.float32),
                                          str(adapter)).eval()
    inputs = tokenizer.apply_chat_template(MESSAGES, add_generation_prompt=True, return_tensors="pt",
                                           return_dict=True)
    with torch.no_grad():
        ids = reference.generate(**inputs, max_new_tokens=12, do_sample=False,
                                 pad_token_id=tokenizer.pad_token_id or tokenizer.eos_token_id)
    expected = ids[0, inputs["input_ids"].shape[1]:].tolist()
    if tokenizer.eos_token_id in expected:
        expected = expected[:expected.index(tokenizer.eos_token_id)]
    assert tuned[0] == tokenizer.decode(expected, skip_special_tokens=True)


@pytest.mark.parametrize(("changes", "message"), [
    ({"backend": "tgi"}, "--backend must be vllm or transformers"),
    ({"backend": "transformers", "url": "http://127.0.0.1:8000/v1"}, "leave out --url"),
    ({"backend": "transformers", "servers": 2}, "leave out --url and --servers"),
])
def test_backend_choices_are_checked(changes: dict[str, object], message: str) -> None:
    config = EvalConfig(**changes)
    with pytest.raises(ConfigError, match=message):
        config.validate()


@pytest.mark.parametrize("constrain", [True, False])
def test_eval_hands_its_constrain_choice_to_the_loop(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                     constrain: bool) -> None:
    """`perfforge eval --no-constrain` reaches every run's loop (the docs promised it before the command had it;
    session 22 measured free generation against the format with it: parsed 77% against 100% on CUDA)."""
    import inference.run
    from eval.runner import Evaluation, Variant
    from eval.suites import SuiteTask
    from perfforge.task import load_task
    from tests.inference.conftest import write_cpu_task

    seen = []

    class Stop(Exception):
        pass

    def run_loop(task, config, backend, judge, log):  # noqa: ANN001, ANN202 (the loop's signature)
        seen.append(config.constrain)
        raise Stop

    monkeypatch.setattr(inference.run, "run_loop", run_loop)
    write_cpu_task(tmp_path / "tasks" / "matvec")
    config = EvalConfig(out=tmp_path / "out", constrain=constrain)
    evaluation = Evaluation(config, [], [], endpoints=None, log=lambda _: None)  # type: ignore[arg-type]
    item = SuiteTask("tasks", load_task(tmp_path / "tasks" / "matvec"))
    with pytest.raises(Stop):
        evaluation.run_model(item, ModelConfiguration(BASE), Variant("all", 2, 1), 0, {})
    assert seen == [constrain]
