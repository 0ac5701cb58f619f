"""`perfforge train` for real on the CPU: trl's SFTTrainer and DPOTrainer with a peft LoRA on the tiny chat model of
tests/inference (built here, never downloaded), resumption from checkpoints, the adapter and the merged model, and
the GRPO reward that runs the pipeline on a small CPU task.

Each training run takes seconds; the SFT run that several tests read is made once per module.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest

from perfforge.errors import PerfforgeError
from perfforge.io import read_json
from tests.conftest import error_lines, invoke
from tests.profiling.conftest import FAST_C, SLOW_C, TASK_TOML, write_task
from tests.training.conftest import write_attempts, write_pairs

SFT_FLAGS = ["--max-steps", "12", "--learning-rate", "5e-3", "--batch-size", "4", "--logging-steps", "2",
             "--save-steps", "6", "--max-length", "512", "--lora-target-modules", "q_proj,v_proj", "--merge"]
PROMPT = [{"role": "system", "content": "You are a performance engineer."},
          {"role": "user", "content": "Target: cpu (c). File: kernel.c. Kernel: matvec.\n\nThe file kernel.c:\n"
                                      "```c\nvoid matvec(int n, const float *m, const float *w, float *out);\n```"}]
GREEDY_TOKENS = 8


@pytest.fixture(scope="module")
def sft_run(tiny_model: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The brief SFT run of the module: 12 steps on the 12 hand-written pairs, adapter and merged model."""
    root = tmp_path_factory.mktemp("sft")
    pairs = write_pairs(root / "data" / "pairs.parquet")
    out = root / "out"
    code, stdout, stderr = invoke(["train", str(pairs), "--base-model", str(tiny_model), "--out", str(out),
                                   *SFT_FLAGS])
    return {"code": code, "stdout": stdout, "stderr": stderr, "out": out, "pairs": pairs}


def greedy_ids(model: Any, tokenizer: Any) -> list[int]:
    import torch

    ids = tokenizer.apply_chat_template(PROMPT, add_generation_prompt=True, return_tensors="pt",
                                        return_dict=True)["input_ids"]
    with torch.no_grad():
        output = model.generate(ids, attention_mask=torch.ones_like(ids), max_new_tokens=GREEDY_TOKENS,
                                min_new_tokens=GREEDY_TOKENS, do_sample=False)
    return output[0, ids.shape[1]:].tolist()


# --- SFT -----------------------------------------------------------------------------------------------------------


def test_sft_through_the_cli_lowers_the_loss(sft_run: dict[str, Any]) -> None:
    assert sft_run["code"] == 0, sft_run["stderr"][-3000:]
    metrics = read_json(sft_run["out"] / "metrics.json")
    assert metrics["method"] == "sft" and metrics["steps"] == 12
    assert len(metrics["losses"]) == 12 // 2
    assert metrics["first_logged_loss"] == metrics["losses"][0] and metrics["last_logged_loss"] == metrics["losses"][-1]
    assert metrics["last_logged_loss"] < metrics["first_logged_loss"]
    assert all(math.isfinite(loss) for loss in metrics["losses"])
    assert metrics["eval_loss"] is not None and math.isfinite(metrics["eval_loss"])
    assert metrics["train_tokens"] > 0 and metrics["train_tokens_per_second"] > 0
    assert metrics["settings"]["learning_rate"] == 5e-3 and metrics["settings"]["data"] == [str(sft_run["pairs"])]
    assert "resuming from" not in sft_run["stderr"]
    # the summary line and where everything is
    stdout = sft_run["stdout"]
    assert any(line.startswith("sft: 12 steps in ") for line in stdout.splitlines())
    assert f"loss {metrics['first_logged_loss']:.4f} -> {metrics['last_logged_loss']:.4f}" in stdout
    for name in ("adapter", "merged", "metrics.json", "splits.json"):
        assert f"{name:>12}: {sft_run['out'] / name}" in stdout


def test_packed_sft_trains_and_records_its_speed_choices(tiny_model: Path, tmp_path: Path) -> None:
    """--packing on the CPU runs trl's padding-free collator through the real trainer: the loss falls, fewer
    steps' tokens are padding, and metrics.json says what was chosen and why."""
    pairs = write_pairs(tmp_path / "data" / "pairs.parquet")
    out = tmp_path / "out"
    flags = [f for f in SFT_FLAGS if f != "--merge"]
    code, _, stderr = invoke(["train", str(pairs), "--base-model", str(tiny_model), "--out", str(out), *flags,
                              "--packing"])
    assert code == 0, stderr[-3000:]
    metrics = read_json(out / "metrics.json")
    assert metrics["speed"]["packing"] and not metrics["speed"]["liger_kernel"]
    assert not metrics["speed"]["gradient_checkpointing"]
    assert "liger-kernel off: no CUDA GPU" in metrics["speed"]["reasons"]
    assert metrics["last_logged_loss"] < metrics["first_logged_loss"] and metrics["train_tokens"] > 0


def test_sft_writes_the_split(sft_run: dict[str, Any]) -> None:
    splits = read_json(sft_run["out"] / "splits.json")
    groups = splits["groups"]
    assert set(groups) == {"pattern:cpu/matvec_colwalk", "pattern:cpu/loop_interchange", "pattern:cpu/sum_unroll",
                           "pattern:cpu/strided_copy", "repo:alice/blas", "repo:bob/stencil"}
    assert set(groups.values()) == {"train", "eval"}
    held = sum(side == "eval" for side in groups.values())
    # every group holds two pairs
    assert splits["eval_examples"] == 2 * held > 0
    assert splits["train_examples"] == 12 - splits["eval_examples"]
    assert splits["eval_fraction"] == 0.2 and splits["holdout"] == [] and splits["split_seed"] == 0
    assert f"{splits['train_examples']} training and {splits['eval_examples']} eval examples" in sft_run["stderr"]


def test_sft_adapter_loads_with_peft_and_equals_the_merged_model(sft_run: dict[str, Any], tiny_model: Path) -> None:
    import torch
    from peft import PeftModel
    from safetensors.torch import load_file
    from transformers import AutoModelForCausalLM, AutoTokenizer

    adapter, merged_dir = sft_run["out"] / "adapter", sft_run["out"] / "merged"
    assert not list(sft_run["out"].glob("adapter*.incomplete")) and not list(sft_run["out"].glob("merged*.incomplete"))
    config = read_json(adapter / "adapter_config.json")
    assert config["r"] == 8 and config["lora_alpha"] == 16
    assert sorted(config["target_modules"]) == ["q_proj", "v_proj"]
    weights = load_file(adapter / "adapter_model.safetensors")
    lora_b = [tensor for name, tensor in weights.items() if "lora_B" in name]
    assert len(lora_b) == 2 * 2  # 2 layers x (q_proj, v_proj)
    assert all(tensor.abs().max() > 0 for tensor in lora_b)  # peft starts B at zero: training moved it

    tokenizer = AutoTokenizer.from_pretrained(tiny_model)
    base = AutoModelForCausalLM.from_pretrained(tiny_model, dtype=torch.float32)
    peft_model = PeftModel.from_pretrained(base, adapter).eval()
    merged = AutoModelForCausalLM.from_pretrained(merged_dir, dtype=torch.float32).eval()
    assert not any("lora" in name for name, _ in merged.named_parameters())
    assert AutoTokenizer.from_pretrained(merged_dir).chat_template == tokenizer.chat_template
    adapter_ids, merged_ids = greedy_ids(peft_model, tokenizer), greedy_ids(merged, tokenizer)
    assert len(adapter_ids) == GREEDY_TOKENS
    assert adapter_ids == merged_ids


def test_the_same_command_with_more_steps_resumes_from_the_last_checkpoint(tiny_model: Path, tmp_path: Path) -> None:
    """Run 6 steps (checkpoints every 3), then the same command asking for 9: it goes on from checkpoint-6."""
    pairs = write_pairs(tmp_path / "pairs.parquet")
    out = tmp_path / "out"
    argv = ["train", str(pairs), "--base-model", str(tiny_model), "--out", str(out), "--batch-size", "1",
            "--max-length", "512", "--logging-steps", "3", "--save-steps", "3", "--lora-target-modules",
            "q_proj,v_proj", "--learning-rate", "5e-3"]
    code, _, stderr = invoke([*argv, "--max-steps", "6"])
    assert code == 0, stderr[-3000:]
    assert "resuming from" not in stderr
    assert read_json(out / "metrics.json")["steps"] == 6
    first_tokens = read_json(out / "metrics.json")["train_tokens"]
    assert sorted(p.name for p in (out / "checkpoints").iterdir() if p.is_dir()) == ["checkpoint-3", "checkpoint-6"]
    first_adapter = (out / "adapter" / "adapter_model.safetensors").read_bytes()

    code, _, stderr = invoke([*argv, "--max-steps", "9"])
    assert code == 0, stderr[-3000:]
    resumed = [line for line in stderr.splitlines() if line.startswith("resuming from")]
    assert resumed == [f"resuming from {out / 'checkpoints' / 'checkpoint-6'}"]
    metrics = read_json(out / "metrics.json")
    assert metrics["steps"] == 9
    state = read_json(out / "checkpoints" / "checkpoint-9" / "trainer_state.json")
    assert state["global_step"] == 9
    assert [entry["step"] for entry in state["log_history"] if "loss" in entry] == [3, 6, 9]
    assert (out / "adapter" / "adapter_model.safetensors").read_bytes() != first_adapter
    # the token rate is this session's: its tokens (steps 7-9), not the counter restored from the checkpoint
    seen = {step: read_json(out / "checkpoints" / f"checkpoint-{step}" / "trainer_state.json")["num_input_tokens_seen"]
            for step in (6, 9)}
    assert first_tokens == seen[6] > 0
    assert metrics["train_tokens"] == seen[9] - seen[6] > 0
    assert metrics["train_tokens_per_second"] == pytest.approx(metrics["train_tokens"] / metrics["train_seconds"],
                                                               rel=0.01)


def test_rerunning_a_finished_command_trains_no_further(tiny_model: Path, tmp_path: Path) -> None:
    pairs = write_pairs(tmp_path / "pairs.parquet")
    out = tmp_path / "out"
    # 8 training examples, batch 1: step 2 ends mid-epoch
    argv = ["train", str(pairs), "--base-model", str(tiny_model), "--out", str(out), "--batch-size", "1",
            "--max-length", "512", "--logging-steps", "1", "--save-steps", "2", "--lora-target-modules", "q_proj",
            "--max-steps", "2"]
    assert invoke(argv)[0] == 0
    adapter = (out / "adapter" / "adapter_model.safetensors").read_bytes()
    code, _, stderr = invoke(argv)
    assert code == 0 and f"resuming from {out / 'checkpoints' / 'checkpoint-2'}" in stderr, stderr[-3000:]
    assert read_json(out / "metrics.json")["steps"] == 2
    assert not (out / "checkpoints" / "checkpoint-3").exists()
    assert (out / "adapter" / "adapter_model.safetensors").read_bytes() == adapter


def test_full_finetuning_writes_a_whole_model_that_eval_and_the_backend_take(tiny_model: Path,
                                                                                tmp_path: Path) -> None:
    """--finetune full: every weight trains (no adapter), the loss falls, OUT/model is a model directory with its
    tokenizer whose weights moved; a rerun trains no further; eval's --models NAME=OUT takes it (its splits label
    the held-out patterns) and the transformers backend generates from it."""
    import torch
    from safetensors.torch import load_file

    from eval.configurations import Endpoints, parse
    from inference.backends import TransformersBackend
    from perfforge.errors import ConfigError

    pairs = write_pairs(tmp_path / "data" / "pairs.parquet")
    out = tmp_path / "out"
    argv = ["train", str(pairs), "--base-model", str(tiny_model), "--out", str(out), "--finetune", "full",
            "--max-steps", "6", "--learning-rate", "1e-3", "--batch-size", "4", "--logging-steps", "2",
            "--save-steps", "6", "--max-length", "512", "--merge"]
    code, stdout, stderr = invoke(argv)
    assert code == 0, stderr[-3000:]
    metrics = read_json(out / "metrics.json")
    base = load_file(str(next(tiny_model.glob("*.safetensors"))))
    assert metrics["finetune"] == "full" and metrics["trainable_parameters"] == sum(v.numel() for v in base.values())
    assert metrics["last_logged_loss"] < metrics["first_logged_loss"]
    assert not (out / "adapter").exists() and not (out / "merged").exists()  # --merge is LoRA's
    assert f"{'model':>12}: {out / 'model'}" in stdout
    tuned = load_file(str(next((out / "model").glob("*.safetensors"))))
    assert {k: v.dtype for k, v in tuned.items()} == {k: torch.float32 for k in base}
    assert all(not torch.equal(tuned[k], base[k]) for k in base if k.endswith("q_proj.weight"))
    assert (out / "model" / "tokenizer_config.json").is_file()
    # a rerun of the finished command
    again = invoke(argv)
    assert again[0] == 0 and "nothing to do" in again[2], again[2][-2000:]
    # eval and the backend
    configuration = parse([f"full={out}"])[0]
    assert configuration.model_dir == out / "model" and configuration.training_run == out
    assert parse([f"full={out / 'model'}"])[0].model_dir == out / "model"
    with pytest.raises(ConfigError, match="evaluated in process"):
        Endpoints([configuration], base_model=str(tiny_model), url=None, timeout_s=1.0, log_dir=tmp_path / "serve")
    completions = TransformersBackend(str(out / "model")).generate(PROMPT, n=2, max_tokens=16, temperature=0.0)
    assert len(completions) == 2 and all(c.completion_tokens > 0 for c in completions)


def test_a_max_length_shorter_than_every_prompt_is_one_error_line(tiny_model: Path, tmp_path: Path) -> None:
    pairs = write_pairs(tmp_path / "pairs.parquet")
    code, _, stderr = invoke(["train", str(pairs), "--base-model", str(tiny_model), "--out", str(tmp_path / "out"),
                              "--max-steps", "1", "--max-length", "64"])
    assert code == 2
    [line] = error_lines(stderr)
    assert "--max-length" in line


def test_examples_that_would_be_cut_are_left_out_not_trained_without_their_end(tiny_model: Path) -> None:
    """trl cuts an example at --max-length: the answer's closing fence and end-of-turn token would be lost, and the
    model would learn never to stop. Such examples are dropped and counted instead."""
    from transformers import AutoTokenizer

    from training.examples import Example
    from training.trainer import fitting

    tokenizer = AutoTokenizer.from_pretrained(tiny_model)
    prompt = [{"role": "user", "content": "make it faster"}]

    def example(answer: str) -> Example:
        return Example(group="g", dedup_key=answer[:8], prompt=prompt,
                       completion=[{"role": "assistant", "content": answer}])

    short, long = example("```c\nint a;\n```"), example("```c\n" + "int a;\n" * 400 + "```")
    said: list[str] = []
    kept_train, kept_eval = fitting([short, long], [long], tokenizer, 256, said.append)
    assert kept_train == [short] and kept_eval == []
    assert said and said[0].startswith("2 examples longer than --max-length 256 tokens left out")
    with pytest.raises(PerfforgeError, match="no training example fits --max-length 256"):
        fitting([long], [], tokenizer, 256, said.append)


# --- DPO -----------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("sft_weight", [0.0, 1.0])
def test_dpo_on_attempts_trains_and_writes_an_adapter(tiny_model: Path, tmp_path: Path, sft_weight: float) -> None:
    attempts = write_attempts(tmp_path / "run" / "attempts.parquet")
    out = tmp_path / "out"
    code, stdout, stderr = invoke(["train", str(attempts.parent), "--method", "dpo", "--base-model", str(tiny_model),
                                   "--out", str(out), "--max-steps", "2", "--batch-size", "2", "--logging-steps",
                                   "1", "--max-length", "512", "--lora-target-modules", "q_proj,v_proj",
                                   "--dpo-sft-weight", str(sft_weight)])
    assert code == 0, stderr[-3000:]
    metrics = read_json(out / "metrics.json")
    assert metrics["method"] == "dpo" and metrics["steps"] == 2
    # the policy starts as the reference (LoRA B is zero): the first DPO loss is -log sigmoid(0) = log 2; with an
    # SFT weight the chosen answers' negative log-likelihood under a random tiny model (several nats) is added
    if sft_weight:
        assert metrics["first_logged_loss"] > math.log(2) + 1.0
    else:
        assert metrics["first_logged_loss"] == pytest.approx(math.log(2), abs=1e-3)
    assert all(math.isfinite(loss) for loss in metrics["losses"])
    assert (out / "adapter" / "adapter_config.json").is_file()
    assert (out / "adapter" / "adapter_model.safetensors").is_file()
    assert not (out / "merged").exists()
    splits = read_json(out / "splits.json")
    assert splits["train_examples"] + splits["eval_examples"] == 12  # the preference pairs of the two prompts
    assert set(splits["groups"]) == {"pattern:cpu/matvec_colwalk", "repo:sum_rows"}
    assert any(line.startswith("dpo: 2 steps in ") for line in stdout.splitlines())


def test_dpo_with_an_sft_weight_adds_the_chosen_answers_likelihood(tmp_path: Path) -> None:
    """--dpo-sft-weight W: trl's sigmoid (DPO) loss plus W times the negative log-likelihood of the chosen answers
    (RPO); 0 keeps DPO alone."""
    from training.config import TrainConfig
    from training.trainer import precision_flags, trainer_args

    def args(**fields: object) -> Any:
        config = TrainConfig(data=[tmp_path], out=tmp_path, method="dpo", **fields)  # type: ignore[arg-type]
        return trainer_args(config, precision_flags(config))

    rpo = args(dpo_sft_weight=0.5)
    assert list(rpo.loss_type) == ["sigmoid", "sft"] and list(rpo.loss_weights) == [1.0, 0.5]
    plain = args()
    assert list(plain.loss_type) == ["sigmoid"] and plain.loss_weights is None


def test_dpo_on_pairs_only_is_one_error_line(tiny_model: Path, tmp_path: Path) -> None:
    pairs = write_pairs(tmp_path / "pairs.parquet")
    out = tmp_path / "out"
    code, stdout, stderr = invoke(["train", str(pairs), "--method", "dpo", "--base-model", str(tiny_model),
                                   "--out", str(out), "--max-steps", "2"])
    assert code == 2 and stdout == ""
    [line] = error_lines(stderr)
    assert stderr.strip().splitlines() == [line]
    assert "preference pairs" in line and str(pairs) in line
    assert not (out / "adapter").exists()


# --- errors a user can fix -----------------------------------------------------------------------------------------


@pytest.mark.parametrize(("flags", "message"), [
    (["--method", "ppo"], "--method must be one of sft, dpo, got 'ppo'"),
    (["--precision", "bf16"], "--precision bf16 needs a GPU"),
    (["--precision", "fp8"], "--precision must be one of auto, fp32, bf16, fp16"),
    (["--max-steps", "0"], "--max-steps must be a positive number of steps"),
    (["--lora-r", "0"], "--lora-r must be at least 1"),
    (["--eval-fraction", "1"], "--eval-fraction must be in [0, 1)"),
    (["--sources", "everything"], "everything"),
    (["--lora-dropout", "2"], "--lora-dropout must be in [0, 1), got 2.0"),
    (["--learning-rate", "-1"], "--learning-rate must be above 0, got -1.0"),
    (["--method", "dpo", "--dpo-sft-weight", "-1"], "--dpo-sft-weight must be 0 or more, got -1.0"),
    (["--epochs", "0", "--max-steps", "-1"], "--epochs must be above 0 (or give --max-steps), got 0.0"),
    (["--lora-target-modules", "nonexistent_proj"], "--lora-target-modules nonexistent_proj: "),
    (["--holdout", "cpu/matvec_colwalk", "cpu/loop_interchange", "cpu/sum_unroll", "cpu/strided_copy",
      "alice/blas", "bob/stencil"], "every one of the 12 examples fell in the eval split"),
])
def test_config_errors_are_one_line_and_exit_2(tiny_model: Path, tmp_path: Path, flags: list[str],
                                               message: str) -> None:
    pairs = write_pairs(tmp_path / "pairs.parquet")
    code, stdout, stderr = invoke(["train", str(pairs), "--base-model", str(tiny_model), "--out",
                                   str(tmp_path / "out"), "--max-steps", "1", *flags])
    assert code == 2, stderr[-3000:]
    assert stdout == ""
    [line] = error_lines(stderr)
    assert stderr.strip().splitlines()[-1] == line and message in line
    assert "Traceback" not in stderr
    assert not (tmp_path / "out" / "adapter").exists()


@pytest.mark.parametrize("case", ["no_data", "missing", "empty_dir", "no_model"])
def test_data_and_model_errors_are_one_line(tiny_model: Path, tmp_path: Path, case: str) -> None:
    pairs = write_pairs(tmp_path / "pairs.parquet")
    empty = tmp_path / "empty"
    empty.mkdir()
    data, model, message = {
        "no_data": ([], str(tiny_model), "give at least one dataset"),
        "missing": ([str(tmp_path / "nowhere.parquet")], str(tiny_model), str(tmp_path / "nowhere.parquet")),
        "empty_dir": ([str(empty)], str(tiny_model), f"{empty} holds none of pairs.parquet, attempts.parquet"),
        "no_model": ([str(pairs)], str(tmp_path), "is not a local model directory"),
    }[case]
    code, stdout, stderr = invoke(["train", *data, "--base-model", model, "--out", str(tmp_path / "out")])
    assert code == 2 and stdout == ""
    [line] = error_lines(stderr)
    assert message in line and "Traceback" not in stderr


# --- the GRPO reward -----------------------------------------------------------------------------------------------


def fenced(code: str) -> str:
    return f"Hypothesis: walk the matrix by row\nEvidence: cache_miss_bound\n```c\n{code}```\n"


@pytest.mark.usefixtures("judge_on_planned_rounds")  # the reward is the subject, not the judge's timing
def test_pipeline_reward_is_log2_of_the_verified_speedup(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import profiling.judge
    from training.reward import PipelineReward

    verdicts: list[dict[str, Any]] = []
    real_judge = profiling.judge.judge_candidates

    def recording_judge(*args: Any, **kwargs: Any) -> dict[str, Any]:  # the real judge, watched
        results = real_judge(*args, **kwargs)
        verdicts.extend(result.verdict.to_dict() for result in results.values())
        return results

    monkeypatch.setattr(profiling.judge, "judge_candidates", recording_judge)
    task = write_task(tmp_path / "task", toml=TASK_TOML.replace("timeout_s = 30", "timeout_s = 10"))
    reward = PipelineReward({"matvec_colwalk": task}, tmp_path / "work")
    assert reward.__name__ == "pipeline_speedup"
    wrong = SLOW_C.replace("* w[j];", "* w[j] * 1.5f;")
    assert wrong != SLOW_C
    completions = [[{"role": "assistant", "content": fenced(FAST_C)}],  # conversational, as trl passes them
                   fenced(wrong),  # plain text
                   [{"role": "assistant", "content": "I would make it faster by thinking harder."}]]
    scores = reward(prompts=[PROMPT] * 3, completions=completions, task=["matvec_colwalk"] * 3,
                    completion_ids=[[1]] * 3)
    assert len(scores) == 3 and all(isinstance(score, float) for score in scores)
    assert [v["status"] for v in verdicts] == ["improved", "incorrect"]  # garbage never reaches the judge
    assert verdicts[0]["speedup"] > 1
    assert scores[0] == pytest.approx(math.log2(verdicts[0]["speedup"])) and scores[0] > 0
    assert scores[1] == 0.0 and scores[2] == 0.0
    assert reward.calls == 2
    # each candidate was written to its own file for the judge, with the task's file name
    assert (tmp_path / "work" / "candidate-1" / "kernel.c").read_text() == FAST_C
    assert (tmp_path / "work" / "candidate-2" / "kernel.c").read_text() == wrong


@pytest.mark.parametrize(("verdict", "expected"), [
    ({"status": "improved", "speedup": 2.0}, 1.0),
    ({"status": "improved", "speedup": 8.0}, 3.0),
    ({"status": "improved", "speedup": 1.25}, math.log2(1.25)),
    ({"status": "improved", "speedup": None}, 0.0),
    ({"status": "improved", "speedup": 0.0}, 0.0),
    ({"status": "improved", "speedup": 0.8}, 0.0),  # never negative
    ({"status": "slower", "speedup": 0.5}, 0.0),
    ({"status": "no_change", "speedup": 1.01}, 0.0),
    ({"status": "needs_review", "speedup": 50.0}, 0.0),  # implausible gains are not rewarded until reviewed
    ({"status": "incorrect"}, 0.0),
])
def test_reward_of(verdict: dict[str, Any], expected: float) -> None:
    from perfforge.verdict import Verdict
    from training.reward import reward_of

    assert reward_of(Verdict.from_dict({"task": "t", "candidate": "c", "target": "cpu", "reason": "", **verdict})) \
        == pytest.approx(expected)
