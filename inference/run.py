"""The optimisation loop as one call: what `perfforge optimize` runs, and the one entry point eval drives.

`run_loop` runs (or resumes) the loop on a task and, once no bundle is pending, writes its outcome (attempts,
patch, optimised file) and its report. Where each file lands is perfforge.naming.RunLayout.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from inference.backends import Backend
from inference.config import OptimizeConfig
from inference.loop import Judge, LoopState, optimize, write_outcome
from inference.report import headline, write_report
from perfforge.task import Task


@dataclass
class LoopRun:
    """A finished (or bundle-pending) run: the loop's state and the files written."""

    state: LoopState
    paths: dict[str, Path] = field(default_factory=dict)  # attempts, patch, optimized, report_json, report_md

    @property
    def pending_bundle(self) -> Path | None:
        return self.state.pending_bundle

    def headline(self) -> str:
        return headline(self.state)


def run_loop(task: Task, config: OptimizeConfig, make_backend: Callable[[], Backend], judge: Judge,
             log: Callable[[str], None] = print) -> LoopRun:
    """Run or resume the loop, then write its outcome and report (nothing while a bundle is pending)."""
    state = optimize(task, config, make_backend, judge, log)
    if state.pending_bundle is not None:
        return LoopRun(state)
    paths = write_outcome(state)
    paths.update(write_report(state, paths))
    return LoopRun(state, paths)
