"""Check one generated task through the pipeline before it is kept: the fast version must be correct against the
slow one and measurably faster (perfforge validate), and the profile of the slow version must name the planted
bottleneck (perfforge profile and its diagnoses). The fast version is profiled too: the record carries both.

A planted gap may be large: a speedup held for review only because it exceeds the plausibility ratio (rule 14
of VALIDATION.md) counts as faster here, since the pattern's fix is known to be real; a throughput above the
machine's peak never does.
"""

from __future__ import annotations

import shutil
import statistics
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from perfforge.errors import PerfforgeError
from perfforge.records import Profile
from perfforge.task import Task
from perfforge.verdict import Status, Verdict
from profiling.build import build
from profiling.profile import profile_build_flags, profile_task
from profiling.validate import validate

# The only plausibility problem a known pattern fix may carry: "speedup NNx is above 10x" (profiling/score.py).
PLANTED_GAP_PROBLEM_PREFIX = "speedup "


@dataclass
class InstanceCheck:
    """The pipeline's judgement of one instance; `kept` when every condition holds."""

    task: str
    pattern: str
    seed: int
    target: str
    bottleneck: str
    kept: bool = False
    reason: str = ""  # why it was dropped (empty when kept)
    verdict_status: str = ""
    speedup: float | None = None
    speedup_ci: tuple[float, float] | None = None
    slow_ms: float | None = None
    fast_ms: float | None = None
    diagnoses: list[tuple[str, float]] = field(default_factory=list)  # the slow version's, most severe first
    diagnoses_fast: list[tuple[str, float]] = field(default_factory=list)
    profile_slow: dict[str, Any] | None = None
    profile_fast: dict[str, Any] | None = None
    verdict_reason: str = ""
    duration_s: float = 0.0

    @property
    def top_diagnosis(self) -> str:
        return self.diagnoses[0][0] if self.diagnoses else ""

    @property
    def top_correct(self) -> bool:
        return self.top_diagnosis == self.bottleneck

    @property
    def named(self) -> bool:
        return any(name == self.bottleneck for name, _ in self.diagnoses)

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "top_diagnosis": self.top_diagnosis, "top_correct": self.top_correct}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> InstanceCheck:
        known = {k: v for k, v in data.items() if k in cls.__dataclass_fields__}
        known["diagnoses"] = [tuple(d) for d in known.get("diagnoses", [])]
        known["diagnoses_fast"] = [tuple(d) for d in known.get("diagnoses_fast", [])]
        if known.get("speedup_ci") is not None:
            known["speedup_ci"] = tuple(known["speedup_ci"])
        return cls(**known)

    def slow_profile(self) -> Profile | None:
        return Profile.from_dict(self.profile_slow) if self.profile_slow else None

    def fast_profile(self) -> Profile | None:
        return Profile.from_dict(self.profile_fast) if self.profile_fast else None


def faster(verdict: Verdict) -> bool:
    """Correct and faster beyond the noise floor (a planted gap above the plausibility ratio included)."""
    if verdict.status == Status.IMPROVED:
        return True
    return verdict.status == Status.NEEDS_REVIEW and all(
        problem.startswith(PLANTED_GAP_PROBLEM_PREFIX) for problem in verdict.review)


def work_dirs(work_dir: Path) -> dict[str, Path]:
    """Where the check's stages work: validate, and the profiles of the slow and the fast version."""
    return {"validate": work_dir / "validate", "slow": work_dir / "profile-slow", "fast": work_dir / "profile-fast"}


def prebuild(task: Task, work_dir: Path) -> str:
    """Build everything check_task will build, into the same cached build directories, so that builds can run in
    parallel ahead of the checks (whose timings must not overlap). The first build failure's reason, or ""."""
    dirs = work_dirs(work_dir)
    flags = profile_build_flags(task)
    jobs = [(task.source_path, dirs["validate"], ()), (task.reference_path, dirs["validate"], ()),
            (task.source_path, dirs["slow"], flags), (task.reference_path, dirs["fast"], flags)]
    for version, directory, extra_flags in jobs:
        built = build(task, version, directory, extra_flags=extra_flags)
        if not built.ok:
            return built.reason()
    return ""


def check_task(task: Task, work_dir: Path, *, timing: bool = True) -> InstanceCheck:
    """Validate the task's reference against its source, then profile both; `timing=False` checks correctness
    and the diagnosis only (for machines too noisy to time on). work_dir is removed afterwards: its builds and
    outputs can be large (GPU tasks: hundreds of MB) and the check keeps what it needs."""
    if task.reference_path is None or task.bottleneck is None:
        raise PerfforgeError(f"task {task.name} needs a reference and a bottleneck to be checked as a pattern")
    started = time.monotonic()
    check = InstanceCheck(task=task.name, pattern=task.pattern or "", seed=task.pattern_seed or 0,
                          target=task.target, bottleneck=task.bottleneck)
    try:
        _judge(task, work_dir, check, timing)
    finally:
        check.duration_s = round(time.monotonic() - started, 3)
        shutil.rmtree(work_dir, ignore_errors=True)
    return check


def _judge(task: Task, work_dir: Path, check: InstanceCheck, timing: bool) -> None:
    dirs = work_dirs(work_dir)
    verdict = validate(task, task.reference_path, dirs["validate"], timing=timing)
    check.verdict_status, check.verdict_reason = verdict.status.value, verdict.reason
    check.speedup, check.speedup_ci = verdict.speedup, verdict.speedup_ci
    if verdict.baseline_timing and verdict.candidate_timing:
        check.slow_ms, check.fast_ms = verdict.baseline_timing.median_ms, verdict.candidate_timing.median_ms
    if not verdict.correct:
        check.reason = f"fast version not correct: {verdict.status.value}: {first_line(verdict.reason)}"
        return
    if timing and not faster(verdict):
        check.reason = f"fast version not measurably faster: {verdict.headline()}"
        return
    try:
        slow = profile_task(task, dirs["slow"])
        fast = profile_task(task, dirs["fast"], version=task.reference_path)
    except PerfforgeError as exc:
        check.reason = f"profiling failed: {first_line(str(exc))}"
        return
    check.profile_slow, check.profile_fast = slow.to_dict(), fast.to_dict()
    check.diagnoses = [(d.name, d.severity) for d in slow.diagnoses]
    check.diagnoses_fast = [(d.name, d.severity) for d in fast.diagnoses]
    if not check.named:
        found = ", ".join(f"{n} ({s:.2f})" for n, s in check.diagnoses) or "none"
        check.reason = f"the slow version's diagnoses do not name {task.bottleneck}: {found}"
        return
    check.kept = True


def first_line(text: str) -> str:
    stripped = text.strip()
    return stripped.splitlines()[0] if stripped else ""


def speedup_range(speedups: list[float]) -> dict[str, float | None]:
    """speedup_min, speedup_median and speedup_max of a run's kept tasks (None when there are none)."""
    figures = {"speedup_min": min, "speedup_median": statistics.median, "speedup_max": max}
    return {name: round(figure(speedups), 3) if speedups else None for name, figure in figures.items()}
