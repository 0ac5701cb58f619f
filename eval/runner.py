"""`perfforge eval`: each (task, configuration, variant, seed) measured once and kept as a row of results.parquet.

Per task, once, under OUT/tasks/<suite>/<task>/:
    original_profile.json   the original's profile (every run's prompt uses it, so the original is profiled once)
    measure.json            the human-optimised reference judged like any candidate by profiling.validate, and
                            timed on every input configuration; human_profile.json its profile when improved
Per model configuration, variant and seed, under OUT/runs/<configuration>/<variant>/s<seed>/<suite>/<task>/:
    the optimisation loop's output directory (inference.loop: rounds, attempts, report, patch), and
    generalise.json   its best candidate re-measured on every input configuration of the task

Measuring goes through inference's judges: here (LocalJudge), or with --bundle as bundles a GPU machine runs
(profiling.bundle); a rerun reads what came back and goes on. Generated code only ever runs inside
profiling.validate's and profiling.profile's sandboxed subprocesses.
"""

from __future__ import annotations

import shutil
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from eval.config import EvalConfig
from eval.configurations import ANSWERS_PREFIX, HUMAN, Endpoints, ModelConfiguration, answer_for
from eval.metrics import TRUSTED_TIMED_STATUSES, best_attempt_key, format_variant
from eval.results import RESULTS_FILE, ResultsTable
from eval.suites import SuiteTask
from perfforge.executor import Executor
from perfforge.io import read_json, write_json
from perfforge.naming import PROFILE_FILE, RunLayout
from perfforge.records import AttemptRecord, EvalRecord, RooflinePoint
from perfforge.threads import map_in_threads
from perfforge.verdict import Status, Verdict

MEASURE_FILE = "measure.json"
ORIGINAL_PROFILE_FILE = "original_profile.json"
HUMAN_PROFILE_FILE = "human_profile.json"
GENERALISE_FILE = "generalise.json"


@dataclass(frozen=True)
class Variant:
    """The loop settings an ablation varies."""

    sources: str
    candidates: int
    rounds: int

    @property
    def label(self) -> str:
        return format_variant({"sources": self.sources, "candidates": self.candidates, "rounds": self.rounds})

    @property
    def directory(self) -> str:
        return f"{self.sources.replace(',', '+')}-c{self.candidates}-r{self.rounds}"


@dataclass
class Progress:
    """What a pass over the evaluation left: rows added now, and bundles waiting to be run elsewhere."""

    added: int = 0
    pending: list[Path] = field(default_factory=list)


def variants(config: EvalConfig) -> list[Variant]:
    return [Variant(sources, candidates, config.rounds) for sources in config.source_variants()
            for candidates in config.candidates]


class Evaluation:
    """One evaluation's state: its config, tasks, configurations, table and judges."""

    def __init__(self, config: EvalConfig, tasks: list[SuiteTask], configurations: list[ModelConfiguration],
                 endpoints: Endpoints, log: Callable[[str], None], *, executor: Executor | None = None) -> None:
        self.config, self.tasks, self.configurations, self.endpoints, self.log = (config, tasks, configurations,
                                                                                  endpoints, log)
        self.executor = executor  # verdicts and profiles fan out over its workers; None: judged here
        self.table = ResultsTable(config.out / RESULTS_FILE)
        self.progress = Progress()
        self.lock = threading.Lock()  # the table and the progress, with --parallel-runs

    def judge(self, work_dir: Path, *, time_configs: bool,
              log: Callable[[str], None] | None = None):  # noqa: ANN201 (an inference.loop Judge)
        from profiling.bundle import BundleJudge
        from profiling.judge import LocalJudge

        if self.config.bundle:
            return BundleJudge(True, time_configs=time_configs)
        if self.executor is not None:
            from profiling.executor_judge import ExecutorJudge

            return ExecutorJudge(self.executor, profile_improved=True, time_configs=time_configs, log=log or self.log)
        return LocalJudge(work_dir, profile_improved=True, time_configs=time_configs, log=log or self.log)

    def run(self) -> Progress:
        self.table.relabel_splits({(item.suite, item.task.name): item.split for item in self.tasks})
        parallel = self.config.parallel_runs
        stop = threading.Event()  # set when the pool stops (Ctrl-C, an error): no thread starts another run
        measures = map_in_threads(lambda item: None if stop.is_set() else self.measure(item), self.tasks,
                                  workers=parallel, stop=stop, log=self.log, what="measuring the tasks")
        measured = {item.key: measure for item, measure in zip(self.tasks, measures, strict=True)}
        for item in self.tasks:
            measure = measured[item.key]
            if measure is not None and self.config.human:
                self.add_human_row(item, measure)
        # Task by task, every configuration in turn: an evaluation stopped early still compares them on the same
        # tasks (with --parallel-runs N, the next N runs of that order at once).
        planned = [(c, v, s, item) for v in variants(self.config) for s in self.config.seeds for item in self.tasks
                   for c in self.configurations]
        todo = [(number, (c, v, s, item)) for number, (c, v, s, item) in enumerate(planned, start=1)
                if not self.table.has((item.suite, item.task.name, c.name, v.label, s))
                and measured[item.key] is not None]

        def one(numbered: tuple[int, tuple[ModelConfiguration, Variant, int, SuiteTask]]) -> None:
            number, (configuration, variant, seed, item) = numbered
            if stop.is_set():
                return
            log = self.log if parallel == 1 else _prefixed(self.log, f"[{number}] ")
            log(f"[{number}/{len(planned)}] {configuration.name} {variant.label} seed {seed}: {item.key}")
            row = self.run_model(item, configuration, variant, seed, measured[item.key], log)
            if row is not None:
                with self.lock:
                    self.table.add(row)
                    self.progress.added += 1
                log(f"    {row.status}" + (f" {row.speedup:.3f}x" if row.speedup is not None else ""))

        map_in_threads(one, todo, workers=parallel, stop=stop, log=self.log, what="eval")
        return self.progress

    # --- the task, once: the original's profile and the human-optimised reference

    def task_dir(self, item: SuiteTask) -> Path:
        return self.config.out / "tasks" / item.suite / item.task.name

    def measure(self, item: SuiteTask) -> dict[str, Any] | None:
        """{"profile": the original's profile dict, "human": the reference's verdict and per-configuration
        speedups, or None}; None while a bundle is pending. Measured once: later passes read the files."""
        directory = self.task_dir(item)
        path = directory / MEASURE_FILE
        if not path.is_file() and not self._measure_now(item, directory):
            return None
        original = directory / ORIGINAL_PROFILE_FILE
        return {"profile": read_json(original) if original.is_file() else None, "human": read_json(path)["human"]}

    def _measure_now(self, item: SuiteTask, directory: Path) -> bool:
        reference = item.task.reference_path if self.config.human else None
        candidates = [(HUMAN, reference)] if reference is not None and reference.is_file() else []
        self.log(f"measuring {item.key}: the original's profile" + (", the reference" if candidates else ""))
        judge = self.judge(directory / "work", time_configs=self.config.generalise)
        result = judge(item.task, candidates, directory / "bundle", True)
        shutil.rmtree(directory / "work", ignore_errors=True)
        if result is None:
            self.progress.pending.append(directory / "bundle")
            return False
        judgements, profile = result
        if profile is not None:
            write_json(directory / ORIGINAL_PROFILE_FILE, profile.to_dict())
        human = judgements.get(HUMAN)
        if human is not None and human.profile is not None:
            write_json(directory / HUMAN_PROFILE_FILE, human.profile.to_dict())
        write_json(directory / MEASURE_FILE, {"human": {"verdict": human.verdict.to_dict(),
                                                        "config_speedups": human.config_speedups} if human else None})
        return True

    def add_human_row(self, item: SuiteTask, measure: dict[str, Any]) -> None:
        key = (item.suite, item.task.name, HUMAN, "", 0)
        if self.table.has(key) or measure.get("human") is None:
            return
        human = measure["human"]
        verdict = Verdict.from_dict(human["verdict"])
        status = verdict.status
        ci = verdict.speedup_ci or (None, None)
        profile_path = self.task_dir(item) / HUMAN_PROFILE_FILE
        row = self.base_row(item, HUMAN, "", 0, measure, kind="reference")
        row.status, row.correct = status.value, status.correct
        row.speedup = verdict.speedup  # kept when held for review too: shown, never counted (status)
        row.speedup_ci_low, row.speedup_ci_high = ci[0], ci[1]
        row.baseline_ms = verdict.baseline_timing.median_ms if verdict.baseline_timing else None
        row.best_ms = verdict.candidate_timing.median_ms if verdict.candidate_timing else None
        row.held_for_review = int(status is Status.NEEDS_REVIEW)
        row.attempts, row.compiled = 1, int(status.built)
        row.correct_candidates = int(row.correct)
        row.improved_candidates = int(status is Status.IMPROVED)
        if profile_path.is_file():
            row.profile_after = self._relative(profile_path)
            row.roofline_after = _roofline(read_json(profile_path))
        _set_configs(row, item, human.get("config_speedups"))
        row.machine = verdict.machine
        self.table.add(row)
        self.progress.added += 1

    # --- one model run

    def run_dir(self, item: SuiteTask, configuration: ModelConfiguration, variant: Variant, seed: int) -> Path:
        return (self.config.out / "runs" / configuration.name / variant.directory / f"s{seed}" / item.suite /
                item.task.name)

    def run_model(self, item: SuiteTask, configuration: ModelConfiguration, variant: Variant, seed: int,
                  measure: dict[str, Any], log: Callable[[str], None] | None = None) -> EvalRecord | None:
        from inference.config import OptimizeConfig
        from inference.run import run_loop

        out = self.run_dir(item, configuration, variant, seed)
        original = RunLayout(out).original_profile
        if not original.is_file() and measure.get("profile"):
            write_json(original, measure["profile"])  # the loop reads it instead of profiling the original again
        replay = configuration.answers is not None  # one answer per task: one candidate, one round
        loop_config = OptimizeConfig(
            task=item.task.root, out=out, backend="openai", candidates=1 if replay else variant.candidates,
            rounds=1 if replay else variant.rounds, temperature=self.config.temperature,
            max_tokens=self.config.max_tokens, seed=seed, sources=variant.sources.split(","),
            token_budget=self.config.token_budget, bundle=self.config.bundle, constrain=self.config.constrain)
        log = log or self.log
        run = run_loop(item.task, loop_config, lambda: self._backend(configuration, item),
                       self.judge(out / "work", time_configs=False, log=log), _indented(log))
        if run.pending_bundle is not None:
            self.progress.pending.append(run.pending_bundle)
            return None
        generalised = self.generalise(item, out, run.paths.get("optimized"))
        if generalised is None:
            return None  # its bundle is pending
        return self.model_row(item, configuration, variant, seed, measure, run.state.attempts, out, generalised,
                              focus=run.state.focus)

    def _backend(self, configuration: ModelConfiguration, item: SuiteTask):  # noqa: ANN202 (a Backend)
        if configuration.answers is None:
            return self.endpoints.backend(configuration.name)
        from inference.backends import ReplayBackend

        return ReplayBackend(f"{ANSWERS_PREFIX}{configuration.answers}",
                             answer_for(configuration.answers, item.task), item.task.language)

    def generalise(self, item: SuiteTask, out: Path, best: Path | None) -> dict[str, Any] | None:
        """The best candidate's speedup on every input configuration ({} when there is nothing to re-measure)."""
        if best is None or not self.config.generalise:
            return {}
        path = out / GENERALISE_FILE
        if path.is_file():
            return read_json(path)
        judge = self.judge(out / "work", time_configs=True)
        result = judge(item.task, [("best", best)], out / "bundles" / "generalise", False)
        if result is None:
            self.progress.pending.append(out / "bundles" / "generalise")
            return None
        judgement = result[0]["best"]
        generalised = {"verdict": judgement.verdict.to_dict(), "config_speedups": judgement.config_speedups or {}}
        write_json(path, generalised)
        return generalised

    def model_row(self, item: SuiteTask, configuration: ModelConfiguration, variant: Variant, seed: int,
                  measure: dict[str, Any], attempts: list[AttemptRecord], out: Path,
                  generalised: dict[str, Any], *, focus: str) -> EvalRecord:
        row = self.base_row(item, configuration.name, variant.label, seed, measure, kind="model")
        row.model = attempts[0].model if attempts else ""
        row.sources, row.candidates, row.rounds = variant.sources, variant.candidates, variant.rounds
        if configuration.answers is not None:  # replayed: one candidate in one round, whatever the variant says
            row.candidates, row.rounds = 1, 1
        row.temperature, row.bottleneck = self.config.temperature, focus
        _set_attempts(row, attempts)
        row.machine = next((a.machine for a in attempts if a.machine), "")  # where candidates were judged
        best = _best(attempts)
        if best is not None:
            row.speedup_ci_low, row.speedup_ci_high = best.speedup_ci_low, best.speedup_ci_high
            row.speedup, row.baseline_ms, row.best_ms = best.speedup, best.baseline_ms, best.candidate_ms
            row.belief, row.machine = best.belief, best.machine
            profile_path = RunLayout(out).candidate_dir(best.round, best.candidate) / PROFILE_FILE
            if profile_path.is_file():
                row.profile_after = self._relative(profile_path)
                row.roofline_after = _roofline(read_json(profile_path))
        _set_configs(row, item, generalised.get("config_speedups") if generalised else None)
        row.run_dir = self._relative(out)
        return row

    def base_row(self, item: SuiteTask, configuration: str, variant: str, seed: int, measure: dict[str, Any], *,
                 kind: str) -> EvalRecord:
        task = item.task
        profile = measure.get("profile") or {}
        diagnoses = profile.get("diagnoses") or []
        return EvalRecord(
            suite=item.suite, task=task.name, configuration=configuration, variant=variant, seed=seed,
            target=task.target, language=task.language, kernel=task.kernel, pattern=task.pattern or "",
            split=item.split, bottleneck=diagnoses[0]["name"] if diagnoses else "", kind=kind, model="",
            sources="", candidates=0, rounds=0, temperature=0.0, status="", correct=False,
            roofline_before=_roofline(profile), default_config=task.default_config,
            profile_before=self._relative(self.task_dir(item) / ORIGINAL_PROFILE_FILE) if profile else "")

    def _relative(self, path: Path) -> str:
        return str(path.relative_to(self.config.out))


def _roofline(profile: dict[str, Any] | None) -> RooflinePoint | None:
    point = (profile or {}).get("roofline")
    return RooflinePoint(**point) if point else None


def _best(attempts: list[AttemptRecord]) -> AttemptRecord | None:
    """The best attempt whose correctness and speedup are both trusted: the fastest proven win, else the fastest."""
    timed = [a for a in attempts if a.status in TRUSTED_TIMED_STATUSES and a.speedup is not None]
    return max(timed, key=lambda a: best_attempt_key(a.status, a.speedup or 0.0)) if timed else None


def _set_attempts(row: EvalRecord, attempts: list[AttemptRecord]) -> None:
    statuses = [Status(a.status) for a in attempts]
    row.status = min(statuses, key=lambda s: s.rank).value if statuses else "no_attempt"  # the furthest one got
    row.correct = any(s.correct for s in statuses)
    row.held_for_review = statuses.count(Status.NEEDS_REVIEW)
    row.attempts = len(attempts)
    row.compiled = sum(s.built for s in statuses)
    row.correct_candidates = sum(s.correct for s in statuses)
    row.improved_candidates = statuses.count(Status.IMPROVED)
    row.prompt_tokens = sum({a.round: a.prompt_tokens for a in attempts}.values())  # one prompt per round
    row.completion_tokens = sum(a.completion_tokens for a in attempts)
    row.attempt_rounds = [a.round for a in attempts]
    row.attempt_candidates = [a.candidate for a in attempts]
    row.attempt_statuses = [s.value for s in statuses]
    row.attempt_speedups = [a.speedup for a in attempts]
    row.attempt_tokens = [a.completion_tokens for a in attempts]


def _set_configs(row: EvalRecord, item: SuiteTask, by_config: dict[str, dict[str, Any]] | None) -> None:
    if not by_config:
        return
    row.config_names = [c.name for c in item.task.configs]
    row.config_speedups = [(by_config.get(name) or {}).get("speedup") for name in row.config_names]


def _prefixed(log: Callable[[str], None], prefix: str) -> Callable[[str], None]:
    """Each line of a run's log marked with its number: runs at once interleave their lines."""
    return lambda message: log(prefix + message)


def _indented(log: Callable[[str], None]) -> Callable[[str], None]:
    return lambda message: log("    " + message)
