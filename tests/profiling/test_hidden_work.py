"""The check on work moved outside a windowed (CUDA) call's timed window (profiling/validate.py _hidden_work): pure,
tested on the judge's own measurements without a GPU."""

from __future__ import annotations

import random

import pytest

from perfforge.verdict import Status
from profiling.validate import HIDDEN_WORK_SHARE, _hidden_work, _Stop


def _outside(shift_ms: float, *, calls: int = 120, noise_ms: float = 0.3, seed: int = 1) -> dict[str, list[float]]:
    """Time outside the window per call: the same input copies and flush on both sides (40 ms, noisy), the
    candidate's shifted by what it moved out of the window."""
    rng = random.Random(seed)
    original = [40.0 + rng.gauss(0, noise_ms) for _ in range(calls)]
    candidate = [o + shift_ms + rng.gauss(0, noise_ms) for o in original]
    return {"original": original, "candidate": candidate}


@pytest.mark.parametrize("seed", range(5))
def test_the_same_harness_work_on_both_sides_passes(seed: int) -> None:
    _hidden_work(_outside(0.0, seed=seed), baseline_ms=2.0)


def test_a_candidate_cheaper_outside_its_window_passes() -> None:
    _hidden_work(_outside(-5.0), baseline_ms=2.0)


def test_work_moved_out_of_the_window_is_refused() -> None:
    """Attack: the kernel says "synced" early (or works in a signal handler before "start") and does a millisecond
    of its 2 ms of work where the window does not see it."""
    with pytest.raises(_Stop) as stopped:
        _hidden_work(_outside(1.0), baseline_ms=2.0)
    assert stopped.value.status is Status.REJECTED and "outside the kernel's timed window" in stopped.value.reason


def test_what_noise_allows_is_bounded_by_a_share_of_the_kernel() -> None:
    """Below a tenth of the original's kernel time nothing is refused, however quiet the measurements."""
    _hidden_work(_outside(0.9 * HIDDEN_WORK_SHARE * 2.0, noise_ms=0.001), baseline_ms=2.0)
    with pytest.raises(_Stop):
        _hidden_work(_outside(1.5 * HIDDEN_WORK_SHARE * 2.0, noise_ms=0.001), baseline_ms=2.0)
