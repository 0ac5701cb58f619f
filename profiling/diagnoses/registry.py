"""The registry of diagnosis rules, and the thresholds they read.

A rule is a small object: its name (the bottleneck it names), the targets it applies to, the counters it reads,
a one-sentence hint at the usual fix, and `check(profile, thresholds)` returning a Diagnosis or None. A
duplicate name is an error; an unknown name answers with the close matches. Thresholds are not in the code:
each target has a TOML file in thresholds/ whose entries say value, unit and reason, so a user can read
why a threshold is what it is and override it.
"""

from __future__ import annotations

import difflib
import tomllib
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from perfforge.errors import PerfforgeError
from perfforge.records import Diagnosis, Finding, Profile

THRESHOLDS_DIR = Path(__file__).with_name("thresholds")
THRESHOLD_FILE_OF = {"triton": "cuda"}


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
    thresholds: tuple[str, ...]  # names of the entries of thresholds/<target>.toml it reads
    hint: str  # what usually fixes it
    check: Callable[[Profile, dict[str, Threshold]], Diagnosis | None]


RULES: dict[str, Rule] = {}


def register(rule: Rule) -> Rule:
    if rule.name in RULES:
        raise ValueError(f"diagnosis rule {rule.name!r} is registered twice")
    RULES[rule.name] = rule
    return rule


def get_rule(name: str) -> Rule:
    _load_rule_modules()
    if name not in RULES:
        close = difflib.get_close_matches(name, list(RULES), n=3)
        hint = f"did you mean {', '.join(close)}?" if close else f"valid names: {', '.join(sorted(RULES))}"
        raise PerfforgeError(f"unknown diagnosis {name!r}; {hint}")
    return RULES[name]


@cache
def thresholds_for(target: str) -> dict[str, Threshold]:
    """The thresholds of a target from thresholds/<target>.toml (value, unit, reason per entry). Triton kernels run
    on the same GPUs and are read through the same ncu metrics as CUDA ones: they share cuda.toml."""
    path = THRESHOLDS_DIR / f"{THRESHOLD_FILE_OF.get(target, target)}.toml"
    if not path.is_file():
        return {}
    data = tomllib.loads(path.read_text(encoding="utf-8"))
    result = {}
    for name, entry in data.items():
        missing = {"value", "unit", "reason"} - set(entry)
        if missing:
            raise ValueError(f"{path}: threshold {name!r} lacks {sorted(missing)}")
        result[name] = Threshold(name, float(entry["value"]), str(entry["unit"]), str(entry["reason"]))
    return result


def _load_rule_modules() -> None:
    """Import the per-target rule modules, which register their rules."""
    import importlib
    import pkgutil

    import profiling.diagnoses as package

    for module in pkgutil.iter_modules(package.__path__):
        if module.name != "registry":
            importlib.import_module(f"profiling.diagnoses.{module.name}")


def diagnose(profile: Profile) -> list[Diagnosis]:
    """Every diagnosis whose rule fires on the profile, most severe first (ties by name, so the order is stable)."""
    _load_rule_modules()
    thresholds = thresholds_for(profile.target)
    found = [d for rule in RULES.values() if profile.target in rule.targets
             if (d := rule.check(profile, thresholds)) is not None]
    return sorted(found, key=lambda d: (-d.severity, d.name))


def finding(metric: str, value: float, threshold: Threshold, comparison: str,
            lines: list[int] | None = None) -> Finding:
    return Finding(metric=metric, value=float(value), threshold=threshold.value, comparison=comparison,
                   unit=threshold.unit, lines=list(lines or []))


def make_diagnosis(rule_name: str, severity: float, findings: list[Finding],
                   extra: list[str] | None = None) -> Diagnosis:
    """A Diagnosis whose evidence lines render the findings (metric = value unit > threshold, lines ...)."""
    rule = RULES[rule_name]
    evidence = []
    for f in findings:
        text = f"{f.metric} = {f.value:.4g} {f.unit} ({f.comparison} {f.threshold:.4g})"
        if f.lines:
            text += " at line" + ("s " if len(f.lines) > 1 else " ") + ", ".join(str(n) for n in f.lines)
        evidence.append(text)
    evidence.extend(extra or [])
    return Diagnosis(name=rule_name, severity=round(min(1.0, max(0.0, severity)), 4), evidence=evidence,
                     findings=findings, hint=rule.hint)
