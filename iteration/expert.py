"""`perfforge iterate`: expert iteration (rejection-sampling fine-tuning) on training tasks.

A round samples K candidates per task and sampling seed from the current model through one round of the
optimisation loop (inference.run.run_loop: the same prompt, the same judge as `perfforge optimize`), keeps the
candidates the judge proved faster (status improved: correct on every check and faster beyond the noise floor),
and fine-tunes the base model on the seed data plus every improvement kept so far; the next round samples from
that model. Each round fine-tunes the base model afresh on the growing set (as ReST and RFT do): training the
previous round's model on its own samples again compounds its drift. A round that proves nothing new trains
nothing and keeps its model. The SFT examples are training.examples.attempt_examples: the prompt the model was
given (code, profile summary, diagnosis) and its proven answer with its hypothesis and evidence lines.

    OUT/iterate.json                          every round so far: the model it sampled, counts, what it trained
    OUT/round_00/train/                       with --seed-data: SFT on it before round 1 (merged/, or model/
                                              with --finetune full: round 1's model)
    OUT/round_NN/sample/<task>/seed<S>/       one loop run (attempts.parquet, rounds/, report.json, ...)
    OUT/round_NN/train/                       perfforge train on the seed data and rounds 1..NN's improvements

An interrupted run resumes: a loop run resumes from its files, training from its last checkpoint, and a round
whose training finished is not redone. The original's profile is made once per task (round 1's first run) and
copied into later runs, so a task is profiled once whatever the number of rounds and seeds. DPO on the same
attempts is the documented second step (`perfforge train --method dpo OUT/round_*/sample`, docs/training.md).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from iteration.config import IterateConfig
from perfforge.errors import PerfforgeError
from perfforge.io import read_json, write_json, write_text
from perfforge.naming import ATTEMPTS_FILE, RunLayout
from perfforge.task import Task, find_tasks
from perfforge.threads import map_in_threads
from perfforge.verdict import Status
from training.config import TrainConfig

STATE_FILE = "iterate.json"


@dataclass
class RoundRecord:
    """What one round did (iterate.json holds one per round)."""

    number: int
    model: str  # the model this round sampled from
    runs: int = 0  # loop runs: tasks x sampling seeds
    candidates: int = 0
    parsed: int = 0  # candidates whose answer held a code block
    correct: int = 0  # correct on every check (Status.correct: improved, no change, slower, held for review)
    improved: int = 0  # proven faster: what the round keeps
    kept_total: int = 0  # improved attempts of rounds 1..number (the training set beside the seed data)
    trained: bool = False
    train_steps: int | None = None
    train_last_loss: float | None = None
    note: str = ""
    tasks_improved: list[str] = field(default_factory=list)


@dataclass
class IterationLayout:
    """Where `perfforge iterate` keeps its files (the drawing above)."""

    out: Path

    @property
    def state(self) -> Path:
        return self.out / STATE_FILE

    def round_dir(self, number: int) -> Path:
        return self.out / f"round_{number:02d}"

    def run_dir(self, number: int, task: Task, seed: int) -> Path:
        return self.round_dir(number) / "sample" / task.name / f"seed{seed}"

    def train_dir(self, number: int) -> Path:
        return self.round_dir(number) / "train"

    def attempts(self, up_to: int, tasks: list[Task], config: IterateConfig) -> list[Path]:
        """The attempts.parquet of these tasks' runs in rounds 1..up_to, at each round's seeds: never a run left on
        disk by a task since moved out of the training set."""
        runs = (self.run_dir(n, task, seed) / ATTEMPTS_FILE for n in range(1, up_to + 1) for task in tasks
                for seed in round_seeds(config, n))
        return [path for path in runs if path.is_file()]


def training_tasks(paths: list[Path]) -> list[Task]:
    """The tasks under `paths` (each a task or a directory of tasks), each once, in path order."""
    tasks: dict[Path, Task] = {}
    for path in paths:
        for task in find_tasks(Path(path)):
            tasks.setdefault(task.root.resolve(), task)
    names = [t.name for t in tasks.values()]
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        raise PerfforgeError(f"two training tasks share the name {duplicates[0]!r}: each task's runs are kept under "
                             "its name; rename one (task.toml's name)")
    return list(tasks.values())


# What a rerun may change in an output directory: more rounds go on from where it stopped (and the task paths may be
# spelt otherwise: the fingerprint holds them resolved); anything else would mix runs of other tasks or settings into
# the kept set and reuse trainings made on other data.
_MAY_CHANGE = ("out", "rounds", "tasks", "jobs")


def _fingerprint(config: IterateConfig, tasks: list[Task]) -> dict[str, Any]:
    settings = json.loads(json.dumps(asdict(config), default=str))
    return {**{k: v for k, v in settings.items() if k not in _MAY_CHANGE},
            "tasks": sorted(str(task.root.resolve()) for task in tasks)}


def _check_same_run(layout: IterationLayout, fingerprint: dict[str, Any]) -> None:
    """One error line when OUT holds an expert iteration of other tasks or settings (--rounds may grow)."""
    if not layout.state.is_file():
        return
    before = read_json(layout.state).get("fingerprint")
    if before is None or before == fingerprint:
        return
    changed = sorted(k for k in {*before, *fingerprint} if before.get(k) != fingerprint.get(k))
    raise PerfforgeError(f"{layout.out} holds an expert iteration with other {', '.join(changed)}: resume it with the "
                         "same tasks and settings (only --rounds may grow), or give a new --out")


def round_seeds(config: IterateConfig, number: int) -> list[int]:
    """Round `number`'s sampling seeds: disjoint from every other round's, so no draw repeats."""
    return list(range((number - 1) * config.seeds, number * config.seeds))


def iterate(config: IterateConfig, log: Callable[[str], None] = print,
            make_engine: Callable[[str], Any] | None = None) -> list[RoundRecord]:
    """Run (or resume) every round; the rounds' records (also in OUT/iterate.json). make_engine(model) makes the
    backend a round samples from (default: inference.backends.make_backend of --backend)."""
    from inference.backends import make_backend

    tasks = training_tasks(config.tasks)
    held = [t.name for t in tasks if t.pattern in config.holdout]
    if held:
        raise PerfforgeError(f"training task {held[0]!r} is an instance of a held-out pattern ({len(held)} in all): "
                             "give its tasks to perfforge eval, or leave the pattern out of --holdout")
    layout = IterationLayout(config.out)
    fingerprint = _fingerprint(config, tasks)
    _check_same_run(layout, fingerprint)
    engine_of = make_engine or (lambda model: make_backend(config.backend, model))
    log(f"expert iteration: {len(tasks)} training task(s), {config.rounds} round(s) of {config.samples} candidates x "
        f"{config.seeds} seed(s) per task")
    model = config.base_model
    if config.seed_data:
        model = str(_train(config, config.seed_data, layout.round_dir(0) / "train", log)["model"])
    records: list[RoundRecord] = []
    profiles: dict[str, Path] = {}  # task name -> the original's profile, made by its first run
    for number in range(1, config.rounds + 1):
        record = RoundRecord(number=number, model=model)
        _sample(config, tasks, number, model, layout, profiles, engine_of, record, log)
        attempts = layout.attempts(number, tasks, config)
        kept = _kept(attempts)
        record.kept_total = kept
        previous = records[-1].kept_total if records else 0
        if kept == previous:
            record.note = ("no new proven improvement: nothing to train on" if kept == 0 and not config.seed_data
                           else "no new proven improvement: the model stays")
            log(f"round {number}: {record.note}")
        else:
            metrics = _train(config, [*config.seed_data, *attempts], layout.train_dir(number), log)
            record.trained, record.train_steps = True, metrics.get("steps")
            record.train_last_loss = metrics.get("last_logged_loss")
            model = str(metrics["model"])
        records.append(record)
        write_json(layout.state, {"rounds": [asdict(r) for r in records], "model": model,
                                  "settings": json.loads(json.dumps(asdict(config), default=str)),
                                  "fingerprint": fingerprint})
        log(f"round {number}: {record.candidates} candidates, {record.parsed} parsed, {record.correct} correct, "
            f"{record.improved} proven faster ({record.kept_total} kept in all)"
            + (f"; trained {record.train_steps} steps, loss {record.train_last_loss}" if record.trained else ""))
    return records


def _sample(config: IterateConfig, tasks: list[Task], number: int, model: str, layout: IterationLayout,
            profiles: dict[str, Path], engine_of: Callable[[str], Any], record: RoundRecord,
            log: Callable[[str], None]) -> None:
    """One loop round per task and seed, every run from one engine of `model`; counts into `record`. With --jobs N,
    N tasks are in flight: their generations batch on the engine (Shared), their judges run at once."""
    from inference.backends import GATHER_S, Shared

    shared: list[Shared] = []
    loading = threading.Lock()

    def backend() -> Shared:  # the engine is loaded when a run first needs it (a resumed round may need none)
        with loading:
            if not shared:
                log(f"round {number}: loading {model} ...")
                shared.append(Shared(engine_of(model), gather_s=GATHER_S if config.jobs > 1 else 0.0))
            return shared[0]

    stop = threading.Event()  # set on Ctrl-C: no thread starts another run

    def one_task(task: Task) -> list[list[Any]]:
        return [_sample_run(config, task, seed, layout.run_dir(number, task, seed), model, profiles, backend, log)
                for seed in round_seeds(config, number) if not stop.is_set()]

    try:
        runs = map_in_threads(one_task, tasks, workers=config.jobs, stop=stop, log=log, what=f"round {number}")
        for task, task_runs in zip(tasks, runs, strict=True):
            for attempts in task_runs:
                _count(attempts, record, task.name)
    finally:
        for engine in shared:
            engine.close_engine()


def _sample_run(config: IterateConfig, task: Task, seed: int, out: Path, model: str, profiles: dict[str, Path],
                backend: Callable[[], Any], log: Callable[[str], None]) -> list[Any]:
    """One loop run of one round on a task at a sampling seed; its attempts. The task's seeds run one after the
    other in one thread, so the original's profile made by its first run is copied into the others."""
    from inference.config import OptimizeConfig
    from inference.run import run_loop
    from profiling.judge import LocalJudge

    run_layout = RunLayout(out)
    if task.name in profiles and not run_layout.original_profile.is_file():
        write_text(run_layout.original_profile, profiles[task.name].read_text())  # atomic
    loop = OptimizeConfig(task=task.root, out=out, model=model, candidates=config.samples, rounds=1,
                          temperature=config.temperature, max_tokens=config.max_tokens, seed=seed,
                          constrain=config.constrain, profile_candidates=False)
    loop.validate()
    judge = LocalJudge(out / "work", profile_improved=False, log=log)
    run = run_loop(task, loop, backend, judge, log)
    if run_layout.original_profile.is_file():
        profiles.setdefault(task.name, run_layout.original_profile)
    return run.state.attempts


def _count(attempts: list[Any], record: RoundRecord, task_name: str) -> None:
    record.runs += 1
    for attempt in attempts:
        status = Status(attempt.status)
        record.candidates += 1
        record.parsed += status is not Status.UNPARSABLE
        record.correct += status.correct
        if status is Status.IMPROVED:
            record.improved += 1
            if task_name not in record.tasks_improved:
                record.tasks_improved.append(task_name)


def _kept(files: list[Path]) -> int:
    """Improved attempts in these attempts.parquet files: what a round's training keeps."""
    import pyarrow.parquet as pq

    return sum(1 for path in files for row in pq.read_table(path, columns=["status"]).to_pylist()
               if Status(row["status"]) is Status.IMPROVED)


def _train(config: IterateConfig, data: list[Path], out: Path, log: Callable[[str], None]) -> dict[str, Any]:
    """Fine-tune the base model on `data` into `out` (merged/ beside the adapter, or model/ when fully fine-tuned:
    the model the next round samples from); a finished training is read."""
    from training.trainer import train

    model = out / ("model" if config.finetune == "full" else "merged")
    metrics_file = out / "metrics.json"
    if metrics_file.is_file() and model.is_dir():
        metrics = read_json(metrics_file)
    else:
        log(f"fine-tuning {config.base_model} on {len(data)} dataset file(s) into {out}")
        metrics = train(TrainConfig(data=list(data), out=out, base_model=config.base_model, max_steps=config.max_steps,
                                    learning_rate=config.learning_rate, batch_size=config.batch_size,
                                    max_length=config.max_length, lora_target_modules=config.lora_target_modules,
                                    lora_r=config.lora_r, lora_alpha=config.lora_alpha, holdout=list(config.holdout),
                                    eval_fraction=0.0, merge=True, finetune=config.finetune), log=log)
    return {**metrics, "model": model}
