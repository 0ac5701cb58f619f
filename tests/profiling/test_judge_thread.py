"""Where the judge's thread runs around a CPU call (profiling/paired.py _judge_thread): on the kernel's core while it
writes the inputs and flushes, off it while the kernel runs, and back to every allowed CPU after either."""

from __future__ import annotations

import os

import numpy as np
import pytest

from profiling.correctness import COMPARE_CHUNK, copy_into
from profiling.paired import _judge_thread

ALLOWED = os.sched_getaffinity(0)
needs_two = pytest.mark.skipif(len(ALLOWED) < 2, reason="one CPU: the judge has nowhere else to go")


@needs_two
def test_on_the_kernels_core_then_restored() -> None:
    cpu = max(ALLOWED)
    with _judge_thread(cpu, on=True):
        assert os.sched_getaffinity(0) == {cpu}
    assert os.sched_getaffinity(0) == ALLOWED


@needs_two
def test_off_the_kernels_core_then_restored_even_after_an_error() -> None:
    cpu = min(ALLOWED)
    with pytest.raises(RuntimeError), _judge_thread(cpu, on=False):
        assert os.sched_getaffinity(0) == ALLOWED - {cpu}
        raise RuntimeError("a protocol failure mid-call")
    assert os.sched_getaffinity(0) == ALLOWED


def test_nothing_moves_without_a_cpu_or_for_one_outside_the_allowed_set() -> None:
    for cpu in (None, max(ALLOWED) + 1000):
        with _judge_thread(cpu, on=True):
            assert os.sched_getaffinity(0) == ALLOWED


@needs_two
def test_a_large_copy_made_while_pinned_stays_on_the_pinned_thread(monkeypatch: pytest.MonkeyPatch) -> None:
    """The judge's pool threads would write from other cores, and one started while the judge is pinned would
    inherit the pin for good: a copy on the pinned core must not use them."""
    import profiling.correctness as correctness

    def no_pool() -> None:
        raise AssertionError("the judge's pool was used for a copy that must stay on its core")

    monkeypatch.setattr(correctness, "judge_pool", no_pool)
    source = np.arange(2 * COMPARE_CHUNK + 3, dtype=np.float32)
    destination = np.zeros_like(source)
    with _judge_thread(max(ALLOWED), on=True):
        copy_into(destination, source, threads=False)
    assert np.array_equal(destination, source)
    with pytest.raises(AssertionError, match="judge's pool"):
        copy_into(destination, source)
