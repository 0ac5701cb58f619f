"""`perfforge iterate` (iteration/expert.py): expert iteration end to end on the CPU, with the real loop, judge and
trainer and a tiny model built in the test.

A random tiny model proves nothing, so the first test also shows that path: the round samples, the judge rejects
what it wrote, nothing is trained. To see rounds that keep and train on proven improvements without a capable
model, the seed data is one improved attempt whose prompt is the loop's own prompt for the task (taken from that
first run) and whose code is the task's fast version; round 0 fine-tunes the tiny model on it until it writes that
answer for that prompt. From then on everything is the real mechanism: round 1 samples from the fine-tuned model,
the judge proves its candidates faster, they are kept, the base model is fine-tuned on seed + kept, and round 2
samples from that model.
"""

from __future__ import annotations

import shutil
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

import perfforge.records as records
from iteration.config import IterateConfig
from iteration.expert import IterationLayout, _train, iterate, round_seeds, training_tasks
from perfforge.errors import PerfforgeError
from perfforge.io import read_json, read_parquet, write_parquet
from tests.inference.conftest import FAST_TASK_TOML, invoke
from tests.profiling.conftest import FAST_C, write_task

TASK = "matvec_colwalk"

# the rounds around the judge are the subject, not the judge's timing (tests/conftest.py)
pytestmark = pytest.mark.usefixtures("judge_on_planned_rounds")


@pytest.fixture(scope="module")
def iterated(tiny_model: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    root = tmp_path_factory.mktemp("iterate")
    write_task(root / "tasks" / "matvec", toml=FAST_TASK_TOML)
    common = dict(tasks=[root / "tasks"], base_model=str(tiny_model), samples=2, seeds=1, backend="transformers",
                  max_tokens=400, batch_size=1, max_length=1024)
    first = IterateConfig(out=root / "first", rounds=1, temperature=0.8, **common)
    first_records = iterate(first, log=lambda _: None)
    run = IterationLayout(first.out).run_dir(1, training_tasks(first.tasks)[0], 0)
    row = dict(read_parquet(run / "attempts.parquet")[0])
    row.update(status="improved", code=FAST_C, hypothesis="accumulate each row in a register", speedup=2.0,
               evidence="cache_miss_bound: the inner loop walks a column")
    (root / "seed").mkdir()
    write_parquet(root / "seed" / "attempts.parquet", [row], records.ATTEMPT_FEATURES)
    config = IterateConfig(out=root / "out", rounds=2, temperature=0.3, max_steps=120, learning_rate=5e-3,
                           seed_data=[root / "seed" / "attempts.parquet"], **common)
    # the loop's prompt carries the original's measured time: round 1 starts from the first run's profile, so the
    # prompt is the one the seed example was written for
    target = IterationLayout(config.out).run_dir(1, training_tasks(config.tasks)[0], 0) / "original"
    shutil.copytree(run / "original", target)
    code, stdout, stderr = invoke(["iterate", *map(str, config.tasks), "--out", str(config.out),
                                   "--base-model", str(tiny_model), "--seed-data", str(config.seed_data[0]),
                                   "--rounds", "2", "--samples", "2", "--seeds", "1", "--backend", "transformers",
                                   "--temperature", "0.3", "--max-tokens", "400", "--max-steps", "120",
                                   "--learning-rate", "5e-3", "--batch-size", "1", "--max-length", "1024"])
    return {"first": first_records, "config": config, "code": code, "stdout": stdout, "stderr": stderr}


def test_a_model_that_proves_nothing_trains_nothing(iterated: dict[str, Any]) -> None:
    (record,) = iterated["first"]
    assert record.candidates == 2 and record.improved == 0 and record.kept_total == 0
    assert not record.trained and record.note == "no new proven improvement: nothing to train on"


def test_rounds_keep_proven_improvements_and_sample_from_the_model_they_trained(iterated: dict[str, Any]) -> None:
    assert iterated["code"] == 0, iterated["stderr"][-3000:]
    config = iterated["config"]
    state = read_json(config.out / "iterate.json")
    first, second = state["rounds"]
    assert first["model"] == str(config.out / "round_00" / "train" / "merged")
    assert first["improved"] >= 1 and first["trained"] and first["tasks_improved"] == [TASK]
    assert second["model"] == str(config.out / "round_01" / "train" / "merged")  # round 2 samples round 1's model
    assert second["kept_total"] == first["improved"] + second["improved"]
    # what round 1 kept is what the judge proved: every kept attempt is improved with a measured speedup
    kept = [r for r in read_parquet(config.out / "round_01" / "sample" / TASK / "seed0" / "attempts.parquet")
            if r["status"] == "improved"]
    assert len(kept) == first["improved"] and all(r["speedup"] and r["speedup"] > 1 for r in kept)
    # each round fine-tunes the base model on the seed data and every improvement kept so far
    settings = read_json(config.out / "round_02" / "train" / "metrics.json")["settings"]
    assert settings["base_model"] == str(config.base_model)
    kept = IterationLayout(config.out).attempts(2, training_tasks(config.tasks), config)
    assert sorted(settings["data"]) == sorted(map(str, [config.seed_data[0], *kept]))
    assert f"round 1: {first['improved']} of 2 candidates proven faster" in iterated["stdout"]


def test_a_rerun_resumes_without_sampling_or_training_again(iterated: dict[str, Any]) -> None:
    config = iterated["config"]
    before = read_json(config.out / "iterate.json")

    def refuse(model: str) -> Any:
        raise AssertionError(f"a finished round loaded {model} again")

    again = iterate(config, log=lambda _: None, make_engine=refuse)
    assert [r.improved for r in again] == [r["improved"] for r in before["rounds"]]
    assert read_json(config.out / "iterate.json")["rounds"] == before["rounds"]


def test_a_rerun_with_other_tasks_or_settings_is_one_error(iterated: dict[str, Any], tmp_path: Path) -> None:
    """A task moved out of the training set (say, into the held-out eval) must not stay in the kept set through
    its old runs, and trainings on other data must not be reused: the output directory refuses the change."""
    config = iterated["config"]
    other = tmp_path / "other_tasks"
    write_task(other / "matvec", toml=FAST_TASK_TOML.replace('name = "matvec_colwalk"', 'name = "matvec_other"'))
    for changed, message in ((replace(config, tasks=[other]), "other tasks"),
                             (replace(config, samples=3), "other samples"),
                             (replace(config, tasks=[*config.tasks, other]), "other tasks")):
        with pytest.raises(PerfforgeError, match=message):
            iterate(changed, log=lambda _: None)
    iterate(replace(config, tasks=[Path(str(config.tasks[0]) + "/.")]), log=lambda _: None,
            make_engine=lambda model: pytest.fail(f"loaded {model}"))  # the same tasks spelt otherwise: resumes


def test_rounds_never_repeat_a_sampling_seed() -> None:
    config = IterateConfig(tasks=[Path("t")], seeds=3)
    assert round_seeds(config, 1) == [0, 1, 2] and round_seeds(config, 2) == [3, 4, 5]


def test_two_tasks_of_one_name_are_one_error(tmp_path: Path) -> None:
    write_task(tmp_path / "a" / "matvec")
    write_task(tmp_path / "b" / "matvec")
    with pytest.raises(PerfforgeError, match="two training tasks share the name 'matvec_colwalk'"):
        training_tasks([tmp_path / "a", tmp_path / "b"])


@pytest.mark.parametrize(("flags", "message"), [
    ([], "give at least one training task"),
    (["TASKS", "--rounds", "0"], "--rounds must be at least 1"),
    (["TASKS", "--temperature", "0"], "--temperature must be above 0"),
])
def test_option_errors_are_one_line(tmp_path: Path, flags: list[str], message: str) -> None:
    code, _, stderr = invoke(["iterate", *[str(tmp_path) if f == "TASKS" else f for f in flags]])
    assert code == 2 and message in stderr and "Traceback" not in stderr


def test_jobs_judge_tasks_at_once_while_the_engine_generates_for_one(tmp_path: Path) -> None:
    """iterate --jobs 2: two training tasks in flight. Their generations must take turns on the one engine (an
    in-process model generating two batches at once, or a seed set for one request drawn on by the other, would
    make a round depend on thread timing; requests that wait go as one batch, which this engine answers one
    after the other); every run is still counted, in task order."""
    import threading
    import time

    from inference.backends import Backend
    from perfforge.llm_client import Completion

    class Engine(Backend):
        name = "test-engine"

        def __init__(self) -> None:
            super().__init__("engine")
            self.active, self.most, self.calls, self.lock = 0, 0, 0, threading.Lock()

        def generate(self, messages: list[dict[str, str]], *, n: int, max_tokens: int, temperature: float,
                     seed: int | None = None, fence: str | None = None) -> list[Completion]:
            with self.lock:
                self.active += 1
                self.most, self.calls = max(self.most, self.active), self.calls + 1
            time.sleep(0.2)  # long enough for the other thread to arrive if nothing held it back
            with self.lock:
                self.active -= 1
            return [Completion("Hypothesis: h\nEvidence: e\n```c\nthis is not C\n```\n", "stop", 9, 9)] * n

    engine = Engine()
    for name in ("matvec_a", "matvec_b"):
        write_task(tmp_path / "tasks" / name, toml=FAST_TASK_TOML.replace('"matvec_colwalk"', f'"{name}"'))
    config = IterateConfig(tasks=[tmp_path / "tasks"], out=tmp_path / "out", rounds=1, samples=2, seeds=2, jobs=2,
                           backend="transformers")
    (record,) = iterate(config, log=lambda _: None, make_engine=lambda model: engine)
    assert engine.calls == 4 and engine.most == 1
    assert record.runs == 4 and record.candidates == 8 and record.parsed == 8 and record.improved == 0
    layout = IterationLayout(config.out)
    for task in training_tasks(config.tasks):
        assert all((layout.run_dir(1, task, seed) / "attempts.parquet").is_file() for seed in (0, 1))


def test_an_interrupt_with_jobs_starts_no_other_run_and_keeps_the_finished_ones(tmp_path: Path) -> None:
    """Ctrl-C during iterate --jobs 2 (raised in the main thread while the workers generate): the runs under way
    finish with whole files, no other run starts, the interrupt reaches the caller, and a rerun resumes: every run
    is there afterwards and the finished ones are not sampled again."""
    import os
    import signal

    from inference.backends import Backend
    from perfforge.llm_client import Completion

    class Engine(Backend):
        name = "test-interrupting-engine"

        def __init__(self, interrupt: bool) -> None:
            super().__init__("engine")
            self.interrupt, self.calls = interrupt, 0

        def generate(self, messages: list[dict[str, str]], *, n: int, max_tokens: int, temperature: float,
                     seed: int | None = None, fence: str | None = None) -> list[Completion]:
            self.calls += 1
            if self.interrupt and self.calls == 1:
                os.kill(os.getpid(), signal.SIGINT)  # a Ctrl-C: KeyboardInterrupt in the main thread
            return [Completion("Hypothesis: h\nEvidence: e\n```c\nthis is not C\n```\n", "stop", 9, 9)] * n

    for name in ("matvec_a", "matvec_b", "matvec_c", "matvec_d"):
        write_task(tmp_path / "tasks" / name, toml=FAST_TASK_TOML.replace('"matvec_colwalk"', f'"{name}"'))
    config = IterateConfig(tasks=[tmp_path / "tasks"], out=tmp_path / "out", rounds=1, samples=1, seeds=2, jobs=2,
                           backend="transformers")
    first = Engine(interrupt=True)
    # Python's own Ctrl-C handler, whatever started the tests (a shell's background job starts with SIGINT
    # ignored, and no KeyboardInterrupt would come)
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        with pytest.raises(KeyboardInterrupt):
            iterate(config, log=lambda _: None, make_engine=lambda model: first)
    finally:
        signal.signal(signal.SIGINT, previous)
    layout = IterationLayout(config.out)
    tasks = training_tasks(config.tasks)
    finished = [(t.name, s) for t in tasks for s in (0, 1) if (layout.run_dir(1, t, s) / "attempts.parquet").is_file()]
    assert 1 <= len(finished) <= 2 == first.calls  # only the two runs under way went on
    again = Engine(interrupt=False)
    (record,) = iterate(config, log=lambda _: None, make_engine=lambda model: again)
    assert record.runs == 8 and again.calls == 8 - len(finished)


def test_held_out_patterns_are_never_trained_on_nor_sampled(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """--holdout reaches every round's fine-tuning (the seed data may hold the held-out patterns' pairs: training
    keeps them out), and a training task that is an instance of a held-out pattern is one error before anything
    runs: sampling it would put the eval's pattern into the kept set."""
    import training.trainer

    seen: list[list[str]] = []

    def train(config: Any, log: Any = None) -> dict[str, Any]:
        seen.append(list(config.holdout))
        (config.out / "merged").mkdir(parents=True)
        return {"steps": 1}

    monkeypatch.setattr(training.trainer, "train", train)
    held = tmp_path / "held"
    write_task(held / "lo", toml=FAST_TASK_TOML.replace('name = "matvec_colwalk"',
                                                        'name = "lo_s1"\npattern = "cpu/loop_order"'))
    config = IterateConfig(tasks=[held], out=tmp_path / "out", rounds=1, holdout=["cpu/loop_order"],
                           seed_data=[tmp_path / "seed.parquet"], backend="transformers")
    with pytest.raises(PerfforgeError, match="training task 'lo_s1' is an instance of a held-out pattern"):
        iterate(config, log=lambda _: None, make_engine=lambda model: pytest.fail("sampled a held-out task"))
    assert not seen and not config.out.exists()  # refused before training or writing anything

    _train(config, config.seed_data, tmp_path / "round", lambda _: None)  # what every round's fine-tuning is given
    assert seen == [["cpu/loop_order"]]


@pytest.mark.parametrize("finetune,written", [("lora", "merged"), ("full", "model")])
def test_each_round_samples_from_the_model_its_fine_tuning_wrote(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                   finetune: str, written: str) -> None:
    """--finetune reaches every round's training, and the model the next round samples is the directory that
    training writes: merged/ for LoRA, model/ for full fine-tuning (a round once looked for merged/ whatever the
    fine-tuning, which full fine-tuning never writes)."""
    import training.trainer

    def train(config: Any, log: Any = None) -> dict[str, Any]:
        assert config.finetune == finetune and config.merge
        (config.out / written).mkdir(parents=True)
        (config.out / "metrics.json").write_text("{}")
        return {"steps": 1}

    monkeypatch.setattr(training.trainer, "train", train)
    config = IterateConfig(tasks=[tmp_path], out=tmp_path / "out", finetune=finetune, backend="transformers")
    assert _train(config, [], tmp_path / "round", lambda _: None)["model"] == tmp_path / "round" / written
    # a finished training is read back, not redone
    monkeypatch.setattr(training.trainer, "train", lambda *a, **k: pytest.fail("trained again"))
    assert _train(config, [], tmp_path / "round", lambda _: None)["model"] == tmp_path / "round" / written
