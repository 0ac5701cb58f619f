"""The pattern catalogue: a registry of generators of performance-problem tasks.

A pattern is a known performance problem (uncoalesced access, bank conflicts, a branchy inner loop ...) written
as a function of a seed: each seed gives a distinct task (sizes, data types, names, code shape, surrounding
code) with a slow version that has the problem, a fast version that fixes it, a harness, and the planted
bottleneck named as the diagnosis that should find it. Patterns live in one module per target (cpu.py, cuda.py,
triton.py) and register themselves with the `pattern` decorator, as lm-evaluation-harness registers its tasks, in
PATTERNS (a perfforge.registry.Registry: an id registered twice is an error; the modules are imported before the
first lookup).

    from synth.patterns import generate, patterns
    for p in patterns(target="cpu"):
        instance = generate(p.id, seed=3)
"""

from __future__ import annotations

import importlib
import pkgutil
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from perfforge.errors import PerfforgeError
from perfforge.records import Category
from perfforge.registry import Registry
from perfforge.task import MANIFEST
from synth.instance import Instance, instance_dir, write_task

T = TypeVar("T")


@dataclass(frozen=True)
class Pattern:
    id: str  # target/name, e.g. cuda/uncoalesced_transpose
    target: str  # cpu | cuda | triton
    bottleneck: str  # the diagnosis (profiling/diagnoses) that must name the slow version's problem
    category: str  # perfforge.records.Category value of the fix
    summary: str  # one line: the problem and its fix
    generator: Callable[[Generation], Instance]

    @property
    def name(self) -> str:
        return self.id.split("/", 1)[1]


@dataclass
class Generation:
    """What a generator works with: its pattern, the seed, and a random source derived from both (so an
    instance depends on nothing else and is the same on every machine)."""

    pattern: Pattern
    seed: int
    rng: random.Random

    def choice(self, options: Sequence[T]) -> T:
        return options[self.rng.randrange(len(options))]

    def randint(self, low: int, high: int) -> int:
        return self.rng.randint(low, high)

    def instance(self, **fields: Any) -> Instance:
        """The Instance with the pattern's id, target, bottleneck and category filled in; the task name is the
        pattern's name and the seed unless the generator names it."""
        fields.setdefault("name", f"{self.pattern.name}_s{self.seed}")
        return Instance(pattern=self.pattern.id, seed=self.seed, target=self.pattern.target,
                        bottleneck=self.pattern.bottleneck, category=self.pattern.category, **fields)


def _load() -> None:
    """Import the per-target pattern modules, which register their patterns (PATTERNS' loader)."""
    for module in pkgutil.iter_modules(__path__):
        importlib.import_module(f"{__name__}.{module.name}")


PATTERNS: Registry[Pattern] = Registry("pattern", entry_type=Pattern, loader=_load)
TARGET_MODULES = ("cpu", "cuda", "triton")  # the targets with a pattern module here


def pattern(id: str, *, bottleneck: str, category: Category, summary: str
            ) -> Callable[[Callable[[Generation], Instance]], Callable[[Generation], Instance]]:
    """Register the decorated generator as pattern `id` (target/name)."""
    target = id.split("/", 1)[0]
    if target not in TARGET_MODULES or "/" not in id:
        raise ValueError(f"pattern id {id!r} must be target/name with target one of {', '.join(TARGET_MODULES)}")

    def register(generator: Callable[[Generation], Instance]) -> Callable[[Generation], Instance]:
        PATTERNS.register(id, Pattern(id=id, target=target, bottleneck=bottleneck, category=category.value,
                                      summary=summary, generator=generator))
        return generator
    return register


def patterns(target: str | None = None, ids: Sequence[str] = ()) -> list[Pattern]:
    """Registered patterns, by id; only `target`'s, or only those named in `ids` (an unknown id is an error)."""
    unknown = [i for i in ids if i not in PATTERNS]
    if unknown:
        raise PerfforgeError(f"unknown pattern(s) {', '.join(unknown)}; `perfforge synth list` names them all")
    chosen = [PATTERNS[i] for i in sorted(PATTERNS.names()) if (not ids or i in ids)]
    return [p for p in chosen if target in (None, "all", p.target)]


def generate(pattern_id: str, seed: int) -> Instance:
    """The instance of pattern `pattern_id` at `seed` (deterministic: same id and seed, same files)."""
    (chosen,) = patterns(ids=[pattern_id])
    instance = chosen.generator(Generation(chosen, seed, random.Random(f"{pattern_id}:{seed}")))
    if instance.pattern != pattern_id or instance.seed != seed:
        raise ValueError(f"generator of {pattern_id} returned an instance of {instance.pattern}:{instance.seed}")
    return instance


def catalogue_tasks(root: Path, *, target: str | None, ids: Sequence[str], seeds: range) -> list[tuple[Pattern, Path]]:
    """(pattern, task directory) of every chosen pattern (patterns()) at every seed, written under `root` where
    missing: instances are deterministic in pattern and seed, so a written one is never rewritten."""
    found = []
    for chosen in patterns(target, ids):
        for seed in seeds:
            path = instance_dir(root, chosen.id, seed)
            if not (path / MANIFEST).is_file():
                write_task(generate(chosen.id, seed), path)
            found.append((chosen, path))
    return found
