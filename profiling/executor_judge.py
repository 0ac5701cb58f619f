"""Judging on an executor's workers (perfforge/executor.py): the loop's and eval's judge when verdicts fan out.

    driver (the loop, eval)                              worker (one per GPU; for CPU tasks, the CPU_TIMING one)
      ExecutorJudge(task, candidates)
        one JudgeItem per candidate ───────────────────> judge_item: the task's files and the candidate's source
        (+ one for the original's profile)                 written to a scratch directory, then LocalJudge's own
      on_judged(name, Judgement) as each comes back <──── judge_candidates / profile_original, as a dict

A worker needs no access to the driver's disk: the task directory's files and the candidate's source travel with
the item, the Judgement comes back as a dict. Every candidate still runs only inside validate's and profile's
sandboxed subprocesses, on the worker. Verdicts fan out across workers, never within one (a GPU item holds its
worker's GPU, a timed CPU item the machine's CPU_TIMING), so timings never overlap on one device.

A worker lost while judging (its GPU context corrupted, its node gone) has its item run again elsewhere by the
executor; an item that still fails reads as a crashed verdict whose reason says the judge's worker failed, so the
loop goes on.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from perfforge.errors import PerfforgeError
from perfforge.executor import Executor, Failure, WorkerTally
from perfforge.records import Profile
from perfforge.targets import target_spec
from perfforge.task import Task, load_task
from perfforge.verdict import Status, Verdict
from profiling.judge import Judgement, judge_candidates, profile_original
from profiling.machine import describe_machine

ORIGINAL = ""  # the name of the item that profiles the original


@dataclass(frozen=True)
class JudgeItem:
    """One candidate to judge (or, with name ORIGINAL, the original to profile), self-contained."""

    task_name: str  # the task directory's name
    task_files: dict[str, bytes]
    name: str
    source: bytes
    profile_improved: bool
    time_configs: bool


def judge_item(item: JudgeItem) -> dict[str, Any]:
    """Runs on a worker: {"judgement": ...} for a candidate, {"profile": ...} for the original."""
    with tempfile.TemporaryDirectory(prefix="perfforge-judge-") as scratch:
        root = Path(scratch) / item.task_name
        root.mkdir()
        for name, data in item.task_files.items():
            (root / name).write_bytes(data)
        task = load_task(root)
        work = Path(scratch) / "work"
        if item.name == ORIGINAL:
            return {"profile": profile_original(task, work).to_dict()}
        candidate = Path(scratch) / f"candidate{Path(task.source).suffix}"
        candidate.write_bytes(item.source)
        judged = judge_candidates(task, [(item.name, candidate)], work, profile_improved=item.profile_improved,
                                  time_configs=item.time_configs, log=lambda _line: None)
        return {"judgement": judged[item.name].to_dict()}


class ExecutorJudge:
    """The loop's judge (inference.loop's Judge protocol) on an executor's workers."""

    def __init__(self, executor: Executor, *, profile_improved: bool, time_configs: bool = False,
                 log: Callable[[str], None] = print) -> None:
        self.executor, self.profile_improved, self.time_configs, self.log = (executor, profile_improved,
                                                                             time_configs, log)

    def __call__(self, task: Task, candidates: list[tuple[str, Path]], directory: Path, profile_first: bool,
                 on_judged: Callable[[str, Judgement], None] | None = None,
                 ) -> tuple[dict[str, Judgement], Profile | None]:
        files = {p.name: p.read_bytes() for p in sorted(task.root.iterdir()) if p.is_file()}
        items = [JudgeItem(task.root.name, files, ORIGINAL, b"", False, False)] if profile_first else []
        items += [JudgeItem(task.root.name, files, name, path.read_bytes(), self.profile_improved, self.time_configs)
                  for name, path in candidates]
        paths = dict(candidates)
        gpu = target_spec(task.target).gpu
        results: dict[str, Judgement] = {}
        profile: Profile | None = None
        tally = WorkerTally(self.executor.workers)
        for done in self.executor.map_unordered(judge_item, items, gpu=gpu, cpu_timing=not gpu):
            item = items[done.index]
            tally.add(done)
            if item.name == ORIGINAL:
                if isinstance(done.result, Failure):
                    raise PerfforgeError(f"profiling the original of {task.name} failed on the executor: "
                                         f"{done.result.error}; rerun to try again (finished work is kept)")
                profile = Profile.from_dict(done.result["profile"])
                continue
            judgement = (_worker_failed(task, paths[item.name], done.result) if isinstance(done.result, Failure)
                         else Judgement.from_dict(done.result["judgement"]))
            judgement.verdict.candidate = str(paths[item.name])  # where the driver keeps it, not the worker's copy
            self.log(f"{item.name}: {judgement.verdict.headline()} (on {done.worker})")
            results[item.name] = judgement
            if on_judged is not None:
                on_judged(item.name, judgement)
        if len(items) > 1:
            self.log(f"judged on the executor: {tally.line()}")
        return {name: results[name] for name, _ in candidates if name in results}, profile


def _worker_failed(task: Task, candidate: Path, failure: Failure) -> Judgement:
    verdict = Verdict(task=task.name, candidate=str(candidate), target=task.target, status=Status.CRASHED,
                      reason=f"the judge's worker failed while judging it, after the executor's retries "
                             f"({failure.error}); the candidate's own runs may not be the cause",
                      machine=describe_machine())
    return Judgement(verdict)
