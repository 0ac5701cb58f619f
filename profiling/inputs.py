"""The judge's inputs: drawn in the judge's process, fresh for every call, with the domain's edge values.

A harness declares each input buffer with a dtype and a half-open range [lo, hi) (perfforge_harness.h). The kernel
process never draws: the judge fills the shared buffers from a generator whose seed no process of the verdict can
know: a keyed hash of what is judged (the task, the configuration, both sources) under a secret key kept in the
user's cache directory (made once from os.urandom; never inside a fence's reach). Judging the same candidate again
draws the same inputs, so a failure reads the same twice; any other candidate, or another key, draws others. Every
other call carries edge values where the range holds them, so code that special-cases them runs:

- zeros (when lo <= 0 < hi) and, for floats, subnormals beside them and negative zero;
- ties: elements equal to another element of the buffer, and the buffer's maximum and minimum repeated (an
  argmax that breaks ties by lane differs only there);
- the range's low end itself (and negatives wherever lo < 0, which the uniform draw already gives);
- on a quarter of edge calls, a float buffer drawn on one side of its range, without zeros (a maximum started at
  0 is wrong only where a whole row is negative), and an integer buffer at one end of its range (an accumulator
  too narrow overflows only on the largest magnitudes);
- the task's own numbers (`marks`): the configuration's parameters (their pairwise sums, differences, products
  and quotients, squares, square roots), the original source's comparison literals (integers too), floating-point
  literals, the floating-point constants of its compiled object (expressions the compiler folded, tables), named
  constants (`#define CUTOFF 2`) and FLT_EPSILON or M_PI where it uses them, each with its neighbours in the
  buffer's type, where they lie in the range, so that a comparison against a threshold meets its tie
  (`x >= threshold` rewritten as `x > threshold` differs only on elements equal to it, which a uniform draw
  rarely or never gives).

Floats are uniform over the range, or (a task's [validate] distribution = "mixed": KernelBench tasks) drawn from
one of KernelBench's five distributions, picked per call and buffer. Integers are drawn uniformly in
[floor(lo), ceil(hi) - 1]; bfloat16 travels as the upper 16 bits of a float32.
"""

from __future__ import annotations

import contextlib
import enum
import functools
import hashlib
import hmac
import math
import os
import re
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

import numpy as np

from perfforge.io import temporary_name
from perfforge.models import cache_dir
from perfforge.task import Distribution
from profiling import elf, sandbox
from profiling.correctness import JUDGE_THREADS, NUMPY_DTYPE, judge_pool

# Share of a buffer's elements each edge class takes on an edge call: small enough that the draw still looks like
# the task's distribution (sums, norms and maxima stay typical), large enough that every block of a tiled kernel
# meets a few (1/32 of 1,024 elements is 32).
EDGE_SHARE = 1 / 32
# The most of an edge call's elements the marks may take when there are more of them than EDGE_SHARE holds: a
# small-only task whose original holds a 120-breakpoint table has 1,086 marks with their neighbours against 32
# places in 1,024 elements, and a candidate wrong on one breakpoint read correct 6 of 6 (seventeenth red team,
# second round). With half the elements, the marks are split into parts of at most that many and each edge call
# takes one (draw's `mark_part`): 1,086 marks in 3 parts, so a configuration's 5 edge calls of 10 checked calls
# carry every one (a subset drawn per call missed a given mark in (1 - 512 / 1086)^5 = 4% of verdicts). Edge calls
# only: plain calls keep the task's distribution.
EDGE_MARKS_MOST_SHARE = 1 / 2
# Below this many copies per mark, a call's marks go to distinct elements: drawn with replacement, 512 places in
# 1,024 elements overwrite a fifth of each other, and a mark placed once was lost from its only call (179 of 1,086
# marks on none of the 3 edge calls meant to carry them all).
DISTINCT_PLACES_BELOW = 4
# Share of a buffer's elements the task's marks (and their neighbours) take on a call that is not an edge call,
# timed ones included: a candidate careful only where a call carries them would be careful on every call, and one
# wrong only near a threshold is wrong on plain calls too (a red team's double-compared-in-float candidate took a
# careful path only on edge calls, told by the poison or by counting calls: 1.69x "improved"). Small enough not to
# change what a timing measures (1 element in 512).
PLAIN_MARK_SHARE = 1 / 512
FLOAT_DTYPES = ("float32", "float64", "float16", "bfloat16")
# Buffers of more than PARALLEL_DRAW_MIN elements per thread are drawn on up to DRAW_THREADS threads: a 64M-element
# draw took 0.33 s on one H200 host core, most of a GPU verdict's judge-side time (bench/bench_verdict.py).
PARALLEL_DRAW_MIN = 1 << 20
DRAW_THREADS = JUDGE_THREADS


# KernelBench's rand_mix pool (its utils.py): normal(0, 1), uniform(-1, 1), laplace(0, 1), exponential(1),
# lognormal(0, 1)
MIXED_POOL = ("normal", "uniform", "laplace", "exponential", "lognormal")

KEY_FILE = "judge.key"
KEY_BYTES = 32


def verdict_generator(*parts: bytes) -> np.random.Generator:
    """The judge's generator for one verdict: seeded by HMAC-SHA256(secret key, parts)."""
    digest = hmac.new(_secret_key(), b"\0".join(parts), hashlib.sha256).digest()
    return np.random.default_rng(int.from_bytes(digest))


def _secret_key() -> bytes:
    path = cache_dir() / KEY_FILE
    try:
        key = path.read_bytes()
        if len(key) == KEY_BYTES:
            return key
    except OSError:
        pass
    path.parent.mkdir(parents=True, exist_ok=True)
    # one temporary file per process and thread (judges run in threads of one process with iterate --jobs and eval
    # --parallel-runs), linked into place only where no key is yet: of judges racing to make it, the first one's
    # stays and every one reads it (a key replaced under a judge would change the inputs it derives)
    fresh = temporary_name(path)
    fd = os.open(fresh, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(os.urandom(KEY_BYTES))
        with contextlib.suppress(FileExistsError):
            os.link(fresh, path)
    finally:
        fresh.unlink(missing_ok=True)
    return path.read_bytes()


def draw(dtype: str, count: int, lo: float, hi: float, rng: np.random.Generator, *, edges: bool,
         distribution: Distribution = Distribution.UNIFORM, marks: Sequence[float] = (),
         side: Side | None = None, mark_part: int | None = None) -> np.ndarray:
    """`count` values of `dtype` (the harness's layout: bfloat16 as uint16), edges sprinkled when asked: uniform in
    [lo, hi), or for floats with Distribution.MIXED one of MIXED_POOL's (folded to |x| when lo >= 0). `marks`:
    the task's numbers (task_marks()) with their neighbours, where they lie in the range: on EDGE_SHARE of the
    elements of an edge call, PLAIN_MARK_SHARE of any other's. `side`: an edge call's part of the range, else drawn
    (ONE_SIDED_SHARE); the generator is used alike either way. `mark_part`: an edge call's place in its
    configuration's run of edge calls (from a first part drawn under the key): where the marks outnumber what the
    call holds, it carries their part `mark_part` modulo the number of parts (_marks); None: a subset drawn."""
    if dtype in FLOAT_DTYPES:
        one_sided = edges and distribution is not Distribution.MIXED
        drawn = _side(rng) if one_sided else Side.BOTH
        side = side if one_sided and side is not None else drawn
        # Side.ENDS is the integers': floats all of magnitude near the range's ends cancel in sums, and an honest
        # reassociated matvec read incorrect at atol 1e-5 on such a call
        side = Side.BOTH if side is Side.ENDS else side
        if distribution is Distribution.MIXED:
            values = _mixed(rng, count, lo, dtype)
        else:
            values = _uniform(rng, count, *side.of(lo, hi), dtype)
        if edges and side is Side.BOTH:
            _float_edges(values, lo, hi, rng)
        _extreme_ties(values, rng)  # every call: the buffer's own values, nothing a timing notices
        _marks(values, _with_neighbours(tuple(marks), values.dtype.name, lo, hi), rng,
               EDGE_SHARE if edges else PLAIN_MARK_SHARE, mark_part if edges else None)
        return _to_dtype(values, dtype)
    low, high = math.floor(lo), max(math.ceil(hi), math.floor(lo) + 1)
    drawn = _side(rng) if edges else Side.BOTH
    side = side if edges and side is not None else drawn
    values = rng.integers(*side.of_integers(low, high), size=count, dtype=np.int64)
    if side is Side.ENDS:
        _at_ends(values, low, high, rng)
    if edges and side is Side.BOTH:
        _integer_edges(values, low, high, rng)
    _extreme_ties(values, rng)
    _marks(values, [int(m) for m in marks if m == int(m) and low <= m < high], rng,
           EDGE_SHARE if edges else PLAIN_MARK_SHARE, mark_part if edges else None)
    return values.astype(NUMPY_DTYPE[dtype])


class Side(enum.Enum):
    """Which part of a float buffer's range an edge call draws it from. A one-sided buffer is what a uniform draw
    over the whole range never gives: every element of a row or column negative (a maximum started at 0 or
    FLT_MIN is wrong only there), or every one above the middle. It carries no zeros nor subnormals (they would
    put the other side back), only its ties and the marks of the whole range."""

    BOTH = "both"
    LOWER = "lower"  # [lo, middle)
    UPPER = "upper"  # [middle, hi)
    # integer buffers (floats draw BOTH): each element from one end of the range or the other, at random: the
    # largest differences and mixed-sign extremes a one-sided buffer never holds (eighteenth session, the
    # seventeenth red team's second round: the per-row sum of |a - b| of two int32 buffers accumulated in 32 bits
    # is wrong only where a sits at one end and b at the other; the one-sided calls put every buffer on the same
    # side, and 9 of 10 re-submissions read correct)
    ENDS = "ends"

    def of(self, lo: float, hi: float) -> tuple[float, float]:
        """A float buffer's part of [lo, hi)."""
        middle = 0.0 if lo < 0.0 < hi else lo + (hi - lo) / 2  # the sign's boundary where the range holds it
        return {Side.BOTH: (lo, hi), Side.ENDS: (lo, hi), Side.LOWER: (lo, middle), Side.UPPER: (middle, hi)}[self]

    def of_integers(self, low: int, high: int) -> tuple[int, int]:
        """An integer buffer's one side is its range's end, [low, high) narrowed to INTEGER_END_SHARE of it: sums
        of squares and products of elements of the largest magnitude are what overflow a narrower accumulator
        (seventeenth red team: int64 row energies of 12-bit samples summed in int32, wrong on rows near +-2048,
        read 4.37x "improved"; a uniform draw's rows never came near)."""
        width = max(1, int((high - low) * INTEGER_END_SHARE))
        return {Side.BOTH: (low, high), Side.ENDS: (low, high), Side.LOWER: (low, low + width),
                Side.UPPER: (high - width, high)}[self]


def _at_ends(values: np.ndarray, low: int, high: int, rng: np.random.Generator) -> None:
    """Side.ENDS for an integer buffer: every element moved to the end of [low, high) it is nearer, within
    INTEGER_END_SHARE of the range (each element's end decided by its uniform draw: half and half, independent of
    the other buffers')."""
    width = max(1, int((high - low) * INTEGER_END_SHARE))
    offsets = rng.integers(0, width, size=values.size, dtype=np.int64)
    values[:] = np.where(values < low + (high - low) // 2, low + offsets, high - 1 - offsets)
    values[_positions(rng, values.size)] = low  # the ends themselves too
    values[_positions(rng, values.size)] = high - 1


# The part of an integer buffer's range a one-sided edge call draws from, at either end
INTEGER_END_SHARE = 1 / 16


# Share of a float buffer's edge calls drawn on one side of its range (each side half of it): enough that a task's
# 10 edge calls of 20 checked runs meet one side at least once (1 - 0.75^10 = 94% per buffer)
ONE_SIDED_SHARE = 1 / 4


def _side(rng: np.random.Generator) -> Side:
    u = float(rng.random())
    return Side.LOWER if u < ONE_SIDED_SHARE / 2 else Side.UPPER if u < ONE_SIDED_SHARE else Side.BOTH


def _extreme_ties(values: np.ndarray, rng: np.random.Generator) -> None:
    """The buffer's maximum and minimum repeated: a run of 8 of each (one per lane of an 8-wide vector, so a lane
    merge that breaks ties by lane rather than by index differs), and a copy of each a short distance after
    another copy (a tie of two far lanes of the same row). A copy of a random element (_ties) is rarely the
    extreme. On every call, timed ones too: a red team's argmax broke ties by lane except on the calls it took
    for edge calls (2.29x "improved" while edge calls alone had the ties)."""
    if values.size < 2:
        return
    for extreme in (values.max(), values.min()):
        start = int(rng.integers(0, values.size - 1))
        values[start:start + 8] = extreme
        first = int(rng.integers(0, values.size))
        values[first] = extreme
        values[min(values.size - 1, first + int(rng.integers(1, 65)))] = extreme


@functools.lru_cache(maxsize=256)  # the same few per pair (its marks, each buffer's type and range), every edge call
def _with_neighbours(marks: tuple[float, ...], dtype_name: str, lo: float, hi: float) -> tuple[float, ...]:
    """The marks in [lo, hi), each with the next value of the buffer's working type on either side (`x <= t` and
    `x < t` differ at t, `x <= t` and `x <= t - ulp` just below), and for double buffers the band a float
    comparison blurs: half a float32 ulp either side (`(float)x <= (float)t` differs from `x <= t` only within
    it)."""
    dtype = np.dtype(dtype_name)
    found: set[float] = set()
    for mark in (m for m in marks if lo <= m < hi):
        exact = dtype.type(mark)
        found.update(float(v) for v in (exact, np.nextafter(exact, dtype.type(-np.inf)),
                                        np.nextafter(exact, dtype.type(np.inf))))
        if dtype == np.float64:  # inside the band, away from its edges: a quarter of a float32 ulp
            quarter_float_ulp = float(np.spacing(np.float32(abs(mark)))) / 4
            found.update((mark - quarter_float_ulp, mark + quarter_float_ulp))
    return tuple(sorted(v for v in found if lo <= v < hi and math.isfinite(v)))


# A floating-point literal of C, C++, CUDA or Python source: digits with a point or an exponent (1.5, .5f, 2e-3,
# 1.f); integers are left out: their small values (loop bounds, strides, 0 and 1) are everywhere and say nothing.
_FRACTION = r"\d+\.\d*(?:[eE][+-]?\d+)?|\.\d+(?:[eE][+-]?\d+)?"  # 1.5, 1., .5, 2.5e-3
_FLOAT_LITERAL_RE = re.compile(r"(?<![\w.])(" + _FRACTION + r"|\d+[eE][+-]?\d+)[fFlL]?(?![\w.])")
# A literal, integer or not, that is one side of a comparison (`x >= 6`, `0.5f < x`, `x > -2`): a threshold even
# when it is an integer compared with floats. Not a shift (`<<`, `>>=`), `->`, nor a hex number.
_INTEGER_OR_FLOAT = r"(" + _FRACTION + r"|\d+(?:[eE][+-]?\d+)?)"
_COMPARISON = r"(?<![<>=!-])(?:<=|>=|==|!=|<|>)(?![<>=])"
_COMPARED_LITERAL_RES = (
    re.compile(_COMPARISON + r"\s*\(?\s*-?\s*" + _INTEGER_OR_FLOAT + r"[fFlLuU]*(?![\w.])"),
    re.compile(r"(?<![\w.])" + _INTEGER_OR_FLOAT + r"[fFlLuU]*\s*\)?\s*" + _COMPARISON),
)
# A constant given a name: `#define CUTOFF 2`, `const int CUTOFF = 2;`, `constexpr float T = 0.5f;`, an enum's
# `CUTOFF = 2`, Python's `CUTOFF = 2` (compared by its name, so no comparison shows its value)
_NAMED_LITERAL_RE = re.compile(r"(?:#\s*define\s+\w+\s+\(?|\b[A-Za-z_]\w*\s*=\s*)(-?\s*)"
                               + _INTEGER_OR_FLOAT + r"[fFlLuU]*\)?\s*(?:[;,}\n]|$)", re.MULTILINE)
# Named constants a threshold is often written with (C's float.h and math.h), by the name the source uses.
_NAMED_CONSTANTS = {"FLT_EPSILON": 1.1920928955078125e-07, "DBL_EPSILON": 2.220446049250313e-16,
                    "FLT_MIN": 1.1754943508222875e-38, "DBL_MIN": 2.2250738585072014e-308,
                    "M_PI": math.pi, "M_PI_2": math.pi / 2, "M_PI_4": math.pi / 4, "M_E": math.e,
                    "M_SQRT2": math.sqrt(2.0), "M_LN2": math.log(2.0)}
_NAMED_CONSTANT_RE = re.compile(r"\b(" + "|".join(_NAMED_CONSTANTS) + r")\b")
# the distinct float literals kept (smallest magnitude first): a long table of coefficients holds no threshold
MAX_SOURCE_MARKS = 16
# Compared and named literals kept: every threshold a kernel tests (a red team's bucketing by 18 breakpoints got its
# two largest wrong, past the 16 then kept: 5.52x improved), up to a number that still leaves each mark a few
# elements of a small buffer's share.
MAX_COMPARED_MARKS = 64


def task_marks(params: Mapping[str, object], source: str, constants: Sequence[float] = ()) -> tuple[float, ...]:
    """The numbers a kernel may compare its inputs with: the configuration's numeric parameters, the literals of
    the original source's comparisons (integers too: `x >= 6` on floats), its floating-point literals and the named
    constants it uses (FLT_EPSILON, M_PI), the floating-point `constants` its compiled object holds
    (object_constants()), each with its negative (`x > -t` is spelled with a unary minus) and its float32 rounding
    (`0.1f` compared in double is 0.10000000149, not 0.1)."""
    def smallest(found: set[float], most: int = MAX_SOURCE_MARKS) -> list[float]:
        return sorted(found - {0.0}, key=abs)[:most]

    numbers = {float(v) for v in params.values() if isinstance(v, (int, float)) and not isinstance(v, bool)}
    numbers.update(_derived(sorted(numbers)))
    numbers.update(constants)  # not combined: the compiler has folded what the source computed from them
    compared = {float(m) for pattern in _COMPARED_LITERAL_RES for m in pattern.findall(source)}
    named = {float(sign.replace(" ", "") + value) for sign, value in _NAMED_LITERAL_RE.findall(source)}
    numbers.update(smallest(compared | named, MAX_COMPARED_MARKS))
    numbers.update(smallest({float(m) for m in _FLOAT_LITERAL_RE.findall(source)}
                            | {_NAMED_CONSTANTS[name] for name in _NAMED_CONSTANT_RE.findall(source)}))
    numbers.update([-x for x in numbers])
    with np.errstate(over="ignore"):
        numbers.update([float(np.float32(x)) for x in numbers])
    return tuple(sorted(x for x in numbers if math.isfinite(x)))


# The constants an original's object may hold: the compiler's constant pools (.rodata.cst4/8/16/32: what a
# comparison loads), then its tables (.rodata, .data), up to this many. A table is read as float32, as float64 and
# as int32, and each reading that is not its section's own makes junk: a float32 table's pairs read as float64 make
# small numbers (second red team round: 104 of a 240-breakpoint table's values left out at 256, a strict rewrite
# on them 1.4-1.9x "improved"), a float64 table's halves read as float32 about 1.8 numbers an entry (eighteenth
# round: a 600-breakpoint float64 table gave none of its own among the first 1,024), an int32 table read as float
# subnormals. So each section's readings are ranked by how many of their words are plain numbers (a short decimal,
# as people write thresholds, _plain): the plain words of each section's plainest reading first, then that
# reading's others, then the other readings'; each part by magnitude.
MAX_OBJECT_MARKS = 1024
_CONSTANT_POOL = re.compile(r"\.rodata\.cst\d+")
_DATA_SECTION = re.compile(r"\.(rodata|data|data\.rel\.ro)(\..*)?")
# A word read as a float is a constant only between these magnitudes: small integers stored beside the floats read
# as subnormals, pointers and addresses as huge or NaN
_CONSTANT_MAGNITUDE = (1e-30, 1e30)
# Significant digits of a plain number's shortest decimal form, per reading: thresholds are written with a few
# (0.25f, 0.001178); a random float32 word's shortest form takes 7 to 9, a random float64's 15 to 17. An int32 word
# is plain when it is not a float's bit pattern: under 2^23 in magnitude (a float32 word that small is subnormal),
# or a multiple of 2^16 (3 << 21 and the like).
_PLAIN_DIGITS = {np.float32: 6, np.float64: 12}
_READINGS = (np.float32, np.float64, np.int32)


def _plain(value: float, dtype: type) -> bool:
    if dtype is np.int32:
        return abs(value) < 1 << 23 or value % (1 << 16) == 0
    digits = np.format_float_scientific(dtype(value), unique=True, trim="-").split("e")[0]
    return len(digits.replace("-", "").replace(".", "").lstrip("0")) <= _PLAIN_DIGITS[dtype]


def _reading(data: bytes, dtype: type) -> np.ndarray:
    """The words of `data` as `dtype` (little-endian) that could be constants, as float64."""
    size = np.dtype(dtype).itemsize
    with np.errstate(invalid="ignore", over="ignore"):
        words = np.frombuffer(data[:len(data) // size * size], dtype=np.dtype(dtype).newbyteorder("<"))
        words = words.astype(np.float64)
        if dtype is np.int32:
            return words[words != 0]
        magnitude = np.abs(words)
        return words[np.isfinite(words) & (magnitude >= _CONSTANT_MAGNITUDE[0]) & (magnitude <= _CONSTANT_MAGNITUDE[1])]


def object_constants(obj: Path) -> tuple[float, ...]:
    """The constants of the read-only and initialised data of a compiled original, read as float32 (at each 4-byte
    offset), float64 (each 8-byte offset) and int32: the thresholds the source wrote as expressions, hex floats,
    named constants or table entries, folded by the compiler (seventeenth red team: `x >= 1.0f / 3.0f`,
    0x1.555556p-2f, sqrtf(0.125f), a static const THIRD and a table of 24 breakpoints gave no mark of the
    threshold, and `>` for `>=` read 4-6x "improved"; eighteenth: an int32 table of size-class bounds `3 << 21`...,
    a float64 table of 600 breakpoints). Strings are skipped; a float reading that is not a plain number within
    _CONSTANT_MAGNITUDE is too. Ranked as MAX_OBJECT_MARKS says. A CUDA original's device code holds its constants
    as immediates: they are read from the PTX nvcc --keep left beside the object (ptx_constants), with the constant
    pools."""
    pools: set[float] = ptx_constants(obj)
    plainest: set[float] = set()  # the plain words of each section's plainest reading
    others: set[float] = set()  # the rest of that reading
    rest: set[float] = set()  # the other readings
    for section in elf.sections(obj):
        if section.executable or not _DATA_SECTION.fullmatch(section.name) or section.name.startswith(".rodata.str"):
            continue
        if _CONSTANT_POOL.fullmatch(section.name):
            for dtype in (np.float32, np.float64):
                pools.update(_reading(section.data, dtype).tolist())
            continue
        readings = {dtype: _reading(section.data, dtype).tolist() for dtype in _READINGS}
        plain = {dtype: [v for v in values if _plain(v, dtype)] for dtype, values in readings.items()}
        # the reading whose words are most often plain (float32 first on a tie: the common case)
        best = max(_READINGS, key=lambda d: (len(plain[d]) / max(len(readings[d]), 1), -_READINGS.index(d)))
        plainest.update(plain[best])
        others.update(readings[best])
        for dtype in _READINGS:
            if dtype is not best:
                rest.update(readings[dtype])
    pools.update(compared_immediates(obj))
    chosen = sorted(pools, key=abs)
    for part in (plainest, others, rest):
        chosen += sorted(part - set(chosen), key=abs)
    return tuple(chosen[:MAX_OBJECT_MARKS])


# An x86 comparison with an immediate (AT&T: `cmp $0x5fffff,%edx`), its width from the register or the suffix
_COMPARE_IMMEDIATE = re.compile(r"\bcmp([bwlq]?)\s+\$(0x[0-9a-f]+),\s*[^%]*%(\w+)")
_SUFFIX_BITS = {"b": 8, "w": 16, "l": 32, "q": 64}


def compared_immediates(obj: Path) -> set[float]:
    """The integers a compiled original compares with (x86-64 `cmp $imm`), each with its neighbours: the compiler
    folds an integer threshold written as an expression or a small table (`(3 << 21) * 2`, a loop over a static
    const int bounds[7]) into immediates, and tests `x >= b` as `x > b - 1` (eighteenth red team: size-class bounds
    compared strictly read correct 6 of 6). Empty when objdump cannot read the object."""
    result = sandbox.run_trusted(["objdump", "-d", "--no-show-raw-insn", str(obj)], timeout_s=120, text=True,
                                 errors="replace")
    if result.returncode != 0:
        return set()
    found: set[float] = set()
    for suffix, digits, register in _COMPARE_IMMEDIATE.findall(result.stdout):
        value = int(digits, 16)
        # the operand's width: the suffix, else the register's (rax and r8 are 64 bits, r8d and eax 32, al 8)
        bits = _SUFFIX_BITS.get(suffix) or (64 if register[0] == "r" and register[-1] not in "dwb" else
                                           8 if register[-1] in "lh" and len(register) == 2 else
                                           16 if len(register) == 2 else 32)
        value = value - (1 << bits) if value >= 1 << (bits - 1) else value
        found.update(float(v) for v in (value - 1, value, value + 1) if v)
    return found


# PTX's floating-point immediates: 0f and eight hex digits (float32 bits), 0d and sixteen (float64)
_PTX_FLOAT = re.compile(r"\b0([fd])([0-9A-Fa-f]{16}|[0-9A-Fa-f]{8})\b")


def ptx_constants(obj: Path) -> set[float]:
    """The floating-point immediates of the device code compiled with `obj` (its `<stem>*.ptx`, which nvcc --keep
    writes beside it; none for a host-only object): a CUDA kernel's thresholds (`x >= 1.0f / 3.0f` folded by the
    compiler) never reach the host object's data (seventeenth red team: CUDA device constants were not marks)."""
    found: set[float] = set()
    for ptx in sorted(obj.parent.glob(f"{obj.stem}*.ptx")):
        for kind, digits in _PTX_FLOAT.findall(ptx.read_text(errors="replace")):
            if (kind == "f") != (len(digits) == 8):
                continue
            value = float(np.frombuffer(bytes.fromhex(digits)[::-1], dtype="<f4" if kind == "f" else "<f8")[0])
            if math.isfinite(value) and _CONSTANT_MAGNITUDE[0] <= abs(value) <= _CONSTANT_MAGNITUDE[1]:
                found.add(value)
    return found


# configuration parameters combined in pairs at most: a handful of parameters gives a few dozen values
MAX_DERIVED_PARAMETERS = 8


def _derived(parameters: Sequence[float]) -> set[float]:
    """Thresholds a kernel computes from its parameters (`threshold - width`, `scale * limit`): the sums,
    differences, products and quotients of every pair, in double and in float32 arithmetic (the kernel's)."""
    found: set[float] = set()
    chosen = sorted(parameters, key=abs)[:MAX_DERIVED_PARAMETERS]
    with np.errstate(all="ignore"):  # float32 overflow gives inf, dropped below
        for i, a in enumerate(chosen):
            # and each alone squared (`x >= t * t`, seventeenth red team: t = 0.61, a strict comparison 4.8x
            # "improved"), inverted and its square root (`sqrtf(t)`, its second round: 1.7-2.5x)
            for x in (a, np.float32(a)):
                found.add(float(x * x))
                if x != 0:
                    found.add(float(1 / x))
                if x > 0:
                    found.add(float(np.sqrt(x)))
                    found.add(float(np.log(x)))
                # and its exponentials (eighteenth red team: a threshold expf(-t) read correct 4 of 4 when strict)
                if abs(x) < 80:
                    found.update((float(np.exp(x)), float(np.exp(-x))))
            for b in chosen[i + 1:]:
                for x, y in ((a, b), (np.float32(a), np.float32(b))):
                    found.update(float(v) for v in (x + y, x - y, y - x, x * y))
                    if x != 0 and y != 0:
                        found.update((float(x / y), float(y / x)))
    return {v for v in found if math.isfinite(v)}


def _marks(values: np.ndarray, marks: Sequence[float], rng: np.random.Generator, share: float,
           part: int | None = None) -> None:
    """Each mark on its part of `share` of the elements; where there are more marks than that share holds (a small
    buffer, a long table of constants), an edge call gives them up to EDGE_MARKS_MOST_SHARE of the elements, and
    past that it takes one of ceil(marks / budget) parts, every parts-th mark from `part` modulo parts (an edge
    call's place in its configuration: successive edge calls carry every mark), or a subset drawn per call where
    no part is given (plain calls: every mark comes over the calls)."""
    if not marks or not values.size:
        return
    budget = max(1, int(values.size * share))
    if share >= EDGE_SHARE and len(marks) > budget:
        budget = max(budget, min(len(marks), int(values.size * EDGE_MARKS_MOST_SHARE)))
    chosen = np.asarray(marks, dtype=values.dtype)
    if len(chosen) > budget and part is not None:
        parts = -(-len(chosen) // budget)
        chosen = chosen[part % parts::parts]
    elif len(chosen) > budget:
        chosen = chosen[rng.choice(len(chosen), size=budget, replace=False)]
    per_mark = budget // len(chosen)
    if per_mark < DISTINCT_PLACES_BELOW:  # a mark placed once or twice must not be overwritten by another
        places = rng.choice(values.size, size=per_mark * len(chosen), replace=False)
    else:  # cheaper (a 64M-element buffer's 2M places drawn distinct took 1.2 s); a few of many copies lost
        places = rng.integers(0, values.size, size=per_mark * len(chosen))
    values[places] = np.repeat(chosen, per_mark)


def _uniform(rng: np.random.Generator, count: int, lo: float, hi: float, dtype: str) -> np.ndarray:
    """Uniform in [lo, hi): drawn in float32 for the narrower types (twice as fast, and as fine as they keep)."""
    def fill(generator: np.random.Generator, part: np.ndarray) -> None:
        generator.random(part.size, dtype=part.dtype, out=part)
        part *= hi - lo
        part += lo

    return _chunked(rng, count, dtype, fill)


def _mixed(rng: np.random.Generator, count: int, lo: float, dtype: str) -> np.ndarray:
    """One of MIXED_POOL's distributions, picked by `rng` (so per call and buffer), as KernelBench's rand_mix draws;
    folded to |x| when the declared range has no negatives (a problem whose sample is torch.rand may take a log)."""
    name = MIXED_POOL[int(rng.integers(len(MIXED_POOL)))]

    def fill(generator: np.random.Generator, part: np.ndarray) -> None:
        if name == "normal":
            generator.standard_normal(part.size, dtype=part.dtype, out=part)
        elif name == "uniform":
            generator.random(part.size, dtype=part.dtype, out=part)
            part *= 2.0
            part -= 1.0
        elif name == "laplace":  # an exponential(1) with a random sign (numpy's own laplace is float64 only)
            generator.standard_exponential(part.size, dtype=part.dtype, out=part)
            signs = generator.random(part.size, dtype=part.dtype)
            signs -= 0.5
            np.copysign(part, signs, out=part)
        elif name == "exponential":
            generator.standard_exponential(part.size, dtype=part.dtype, out=part)
        else:  # lognormal(0, 1): exp of a float32 standard normal (numpy's own is float64 only)
            generator.standard_normal(part.size, dtype=part.dtype, out=part)
            np.exp(part, out=part)
        if lo >= 0:
            np.abs(part, out=part)

    return _chunked(rng, count, dtype, fill)


def _chunked(rng: np.random.Generator, count: int, dtype: str,
             fill: Callable[[np.random.Generator, np.ndarray], None]) -> np.ndarray:
    """`count` values made by `fill` in float32 (float64 for float64). Large buffers are filled in chunks on several
    threads, each chunk from a generator seeded by `rng` (numpy's generators release the GIL): the same `rng` state
    still gives the same values."""
    values = np.empty(count, dtype=np.float64 if dtype == "float64" else np.float32)
    chunks = min(DRAW_THREADS, count // PARALLEL_DRAW_MIN)
    if chunks < 2:
        fill(rng, values)
        return values
    seeds = rng.integers(0, 2**63, size=chunks)
    bounds = np.linspace(0, count, chunks + 1).astype(np.int64)
    list(judge_pool().map(lambda i: fill(np.random.default_rng(int(seeds[i])), values[bounds[i]:bounds[i + 1]]),
                          range(chunks)))
    return values


def _positions(rng: np.random.Generator, count: int) -> np.ndarray:
    return rng.integers(0, count, size=max(1, int(count * EDGE_SHARE))) if count else np.empty(0, np.int64)


def _float_edges(values: np.ndarray, lo: float, hi: float, rng: np.random.Generator) -> None:
    count = values.size
    if lo <= 0.0 < hi:
        values[_positions(rng, count)] = 0.0
        values[_positions(rng, count)] = -0.0
        # float32's subnormals (float64 keeps them; float16 and bfloat16 round them to zero, still an edge)
        tiny = _positions(rng, count)
        values[tiny] = rng.choice(np.array([1e-42, -1e-42, 1e-40, 1.4e-45]), size=tiny.size)
    values[_positions(rng, count)] = lo
    _ties(values, rng)


def _integer_edges(values: np.ndarray, low: int, high: int, rng: np.random.Generator) -> None:
    values[_positions(rng, values.size)] = low
    # and the top (eighteenth red team: `(x + 1) >> 1` in 32 bits, wrong only at INT_MAX, read correct 5 of 5)
    values[_positions(rng, values.size)] = high - 1
    if low <= 0 < high:
        values[_positions(rng, values.size)] = 0
    _ties(values, rng)


def _ties(values: np.ndarray, rng: np.random.Generator) -> None:
    """Some elements copied onto others: runs of equal values, and equal values far apart."""
    if values.size < 2:
        return
    source = _positions(rng, values.size)
    values[_positions(rng, values.size)[:source.size]] = values[source]
    start = int(rng.integers(0, values.size - 1))
    values[start:start + 8] = values[start]


def _to_dtype(values: np.ndarray, dtype: str) -> np.ndarray:
    if dtype == "bfloat16":
        return (values.astype(np.float32).view(np.uint32) >> 16).astype(np.uint16)
    return values.astype(NUMPY_DTYPE[dtype], copy=False)
