"""KernelBench rows read against torch.compile: the judge's speedups joined with two baseline files.

A kernelbench row's speedup is the judge's: the PyTorch reference (eager) against the answer, both served and timed
by the judge's clock. KernelBench also reports speedups against `torch.compile`. Those need the compiled reference's
time, which the judge does not measure; the baseline files of `perfforge baseline kernelbench` (or KernelBench's
published results/timing/<GPU>/*.json, same layout) hold it, timed by CUDA events on the user's GPU. Mixing the two
clocks would put the judge's per-call costs (staging, its flush, a Python launch) on one side only, so the join
takes a ratio of ratios instead, in which each clock meets only itself:

    speedup against compile = judge's speedup against eager x (compile baseline ms / eager baseline ms)

The judge's confidence interval is scaled by the same factor (the baselines' own spread is small: 0.2-4% of the
mean on the H100, bench/results/kernelbench/). A row counts as proven faster against compile when that scaled
interval lies above 1, slower when it lies below, no_change between; rows whose problem is missing from either
file are left out and counted. Pure: rows in, rows out (eval/report.py draws them).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, replace
from pathlib import Path

from perfforge.errors import ConfigError
from perfforge.records import EvalRecord
from perfforge.verdict import Status

KERNELBENCH_SUITE = "kernelbench"
# synth/kernelbench.py names a problem's task kb_l<level>_<id, three digits>_<slug>
_TASK_NAME = re.compile(r"^kb_l(\d+)_(\d+)_")
_PROBLEM_FILE = re.compile(r"^(\d+)_")
_LEVEL = re.compile(r"^level(\d+)$")


@dataclass(frozen=True)
class Baselines:
    """Mean milliseconds per (level, problem id), eager and compiled, and where they came from."""

    eager_ms: dict[tuple[int, int], float]
    compile_ms: dict[tuple[int, int], float]
    eager_path: Path
    compile_path: Path

    def compile_over_eager(self, key: tuple[int, int]) -> float | None:
        eager, compiled = self.eager_ms.get(key), self.compile_ms.get(key)
        if eager is None or compiled is None or eager <= 0 or compiled <= 0:
            return None
        return compiled / eager


@dataclass(frozen=True)
class CompileJoin:
    """The kernelbench rows read against torch.compile, and how many kernelbench rows had no baseline."""

    rows: list[EvalRecord]
    missing: int


def read_baselines(eager: Path, compiled: Path) -> Baselines:
    return Baselines(_read_means(eager, "--baseline-eager"), _read_means(compiled, "--baseline-compile"), eager,
                     compiled)


def _read_means(path: Path, option: str) -> dict[tuple[int, int], float]:
    """{(level, problem id): mean ms} of one baseline JSON ({"level1": {"19_ReLU.py": {"mean": ...}}})."""
    try:
        timings = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as error:
        raise ConfigError(f"{option} {path}: not readable as a baseline JSON ({error}); write it with `perfforge "
                          "baseline kernelbench`") from None
    means: dict[tuple[int, int], float] = {}
    if not isinstance(timings, dict):
        raise ConfigError(f"{option} {path}: not a baseline JSON ({{level: {{problem file: timing}}}})")
    for level_name, problems in timings.items():
        level = _LEVEL.match(str(level_name))
        if not level or not isinstance(problems, dict):
            continue
        for problem_file, stats in problems.items():
            number = _PROBLEM_FILE.match(str(problem_file))
            if number and isinstance(stats, dict) and isinstance(stats.get("mean"), int | float):
                means[(int(level.group(1)), int(number.group(1)))] = float(stats["mean"])
    if not means:
        raise ConfigError(f"{option} {path}: no problem with a mean time in it; write it with `perfforge baseline "
                          "kernelbench`")
    return means


def problem_key(task: str) -> tuple[int, int] | None:
    """(level, problem id) of a kernelbench task's name; None for any other name."""
    match = _TASK_NAME.match(task)
    return (int(match.group(1)), int(match.group(2))) if match else None


def against_compile(rows: list[EvalRecord], baselines: Baselines) -> CompileJoin:
    """The kernelbench rows with their speedups read against the compiled reference (module docstring)."""
    joined, missing = [], 0
    for row in rows:
        if row.suite != KERNELBENCH_SUITE:
            continue
        key = problem_key(row.task)
        factor = baselines.compile_over_eager(key) if key else None
        if factor is None:
            missing += 1
            continue
        joined.append(_scaled(row, factor))
    return CompileJoin(joined, missing)


def _scaled(row: EvalRecord, factor: float) -> EvalRecord:
    if row.speedup is None:
        return row
    low = row.speedup_ci_low * factor if row.speedup_ci_low is not None else None
    high = row.speedup_ci_high * factor if row.speedup_ci_high is not None else None
    status = row.status
    if status in (Status.IMPROVED, Status.NO_CHANGE, Status.SLOWER):
        # proven against compile only by the scaled interval (a point estimate alone never is)
        status = (Status.IMPROVED if low is not None and low > 1.0 else
                  Status.SLOWER if high is not None and high < 1.0 else Status.NO_CHANGE).value
    return replace(row, speedup=row.speedup * factor, speedup_ci_low=low, speedup_ci_high=high, status=status)
