"""Simulated cache and branch counters and per-line costs of one kernel, from valgrind's callgrind.

The harness runs in `profile` mode (one warm-up call, one profiled call) under
`valgrind --tool=callgrind --cache-sim=yes --branch-sim=yes --toggle-collect=<kernel>`: only instructions executed
while the kernel function is on the stack are counted, so both kernel calls are in the totals and the harness's
input generation is not. Counters are reported per kernel call.

The events are cachegrind's simulation, not hardware counters: a two-level cache (I1/D1 first level, LL the
last level; sizes from cache_model.py, a fixed documented model unless the user asks for the host's) with LRU
replacement and no prefetcher, and a branch predictor model. On a machine with three levels the middle one (L2)
is not modelled. Under valgrind every thread runs on one simulated
core; the profile run sets OMP_NUM_THREADS=1 so OpenMP kernels are measured as one serial execution.
"""

from __future__ import annotations

import functools
import os
import re
import shutil
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

from perfforge.errors import PerfforgeError
from perfforge.records import CounterValue, HotLine
from profiling import sandbox
from profiling.cpu import disassembly
from profiling.cpu.cache_model import simulated_cache_model
from profiling.cpu.disassembly import InlineSites
from profiling.cpu.symbols import base_name

# What each cachegrind event counts, and its unit.
EVENTS: dict[str, tuple[str, str]] = {
    "Ir": ("instructions executed", "inst"),
    "Dr": ("data reads (loads; a vector load is one read)", "access"),
    "Dw": ("data writes (stores)", "access"),
    "I1mr": ("first-level instruction cache read misses", "miss"),
    "D1mr": ("first-level data cache read misses", "miss"),
    "D1mw": ("first-level data cache write misses", "miss"),
    "ILmr": ("last-level cache misses on instruction fetches", "miss"),
    "DLmr": ("last-level cache misses on data reads: reads that go to memory", "miss"),
    "DLmw": ("last-level cache misses on data writes", "miss"),
    "Bc": ("conditional branches executed", "branch"),
    "Bcm": ("conditional branches mispredicted by the simulated predictor", "mispredict"),
    "Bi": ("indirect branches executed (jumps through a register or memory: switch tables, calls by pointer)",
           "branch"),
    "Bim": ("indirect branches mispredicted", "mispredict"),
}
VALGRIND_TIMEOUT_S = 300.0
HOT_LINE_MIN_SHARE = 0.01  # lines below 1 % of the kernel's instructions are not worth a model's attention
HOT_LINE_MAX = 12  # enough for every line of a hot loop nest; more would crowd a token-budgeted summary
# A line calling the source's own functions is a hot line too when those calls cost this share of the kernel or more
# (inclusive): a tenth of the time is worth a rewrite's attention. At most SOURCE_CALL_LINES_MAX such lines.
SOURCE_CALL_LINE_SHARE = 0.10
SOURCE_CALL_LINES_MAX = 2
_SIGILL_HINT = ("valgrind met an instruction it cannot execute (valgrind 3.19 has no AVX-512): build the profiled "
                "binary with -mno-avx512f (or -march=x86-64-v3)")


class CallgrindError(PerfforgeError):
    """valgrind could not profile the harness (not installed, unsupported instruction, the harness failed)."""


@dataclass
class LineCost:
    """Costs of one source line: its own instructions, and the inclusive cost of what it calls outside the source
    file (libm, libc; never functions of the source file itself, whose lines are counted on their own)."""

    own: dict[str, float] = field(default_factory=dict)
    calls: dict[str, float] = field(default_factory=dict)
    # calls this line made to functions of the source file other than the kernel (per kernel call): calls the
    # compiler did not inline (a noinline helper, one too large to inline), each paying a call's overhead
    source_calls: float = 0.0
    # their inclusive cost (per kernel call): what the line's calls cost, which the callees' own lines also count
    # (kept apart from `calls`, so no event is counted twice in a line's total)
    source_call_cost: dict[str, float] = field(default_factory=dict)

    def total(self, event: str) -> float:
        return self.own.get(event, 0.0) + self.calls.get(event, 0.0)


@dataclass
class CallgrindResult:
    """A parsed callgrind output: event totals and the source file's line costs, both per kernel call."""

    totals: dict[str, float]
    lines: dict[int, LineCost]
    kernel_calls: int
    cache_config: list[str] = field(default_factory=list)  # callgrind's "desc:" lines: the simulated caches
    recursive_calls: int = 0  # of kernel_calls, those the kernel made to itself (recursion)

    @property
    def source_calls(self) -> float:
        """Calls, per kernel call, from the source's lines to its other functions (LineCost.source_calls)."""
        return sum(cost.source_calls for cost in self.lines.values())


@dataclass
class _Call:
    caller: str
    callee: str
    line: int | None  # caller line when the call site is in the source file (or inlined its code)
    cost: dict[str, float]
    inlined: bool = False  # made by header code the line inlined: never a call of the source's own function


@dataclass
class _ParseState:
    events: list[str] = field(default_factory=list)
    fn: str = ""
    fn_file: str = ""
    file: str = ""
    last_line: int = 0
    last_source_line: int | None = None  # the last line of the source file this function's costs were charged to
    callee: str = ""  # the last cfn=
    pending_calls: int | None = None  # the count of a calls= line whose cost line comes next
    kernel: str = ""  # the kernel's base name
    in_kernel: bool = False  # fn= is the kernel (or a clone): its inlined header code has call sites to charge
    inlined: InlineSites = field(default_factory=dict)  # of the kernel, keyed by normalised paths


def _position(token: str, last: int) -> int:
    """A cost line's position: absolute, relative to the last one (+n, -n), or the same (*)."""
    if token == "*":
        return last
    if token[0] in "+-":
        return last + int(token)
    return int(token, 0)


_HEADER_RE = re.compile(r"^(\w+)[=:]\s*(.*)$")
# Code the kernel inlined from a header (a C++ library's std::find, an intrinsic) is filed under the header's lines,
# which would leave its cost off the source: it is charged to the source line whose call inlined it, read from the
# binary's inline chains (disassembly.inline_sites), where one line did. Without that (no objdump, a header location
# several lines inlined), the compilers' intrinsics headers (x86's xmmintrin.h ... avx512fintrin.h, Arm's
# arm_neon.h and arm_sve.h), whose functions wrap one instruction each, are charged to the source line before them in
# callgrind's listing (the statement, or its loop's header: the same loop either way); other headers stay out.
_INTRINSICS_HEADER_RE = re.compile(r"(?:^|/)(?:\w*intrin\.h|arm_neon\.h|arm_sve\.h)$")
_COMPRESSED_RE = re.compile(r"^\((\d+)\)(?: (.*))?$")


class _Names:
    """Callgrind's name compression: "(id) name" defines, "(id)" refers (absent with --compress-strings=no)."""

    def __init__(self) -> None:
        self.by_id: dict[str, dict[str, str]] = defaultdict(dict)

    def resolve(self, kind: str, value: str) -> str:
        match = _COMPRESSED_RE.match(value)
        if not match:
            return value
        if match.group(2) is not None:
            self.by_id[kind][match.group(1)] = match.group(2)
            return match.group(2)
        return self.by_id[kind].get(match.group(1), value)


def _costs(events: list[str], numbers: list[str]) -> dict[str, int]:
    return {event: int(value) for event, value in zip(events, numbers, strict=False) if value != "0"}


def parse_callgrind(text: str, source_name: str, kernel: str, inlined: InlineSites | None = None) -> CallgrindResult:
    """Parse a callgrind output file. source_name is the editable source's file name: lines of every file of that
    name count (the build may compile a staged copy), lines of other files do not, except the header code the kernel
    inlined, charged to the lines inlined names for it (disassembly.inline_sites)."""
    state, names = _ParseState(kernel=base_name(kernel)), _Names()
    state.inlined = {(_normalised(path), line): sites for (path, line), sites in (inlined or {}).items()}
    own: dict[int, dict[str, float]] = defaultdict(lambda: defaultdict(float))
    calls: list[_Call] = []
    fn_in_source: set[str] = set()
    totals: dict[str, int] = {}
    desc: list[str] = []
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if line[0].isdigit() or line[0] in "+-*":
            _cost_line(line, state, own, calls, fn_in_source, source_name)
            continue
        header = _HEADER_RE.match(line)
        if header:
            _header_line(header.group(1), header.group(2), state, names, totals, desc)
    kernel_calls = sum(c.cost.get("__count__", 0) for c in calls if c.callee == kernel) or 1
    recursive = sum(c.cost.get("__count__", 0) for c in calls if c.callee == kernel and c.caller == kernel)
    lines = _line_costs(own, calls, fn_in_source, kernel, kernel_calls)
    per_call = {event: count / kernel_calls for event, count in totals.items()}
    return CallgrindResult(totals=per_call, lines=lines, kernel_calls=kernel_calls, cache_config=desc,
                           recursive_calls=recursive)


def _header_line(key: str, value: str, state: _ParseState, names: _Names, totals: dict[str, int],
                 desc: list[str]) -> None:
    if key == "events":
        state.events = value.split()
    elif key == "fl":
        state.fn_file = state.file = names.resolve("fl", value)
    elif key in ("fi", "fe"):
        state.file = names.resolve("fl", value)
    elif key == "fn":
        state.fn = names.resolve("fn", value)
        state.file = state.fn_file
        state.last_source_line = None
        state.in_kernel = base_name(state.fn) == state.kernel
    elif key in ("cfi", "cfl"):
        names.resolve("fl", value)  # defines the id of a compressed name
    elif key == "cfn":
        state.callee = names.resolve("fn", value)
    elif key == "calls":
        state.pending_calls = int(value.split()[0])
    elif key in ("totals", "summary") and state.events:
        totals.update(_costs(state.events, value.split()))
    elif key == "desc" and value.startswith(("I1", "D1", "LL")):
        desc.append(value)


def _cost_line(line: str, state: _ParseState, own: dict[int, dict[str, float]], calls: list[_Call],
               fn_in_source: set[str], source_name: str) -> None:
    tokens = line.split()
    position = _position(tokens[0], state.last_line)
    state.last_line = position
    in_source = Path(state.file).name == source_name
    sites = () if in_source else _inline_sites(state, position)
    if state.pending_calls is not None:  # the inclusive cost of the call announced by calls=
        cost = _costs(state.events, tokens[1:])
        cost["__count__"] = state.pending_calls
        if in_source:
            calls.append(_Call(state.fn, state.callee, position, cost))
        for site in sites:  # a call the inlined header code makes: the lines that inlined it share it
            calls.append(_Call(state.fn, state.callee, site, {k: v / len(sites) for k, v in cost.items()},
                               inlined=True))
        if not in_source and not sites:
            calls.append(_Call(state.fn, state.callee, None, cost))
        state.pending_calls = None
        return
    charged = (position,) if in_source else sites
    if not charged and not in_source and state.last_source_line is not None \
            and _INTRINSICS_HEADER_RE.search(state.file):
        charged = (state.last_source_line,)
    if charged:
        fn_in_source.add(state.fn)
        if len(charged) == 1:
            state.last_source_line = charged[0]
        for event, count in _costs(state.events, tokens[1:]).items():
            for site in charged:
                own[site][event] += count / len(charged)


def _inline_sites(state: _ParseState, position: int) -> tuple[int, ...]:
    """The source lines whose calls inlined the kernel's code at this header position (the binary's inline
    chains), () for another function's code or a location no source line inlined. Callgrind's line-level counts
    cannot tell several inlined copies of one location apart: their cost is split evenly among the lines (an
    estimate; two `std::find` calls of one loop get half each)."""
    sites = state.inlined.get((_normalised(state.file), position)) if state.in_kernel and state.inlined else None
    return tuple(sorted(sites)) if sites else ()


@functools.lru_cache(maxsize=4096)  # once per file name, not per cost line
def _normalised(path: str) -> str:
    return os.path.normpath(path)


def _reaches_source(calls: list[_Call], fn_in_source: set[str]) -> set[str]:
    """Functions from which a function of the source file can be reached (the source's own, and e.g. GOMP_parallel
    calling back into an outlined OpenMP region): their inclusive costs would count source lines twice."""
    callers: dict[str, set[str]] = defaultdict(set)
    for call in calls:
        callers[call.callee].add(call.caller)
    reached, pending = set(fn_in_source), list(fn_in_source)
    while pending:
        for caller in callers[pending.pop()] - reached:
            reached.add(caller)
            pending.append(caller)
    return reached


def _line_costs(own: dict[int, dict[str, float]], calls: list[_Call], fn_in_source: set[str], kernel: str,
                kernel_calls: int) -> dict[int, LineCost]:
    reaching = _reaches_source(calls, fn_in_source)
    lines: dict[int, LineCost] = defaultdict(LineCost)
    for number, cost in own.items():
        lines[number].own = {event: count / kernel_calls for event, count in cost.items()}
    for call in calls:
        # a call from inlined library code (std::sort's out-of-line loop, which holds the source's lambda) is no
        # call of the source's own function that the source could inline
        if call.line is not None and not call.inlined and call.callee in fn_in_source and call.callee != kernel:
            lines[call.line].source_calls += call.cost.get("__count__", 0) / kernel_calls
            inclusive = lines[call.line].source_call_cost
            for event, count in call.cost.items():
                if event != "__count__":
                    inclusive[event] = inclusive.get(event, 0.0) + count / kernel_calls
        if call.line is None or call.callee in reaching:
            continue
        target = lines[call.line].calls
        for event, count in call.cost.items():
            if event != "__count__":
                target[event] = target.get(event, 0.0) + count / kernel_calls
    return dict(lines)


# ---- running valgrind ---------------------------------------------------------------------------------------------

def callgrind_argv(program: list[str], kernel: str | None, out_file: Path) -> list[str]:
    """callgrind with cache and branch simulation over `program`, collecting only inside `kernel` (None: the
    whole program, as the application mode's ranking pass needs). One name per function whatever its recursion
    depth (--separate-recs=1): by default callgrind files a recursive function's deeper calls under `name'2`, which
    took 90% of a recursive segment tree's instructions away from `name` and its calls out of its call count."""
    valgrind = shutil.which("valgrind")
    if valgrind is None:
        raise CallgrindError("valgrind is not installed: CPU profiles need it (apt-get install valgrind)")
    toggle = [f"--toggle-collect={kernel}"] if kernel else []
    return [valgrind, "--tool=callgrind", "--cache-sim=yes", "--branch-sim=yes", "--separate-recs=1",
            *simulated_cache_model().valgrind_options(), *toggle, "--compress-strings=no", "--compress-pos=no",
            f"--callgrind-out-file={out_file}", *program]


def run_callgrind(binary: Path, config_args: list[str], kernel: str, source_name: str, scratch: Path,
                  timeout_s: float = VALGRIND_TIMEOUT_S) -> CallgrindResult:
    """Run the harness in profile mode under callgrind (in the sandbox) and parse what it wrote."""
    out_dir = scratch / "profile-out"
    out_dir.mkdir(parents=True, exist_ok=True)
    out_file = scratch / "callgrind.out"
    program = [str(binary), "profile", "--seed", "0", "--out", str(out_dir), *config_args]
    # No address-space limit: valgrind reserves far more virtual memory than the program uses.
    result = sandbox.run(callgrind_argv(program, kernel, out_file), cwd=scratch,
                         limits=sandbox.Limits(timeout_s=timeout_s, memory_bytes=None),
                         env={"OMP_NUM_THREADS": "1"})
    if "Illegal opcode" in result.stderr or "unhandled instruction bytes" in result.stderr:
        raise CallgrindError(_SIGILL_HINT)
    if not result.ok:
        raise CallgrindError(f"the harness failed under callgrind: {result.reason()}")
    if not out_file.is_file():
        raise CallgrindError(f"callgrind wrote no output file {out_file}")
    parsed = parse_callgrind(out_file.read_text(encoding="utf-8", errors="replace"), source_name, kernel,
                             disassembly.inline_sites(binary, source_name, kernel))
    if not parsed.totals.get("Ir"):
        raise CallgrindError(f"callgrind counted no instructions in {kernel!r}: is that the function's name in the "
                             "binary (C++ names are mangled; static functions may be inlined away)?")
    return parsed


# ---- counters and hot lines ---------------------------------------------------------------------------------------

def _rate_pct(numerator: float, denominator: float) -> float:
    return 100.0 * numerator / denominator if denominator > 0 else 0.0


def counters(result: CallgrindResult) -> list[CounterValue]:
    """Every event per kernel call, and the derived rates (per cent)."""
    t = result.totals
    found = [CounterValue(event, t.get(event, 0.0), unit) for event, (_, unit) in EVENTS.items()]
    data = t.get("Dr", 0.0) + t.get("Dw", 0.0)
    branches = t.get("Bc", 0.0) + t.get("Bi", 0.0)
    found += [
        # share of loads and stores that missed the first-level data cache
        CounterValue("D1_miss_rate", _rate_pct(t.get("D1mr", 0.0) + t.get("D1mw", 0.0), data), "%"),
        # share of loads and stores that missed the last level too (went to memory)
        CounterValue("LLd_miss_rate", _rate_pct(t.get("DLmr", 0.0) + t.get("DLmw", 0.0), data), "%"),
        CounterValue("branch_mispredict_rate", _rate_pct(t.get("Bcm", 0.0) + t.get("Bim", 0.0), branches), "%"),
        CounterValue("kernel_calls_profiled", float(result.kernel_calls), "call"),
        # calls from the source's lines to its other functions, per kernel call: calls left out of line
        CounterValue("source_calls", result.source_calls, "call"),
        # of those, the calls the kernel made to itself
        CounterValue("recursive_calls_profiled", float(result.recursive_calls), "call"),
    ]
    return found


def line_metrics(cost: LineCost) -> list[CounterValue]:
    """Per-line counters (per kernel call). Ir and the miss counts include what the line calls outside the source
    file; Ir_self and the branch counters (conditional Bc/Bcm, indirect Bi/Bim) are the line's own instructions."""
    data = cost.total("Dr") + cost.total("Dw")
    d1 = cost.total("D1mr") + cost.total("D1mw")
    ll = cost.total("DLmr") + cost.total("DLmw")
    bc, bcm = cost.own.get("Bc", 0.0), cost.own.get("Bcm", 0.0)
    bi, bim = cost.own.get("Bi", 0.0), cost.own.get("Bim", 0.0)
    return [
        CounterValue("Ir", cost.total("Ir"), "inst"),
        CounterValue("Ir_self", cost.own.get("Ir", 0.0), "inst"),
        CounterValue("data_accesses", data, "access"),
        CounterValue("data_writes", cost.total("Dw"), "access"),
        CounterValue("D1_misses", d1, "miss"),
        CounterValue("LL_misses", ll, "miss"),
        CounterValue("D1_miss_rate", _rate_pct(d1, data), "%"),
        CounterValue("LLd_miss_rate", _rate_pct(ll, data), "%"),
        CounterValue("Bc", bc, "branch"),
        CounterValue("Bcm", bcm, "mispredict"),
        # indirect branches: calls through a pointer or a virtual table, switch jump tables
        CounterValue("Bi", bi, "branch"),
        CounterValue("Bim", bim, "mispredict"),
        # conditional and indirect together, as the kernel-wide rate
        CounterValue("branch_mispredict_rate", _rate_pct(bcm + bim, bc + bi), "%"),
        # calls the line made to the source's other functions (not inlined); only on lines that made some
        *([CounterValue("source_calls", cost.source_calls, "call")] if cost.source_calls else []),
        # the instructions of those calls, inclusive (also counted on the callees' own lines)
        *([CounterValue("source_call_Ir", cost.source_call_cost["Ir"], "inst")]
          if cost.source_call_cost.get("Ir") else []),
    ]


def hot_lines(result: CallgrindResult, source_lines: list[str], max_lines: int = HOT_LINE_MAX,
              min_share: float = HOT_LINE_MIN_SHARE) -> list[HotLine]:
    """The source lines with the largest share of the kernel's instructions (calls outside the source included),
    costliest first; then the lines, if not among them, whose calls to the source's own functions cost
    SOURCE_CALL_LINE_SHARE or more of the kernel (a cheap line calling an expensive helper of the same file, whose
    cost sits on the helper's lines: the call is what a rewrite moves), costliest call first."""
    total_ir = result.totals.get("Ir", 0.0)
    if total_ir <= 0:
        return []
    ranked = sorted(result.lines.items(), key=lambda item: -item[1].total("Ir"))
    chosen = []
    for number, cost in ranked[:max_lines]:
        if cost.total("Ir") / total_ir < min_share:
            break
        chosen.append((number, cost))
    calling = sorted(((number, cost) for number, cost in result.lines.items()
                      if cost.source_call_cost.get("Ir", 0.0) >= SOURCE_CALL_LINE_SHARE * total_ir
                      and all(number != n for n, _ in chosen)),
                     key=lambda item: -item[1].source_call_cost["Ir"])
    found = []
    for number, cost in chosen + calling[:SOURCE_CALL_LINES_MAX]:
        code = source_lines[number - 1].strip() if 0 < number <= len(source_lines) else ""
        found.append(HotLine(line=number, code=code, share=round(cost.total("Ir") / total_ir, 6),
                             dominant_stall="", metrics=line_metrics(cost)))
    return found
