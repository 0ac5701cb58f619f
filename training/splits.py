"""Train/eval splits by repository and by pattern, never by random row, so evaluation measures generalisation.

The unit is a group: a synthetic example's pattern, a mined example's repository. Groups that share a
near-identical example (the same formatting-blind code before) are merged into one component first, so a
near-duplicate never sits on both sides. A component goes to eval when any of its groups is held out by name
(`holdout`), or when a hash of its name and the seed falls under `eval_fraction`: the draw is stable (the same
groups, seed and fraction give the same split on every machine) and does not depend on row order.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

from perfforge.errors import ConfigError
from training.examples import Example

TRAIN, EVAL = "train", "eval"


def _find(parent: dict[str, str], key: str) -> str:
    while parent[key] != key:
        parent[key] = parent[parent[key]]
        key = parent[key]
    return key


def components(examples: Sequence[Example]) -> dict[str, str]:
    """group -> its component's name (the smallest group name in it), merging groups that share a dedup key."""
    parent = {e.group: e.group for e in examples}
    first_group_of: dict[str, str] = {}
    for e in examples:
        other = first_group_of.setdefault(e.dedup_key, e.group)
        a, b = _find(parent, other), _find(parent, e.group)
        if a != b:
            parent[max(a, b)] = min(a, b)
    return {group: _find(parent, group) for group in parent}


def _draw(name: str, seed: int) -> float:
    digest = hashlib.sha256(f"{seed}:{name}".encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64


def assign_splits(examples: Sequence[Example], *, eval_fraction: float, holdout: Sequence[str] = (),
                  seed: int = 0) -> dict[str, str]:
    """group -> "train" or "eval"."""
    component_of = components(examples)
    unknown = [h for h in holdout if f"pattern:{h}" not in component_of and f"repo:{h}" not in component_of]
    if unknown:  # a typo would silently hold nothing out, and the "held-out" figures would be on training data
        known = sorted(g.split(":", 1)[1] for g in component_of)
        raise ConfigError(f"--holdout {', '.join(unknown)}: no pattern or repository of that name in the data; "
                          f"known: {', '.join(known[:12])}{' ...' if len(known) > 12 else ''}")
    held = {f"pattern:{h}" for h in holdout} | {f"repo:{h}" for h in holdout}
    held_components = {component_of[g] for g in component_of if g in held}
    names = sorted(set(component_of.values()))
    drawn = {c for c in names if _draw(c, seed) < eval_fraction}
    if eval_fraction > 0 and not drawn and not held_components and len(names) > 1:
        drawn = {min(names, key=lambda c: _draw(c, seed))}  # a small dataset still gets an eval group
    return {g: EVAL if c in held_components or c in drawn else TRAIN for g, c in component_of.items()}


def split(examples: Sequence[Example], assignment: dict[str, str]) -> tuple[list[Example], list[Example]]:
    train = [e for e in examples if assignment[e.group] == TRAIN]
    return train, [e for e in examples if assignment[e.group] == EVAL]
