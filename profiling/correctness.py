"""Comparing what a candidate wrote with what the oracle wrote, buffer by buffer (VALIDATION.md rules 2-8).

Pure functions over numpy arrays: no building, no running. Outputs are compared with the task's dtype-aware
tolerances, NaN/Inf must sit where the oracle has them, never-written elements (still holding a poison byte) are
named as such, inputs must come back bit-identical (by digest), and the worst element's distance to its tolerance
is reported as a margin (llm.c's habit: say how close the worst element came).
"""

from __future__ import annotations

import functools
import os
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

import numpy as np

from perfforge.task import OutputSpec

# Outputs are compared in chunks of COMPARE_CHUNK elements on up to JUDGE_THREADS threads: a chunk's float64
# temporaries (8 MB each) stay in cache, and a 32M-element output that differs everywhere by rounding took 0.7 s
# in one piece on one H200 host core (bench/bench_verdict.py, rownorm_launches).
COMPARE_CHUNK = 1 << 20
# On a host of 8 cores or more, all but two (the kernel process's launching thread and the judge's own); the draw of
# a 256 MB input set, made ahead on these threads while the device runs, held up a Triton verdict's calls for
# 3.3 s with 8 of the H100 host's 16 (cProfile of row_sum_strided)
_CORES = len(os.sched_getaffinity(0))
JUDGE_THREADS = max(1, min(16, _CORES - 2 if _CORES >= 8 else _CORES))
# A chunk whose worst element, computed in the buffer's own precision, stays under this share of its tolerance is
# accepted without the float64 pass; nearer the limit the exact pass decides.
FAST_PATH_MAX_RATIO = 0.999

# Subnormal results written as zero: where the original wrote at least FLUSH_MIN_SUBNORMALS nonzero subnormal values
# in one output (the judge's edge values put subnormals into float inputs) and the candidate wrote zero at
# FLUSH_SHARE of them or more, it ran with flush-to-zero or denormals-are-zero, however it set them, or it
# underflows where the original does not (a naive hypot, a fast exp that clamps below FLT_MIN: honest rewrites the
# eighteenth red team showed). Each such value is within any tolerance, so the pattern is a note that holds a
# faster verdict for review, never a failure. Eight: a single edge call puts dozens of subnormals into a buffer,
# and a rounding difference that happens to reach zero is one element, not most of them.
FLUSH_MIN_SUBNORMALS = 8
FLUSHED_NOTE = "where the original wrote a subnormal value are zero"  # the note's words (one per verdict)
FLUSH_SHARE = 0.9
SMALLEST_NORMAL = {"float32": float(np.finfo(np.float32).tiny), "float64": float(np.finfo(np.float64).tiny)}

NUMPY_DTYPE = {"float32": "float32", "float64": "float64", "float16": "float16", "bfloat16": "uint16",
               "int32": "int32", "int64": "int64", "uint8": "uint8"}


@dataclass
class Comparison:
    """The result of comparing one run's buffers with the oracle's."""

    ok: bool
    problem: str = ""  # the first problem, precise enough for a model to act on
    worst_margin: float = 0.0  # max over output elements of |error| / tolerance: 1.0 is the limit
    worst_output: str = ""
    flushed: str = ""  # subnormal results written as zero (FLUSH_*): a note for review, the outputs still correct


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
    wa, wb = _words(a), _words(b)
    if wa.size <= COMPARE_CHUNK:
        return bool(np.array_equal(wa, wb))
    # large buffers in chunks on the judge's threads: a 256 MB input checked after every fetch took 45 ms on one
    # H200 host core, a fifth of a large CUDA verdict (bench/bench_verdict.py, transpose_naive)
    return all(judge_pool().map(lambda at: np.array_equal(wa[at:at + COMPARE_CHUNK], wb[at:at + COMPARE_CHUNK]),
                                range(0, wa.size, COMPARE_CHUNK)))


def first_difference(a: np.ndarray, b: np.ndarray) -> int:
    """The index of the first differing byte of two equally long arrays (-1: none)."""
    ua, ub = a.reshape(-1).view(np.uint8), b.reshape(-1).view(np.uint8)
    differ = np.flatnonzero(ua != ub)
    return int(differ[0]) if differ.size else -1


def _words(array: np.ndarray) -> np.ndarray:
    flat = array.reshape(-1).view(np.uint8)
    return flat.view(np.uint64) if flat.size % 8 == 0 and flat.ctypes.data % 8 == 0 else flat


def compare_output(spec: OutputSpec, got: np.ndarray, want: np.ndarray, *, subnormals: bool = False) -> Comparison:
    """One output buffer of the candidate against the oracle's. Only the elements whose bits differ are examined
    (identical elements are within any tolerance, written, and NaN where the oracle's are), chunk by chunk on the
    judge's threads: a GPU task's outputs are tens of millions of elements, and two correct kernels that round
    differently differ in most of them. subnormals: the target keeps IEEE subnormals (TargetSpec.keeps_subnormals),
    so subnormal results written as zero are noted (FLUSH_*)."""
    expected_dtype = np.dtype(NUMPY_DTYPE[spec.dtype])
    if got.dtype != expected_dtype:
        return Comparison(False, f"output '{spec.name}' has dtype {got.dtype}, expected {spec.dtype}")
    if got.shape != want.shape:
        return Comparison(False, f"output '{spec.name}' has shape {got.shape}, expected {want.shape}")
    g, w = got.reshape(-1), want.reshape(-1)
    starts = range(0, g.size, COMPARE_CHUNK)
    if len(starts) > 1:
        parts = list(judge_pool().map(lambda at: _examine(spec, g[at:at + COMPARE_CHUNK], w[at:at + COMPARE_CHUNK],
                                                          at, subnormals), starts))
    else:
        parts = [_examine(spec, g, w, 0, subnormals)]
    return _verdict_of(spec, parts, g.size)


@dataclass
class _Found:
    """One kind of problem in a chunk: how many elements, and the first (its index in the buffer, both values)."""

    count: int = 0
    index: int = -1
    got: float = 0.0
    want: float = 0.0
    error: float = 0.0

    def add(self, mask: np.ndarray, differ: np.ndarray, g: np.ndarray, w: np.ndarray,
            error: np.ndarray | None = None) -> None:
        hits = np.flatnonzero(mask)
        if hits.size:
            at = int(hits[0])
            self.count, self.index, self.got, self.want = int(hits.size), int(differ[at]), g[at], w[at]
            self.error = float(error[at]) if error is not None else 0.0


@dataclass
class _Chunk:
    worst: float = 0.0
    unwritten: _Found = field(default_factory=_Found)
    nan: _Found = field(default_factory=_Found)
    inf: _Found = field(default_factory=_Found)
    outside: _Found = field(default_factory=_Found)  # outside tolerance; for exact dtypes, any difference
    subnormal: int = 0  # the oracle's nonzero subnormal values (counted only where the target keeps them)
    flushed: _Found = field(default_factory=_Found)  # those the candidate wrote as zero


def _examine(spec: OutputSpec, got: np.ndarray, want: np.ndarray, offset: int, subnormals: bool = False) -> _Chunk:
    chunk = _Chunk()
    if subnormals and spec.dtype in SMALLEST_NORMAL:
        tiny = (want != 0) & (np.abs(want) < SMALLEST_NORMAL[spec.dtype])
        chunk.subnormal = int(np.count_nonzero(tiny))
        if chunk.subnormal:
            at = np.flatnonzero(tiny)
            chunk.flushed.add(got[at] == 0, at + offset, got[at], want[at])
    if spec.dtype in ("float32", "float64"):
        # the common case in the buffer's own precision: every element finite and inside its tolerance with room to
        # spare (a NaN, the poison, an infinity or a zero limit makes the ratio non-finite and takes the full path)
        with np.errstate(all="ignore"):
            ratio = np.abs(got - want)
            ratio /= spec.atol + spec.rtol * np.abs(want)
            worst = float(ratio.max()) if ratio.size else 0.0
        if np.isfinite(worst) and worst <= FAST_PATH_MAX_RATIO:
            chunk.worst = worst
            return chunk
    differ = np.flatnonzero(_as_unsigned(got) != _as_unsigned(want))
    if not differ.size:
        return chunk
    got, want = got[differ], want[differ]
    differ += offset
    if spec.dtype not in ("float32", "float64", "float16", "bfloat16"):
        # an integer that is all 0xFF may be a written -1; a 4- or 8-byte one made of another poison byte
        # (-1515870811 as int32 for 0xA5) where the oracle wrote something else is an element never written (a
        # single byte of one is a plain value)
        if got.dtype.itemsize >= 4:
            chunk.unwritten.add(_poisoned(got, spec.dtype, INTEGER_POISON_BYTES)
                                & ~_poisoned(want, spec.dtype, INTEGER_POISON_BYTES), differ, got, want)
        chunk.outside.add(np.ones(differ.size, dtype=bool), differ, got, want)
        chunk.worst = np.inf
        return chunk
    chunk.unwritten.add(_poisoned(got, spec.dtype) & ~_poisoned(want, spec.dtype), differ, got, want)
    g, w = as_float(got, spec.dtype), as_float(want, spec.dtype)
    chunk.nan.add(np.isnan(g) != np.isnan(w), differ, g, w)
    finite = np.isfinite(w) & np.isfinite(g)
    chunk.inf.add(~np.isnan(w) & ~finite & (g != w), differ, g, w)
    error = np.where(finite, np.abs(g - w), 0.0)
    limit = spec.atol + spec.rtol * np.abs(w)
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.where(limit > 0, error / limit, np.where(error > 0, np.inf, 0.0))
    chunk.outside.add(ratio > 1.0, differ, g, w, error)
    chunk.worst = float(ratio.max())
    return chunk


def _verdict_of(spec: OutputSpec, parts: list[_Chunk], size: int) -> Comparison:
    """The chunks' findings in the order a reader needs them: never written, NaN, infinities, tolerance."""
    def first(kind: str) -> tuple[int, _Found]:
        found = [getattr(p, kind) for p in parts if getattr(p, kind).count]
        return sum(f.count for f in found), found[0] if found else _Found()

    name = spec.name
    worst = max((p.worst for p in parts), default=0.0)
    unwritten, f = first("unwritten")
    if unwritten:
        return Comparison(False, f"output '{name}': {unwritten} of {size} elements were never written (still hold the "
                                 f"poison), the first at index {f.index}")
    if spec.dtype not in ("float32", "float64", "float16", "bfloat16"):
        count, f = first("outside")
        if count:
            return Comparison(False, f"output '{name}' at index {f.index}: got {f.got}, expected {f.want} "
                                     f"({count} elements differ)", worst_margin=np.inf, worst_output=name)
        return Comparison(True, worst_margin=0.0, worst_output=name)
    count, f = first("nan")
    if count:
        return Comparison(False, f"output '{name}' at index {f.index}: got {f.got!r}, expected {f.want!r} (NaN where "
                                 f"the oracle has none, or the reverse; {count} elements)")
    count, f = first("inf")
    if count:
        return Comparison(False, f"output '{name}' at index {f.index}: got {f.got!r}, expected {f.want!r}")
    subnormal = sum(p.subnormal for p in parts)
    flushed, f = first("flushed")
    note = (f"output '{name}': {flushed} of the {subnormal} elements {FLUSHED_NOTE} (index {f.index}: expected "
            f"{f.want:.9g}): flush-to-zero or denormals-are-zero, or a rewrite that underflows where the original "
            "does not"
            if subnormal >= FLUSH_MIN_SUBNORMALS and flushed >= FLUSH_SHARE * subnormal else "")
    count, f = first("outside")
    if count:
        return Comparison(False, f"output '{name}' at index {f.index}: got {f.got:.9g}, expected {f.want:.9g} "
                                 f"(|error| {f.error:.3g} > atol {spec.atol:g} + rtol {spec.rtol:g} * |expected|; "
                                 f"{count} of {size} elements outside tolerance)",
                          worst_margin=worst, worst_output=name)
    return Comparison(True, worst_margin=worst, worst_output=name, flushed=note)


def _as_unsigned(array: np.ndarray) -> np.ndarray:
    return array.view(np.dtype(f"u{array.dtype.itemsize}"))


def copy_into(destination: np.ndarray, source: np.ndarray, *, threads: bool = True) -> None:
    """destination[:] = source, in chunks on the judge's threads when large (hundreds of MB per GPU call) unless
    `threads` is off (the copy must come from the calling thread's core)."""
    if destination.size <= COMPARE_CHUNK or not threads:
        destination[:] = source
        return
    starts = range(0, destination.size, COMPARE_CHUNK)

    def part(at: int) -> None:
        destination[at:at + COMPARE_CHUNK] = source[at:at + COMPARE_CHUNK]

    list(judge_pool().map(part, starts))


@functools.cache
def judge_pool() -> ThreadPoolExecutor:
    """The judge's worker threads for work on whole buffers (numpy releases the GIL over large arrays)."""
    return ThreadPoolExecutor(max_workers=JUDGE_THREADS, thread_name_prefix="pf-judge")


POISON_BYTE = 0xFF  # NaN for floats, -1 for integers: the harness's own (check, time and profile modes)
# The judge's poisons: one drawn per call (paired.Pair.draw), checked and timed calls alike, so that a poison
# tells a candidate nothing. A red team's candidate skipped the -1 fill where its outputs already read -1 (the
# poison of every plain and timed call: 9.37x "improved"), another took a careful path only where its outputs held
# the edge calls' 0xA5. Sixteen bytes whose repeated patterns are unlikely values of every type (never 0x00: 0.0
# and 0 are common answers); an output an original fills with one of them (-1 is 0xFF) is still compared on the
# calls drawn with another.
JUDGE_POISON_BYTES = (0xFF, 0xA5, 0x5A, 0xC3, 0x3C, 0x96, 0x69, 0xE7, 0x7E, 0xDB, 0xBD, 0x81, 0x18, 0xF0, 0x0F,
                      0x99)
# not -1: an integer all of whose bytes are 0xFF may be a written -1
INTEGER_POISON_BYTES = tuple(b for b in JUDGE_POISON_BYTES if b != POISON_BYTE)


def _poisoned(array: np.ndarray, dtype: str, bytes_: tuple[int, ...] = JUDGE_POISON_BYTES) -> np.ndarray:
    """Elements that still hold a poison: every byte one of `bytes_`."""
    raw = array.view(np.dtype(f"u{array.dtype.itemsize}"))
    found = np.zeros(raw.shape, dtype=bool)
    for byte in bytes_:
        found |= raw == int.from_bytes(bytes([byte]) * raw.dtype.itemsize, "little")
    return found


def compare_inputs(got: dict[str, str], want: dict[str, str]) -> Comparison:
    """Every input's digest after the candidate's call against the same input's after the oracle's (rule 6): the
    harness draws both from the same seed, so any difference is the kernel writing to its input."""
    for name in sorted(want):
        if got.get(name) != want[name]:
            return Comparison(False, f"input '{name}' was modified by the kernel (its contents after the call differ "
                                     "from the original's); inputs must be left unchanged")
    return Comparison(True)


def compare_run(outputs: tuple[OutputSpec, ...], got: dict[str, np.ndarray], want: dict[str, np.ndarray],
                got_digests: dict[str, str] | None = None, want_digests: dict[str, str] | None = None, *,
                subnormals: bool = False) -> Comparison:
    """Every buffer of one call: declared outputs within tolerance (subnormals: compare_output's), every input
    unchanged."""
    inputs = compare_inputs(got_digests or {}, want_digests or {})
    if not inputs.ok:
        return inputs
    undeclared = [o.name for o in outputs if o.name not in want]
    if undeclared:
        return Comparison(False, f"the harness wrote no output named {', '.join(undeclared)}, which task.toml "
                                 "declares: register it with pf_output or pf_inout")
    worst, flushed = Comparison(True), ""
    for spec in outputs:
        if spec.name not in got:
            return Comparison(False, f"output '{spec.name}' was not written by the harness")
        result = compare_output(spec, got[spec.name], want[spec.name], subnormals=subnormals)
        if not result.ok:
            return result
        flushed = flushed or result.flushed
        if result.worst_margin >= worst.worst_margin:
            worst = result
    return Comparison(True, worst_margin=worst.worst_margin, worst_output=worst.worst_output, flushed=flushed)


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
