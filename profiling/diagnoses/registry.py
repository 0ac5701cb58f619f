"""The registry of diagnosis rules, and the thresholds they read.

A rule is a small object: its name (the bottleneck it names), the targets it applies to, the counters it reads,
a one-sentence hint at the usual fix, and `check(profile, thresholds)` returning a Diagnosis or None. RULES is a
perfforge.registry.Registry: a duplicate name is an error; an unknown name answers with the close matches and the
valid names; the per-target rule modules are imported before the first lookup. Thresholds are not in the code:
each target's spec (perfforge/targets.py) names its TOML file in thresholds/, whose entries say value, unit and
reason, so a user can read why a threshold is what it is and override it.
"""

from __future__ import annotations

import importlib
import pkgutil
import tomllib
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from perfforge.records import Diagnosis, Finding, Profile
from perfforge.registry import Registry
from perfforge.targets import TARGETS

THRESHOLDS_DIR = Path(__file__).with_name("thresholds")


@dataclass(frozen=True)
class Threshold:
    """A documented threshold: value in unit, and why that value."""

    name: str
    value: float
    unit: str
    reason: str


@dataclass(frozen=True)
class Rule:
    """One diagnosis: the bottleneck it names and how to recognise it in a profile."""

    name: str
    targets: tuple[str, ...]
    counters: tuple[str, ...]  # the profile counters (tool metric names) the rule reads
    thresholds: tuple[str, ...]  # names of the entries of its targets' thresholds file (thresholds/) it reads
    hint: str  # what usually fixes it
    check: Callable[[Profile, dict[str, Threshold]], Diagnosis | None]
    # the counters it cannot judge without: where one is missing the rule is not run and the profile says so
    # (Profile.unmeasured), instead of reading the counter as 0
    requires: tuple[str, ...] = ()


def _load_rule_modules() -> None:
    """Import the per-target rule modules, which register their rules (RULES' loader)."""
    for module in pkgutil.iter_modules([str(Path(__file__).parent)]):  # this package's modules
        if module.name != "registry":
            importlib.import_module(f"profiling.diagnoses.{module.name}")


RULES: Registry[Rule] = Registry("diagnosis", entry_type=Rule, loader=_load_rule_modules)


def register(rule: Rule) -> Rule:
    """Register a rule under its name (a name registered twice is a ValueError)."""
    return RULES.register(rule.name, rule)


def get_rule(name: str) -> Rule:
    """The rule named `name`; an unknown name is an error naming the close matches and the valid names."""
    return RULES.get(name)


@cache
def thresholds_for(target: str) -> dict[str, Threshold]:
    """The thresholds of a target from the thresholds/ file its spec names (value, unit, reason per entry); none
    for a target without one (hip) or that is not runnable (a mined OpenCL kernel's profile). Triton's spec names
    cuda.toml: its kernels run on the same GPUs and are read through the same ncu metrics as CUDA ones."""
    spec = TARGETS.get(target, None)
    if spec is None or spec.thresholds is None:
        return {}
    path = THRESHOLDS_DIR / spec.thresholds
    if not path.is_file():
        raise FileNotFoundError(f"target {target!r} names thresholds file {spec.thresholds}, which is not in "
                                f"{THRESHOLDS_DIR}: add it or correct the spec in perfforge/targets.py")
    data = tomllib.loads(path.read_text(encoding="utf-8"))
    result = {}
    for name, entry in data.items():
        missing = {"value", "unit", "reason"} - set(entry)
        if missing:
            raise ValueError(f"{path}: threshold {name!r} lacks {sorted(missing)}")
        result[name] = Threshold(name, float(entry["value"]), str(entry["unit"]), str(entry["reason"]))
    return result


def diagnose(profile: Profile, thresholds: dict[str, Threshold] | None = None) -> list[Diagnosis]:
    """Every diagnosis whose rule fires on the profile, most severe first (ties by name, so the order is stable).
    A rule missing a counter it requires is not run (unmeasured() names it). thresholds replaces the target's file
    (cross-validation tries other values: bench/external_kernels/cv.py)."""
    thresholds = thresholds_for(profile.target) if thresholds is None else thresholds
    found = [d for rule in RULES.values() if profile.target in rule.targets and not _missing(rule, profile)
             if (d := rule.check(profile, thresholds)) is not None]
    return sorted(found, key=lambda d: (-d.severity, d.name))


def unmeasured(profile: Profile) -> list[str]:
    """The rules of the profile's target that could not judge it, each with the counters it lacked: 'not
    measured', which is not 'not found'."""
    return [f"{rule.name}: not measured ({', '.join(missing)})" for rule in RULES.values()
            if profile.target in rule.targets and (missing := _missing(rule, profile))]


def attach_diagnoses(profile: Profile) -> Profile:
    """The profile with its diagnoses and the rules that could not judge it filled in (profilers leave both to
    their callers: a profile is diagnosed once, here)."""
    profile.diagnoses, profile.unmeasured = diagnose(profile), unmeasured(profile)
    return profile


def _missing(rule: Rule, profile: Profile) -> list[str]:
    return [name for name in rule.requires if profile.counter(name) is None]


def finding(metric: str, value: float, threshold: Threshold, comparison: str,
            lines: list[int] | None = None) -> Finding:
    return Finding(metric=metric, value=float(value), threshold=threshold.value, comparison=comparison,
                   unit=threshold.unit, lines=list(lines or []))


def _render(f: Finding) -> str:
    text = f"{f.metric} = {f.value:.4g} {f.unit} ({f.comparison} {f.threshold:.4g})"
    if f.lines:
        text += " at line" + ("s " if len(f.lines) > 1 else " ") + ", ".join(str(n) for n in f.lines)
    return text


def make_diagnosis(rule_name: str, severity: float, findings: list[Finding], extra: list[str] | None = None, *,
                   preconditions: list[Finding | str] | None = None, hint: str = "") -> Diagnosis:
    """A Diagnosis whose evidence lines render the findings (metric = value unit > threshold, lines ...).

    preconditions are what let the rule run (cores to share work among, no pragma yet): kept apart from the
    evidence, which holds only findings that point at the bottleneck. hint replaces the rule's own when the
    profile calls for a different fix (a loop that carries a counter)."""
    rule = RULES[rule_name]
    evidence = [_render(f) for f in findings] + list(extra or [])
    conditions = [p if isinstance(p, str) else _render(p) for p in preconditions or []]
    return Diagnosis(name=rule_name, severity=round(min(1.0, max(0.0, severity)), 4), evidence=evidence,
                     findings=findings, hint=hint or rule.hint, preconditions=conditions)
