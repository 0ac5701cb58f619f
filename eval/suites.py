"""The tasks an evaluation runs on, by suite.

    catalogue   instances of the pattern catalogue (synth/patterns), written as tasks under OUT/suites/catalogue;
                each is labelled with its split against the training runs under evaluation: held_out_pattern
                (a pattern no adapter was trained on), held_out_instance (a trained pattern, a seed the
                training data did not use) or empty when no training run is known
    tasks:DIR   every task directory in DIR (a user's own tasks)
    mined:DIR   every task directory in DIR made from mined commits (perfforge synth commits); their reference
                version is the human-optimised code of the commit
    kernelbench:DIR
                the problems of levels 1-3 of a KernelBench checkout (DIR, the user's own), imported as torch
                tasks under OUT/suites/kernelbench (synth/kernelbench.py); the original is the PyTorch reference
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from perfforge.errors import ConfigError
from perfforge.task import Task, find_tasks, load_task

HELD_OUT_PATTERN = "held_out_pattern"
HELD_OUT_INSTANCE = "held_out_instance"


@dataclass(frozen=True)
class SuiteTask:
    """One task of a suite, with where it came from."""

    suite: str
    task: Task
    split: str = ""

    @property
    def key(self) -> str:
        """Unique within an evaluation: suite and task name (two suites may hold tasks of the same name)."""
        return f"{self.suite}/{self.task.name}"


def collect(specs: list[str], out: Path, *, target: str, patterns: list[str], instances: int, seed_base: int,
            trained: dict[str, str], kernelbench_problems: list[str] | None = None) -> list[SuiteTask]:
    """Every task of every suite spec, in a stable order. `trained` maps pattern ids to train/eval as the
    training runs under evaluation split them (empty when none is known); kernelbench_problems: "LEVEL/ID" of
    the KernelBench problems to take (all when empty)."""
    tasks: list[SuiteTask] = []
    for spec in specs:
        name, _, argument = spec.partition(":")
        if name == "catalogue" and not argument:
            tasks += catalogue_tasks(out / "suites" / "catalogue", target=target, patterns=patterns,
                                     instances=instances, seed_base=seed_base, trained=trained)
        elif name in ("tasks", "mined") and argument:
            tasks += [SuiteTask(name, task) for task in find_tasks(Path(argument))]
        elif name == "kernelbench" and argument:
            tasks += kernelbench_tasks(Path(argument), out / "suites" / "kernelbench",
                                       only=parse_problems(kernelbench_problems or []))
        else:
            raise ConfigError(f"--suites {spec!r}: write catalogue, tasks:DIR, mined:DIR or kernelbench:DIR")
    seen: set[str] = set()
    for item in tasks:
        if item.key in seen:
            raise ConfigError(f"two tasks are both named {item.key}; rename one (task.toml name)")
        seen.add(item.key)
    return tasks


def catalogue_tasks(directory: Path, *, target: str, patterns: list[str], instances: int, seed_base: int,
                    trained: dict[str, str]) -> list[SuiteTask]:
    """Instances of the catalogue's patterns, generated (once; they are deterministic in pattern and seed)."""
    from synth.patterns import catalogue_tasks as written

    return [SuiteTask("catalogue", load_task(path), split_of(pattern.id, trained))
            for pattern, path in written(directory, target=target, ids=patterns,
                                         seeds=range(seed_base, seed_base + instances))]


def parse_problems(specs: list[str]) -> set[tuple[int, int]]:
    """{(level, problem id)} of "LEVEL/ID" specs (1/88); one clear error for anything else."""
    problems = set()
    for spec in specs:
        level, _, number = spec.partition("/")
        if not (level.isdigit() and number.isdigit()):
            raise ConfigError(f"--kernelbench-problems {spec!r}: write LEVEL/ID, e.g. 1/88 for level 1's problem 88")
        problems.add((int(level), int(number)))
    return problems


def kernelbench_tasks(checkout: Path, directory: Path, *, only: set[tuple[int, int]] | None = None) -> list[SuiteTask]:
    """Every problem of the levels the checkout has (1-3), or `only` those (level, id), imported once (a task
    already under `directory` is kept: rerunning an evaluation resumes it on the same tasks)."""
    from synth.kernelbench import LEVELS, find_problems, import_problems

    present = [level for level in LEVELS
               if (checkout / "KernelBench" / f"level{level}").is_dir() or (checkout / f"level{level}").is_dir()]
    if not present:
        raise ConfigError(f"--suites kernelbench:{checkout}: no KernelBench/level1..3/ there; pass the root of your "
                          "KernelBench checkout")
    problems = [p for p in find_problems(checkout, present) if not only or (p.level, p.number) in only]
    if only and not problems:
        raise ConfigError(f"--kernelbench-problems: none of {sorted(only)} is in {checkout}")
    import_problems([p for p in problems if not (directory / p.task_name).is_dir()], directory)
    return [SuiteTask("kernelbench", load_task(directory / p.task_name)) for p in problems
            if (directory / p.task_name).is_dir()]


def split_of(pattern_id: str, trained: dict[str, str]) -> str:
    if not trained:
        return ""
    return HELD_OUT_INSTANCE if trained.get(pattern_id) == "train" else HELD_OUT_PATTERN

