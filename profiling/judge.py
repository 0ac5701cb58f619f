"""Judging candidates: profiling.validate's verdict for each, and a profile of each improved one.

The one place candidates are run, here and on a GPU machine that runs a bundle (profiling.bundle): it imports
only profiling/ and the core, never the model stack. Candidates run only inside validate's and profile's
sandboxed subprocesses. A Judgement holds objects; to_dict/from_dict are for the files it travels in (a bundle's
results.json, eval's measure files).
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from perfforge.errors import PerfforgeError
from perfforge.records import Profile
from perfforge.task import Task
from perfforge.verdict import Status, Verdict


@dataclass
class Judgement:
    """What judging one candidate produced: the verdict and, for an improved one, its profile."""

    verdict: Verdict
    profile: Profile | None = None
    config_speedups: dict[str, dict[str, Any]] | None = None  # per input configuration, when asked for

    def to_dict(self) -> dict[str, Any]:
        return {"verdict": self.verdict.to_dict(), "profile": self.profile.to_dict() if self.profile else None,
                "config_speedups": self.config_speedups}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Judgement:
        profile = data.get("profile")
        return cls(Verdict.from_dict(data["verdict"]), Profile.from_dict(profile) if profile else None,
                   data.get("config_speedups"))


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
                                   time_configs=self.time_configs, log=self.log, on_result=on_judged)
        shutil.rmtree(self.work_dir / "validate", ignore_errors=True)
        return results, profile


def profile_original(task: Task, work_dir: Path) -> Profile:
    from profiling.profile import profile_task

    try:
        return profile_task(task, work_dir / "profile-original")
    finally:
        shutil.rmtree(work_dir / "profile-original", ignore_errors=True)


def judge_candidates(task: Task, candidates: list[tuple[str, Path]], work_dir: Path, *, profile_improved: bool,
                     time_configs: bool = False, log: Callable[[str], None] = print,
                     on_result: Callable[[str, Judgement], None] | None = None) -> dict[str, Judgement]:
    """{name: Judgement} for each (name, candidate file). With time_configs, a correct candidate is also timed on
    every input configuration (profiling.validate.speedup_by_config). Validation runs one candidate at a time:
    timings must not overlap."""
    from profiling.validate import speedup_by_config, validate

    results: dict[str, Judgement] = {}
    for name, path in candidates:
        verdict = validate(task, path, work_dir / "validate")
        log(f"{name}: {verdict.headline()}")
        profile = None
        if profile_improved and verdict.status is Status.IMPROVED:
            profile = _profile_candidate(task, path, work_dir / f"profile-{name}", log)
        by_config = None
        if time_configs and verdict.correct:
            by_config = speedup_by_config(task, path, work_dir / "validate")
        results[name] = Judgement(verdict, profile, by_config)
        if on_result is not None:
            on_result(name, results[name])
    return results


def _profile_candidate(task: Task, path: Path, work_dir: Path, log: Callable[[str], None]) -> Profile | None:
    """The candidate's profile, or None when profiling fails (the verdict stands; the belief check goes without)."""
    from profiling.profile import profile_task

    try:
        return profile_task(task, work_dir, version=path)
    except PerfforgeError as exc:
        log(f"profiling the candidate failed (the verdict stands): {str(exc).splitlines()[0]}")
        return None
    finally:
        shutil.rmtree(work_dir, ignore_errors=True)
