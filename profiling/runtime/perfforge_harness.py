"""perfforge_harness.py: the harness side of the perfforge task protocol for Python (Triton) tasks.

The twin of perfforge_harness.h: the same command line, the same modes, the same files, the same inputs.
A task's harness.py registers its buffers on a Run and wraps each kernel call in begin()/end():

    from perfforge_harness import Run
    import kernel                                   # the editable source, beside harness.py

    r = Run()
    n = r.param_int("n", 1024)
    x = r.input("x", "float32", n, -1.0, 1.0)       # torch tensors, on "cuda" when there is one
    out = r.output("out", "float32", n)
    while r.begin():
        kernel.launch(x, out, n)
        r.end()
    raise SystemExit(r.finish())

Run as `python harness.py MODE --seed N --out DIR [--calls C] [--warmup W] [--trials T] [--no-flush] key=value...`:

  check    C calls, each on fresh inputs drawn from (seed, call) with the header's splitmix64 scheme, so a Python
           and a C harness draw byte-identical inputs; every output is poisoned (all bytes 0xFF: NaN for floats,
           -1 for integers) before each call; after each call every buffer (inputs too) is written to
           DIR/<name>.<call>.npy and its 256-byte guard zones are checked (exit 3 on an out-of-bounds write).
  time     calls alternate between the inputs of checked calls 0 and 1, outputs poisoned before each, then the
           cache is flushed (CUDA: a fill of twice the L2; CPU: a write
           over twice the last-level cache, at most 64 MiB); each call is timed (CUDA: events, after
           torch.cuda.synchronize() of the whole device, so work on other streams cannot escape the timer;
           CPU: CLOCK_MONOTONIC). DIR/timing.json holds "method", "flush_bytes", "times_ms", "saved_calls" (and
           the device); the outputs of each call named by --save-call are written as in check mode.
  profile  one warm-up call, then one call inside the NVTX range "pf_profile" (CUDA) for the profiler.
  serve    --channel FD: the verdict's mode (profiling/served.py, perfforge_serve.py). Every buffer is declared to
           the judge and mapped from the memfd it answers with; the first call is a warm-up on the harness's own
           draws (Triton compiles there); then the fixed buffers go to the judge, the system-call filter is
           completed, and "ready" is said. Run through perfforge_launch.py, as the judge runs it, the filter's first
           stage (on a CPU all of it) goes in before harness.py and the candidate's module are imported. Each
           "call" runs the body once on what the judge wrote, then "done" (CUDA: "stage" before it copies the
           inputs up and poisons the outputs (0xa5 on "stage a5", plain 0xFF), "staged"; the call says "start", runs the
           body, synchronises the whole device, says "synced"; "fetch" after it copies
           the outputs back, "fetched").
           Nothing this process says is trusted.

Buffers live on "cuda" when torch sees a GPU, else on the CPU, where Triton kernels run only under its
interpreter (TRITON_INTERPRET=1): good for correctness, meaningless for timing (timing.json says so).
Each buffer is a view into one allocation with its guard zones, so a kernel that writes past its end (a
missing mask) writes into the guard, as it would under the C header.

Exit status: 0 done; 2 bad arguments; 3 a buffer was written outside its bounds; 4 a CUDA error; 5 an I/O error.
"""

from __future__ import annotations

import contextlib
import ctypes
import importlib
import json
import math
import os
import re
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path

import numpy as np
import torch

MAX_BUFFERS = 32  # PF_MAX_BUFS
MAX_PARAMS = 32  # PF_MAX_PARAMS
MAX_TRIALS = 100_000  # PF_MAX_TIMES
MAX_SAVED_CALLS = 16  # PF_MAX_SAVED_CALLS
INPUT_SETS = 2  # PF_INPUT_SETS: input sets a time run alternates between
# The timer, bound when this module loads, before any kernel module: a kernel that reassigns time.clock_gettime_ns
# or torch.cuda.Event's methods (in the same process) cannot reach the harness's clock.
_clock_ns = time.clock_gettime_ns
_CLOCK_MONOTONIC = time.CLOCK_MONOTONIC
_event_record = torch.cuda.Event.record
_event_synchronize = torch.cuda.Event.synchronize
_event_elapsed_ms = torch.cuda.Event.elapsed_time
GUARD_BYTES = 256  # PF_GUARD_BYTES: keeps the data 256-byte aligned and catches off-by-a-row writes
GUARD_BYTE = 0xA5  # PF_GUARD_BYTE
POISON_BYTE = 0xFF  # PF_POISON_BYTE: NaN for floats, -1 for integers
HEX_DIGITS = "0123456789abcdef"
# PF_CPU_FLUSH_CAP_BYTES: virtual machines report the host's whole L3; a flush that size would dominate short trials.
CPU_FLUSH_CAP_BYTES = 64 << 20
DEFAULT_LLC_BYTES = 8 << 20  # the header's fallback when the last-level cache size cannot be read
DEFAULT_L2_BYTES = 64 << 20  # the header's fallback when the GPU does not report its L2 size
FILL_CHUNK = 1 << 20  # elements drawn per numpy pass: bounds the draw's temporary memory to tens of MB

EXIT_BAD_ARGS, EXIT_OUT_OF_BOUNDS, EXIT_CUDA, EXIT_IO = 2, 3, 4, 5

# splitmix64 and the seeding of pf_fill, constant for constant.
_GOLDEN = 0x9E3779B97F4A7C15
_MIX1, _MIX2 = 0xBF58476D1CE4E5B9, 0x94D049BB133111EB
_SEED_MUL, _CALL_MUL, _INDEX_MUL = 0x100000001B3, 0x9E3779B1, 0x85EBCA77
_MASK64 = (1 << 64) - 1


def poison_of(message: str, word: str) -> int | None:
    """The poison byte the judge's `word` ("call", "stage") names in two hex digits: "stage a5" 0xA5, plain
    "stage" 0xFF; None for another word or anything else after it."""
    head, _, byte = message.partition(" ")
    if head != word:
        return None
    if not byte:
        return POISON_BYTE
    return int(byte, 16) if len(byte) == 2 and all(c in HEX_DIGITS for c in byte) else None


class Mode(StrEnum):
    CHECK = "check"
    TIME = "time"
    PROFILE = "profile"
    SERVE = "serve"


class Role(StrEnum):
    INPUT = "input"  # random, redrawn per checked call
    OUTPUT = "output"  # poisoned before every call
    INOUT = "inout"  # drawn like an input, compared like an output
    FIXED = "fixed"  # filled by the harness, restored before every checked call


@dataclass(frozen=True)
class DType:
    """A task dtype: its torch type, its numpy storage type and the .npy descr the C header writes."""

    torch_dtype: torch.dtype
    storage: np.dtype  # how the bytes travel: bfloat16 as raw uint16, like the header
    descr: str


DTYPES = {
    "float32": DType(torch.float32, np.dtype("<f4"), "<f4"),
    "float64": DType(torch.float64, np.dtype("<f8"), "<f8"),
    "float16": DType(torch.float16, np.dtype("<f2"), "<f2"),
    "bfloat16": DType(torch.bfloat16, np.dtype("<u2"), "<u2"),
    "int32": DType(torch.int32, np.dtype("<i4"), "<i4"),
    "int64": DType(torch.int64, np.dtype("<i8"), "<i8"),
    "uint8": DType(torch.uint8, np.dtype("|u1"), "|u1"),
}


class HarnessExit(SystemExit):
    """The harness stops with one of the protocol's exit statuses (a SystemExit, so scripts need no handler)."""


def fail(status: int, message: str) -> HarnessExit:
    print(f"perfforge harness: {message}", file=sys.stderr, flush=True)
    return HarnessExit(status)


# ---------------------------------------------------------------------------------------------------- inputs


def fill_state(seed: int, call: int, index: int) -> int:
    """The splitmix64 state pf_fill starts from for buffer `index` (registration order) on call `call`."""
    return (seed * _SEED_MUL + call * _CALL_MUL + index * _INDEX_MUL) & _MASK64


def uniform(state: int, start: int, count: int) -> np.ndarray:
    """Draws start .. start+count-1 of the splitmix64 stream from `state`, as pf_uniform does: (z >> 11) / 2^53."""
    steps = np.arange(start + 1, start + count + 1, dtype=np.uint64)
    z = np.uint64(state) + steps * np.uint64(_GOLDEN)  # uint64 arithmetic wraps, as in C
    z = (z ^ (z >> np.uint64(30))) * np.uint64(_MIX1)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(_MIX2)
    z = z ^ (z >> np.uint64(31))
    return (z >> np.uint64(11)).astype(np.float64) * (1.0 / 9007199254740992.0)


def float_to_half_bits(values: np.ndarray) -> np.ndarray:
    """pf_float_to_half, bit for bit (not numpy's conversion, which rounds ties to even and keeps subnormals):
    flush what half cannot hold as a normal to signed zero, saturate to infinity, round the mantissa half up,
    and OR (not add) the rounded mantissa into the exponent field, as the header does."""
    x = values.astype(np.float32).view(np.uint32)
    sign = (x >> np.uint32(16)) & np.uint32(0x8000)
    exponent = ((x >> np.uint32(23)) & np.uint32(0xFF)).astype(np.int64) - 127 + 15
    mantissa = (x & np.uint32(0x7FFFFF)).astype(np.int64)
    normal = sign.astype(np.int64) | ((np.clip(exponent, 0, 31) << 10) + ((mantissa + 0x1000) >> 13))
    bits = np.where(exponent <= 0, sign, np.where(exponent >= 31, sign | 0x7C00, normal))
    return bits.astype(np.uint16)


def convert(values: np.ndarray, dtype: str) -> np.ndarray:
    """Doubles drawn in [lo, hi) to a buffer's storage, as pf_fill's switch converts them."""
    if dtype == "float32":
        return values.astype(np.float32)
    if dtype == "float64":
        return values
    if dtype == "float16":
        return float_to_half_bits(values).view(np.float16)
    if dtype == "bfloat16":  # the top 16 bits of the float: truncation, not rounding
        return (values.astype(np.float32).view(np.uint32) >> np.uint32(16)).astype(np.uint16)
    floored = np.floor(values)
    if dtype == "uint8":  # (unsigned char)floor(v): wraps like the usual C conversion through int
        return floored.astype(np.int64).astype(np.uint8)
    return floored.astype(DTYPES[dtype].storage)


def draw(dtype: str, count: int, lo: float, hi: float, state: int) -> np.ndarray:
    """`count` values in [lo, hi) from the splitmix64 stream at `state`, in the buffer's storage type."""
    out = np.empty(count, dtype=DTYPES[dtype].storage)
    for start in range(0, count, FILL_CHUNK):
        n = min(FILL_CHUNK, count - start)
        out[start:start + n] = convert(lo + (hi - lo) * uniform(state, start, n), dtype)
    return out


# ---------------------------------------------------------------------------------------------------- buffers


@dataclass
class Buffer:
    """One registered buffer: a typed view into an allocation with a guard zone on each side."""

    name: str
    dtype: str
    role: Role
    shape: tuple[int, ...]
    index: int  # registration order: part of the seed of its inputs
    lo: float
    hi: float
    raw: torch.Tensor  # uint8: guard, data, guard
    data: torch.Tensor  # what the kernel gets
    pristine: torch.Tensor | None = None  # a fixed buffer's contents, restored before every checked call
    host: torch.Tensor | None = None  # serve: the judge's memory, laid out like raw (on the CPU, raw itself)

    @property
    def count(self) -> int:
        return math.prod(self.shape)

    @property
    def nbytes(self) -> int:
        return self.count * DTYPES[self.dtype].storage.itemsize

    def fill(self, seed: int, call: int) -> None:
        values = draw(self.dtype, self.count, self.lo, self.hi, fill_state(seed, call, self.index))
        self.data_bytes().copy_(torch.from_numpy(values.view(np.uint8)))

    def arm(self, poison_byte: int = POISON_BYTE) -> None:
        """Guards written; an output poisoned; a fixed buffer restored to what the harness put there."""
        self.raw[:GUARD_BYTES].fill_(GUARD_BYTE)
        self.raw[GUARD_BYTES + self.nbytes:].fill_(GUARD_BYTE)
        if self.role is Role.OUTPUT:
            self.data_bytes().fill_(poison_byte)
        elif self.role is Role.FIXED and self.pristine is not None:
            self.data_bytes().copy_(self.pristine)

    def data_bytes(self) -> torch.Tensor:
        return self.raw[GUARD_BYTES:GUARD_BYTES + self.nbytes]

    def host_raw(self) -> np.ndarray:
        return self.raw.cpu().numpy()

    def guard_violation(self, raw: np.ndarray) -> str | None:
        """Where the buffer was written outside its bounds, or None."""
        if np.any(raw[:GUARD_BYTES] != GUARD_BYTE):
            return "before its start"
        if np.any(raw[GUARD_BYTES + self.nbytes:] != GUARD_BYTE):
            return "past its end"
        return None


def allocate(name: str, dtype: str, role: Role, shape: tuple[int, ...], index: int, lo: float, hi: float,
             device: torch.device) -> Buffer:
    count = math.prod(shape)
    nbytes = count * DTYPES[dtype].storage.itemsize
    raw = torch.empty(GUARD_BYTES + nbytes + GUARD_BYTES, dtype=torch.uint8, device=device)
    data = raw[GUARD_BYTES:GUARD_BYTES + nbytes].view(DTYPES[dtype].torch_dtype).view(shape)
    return Buffer(name, dtype, role, shape, index, lo, hi, raw, data)


def digest(data: np.ndarray) -> int:
    """pf_digest: sum of each 8-byte word times an odd multiplier, splitmix64 of its index (mod 2**64)."""
    data = np.ascontiguousarray(data).view(np.uint8).reshape(-1)
    words = data.size // 8
    with np.errstate(over="ignore"):
        total = np.uint64(0)
        if words:
            values = data[:words * 8].view("<u8")
            total += np.sum(values * (_splitmix(np.arange(words, dtype=np.uint64)) | np.uint64(1)), dtype=np.uint64)
        tail = np.arange(words * 8, data.size, dtype=np.uint64)
        if tail.size:
            total += np.sum(data[words * 8:].astype(np.uint64) * (_splitmix(tail) | np.uint64(1)), dtype=np.uint64)
    return int(total)


def _splitmix(index: np.ndarray) -> np.ndarray:
    """pf_mix applied to a state equal to each index, vectorised (uint64 arithmetic wraps like C's)."""
    z = index + np.uint64(0x9E3779B97F4A7C15)
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))


def write_digest(path: Path, data: np.ndarray) -> None:
    try:
        path.write_text(f"{digest(data):016x}\n")
    except OSError as exc:
        raise fail(EXIT_IO, f"cannot write {path}: {exc.strerror}") from None


def write_npy(path: Path, buffer: Buffer, raw: np.ndarray) -> None:
    """The buffer's data as a 1-D .npy of `count` elements, byte for byte what pf_write_npy writes."""
    header = f"{{'descr': '{DTYPES[buffer.dtype].descr}', 'fortran_order': False, 'shape': ({buffer.count},), }}"
    pad = (64 - (10 + len(header) + 1) % 64) % 64
    header_bytes = (header + " " * pad + "\n").encode("latin-1")
    preamble = b"\x93NUMPY\x01\x00" + len(header_bytes).to_bytes(2, "little")
    try:
        with open(path, "wb") as f:
            f.write(preamble + header_bytes)
            f.write(raw[GUARD_BYTES:GUARD_BYTES + buffer.nbytes].tobytes())
    except OSError as exc:
        raise fail(EXIT_IO, f"cannot write {path}: {exc.strerror}") from None


# ---------------------------------------------------------------------------------------------------- arguments


@dataclass
class Options:
    mode: Mode
    seed: int = 0
    out_dir: Path = Path(".")
    calls: int = 2
    warmup: int = 3
    trials: int = 20
    flush: bool = True
    dump_inputs: bool = False  # --dump-inputs: inputs written whole as .npy too (debugging, tests)
    save_calls: list[int] = field(default_factory=list)  # --save-call: time-mode calls whose outputs are written
    channel: int = -1  # --channel: serve mode's socket to the judge
    params: list[tuple[str, str]] = field(default_factory=list)  # in order; a lookup takes the first match


_INT_PREFIX = re.compile(r"\s*[+-]?\d+")


def c_int(text: str) -> int:
    """atoi/strtol: the leading integer of text, 0 when there is none (so "1024.0" is 1024, as in C)."""
    match = _INT_PREFIX.match(text)
    return int(match.group()) if match else 0


def c_float(text: str) -> float:
    """strtod on the whole value; a value that is not a number reads as 0, as strtod's would."""
    try:
        return float(text)
    except ValueError:
        return 0.0


def parse_args(argv: Sequence[str]) -> Options:
    """pf_init's parsing: MODE, then --seed --out --calls --warmup --trials --no-flush and key=value pairs."""
    if len(argv) < 2:
        raise fail(EXIT_BAD_ARGS, f"usage: {argv[0] if argv else 'harness'} check|time|profile|serve --seed N "
                                  "--out DIR [key=value ...]")
    if argv[1] not in {m.value for m in Mode}:
        raise fail(EXIT_BAD_ARGS, f"unknown mode {argv[1]}; expected check, time, profile or serve")
    opts = Options(Mode(argv[1]))
    i = 2
    while i < len(argv):
        arg = argv[i]
        if arg == "--no-flush":
            opts.flush = False
        elif arg == "--dump-inputs":
            opts.dump_inputs = True
        elif arg in {"--seed", "--out", "--calls", "--warmup", "--trials", "--save-call", "--channel"}:
            if i + 1 >= len(argv):
                raise fail(EXIT_BAD_ARGS, f"option {arg} needs a value")
            i += 1
            _set_option(opts, arg, argv[i])
        elif "=" in arg and len(opts.params) < MAX_PARAMS:
            key, value = arg.split("=", 1)
            opts.params.append((key, value))
        else:
            raise fail(EXIT_BAD_ARGS, f"unknown argument {arg}")
        i += 1
    if opts.mode is Mode.PROFILE:
        opts.warmup, opts.trials = 1, 1
    if opts.mode is Mode.SERVE and opts.channel < 0:
        raise fail(EXIT_BAD_ARGS, "serve needs --channel FD")
    if opts.trials < 1 or opts.trials > MAX_TRIALS or opts.calls < 1 or opts.warmup < 0:
        raise fail(EXIT_BAD_ARGS, "calls and trials must be at least 1 (trials at most 100000), warmup at least 0")
    return opts


def _set_option(opts: Options, option: str, value: str) -> None:
    if option == "--seed":
        opts.seed = c_int(value) & _MASK64  # strtoull
    elif option == "--out":
        opts.out_dir = Path(value)
    elif option == "--save-call":
        if len(opts.save_calls) < MAX_SAVED_CALLS:
            opts.save_calls.append(c_int(value))
    else:
        setattr(opts, option[2:], c_int(value))


# ---------------------------------------------------------------------------------------------------- machine


def cpu_last_level_cache_bytes() -> int:
    """The largest cache of cpu0 (sysfs), or 0 when it cannot be read."""
    sizes = []
    for index in Path("/sys/devices/system/cpu/cpu0/cache").glob("index*"):
        try:
            text = (index / "size").read_text().strip()
        except OSError:
            continue
        units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
        sizes.append(int(text[:-1]) * units[text[-1]] if text[-1] in units else int(text))
    return max(sizes, default=0)


def flush_bytes_for(device: torch.device) -> int:
    if device.type == "cuda":
        l2_bytes = int(getattr(torch.cuda.get_device_properties(device), "L2_cache_size", 0))
        return 2 * (l2_bytes if l2_bytes > 0 else DEFAULT_L2_BYTES)
    llc_bytes = cpu_last_level_cache_bytes()
    return min(2 * (llc_bytes if llc_bytes > 0 else DEFAULT_LLC_BYTES), CPU_FLUSH_CAP_BYTES)


def cuda_driver_version() -> int:
    """cuDriverGetVersion (e.g. 13000), or 0 when libcuda cannot be asked."""
    try:
        libcuda = ctypes.CDLL("libcuda.so.1")
        version = ctypes.c_int(0)
        return version.value if libcuda.cuDriverGetVersion(ctypes.byref(version)) == 0 else 0
    except OSError:
        return 0


def cuda_runtime_version() -> int:
    """torch's CUDA runtime version in cudaRuntimeGetVersion's form (13.0 -> 13000)."""
    major, _, minor = (torch.version.cuda or "0.0").partition(".")
    return int(major) * 1000 + int(minor or 0) * 10


def device_info(device: torch.device) -> dict[str, object]:
    """What the header writes about the device under CUDA, plus the Python stack's versions."""
    info: dict[str, object] = {"runtime": "python", "torch": torch.__version__}
    triton = sys.modules.get("triton")
    if triton is not None:
        info["triton"] = getattr(triton, "__version__", "")
    info["triton_interpret"] = os.environ.get("TRITON_INTERPRET", "") == "1"
    if device.type == "cuda":
        props = torch.cuda.get_device_properties(device)
        info.update({"device": props.name, "sm_count": props.multi_processor_count,
                     "l2_bytes": int(getattr(props, "L2_cache_size", 0)), "cuda_driver": cuda_driver_version(),
                     "cuda_runtime": cuda_runtime_version()})
    return info


# ---------------------------------------------------------------------------------------------------- serve's filter

# The modules a candidate may import (profiling/python_policy.py's ALLOWED_MODULES, top level, and Triton's
# language), loaded before the filter goes in: those with native code map it executable, which the whole filter
# refuses, and on a CPU the whole filter is in before the candidate's module is imported.
PRELOADED_MODULES = ("math", "functools", "itertools", "typing", "dataclasses", "collections", "enum", "warnings",
                     "copy", "random", "numpy", "torch", "triton", "triton.language")
# Bound by serve_prelude before any of the candidate's code runs (None: it did not run, as when a test runs
# harness.py itself): whether the first stage went in, and the stage still to install after the warm-up call.
_prelude: tuple[bool, Callable[[], bool] | None] | None = None


def serve_prelude() -> None:
    """Serve mode's set-up before the task's harness.py (and with it the candidate's module) is imported
    (perfforge_launch.py): the modules a candidate may import are loaded, then the system-call filter goes in,
    all of it on a CPU (Triton's interpreter compiles nothing), on a GPU all but what Triton's compiler needs on
    the warm-up call, whose rest is prepared now and installed after it (Run._serve_begin). The red team's
    candidate rebound perfforge_serve.filter_program to an allow-all program at import, before the harness looked
    it up: nothing is looked up after the candidate's code has run."""
    global _prelude
    for name in PRELOADED_MODULES:
        with contextlib.suppress(ImportError):
            importlib.import_module(name)
    import perfforge_serve

    cuda = torch.cuda.is_available()
    if not cuda:
        _warm_interpreter()
    first = perfforge_serve.prepared_filter(compiling=cuda)
    rest = perfforge_serve.prepared_filter() if cuda else None
    _prelude = (first(), rest)


def _warm_interpreter() -> None:
    """One launch of the harness's own Triton kernel under the interpreter (TRITON_INTERPRET=1), so what its first
    launch loads is loaded before the filter; nothing where Triton is missing or not interpreted."""
    if os.environ.get("TRITON_INTERPRET") != "1":
        return
    try:
        import triton
        import triton.language as tl
    except ImportError:
        return

    @triton.jit
    def _touch(out_ptr, n, BLOCK: tl.constexpr):  # noqa: N803 (Triton's constexpr spelling)
        offsets = tl.arange(0, BLOCK)
        tl.store(out_ptr + offsets, tl.load(out_ptr + offsets, mask=offsets < n) + 1.0, mask=offsets < n)

    _touch[(1,)](torch.zeros(4), 4, BLOCK=4)


# ---------------------------------------------------------------------------------------------------- the run


class Run:
    """One harness run: the buffers, the mode's loop of calls, and the results it writes."""

    def __init__(self, argv: Sequence[str] | None = None, device: str | torch.device | None = None) -> None:
        self.options = parse_args(list(sys.argv if argv is None else argv))
        self.device = torch.device(device or ("cuda" if torch.cuda.is_available() else "cpu"))
        self.buffers: list[Buffer] = []
        self.iter = 0  # index of the call in progress
        self.times_ms: list[float] = []
        self._flush_buffer: torch.Tensor | None = None
        self._flush_bytes = 0
        self._t0_ns = 0
        self._events: tuple[torch.cuda.Event, torch.cuda.Event] | None = None
        if self.device.type == "cuda":
            self._events = (torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True))
        self._input_sets: dict[str, list[torch.Tensor]] = {}  # time and profile modes, per drawn buffer
        self._channel = None  # serve mode: perfforge_serve.Channel
        self._mappings: list[object] = []  # serve mode: the judge's memfd mappings, kept open
        self._ready = False  # serve mode: "ready" said, calls come from the judge
        self._install_filter: Callable[[], bool] = lambda: False  # serve mode: what goes in before "ready"
        if self.mode is Mode.SERVE:
            import perfforge_serve  # only serve mode needs sockets and the filter

            self._channel = perfforge_serve.Channel(self.options.channel)
            if _prelude is None:  # harness.py run by itself: the whole filter at "ready", as prepared now
                self._install_filter = perfforge_serve.prepared_filter()
            else:
                first_in, rest = _prelude
                self._install_filter = rest if rest is not None else lambda: first_in

    @property
    def mode(self) -> Mode:
        return self.options.mode

    # parameters
    def param(self, key: str) -> str | None:
        return next((value for k, value in self.options.params if k == key), None)

    def param_int(self, key: str, fallback: int) -> int:
        value = self.param(key)
        return c_int(value) if value is not None else fallback

    def param_float(self, key: str, fallback: float) -> float:
        value = self.param(key)
        return c_float(value) if value is not None else fallback

    # buffers
    def input(self, name: str, dtype: str, shape: int | Sequence[int], lo: float, hi: float) -> torch.Tensor:
        """A random input in [lo, hi), redrawn for every checked call."""
        return self._add(name, dtype, Role.INPUT, shape, lo, hi)

    def output(self, name: str, dtype: str, shape: int | Sequence[int]) -> torch.Tensor:
        """An output: poisoned before every call, compared after it."""
        return self._add(name, dtype, Role.OUTPUT, shape, 0.0, 0.0)

    def inout(self, name: str, dtype: str, shape: int | Sequence[int], lo: float, hi: float) -> torch.Tensor:
        """Updated in place: drawn like an input before each call, compared like an output after it."""
        return self._add(name, dtype, Role.INOUT, shape, lo, hi)

    def fixed(self, name: str, dtype: str, shape: int | Sequence[int]) -> torch.Tensor:
        """An input the harness fills itself (structure, indices) before the first begin(). Never redrawn; restored
        before every checked call, so a kernel that writes into it cannot pass its changes on to the next call."""
        return self._add(name, dtype, Role.FIXED, shape, 0.0, 0.0)

    def _add(self, name: str, dtype: str, role: Role, shape: int | Sequence[int], lo: float,
             hi: float) -> torch.Tensor:
        if len(self.buffers) == MAX_BUFFERS:
            raise fail(EXIT_BAD_ARGS, f"more than {MAX_BUFFERS} buffers (at {name})")
        if dtype not in DTYPES:
            raise fail(EXIT_BAD_ARGS, f"buffer {name}: unknown dtype {dtype!r}; expected one of {', '.join(DTYPES)}")
        dims = (int(shape),) if isinstance(shape, int) else tuple(int(d) for d in shape)
        buffer = allocate(name, dtype, role, dims, len(self.buffers), lo, hi, self.device)
        if self._channel is not None:
            self._share(buffer)
        self.buffers.append(buffer)
        if role in (Role.INPUT, Role.INOUT):
            buffer.fill(self.options.seed, 0)
        elif role is Role.FIXED:
            buffer.data_bytes().zero_()
        buffer.arm()
        return buffer.data

    # the loop
    def begin(self) -> bool:
        """Start of one call; False once every call of the mode has been made."""
        if self.mode is Mode.SERVE:
            return self._serve_begin()
        total = self.options.calls if self.mode is Mode.CHECK else self.options.warmup + self.options.trials
        if self.iter >= total:
            return False
        if self.iter == 0:
            self._keep_fixed_contents()
        self._prepare_call()
        if self.mode is Mode.CHECK:
            return True
        if self.mode is Mode.PROFILE and self.iter == self.options.warmup and self.device.type == "cuda":
            torch.cuda.nvtx.range_push("pf_profile")
        if self.mode is Mode.TIME:
            self._flush_cache()
        self._start_clock()
        return True

    def end(self) -> None:
        """End of one call: check mode saves and checks every buffer; time and profile modes record its duration."""
        self._synchronize("the kernel")  # the whole device, so no work escapes the timer
        if self.mode is Mode.SERVE:
            self._serve_end()
            return
        if self.mode is Mode.CHECK:
            self._save_buffers(digests=True)
        else:
            milliseconds = self._stop_clock()
            if self.iter >= self.options.warmup:
                self.times_ms.append(milliseconds)
            if self.mode is Mode.PROFILE and self.iter == self.options.warmup and self.device.type == "cuda":
                torch.cuda.nvtx.range_pop()
            if self.mode is Mode.TIME and self.iter in self.options.save_calls:
                self._save_buffers(digests=False)
        self.iter += 1

    def calls(self) -> Iterator[int]:
        """`for call in run.calls(): kernel(...)`: begin() and end() around each call."""
        while self.begin():
            yield self.iter
            self.end()

    def finish(self) -> int:
        """Writes DIR/timing.json (time and profile modes) and returns the process's exit status."""
        if self.mode in (Mode.CHECK, Mode.SERVE):
            return 0
        method = "cuda_events" if self.device.type == "cuda" else "monotonic_clock"
        result: dict[str, object] = {"method": method, "flush_bytes": self._flush_bytes if self.options.flush else 0,
                                     "times_ms": self.times_ms, **device_info(self.device)}
        if self.mode is Mode.TIME:
            result["saved_calls"] = self.options.save_calls
        path = self.options.out_dir / "timing.json"
        try:
            path.write_text(json.dumps(result) + "\n")
        except OSError as exc:
            raise fail(EXIT_IO, f"cannot write {path}: {exc.strerror}") from None
        return 0

    # serve mode
    def _share(self, buffer: Buffer) -> None:
        """Declare the buffer to the judge and take its memory: on the CPU the buffer lives there, on a GPU it is
        staged through it (pinned for the device where the driver allows)."""
        assert self._channel is not None
        codes = list(DTYPES)  # pf_dtype's order
        roles = {Role.INPUT: 0, Role.OUTPUT: 1, Role.INOUT: 2, Role.FIXED: 3}  # pf_role's order
        mapping = self._channel.map_buffer(buffer.name, codes.index(buffer.dtype), roles[buffer.role], buffer.count,
                                           buffer.lo, buffer.hi)
        host = torch.frombuffer(mapping, dtype=torch.uint8)[:buffer.raw.numel()]
        self._mappings.append(mapping)
        if self.device.type == "cuda":
            with contextlib.suppress(Exception):  # unpinned, copies still work (through the driver's staging)
                torch.cuda.cudart().cudaHostRegister(host.data_ptr(), host.numel(), 0)
            buffer.host = host
        else:
            buffer.raw = host
            buffer.data = host[GUARD_BYTES:GUARD_BYTES + buffer.nbytes].view(
                DTYPES[buffer.dtype].torch_dtype).view(buffer.shape)
            buffer.host = host

    def _serve_begin(self) -> bool:
        assert self._channel is not None
        if self.iter == 0:
            self._keep_fixed_contents()
        if self.iter == 0 and self.device.type == "cuda":
            # the warm-up: the harness's own draws, before the filter (Triton compiles here; on the CPU its
            # interpreter compiles nothing, and a warm-up would only cost an interpreted call)
            for buffer in self.buffers:
                if buffer.role in (Role.INPUT, Role.INOUT):
                    buffer.fill(self.options.seed, 0)
                buffer.arm()
            self._synchronize("set-up before the warm-up call")
            return True
        if not self._ready:
            for buffer in self.buffers:  # the fixed contents (as the set-up left them) and the guards, to the judge
                buffer.arm()
                if buffer.host is not None and buffer.host.data_ptr() != buffer.raw.data_ptr():
                    buffer.host.copy_(buffer.raw)
            self._synchronize("set-up")
            filtered = self._install_filter()
            staged = " staged" if self.device.type == "cuda" else ""
            self._channel.send(f"ready {'seccomp' if filtered else 'unfiltered'}{staged}")
            self._ready = True
        while True:
            message = self._channel.receive()
            if message == "ping":  # a null call: the protocol's own round trip
                if self.device.type == "cuda":
                    # no launch and no synchronisation: what a candidate can leave out of its call (into the fetch
                    # after it) must not be taken off (docs/validation.md, "What a null call holds")
                    self._channel.send("start")
                    self._channel.send("synced")
                self._channel.send("done")
            elif (poison_byte := poison_of(message, "stage")) is not None and self.device.type == "cuda":
                # a round trip of its own, before the call
                for buffer in self.buffers:
                    assert buffer.host is not None
                    if buffer.role in (Role.INPUT, Role.INOUT):
                        buffer.raw.copy_(buffer.host)
                    elif buffer.role is Role.OUTPUT:
                        buffer.arm(poison_byte)
                self._synchronize("copying the inputs")
                self._channel.send("staged")
            elif message == "fetch" and self.device.type == "cuda":  # the outputs back, after the call
                for buffer in self.buffers:
                    assert buffer.host is not None
                    if buffer.role in (Role.OUTPUT, Role.INOUT):
                        buffer.host.copy_(buffer.raw)
                self._synchronize("copying the outputs")
                self._channel.send("fetched")
            elif poison_of(message, "call") is not None:
                break  # "call a5" too: the judge poisons this process's outputs itself (on the host, or at "stage")
            else:
                return False
        if self.device.type == "cuda":
            # the call is only the kernel: the judge flushed the L2 from a process of its own after "staged"
            self._channel.send("start")
        return True

    def _serve_end(self) -> None:
        assert self._channel is not None
        if self._ready:
            if self.device.type == "cuda":
                self._channel.send("synced")
            self._channel.send("done")
        self.iter += 1  # after a warm-up, the next begin() restores the fixed buffers before saying "ready"

    # internals
    def _keep_fixed_contents(self) -> None:
        for buffer in self.buffers:
            if buffer.role is Role.FIXED:
                buffer.pristine = buffer.data_bytes().clone()

    def _prepare_call(self) -> None:
        """pf_begin's set-up, outside the timer: a checked call draws fresh inputs from (seed, call); a timed one
        alternates between INPUT_SETS input sets (no two consecutive calls share inputs: nothing answers from a
        result it kept). Either way outputs are poisoned, so a kernel cannot tell a timed call from a checked one by
        its buffers; the validator compares the outputs of timed calls it picks at random
        (--save-call) with the original's."""
        for buffer in self.buffers:
            drawn = buffer.role in (Role.INPUT, Role.INOUT)
            if self.mode is Mode.CHECK:
                if self.iter > 0 and drawn:
                    buffer.fill(self.options.seed, self.iter)
                buffer.arm()
            elif drawn:
                buffer.data_bytes().copy_(self._input_set(buffer, self.iter % INPUT_SETS))
            elif buffer.role is Role.OUTPUT:
                buffer.arm()  # a fixed buffer needs nothing: checked calls prove the kernel leaves it unchanged
        self._synchronize("set-up before the call")

    def _input_set(self, buffer: Buffer, index: int) -> torch.Tensor:
        """The buffer's input set `index`, made on first use (drawn as checked calls 0, 1, ... draw theirs)."""
        if buffer.name not in self._input_sets:
            sets = []
            for call in range(INPUT_SETS):
                buffer.fill(self.options.seed, call)
                sets.append(buffer.data_bytes().clone())
            self._input_sets[buffer.name] = sets
        return self._input_sets[buffer.name][index]

    def _save_buffers(self, *, digests: bool) -> None:
        """Every buffer after the call: guards checked, outputs written as BUF.CALL.npy; with digests, a digest of
        every input as BUF.CALL.digest (check mode; a saved timed call writes its outputs only)."""
        for buffer in self.buffers:
            is_output = buffer.role in (Role.OUTPUT, Role.INOUT)
            if not is_output and not digests:
                continue
            raw = buffer.host_raw()
            where = buffer.guard_violation(raw)
            if where is not None:
                raise fail(EXIT_OUT_OF_BOUNDS, f"buffer '{buffer.name}' was written out of bounds: {where} "
                                               f"(call {self.iter})")
            if is_output or self.options.dump_inputs:
                write_npy(self.options.out_dir / f"{buffer.name}.{self.iter}.npy", buffer, raw)
            if not is_output:
                write_digest(self.options.out_dir / f"{buffer.name}.{self.iter}.digest",
                             raw[GUARD_BYTES:GUARD_BYTES + buffer.nbytes])

    def _flush_cache(self) -> None:
        if not self.options.flush:
            return
        if self._flush_buffer is None:
            self._flush_bytes = flush_bytes_for(self.device)
            self._flush_buffer = torch.empty(self._flush_bytes, dtype=torch.uint8, device=self.device)
        self._flush_buffer.fill_(self.iter & 0xFF)

    def _start_clock(self) -> None:
        self._synchronize("set-up before the call")
        if self._events is not None:
            _event_record(self._events[0])
        else:
            self._t0_ns = _clock_ns(_CLOCK_MONOTONIC)

    def _stop_clock(self) -> float:
        if self._events is None:
            return (_clock_ns(_CLOCK_MONOTONIC) - self._t0_ns) * 1e-6
        start, stop = self._events
        try:
            _event_record(stop)
            _event_synchronize(stop)
            return float(_event_elapsed_ms(start, stop))
        except RuntimeError as exc:
            raise fail(EXIT_CUDA, f"CUDA error in the timing events: {exc}") from None

    def _synchronize(self, what: str) -> None:
        if self.device.type != "cuda":
            return
        try:
            torch.cuda.synchronize(self.device)
        except RuntimeError as exc:  # a launch that failed has not run
            raise fail(EXIT_CUDA, f"CUDA error in {what}: {exc}") from None
