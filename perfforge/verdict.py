"""The verdict: correct or not, faster or not, with reasons, and which rule of VALIDATION.md was enforced how.

A verdict is an object inside the process, JSON at the file boundary (to_dict / from_dict), and one human line
(headline). Its reason is written for a model to act on: the compiler's errors, the first mismatching output with
its index and values, the timing with its spread.

`Status` is the one set of attempt statuses every stage compares against: the validator's, plus `unparsable` for an
answer the loop could read no code from (never judged). Its order (`rank`) says how far an attempt got.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields
from enum import StrEnum
from typing import Any

from perfforge.records import Timing


class Status(StrEnum):
    IMPROVED = "improved"  # correct, and faster beyond the noise floor
    NO_CHANGE = "no_change"  # correct, within the noise floor
    SLOWER = "slower"  # correct, slower beyond the noise floor
    NEEDS_REVIEW = "needs_review"  # correct and faster, but implausibly so (rule 14): not a win until reviewed
    CORRECT = "correct"  # correct on every checked run; not timed (validate --no-timing)
    INCORRECT = "incorrect"  # wrong, missing or changed outputs, inputs modified, non-deterministic, out of bounds
    CRASHED = "crashed"  # a signal or an error exit
    TIMEOUT = "timeout"  # did not finish within its time limit
    BUILD_FAILED = "build_failed"  # did not compile
    REJECTED = "rejected"  # a strict static check failed (nothing was built or run), or a correct torch-target
    # answer's own kernels did not do the work of a profiled call (profiling/kernel_coverage.py)
    TASK_INVALID = "task_invalid"  # the task cannot judge: the original fails, or its test is degenerate (rule 10)
    UNPARSABLE = "unparsable"  # the loop read no code from the model's answer: nothing was judged

    @property
    def correct(self) -> bool:
        return self in (Status.IMPROVED, Status.NO_CHANGE, Status.SLOWER, Status.NEEDS_REVIEW, Status.CORRECT)

    @property
    def trusted_speedup(self) -> bool:
        """Correct and timed with a speedup to believe: needs_review is held for a person, correct is untimed."""
        return self in (Status.IMPROVED, Status.NO_CHANGE, Status.SLOWER)

    @property
    def rank(self) -> int:
        """How far an attempt got, 0 for the furthest (improved): of several attempts, the lowest rank speaks."""
        return _RANK[self]

    @property
    def built(self) -> bool:
        """Whether the candidate reached the correctness check (it was read, passed the static checks, built)."""
        return self not in (Status.UNPARSABLE, Status.REJECTED, Status.BUILD_FAILED, Status.TASK_INVALID)


# Declaration order is not the progress order: correct-but-untimed sits below every timed correct status, and an
# implausible win above a candidate that merely matched the original.
_RANK = {status: index for index, status in enumerate((
    Status.IMPROVED, Status.NEEDS_REVIEW, Status.NO_CHANGE, Status.SLOWER, Status.CORRECT, Status.INCORRECT,
    Status.CRASHED, Status.TIMEOUT, Status.BUILD_FAILED, Status.REJECTED, Status.TASK_INVALID, Status.UNPARSABLE))}


class RuleStatus(StrEnum):
    ENFORCED = "enforced"
    PARTLY = "partly_enforced"
    NOT_ENFORCED = "not_enforced"
    NOT_APPLICABLE = "not_applicable"


@dataclass
class RuleCheck:
    rule: int  # its number in VALIDATION.md
    title: str
    status: RuleStatus
    detail: str = ""


@dataclass
class Verdict:
    task: str
    candidate: str
    target: str
    status: Status
    reason: str  # why, precisely
    checked_runs: list[str] = field(default_factory=list)  # config/seed pairs whose outputs were compared
    static_findings: list[dict[str, Any]] = field(default_factory=list)
    worst_margin: float | None = None  # max |error| / tolerance over every compared output element
    worst_output: str = ""
    speedup: float | None = None
    speedup_ci: tuple[float, float] | None = None
    noise_floor: float | None = None
    baseline_timing: Timing | None = None
    candidate_timing: Timing | None = None
    review: list[str] = field(default_factory=list)  # plausibility problems (rule 14)
    rules: list[RuleCheck] = field(default_factory=list)
    machine: str = ""
    tools: str = ""
    duration_s: float = 0.0
    # where the time went: static, build, binary_policy, correctness, timing (seconds each; what a verdict costs)
    phase_durations_s: dict[str, float] = field(default_factory=dict)

    @property
    def correct(self) -> bool:
        return self.status.correct

    def headline(self) -> str:
        """One line for people: status, speedup with its interval, and the reason's first line."""
        text = f"{self.task}: {self.status.value}"
        if self.speedup is not None and self.speedup_ci and self.baseline_timing and self.candidate_timing:
            text += (f", {self.speedup:.3f}x [{self.speedup_ci[0]:.3f}, {self.speedup_ci[1]:.3f}] "
                     f"({self.baseline_timing.median_ms:.4g} ms -> {self.candidate_timing.median_ms:.4g} ms, "
                     f"noise floor {self.noise_floor:.1%})")
        if self.worst_margin is not None and self.status.correct:
            text += f", worst element at {self.worst_margin:.2f} of its tolerance"
        first = self.reason.strip().splitlines()[0] if self.reason.strip() else ""
        return f"{text}: {first}" if first else text

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["status"] = self.status.value
        data["correct"] = self.correct
        data["rules"] = [{**asdict(r), "status": r.status.value} for r in self.rules]
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Verdict:
        """The inverse of to_dict (verdict.json, bundle results, eval's measure files); `correct` is derived."""
        known = {f.name for f in fields(cls)}
        unknown = set(data) - known - {"correct"}
        if unknown:
            raise ValueError(f"Verdict has no field(s) {sorted(unknown)}")
        values = {key: value for key, value in data.items() if key in known}
        values["status"] = Status(values["status"])
        values["rules"] = [RuleCheck(**{**r, "status": RuleStatus(r["status"])}) for r in values.get("rules", [])]
        for side in ("baseline_timing", "candidate_timing"):
            if values.get(side) is not None:
                values[side] = Timing(**values[side])
        if values.get("speedup_ci") is not None:
            values["speedup_ci"] = tuple(values["speedup_ci"])
        return cls(**values)

    @classmethod
    def unparsable(cls, task: str, target: str, reason: str) -> Verdict:
        """The verdict of an answer with no readable code: nothing was built or run."""
        return cls(task=task, candidate="", target=target, status=Status.UNPARSABLE, reason=reason)
