"""The subnormal-flush rule of the output comparison (correctness.FLUSH_*): pure numpy, no building or running."""

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
def test_every_subnormal_written_as_zero_is_a_flush(dtype: str) -> None:
    got, want = outputs(dtype, subnormals=12, flushed=12)
    result = compare_output(OutputSpec("out", dtype, 1e-5, 1e-6), got, want, subnormals=True)
    assert not result.ok and "flushed to zero" in result.problem and "12 of the 12" in result.problem
    # the same zeros are within the tolerance: without the rule they pass
    assert compare_output(OutputSpec("out", dtype, 1e-5, 1e-6), got, want).ok


def test_a_few_subnormals_or_a_few_zeros_are_rounding_not_a_flush() -> None:
    """Fewer subnormals than FLUSH_MIN_SUBNORMALS say nothing; nor does one subnormal in ten that a reordered
    computation happened to round to zero."""
    spec = OutputSpec("out", "float32", 1e-5, 1e-6)
    got, want = outputs("float32", subnormals=FLUSH_MIN_SUBNORMALS - 1, flushed=FLUSH_MIN_SUBNORMALS - 1)
    assert compare_output(spec, got, want, subnormals=True).ok
    got, want = outputs("float32", subnormals=20, flushed=2)
    assert compare_output(spec, got, want, subnormals=True).ok


def test_a_subnormal_the_candidate_also_wrote_is_kept() -> None:
    got, want = outputs("float32", subnormals=40, flushed=0)
    assert compare_output(OutputSpec("out", "float32", 1e-5, 1e-6), got, want, subnormals=True).ok
