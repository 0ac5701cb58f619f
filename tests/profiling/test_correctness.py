"""The subnormal-flush note of the output comparison (correctness.FLUSH_*): pure numpy, no building or running."""

from __future__ import annotations

import numpy as np
import pytest

from perfforge.task import OutputSpec
from profiling.correctness import FLUSH_MIN_SUBNORMALS, compare_output


def outputs(dtype: str, subnormals: int, flushed: int) -> tuple[np.ndarray, np.ndarray]:
    """The original's outputs (normal values, then `subnormals` subnormal ones) and a candidate's that match them
    but write zero in place of the first `flushed` subnormals."""
    rng = np.random.default_rng(0)
    want = rng.uniform(0.5, 2.0, 256).astype(dtype)
    tiny = np.finfo(dtype).tiny
    want[:subnormals] = tiny * rng.uniform(0.01, 0.9, subnormals)
    got = want.copy()
    got[:flushed] = 0.0
    return got, want


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_every_subnormal_written_as_zero_is_noted(dtype: str) -> None:
    """Within tolerance, so correct; noted for review (FTZ/DAZ, or a rewrite that underflows: a naive hypot and a
    clamped fast exp are honest ones)."""
    got, want = outputs(dtype, subnormals=12, flushed=12)
    result = compare_output(OutputSpec("out", dtype, 1e-5, 1e-6), got, want, subnormals=True)
    assert result.ok and "12 of the 12" in result.flushed and "flush-to-zero" in result.flushed
    assert not compare_output(OutputSpec("out", dtype, 1e-5, 1e-6), got, want).flushed  # a target that flushes


def test_a_few_subnormals_or_a_few_zeros_are_rounding_not_a_flush() -> None:
    """Fewer subnormals than FLUSH_MIN_SUBNORMALS say nothing; nor does one subnormal in ten that a reordered
    computation happened to round to zero."""
    spec = OutputSpec("out", "float32", 1e-5, 1e-6)
    got, want = outputs("float32", subnormals=FLUSH_MIN_SUBNORMALS - 1, flushed=FLUSH_MIN_SUBNORMALS - 1)
    assert not compare_output(spec, got, want, subnormals=True).flushed
    got, want = outputs("float32", subnormals=20, flushed=2)
    assert not compare_output(spec, got, want, subnormals=True).flushed


def test_a_subnormal_the_candidate_also_wrote_is_kept() -> None:
    got, want = outputs("float32", subnormals=40, flushed=0)
    assert not compare_output(OutputSpec("out", "float32", 1e-5, 1e-6), got, want, subnormals=True).flushed
