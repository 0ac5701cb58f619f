"""Comparing what a candidate wrote with what the oracle wrote, buffer by buffer (VALIDATION.md rules 2-8).

Pure functions over numpy arrays: no building, no running. Outputs are compared with the task's dtype-aware
tolerances, NaN/Inf must sit where the oracle has them, never-written elements (still holding the 0xFF poison)
are named as such, inputs must come back bit-identical (by digest), and the worst element's distance to its tolerance is
reported as a margin (llm.c's habit: say how close the worst element came).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from perfforge.task import OutputSpec

NUMPY_DTYPE = {"float32": "float32", "float64": "float64", "float16": "float16", "bfloat16": "uint16",
               "int32": "int32", "int64": "int64", "uint8": "uint8"}


@dataclass
class Comparison:
    """The result of comparing one run's buffers with the oracle's."""

    ok: bool
    problem: str = ""  # the first problem, precise enough for a model to act on
    worst_margin: float = 0.0  # max over output elements of |error| / tolerance: 1.0 is the limit
    worst_output: str = ""


def as_float(array: np.ndarray, dtype: str) -> np.ndarray:
    """Values as float64 for comparison; bfloat16 travels as raw uint16 and is widened here."""
    if dtype == "bfloat16":
        return (array.astype(np.uint32) << 16).view(np.float32).astype(np.float64)
    return array.astype(np.float64)


def same_bytes(a: np.ndarray, b: np.ndarray) -> bool:
    """Whether two arrays hold the same bytes, compared through their widest integer view (8-byte words where the
    size allows: several times faster than byte by byte on the hundreds of MB a GPU task moves per call)."""
    if a.nbytes != b.nbytes:
        return False
    return bool(np.array_equal(_words(a), _words(b)))


def first_difference(a: np.ndarray, b: np.ndarray) -> int:
    """The index of the first differing byte of two equally long arrays (-1: none)."""
    ua, ub = a.reshape(-1).view(np.uint8), b.reshape(-1).view(np.uint8)
    differ = np.flatnonzero(ua != ub)
    return int(differ[0]) if differ.size else -1


def _words(array: np.ndarray) -> np.ndarray:
    flat = array.reshape(-1).view(np.uint8)
    return flat.view(np.uint64) if flat.size % 8 == 0 and flat.ctypes.data % 8 == 0 else flat


def compare_output(spec: OutputSpec, got: np.ndarray, want: np.ndarray) -> Comparison:
    """One output buffer of the candidate against the oracle's. Only the elements whose bits differ are examined
    (identical elements are within any tolerance, written, and NaN where the oracle's are): one integer pass over
    the buffer, then the checks below on what differs."""
    expected_dtype = np.dtype(NUMPY_DTYPE[spec.dtype])
    if got.dtype != expected_dtype:
        return Comparison(False, f"output '{spec.name}' has dtype {got.dtype}, expected {spec.dtype}")
    if got.shape != want.shape:
        return Comparison(False, f"output '{spec.name}' has shape {got.shape}, expected {want.shape}")
    differ = np.flatnonzero(_as_unsigned(got) != _as_unsigned(want))
    if not differ.size:
        return Comparison(True, worst_margin=0.0, worst_output=spec.name)
    total = got.size
    got, want = got.reshape(-1)[differ], want.reshape(-1)[differ]
    if spec.dtype not in ("float32", "float64", "float16", "bfloat16"):
        return _compare_exact(spec.name, got, want, differ)
    g, w = as_float(got, spec.dtype), as_float(want, spec.dtype)
    unwritten = _poisoned(got, spec.dtype) & ~_poisoned(want, spec.dtype)
    if unwritten.any():
        index = int(differ[np.flatnonzero(unwritten)[0]])
        return Comparison(False, f"output '{spec.name}': {int(unwritten.sum())} of {total} elements "
                                 f"were never written (still hold the poison), the first at index {index}")
    nan_mismatch = np.isnan(g) != np.isnan(w)
    if nan_mismatch.any():
        at = int(np.flatnonzero(nan_mismatch)[0])
        return Comparison(False, f"output '{spec.name}' at index {int(differ[at])}: got {g[at]!r}, expected {w[at]!r} "
                                 f"(NaN where the oracle has none, or the reverse; {int(nan_mismatch.sum())} elements)")
    finite = np.isfinite(w) & np.isfinite(g)
    inf_mismatch = ~np.isnan(w) & ~finite & (g != w)
    if inf_mismatch.any():
        at = int(np.flatnonzero(inf_mismatch)[0])
        return Comparison(False, f"output '{spec.name}' at index {int(differ[at])}: got {g[at]!r}, expected {w[at]!r}")
    return _compare_within_tolerance(spec, g, w, finite, differ)


def _as_unsigned(array: np.ndarray) -> np.ndarray:
    return array.reshape(-1).view(np.dtype(f"u{array.dtype.itemsize}"))


def _compare_within_tolerance(spec: OutputSpec, g: np.ndarray, w: np.ndarray, finite: np.ndarray,
                              differ: np.ndarray) -> Comparison:
    """g, w: the differing elements only, at positions `differ` of the buffer."""
    error = np.where(finite, np.abs(g - w), 0.0)
    limit = spec.atol + spec.rtol * np.abs(w)
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.where(limit > 0, error / limit, np.where(error > 0, np.inf, 0.0))
    bad = ratio > 1.0
    worst = float(ratio.max()) if ratio.size else 0.0
    if bad.any():
        at = int(np.flatnonzero(bad)[0])
        return Comparison(False, f"output '{spec.name}' at index {int(differ[at])}: got {g[at]:.9g}, expected "
                                 f"{w[at]:.9g} (|error| {error[at]:.3g} > atol {spec.atol:g} + rtol {spec.rtol:g} * "
                                 f"|expected|; {int(bad.sum())} of {differ.size} differing elements outside "
                                 "tolerance)", worst_margin=worst, worst_output=spec.name)
    return Comparison(True, worst_margin=worst, worst_output=spec.name)


def _compare_exact(name: str, got: np.ndarray, want: np.ndarray, differ: np.ndarray) -> Comparison:
    """got, want: the differing elements only (every one is a mismatch for an exact dtype)."""
    return Comparison(False, f"output '{name}' at index {int(differ[0])}: got {got[0]}, expected {want[0]} "
                             f"({differ.size} elements differ)", worst_margin=np.inf, worst_output=name)


def _poisoned(array: np.ndarray, dtype: str) -> np.ndarray:
    """Elements that still hold the harness's poison (every byte 0xFF): a NaN bit pattern for floats."""
    raw = array.view(np.dtype(f"u{array.dtype.itemsize}"))
    return raw == np.iinfo(raw.dtype).max


def compare_inputs(got: dict[str, str], want: dict[str, str]) -> Comparison:
    """Every input's digest after the candidate's call against the same input's after the oracle's (rule 6): the
    harness draws both from the same seed, so any difference is the kernel writing to its input."""
    for name in sorted(want):
        if got.get(name) != want[name]:
            return Comparison(False, f"input '{name}' was modified by the kernel (its contents after the call differ "
                                     "from the original's); inputs must be left unchanged")
    return Comparison(True)


def compare_run(outputs: tuple[OutputSpec, ...], got: dict[str, np.ndarray], want: dict[str, np.ndarray],
                got_digests: dict[str, str] | None = None, want_digests: dict[str, str] | None = None) -> Comparison:
    """Every buffer of one call: declared outputs within tolerance, every input unchanged."""
    inputs = compare_inputs(got_digests or {}, want_digests or {})
    if not inputs.ok:
        return inputs
    undeclared = [o.name for o in outputs if o.name not in want]
    if undeclared:
        return Comparison(False, f"the harness wrote no output named {', '.join(undeclared)}, which task.toml "
                                 "declares: register it with pf_output or pf_inout")
    worst = Comparison(True)
    for spec in outputs:
        if spec.name not in got:
            return Comparison(False, f"output '{spec.name}' was not written by the harness")
        result = compare_output(spec, got[spec.name], want[spec.name])
        if not result.ok:
            return result
        if result.worst_margin >= worst.worst_margin:
            worst = result
    return worst


def degenerate_reason(outputs: tuple[OutputSpec, ...], runs: list[dict[str, np.ndarray]]) -> str:
    """Why the oracle's outputs cannot tell right from wrong (rule 2), or '' when they can.

    runs: the oracle's buffers for the same call under different seeds. Near zero: every element within atol
    of zero (a kernel writing zeros passes). Near constant: spread within tolerance (writing one value passes).
    Independent of the inputs: identical under different seeds (a memorised answer passes).
    """
    for spec in outputs:
        values = [as_float(run[spec.name], spec.dtype) for run in runs if spec.name in run]
        if not values:
            continue
        first = values[0]
        finite = first[np.isfinite(first)]
        scale = float(np.abs(finite).max()) if finite.size else 0.0
        if scale <= max(spec.atol, 1e-30):
            return f"output '{spec.name}' is all (near) zero: any kernel that writes zeros would pass"
        if finite.size > 1 and float(finite.max() - finite.min()) <= spec.atol + spec.rtol * scale:
            return f"output '{spec.name}' is (near) constant: any kernel that writes one value would pass"
        if len(values) > 1 and all(np.array_equal(first, other, equal_nan=True) for other in values[1:]):
            return (f"output '{spec.name}' is identical for every seed: it does not depend on the inputs, so a "
                    "memorised answer would pass")
    return ""
