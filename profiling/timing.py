"""Interleaved A/B timing of two built versions (VALIDATION.md rules 11-13, 16).

Baseline (A) and candidate (B) run in the same session, alternating A B B A A B ... in separate processes, each
process warming up and then timing many calls with the harness's own clock (device events under CUDA, the
monotonic clock on the CPU) and a cache flush before each call. The pure statistics live in profiling/score.py.
Never called under a profiler. Timed calls are checked too: in every round, SAVED_CALLS_PER_ROUND timed calls
picked at random (the kernel cannot know which) have their outputs compared, the candidate's against the
baseline's on the same inputs, so a kernel that skips work or answers from memory once timed is caught.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from perfforge.task import Task, TaskConfig
from profiling.build import Build
from profiling.correctness import compare_run
from profiling.harness_run import run_harness

# Timed calls per round whose outputs are written and compared: a kernel that skips its work on half the timed calls
# is caught with probability 1 - 0.5^8 over 4 rounds; more calls cost more writing (256 MB outputs on an H100
# transpose task: 2 calls per round took its verdict from 108 s to about 150 s).
SAVED_CALLS_PER_ROUND = 2


@dataclass
class TimingRuns:
    """Per side, the trial times of every round (one process per round)."""

    baseline_ms: list[list[float]]
    candidate_ms: list[list[float]]
    method: str
    context: dict
    failure: str = ""  # why timing stopped, when it did
    timed_mismatch: str = ""  # how the candidate's timed outputs differed from the baseline's, when they did

    @property
    def stopped(self) -> str:
        """Why timing gave no speedup: a run failed or the timed outputs differed ('' when it finished)."""
        return self.failure or self.timed_mismatch


def time_interleaved(task: Task, baseline: Build, candidate: Build, config: TaskConfig, work_dir: Path,
                     *, rounds: int | None = None, trials: int | None = None,
                     candidate_timeout_s: float | None = None) -> TimingRuns:
    """Alternate the two versions for `rounds` rounds each; the order flips every round (ABBA) so that a slow drift
    of the machine (clocks, a neighbour's load) weighs on both sides equally."""
    runs = TimingRuns(baseline_ms=[], candidate_ms=[], method="", context={})
    warmup, trials = task.validate.warmup, trials or task.validate.trials
    picker = random.SystemRandom()  # not seeded: nothing the candidate can read predicts the checked calls
    for round_index in range(rounds or task.validate.rounds):
        saved = tuple(sorted(picker.sample(range(warmup, warmup + trials), min(SAVED_CALLS_PER_ROUND, trials))))
        order = [("baseline", baseline), ("candidate", candidate)]
        if round_index % 2:
            order.reverse()
        outputs: dict[str, dict[int, dict[str, np.ndarray]]] = {}  # side -> saved call -> buffers
        for side, built in order:
            timeout = candidate_timeout_s if side == "candidate" else None
            run = run_harness(task, built, "time", config, work_dir / f"time-{side}-{round_index}", seed=round_index,
                              warmup=warmup, trials=trials, timeout_s=timeout, save_calls=saved)
            # read, then deleted at once (the baseline's are reference results: this round's candidate, or a later
            # candidate's check, must not find them on disk)
            outputs[side] = {call: buffers for call, (buffers, _) in run.take(saved if run.ok else ()).items()}
            if not run.ok:
                runs.failure = f"{side} failed while being timed: {run.reason()}"
                return runs
            timing = run.timing()
            runs.method = timing.get("method", "")
            runs.context = {k: v for k, v in timing.items() if k not in ("times_ms", "saved_calls")}
            (runs.baseline_ms if side == "baseline" else runs.candidate_ms).append(run.times_ms())
        runs.timed_mismatch = _compare_saved_calls(task, outputs["candidate"], outputs["baseline"], round_index)
        if runs.timed_mismatch:
            return runs
    return runs


def _compare_saved_calls(task: Task, candidate: dict[int, dict[str, np.ndarray]],
                         baseline: dict[int, dict[str, np.ndarray]], round_index: int) -> str:
    """How the candidate's outputs of the saved timed calls differ from the baseline's, or ''."""
    for call, want in baseline.items():
        same = compare_run(task.outputs, candidate[call], want)
        if not same.ok:
            return f"round {round_index}, timed call {call}: {same.problem}"
    return ""
