"""Judging candidates: profiling.validate's verdict for each, and a profile of each improved one.

The one place candidates are run, here and on a GPU machine that runs a bundle (inference.bundle): it imports
only profiling/ and the core, never the model stack. Candidates run only inside validate's and profile's
sandboxed subprocesses. Verdicts and profiles are returned as dicts, the form they travel in.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from perfforge.errors import PerfforgeError
from perfforge.records import Profile
from profiling.task import Task


@dataclass
class Judgement:
    """What judging one candidate produced: the verdict (as its dict) and, for an improved one, its profile."""

    verdict: dict[str, Any]
    profile: dict[str, Any] | None = None
    config_speedups: dict[str, dict[str, Any]] | None = None  # per input configuration, when asked for


class LocalJudge:
    """The loop's judge when candidates run on this machine."""

    def __init__(self, work_dir: Path, *, profile_improved: bool, time_configs: bool = False,
                 log: Callable[[str], None] = print) -> None:
        self.work_dir, self.profile_improved, self.time_configs, self.log = (work_dir, profile_improved,
                                                                             time_configs, log)

    def __call__(self, task: Task, candidates: list[tuple[str, Path]], directory: Path, profile_first: bool,
                 on_judged: Callable[[str, Judgement], None] | None = None,
                 ) -> tuple[dict[str, Judgement], Profile | None]:
        """Judge the candidates one after another; on_judged(name, judgement) as each is done, so that an
        interruption loses none of those already judged."""
        profile = profile_original(task, self.work_dir) if profile_first else None
        results = judge_candidates(task, candidates, self.work_dir, profile_improved=self.profile_improved,
                                   time_configs=self.time_configs, log=self.log,
                                   on_result=(lambda name, r: on_judged(name, _judgement(r))) if on_judged else None)
        shutil.rmtree(self.work_dir / "validate", ignore_errors=True)
        return {name: _judgement(r) for name, r in results.items()}, profile


def _judgement(result: dict[str, Any]) -> Judgement:
    return Judgement(result["verdict"], result["profile"], result["config_speedups"])


def profile_original(task: Task, work_dir: Path) -> Profile:
    from profiling.profile import profile_task

    try:
        return profile_task(task, work_dir / "profile-original")
    finally:
        shutil.rmtree(work_dir / "profile-original", ignore_errors=True)


def judge_candidates(task: Task, candidates: list[tuple[str, Path]], work_dir: Path, *, profile_improved: bool,
                     time_configs: bool = False, log: Callable[[str], None] = print,
                     on_result: Callable[[str, dict[str, Any]], None] | None = None) -> dict[str, dict[str, Any]]:
    """{name: {"verdict": verdict dict, "profile": profile dict or None, "config_speedups": ... or None}} for each
    (name, candidate file). With time_configs, a correct candidate is also timed on every input configuration
    (profiling.validate.speedup_by_config). Validation runs one candidate at a time: timings must not overlap."""
    from profiling.validate import speedup_by_config, validate

    results: dict[str, dict[str, Any]] = {}
    for name, path in candidates:
        verdict = validate(task, path, work_dir / "validate")
        log(f"{name}: {verdict.headline()}")
        profile = None
        if profile_improved and verdict.status.value == "improved":
            profile = _profile_candidate(task, path, work_dir / f"profile-{name}", log)
        by_config = None
        if time_configs and verdict.correct:
            by_config = speedup_by_config(task, path, work_dir / "validate")
        results[name] = {"verdict": verdict.to_dict(), "profile": profile, "config_speedups": by_config}
        if on_result is not None:
            on_result(name, results[name])
    return results


def _profile_candidate(task: Task, path: Path, work_dir: Path, log: Callable[[str], None]) -> dict[str, Any] | None:
    """The candidate's profile, or None when profiling fails (the verdict stands; the belief check goes without)."""
    from profiling.profile import profile_task

    try:
        return profile_task(task, work_dir, version=path).to_dict()
    except PerfforgeError as exc:
        log(f"profiling the candidate failed (the verdict stands): {str(exc).splitlines()[0]}")
        return None
    finally:
        shutil.rmtree(work_dir, ignore_errors=True)
