"""rocprofv3 CSV output -> Profile (target "hip"). EXPERIMENTAL: written from ROCm's documentation and
rocprofiler-sdk's CSV writer, tested on hand-written fixtures; never run against a real AMD GPU here.

rocprofv3 writes, per process, `<pid>_counter_collection.csv` (with `--pmc ...` or an input file; one directory
pmc_N/ or pass_N/ per counter pass), `<pid>_kernel_trace.csv` (with `--kernel-trace`) and `<pid>_agent_info.csv`.
Two column layouts are known (tests/fixtures/rocprof/README.md cites the sources):

  counter_collection  one row per (dispatch, counter): Correlation_Id, Dispatch_Id, Agent_Id, Queue_Id, Process_Id,
                      Thread_Id, Grid_Size, Kernel_Id, Kernel_Name, Workgroup_Size, LDS_Block_Size, Scratch_Size,
                      VGPR_Count, [Accum_VGPR_Count,] SGPR_Count, Counter_Name, Counter_Value
                      [, Start_Timestamp, End_Timestamp]  (bracketed: newer rocprofiler-sdk only). The value is
                      already summed over the counter's hardware instances (TCC channels, SEs).
  kernel_trace        one row per dispatch: Kind, Agent_Id, Queue_Id, [Stream_Id,] Thread_Id, Dispatch_Id,
                      Kernel_Id, Kernel_Name, Correlation_Id, Start_Timestamp, End_Timestamp (nanoseconds), then
                      segment/register sizes and Workgroup_Size_X/Y/Z, Grid_Size_X/Y/Z.

Columns are read by name, so both layouts parse. Per kernel, each counter becomes its mean per dispatch; dispatches
are told apart per file (every counter pass is a separate run of the program, with its own dispatch ids).
Timing comes from the kernel trace; without one, from the counter collection's own timestamps (newer layout),
marked as such in Timing.method because counter collection serialises and slows dispatches.
The parser fills timing and counters (plus a few derived values); no roofline, stalls or hot lines: rocprofv3
PC sampling is not parsed yet. Standard library only.
"""

from __future__ import annotations

import csv
import re
import statistics
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

# `import ... as`, not `from perfforge.records import ...`: the from-form probes records.__path__, which records'
# module __getattr__ answers by importing `datasets`, absent on GPU machines.
import perfforge.records as records
from perfforge.errors import PerfforgeError

COUNTER_FILE_SUFFIX = "counter_collection.csv"
TRACE_FILE_SUFFIX = "kernel_trace.csv"
AGENT_FILE_SUFFIX = "agent_info.csv"
COUNTER_COLUMNS = ("Dispatch_Id", "Kernel_Name", "Counter_Name", "Counter_Value")
TRACE_COLUMNS = ("Kind", "Dispatch_Id", "Kernel_Name", "Start_Timestamp", "End_Timestamp")
DISPATCH_KIND = "KERNEL_DISPATCH"
NS_PER_MS = 1e6
BYTES_PER_KB = 1024  # FETCH_SIZE and WRITE_SIZE are kilobytes: (TCC_MC_RDREQ_sum * 32) / 1024

# Units of the counters rocprofiler-sdk documents (counters/xml/basic_counters.xml, derived_counters.xml).
# quad-cycle: the SQ counts some wave-cycles in units of 4 cycles, and says so in the counter's description.
COUNTER_UNITS = {
    "SQ_WAVES": "wave",  # waves sent to the SQs
    "SQ_WAVE_CYCLES": "quad-cycle",  # wave-cycles spent by waves in the CUs
    "SQ_BUSY_CYCLES": "cycle",
    "SQ_WAIT_INST_ANY": "quad-cycle",  # wave-cycles waiting for any instruction issue
    "SQ_ACTIVE_INST_VALU": "quad-cycle",
    "SQ_LDS_BANK_CONFLICT": "cycle",  # cycles LDS is stalled by bank conflicts
    "GRBM_GUI_ACTIVE": "cycle",  # GPU active cycles
    "GRBM_COUNT": "cycle",  # free-running clock cycles
    "TCC_HIT": "request",  # L2 hits, summed over TCC channels
    "TCC_MISS": "request",
    "FETCH_SIZE": "KB",  # kilobytes fetched from video memory
    "WRITE_SIZE": "KB",  # kilobytes written to video memory
    "GPUBusy": "%", "VALUBusy": "%", "SALUBusy": "%", "MemUnitBusy": "%", "MemUnitStalled": "%",
    "L2CacheHit": "%", "LDSBankConflict": "%", "VALUUtilization": "%",
    "Wavefronts": "wave", "VALUInsts": "inst", "SALUInsts": "inst",
}
_UNIT_PREFIXES = (("SQ_INSTS_", "inst"), ("TCC_EA_RDREQ", "request"), ("TCC_EA_WRREQ", "request"),
                  ("TCC_REQ", "request"), ("TCP_", "request"))


class RocprofError(PerfforgeError):
    """rocprofv3 output is missing, malformed, or lacks the kernel asked for."""


@dataclass
class Dispatch:
    """One kernel dispatch of the trace (or of the counter collection's own timestamps)."""

    kernel_name: str
    start_ns: int
    end_ns: int

    @property
    def duration_ms(self) -> float:
        return (self.end_ns - self.start_ns) / NS_PER_MS


@dataclass
class KernelCounters:
    """Counter values of one kernel, per dispatch: {(file, dispatch id): {counter: value}}."""

    kernel_name: str
    per_dispatch: dict[tuple[str, str], dict[str, float]] = field(default_factory=dict)

    def means(self) -> dict[str, float]:
        """Each counter's mean over the dispatches that collected it (counter passes collect different sets)."""
        values: dict[str, list[float]] = defaultdict(list)
        for counters in self.per_dispatch.values():
            for name, value in counters.items():
                values[name].append(value)
        return {name: statistics.fmean(v) for name, v in sorted(values.items())}


@dataclass(frozen=True)
class KernelTime:
    """A kernel's share of the traced GPU time."""

    kernel_name: str
    base_name: str
    dispatches: int
    total_ms: float
    median_ms: float


@dataclass
class RocprofRun:
    """Everything parsed from one rocprofv3 output directory."""

    dispatches: list[Dispatch]
    counters: dict[str, KernelCounters]  # by full kernel name
    timing_method: str
    machine: str = ""
    cu_count: int = 0


# ---------------------------------------------------------------------------------------------------- files


def read_rows(path: Path, required: Iterable[str]) -> list[dict[str, str]]:
    """The CSV's rows as dicts by column name; a missing required column is a RocprofError naming it."""
    try:
        with open(path, newline="", encoding="utf-8") as f:
            reader = csv.DictReader(f)
            missing = [c for c in required if c not in (reader.fieldnames or [])]
            if missing:
                raise RocprofError(f"{path}: missing column(s) {', '.join(missing)}; is this a rocprofv3 CSV? "
                                   f"expected at least {', '.join(required)}")
            return list(reader)
    except OSError as exc:
        raise RocprofError(f"cannot read {path}: {exc.strerror}") from None


def number(row: dict[str, str], column: str, path: Path) -> float:
    try:
        return float(row[column])
    except (TypeError, ValueError):
        raise RocprofError(f"{path}: column {column} holds {row.get(column)!r}, not a number "
                           f"(dispatch {row.get('Dispatch_Id')})") from None


def parse_kernel_trace(path: Path) -> list[Dispatch]:
    """The KERNEL_DISPATCH rows of a kernel_trace.csv."""
    rows = read_rows(path, TRACE_COLUMNS)
    return [Dispatch(row["Kernel_Name"], int(number(row, "Start_Timestamp", path)),
                     int(number(row, "End_Timestamp", path)))
            for row in rows if row["Kind"] == DISPATCH_KIND]


def parse_counter_collection(path: Path, into: dict[str, KernelCounters] | None = None) -> dict[str, KernelCounters]:
    """Counter values per kernel and dispatch. Rows of the same dispatch and counter add up (the writer sums a
    counter's instances into one row; a second row can only be another instance)."""
    kernels = into if into is not None else {}
    for row in read_rows(path, COUNTER_COLUMNS):
        name = row["Kernel_Name"]
        per_dispatch = kernels.setdefault(name, KernelCounters(name)).per_dispatch
        counters = per_dispatch.setdefault((str(path), row["Dispatch_Id"]), {})
        counter = row["Counter_Name"]
        counters[counter] = counters.get(counter, 0.0) + number(row, "Counter_Value", path)
    return kernels


def counter_dispatches(path: Path) -> list[Dispatch]:
    """Dispatches from a counter_collection.csv's own timestamps (newer layout), one per Dispatch_Id."""
    rows = read_rows(path, COUNTER_COLUMNS)
    if rows and not {"Start_Timestamp", "End_Timestamp"} <= set(rows[0]):
        return []
    seen: dict[str, Dispatch] = {}
    for row in rows:
        seen.setdefault(row["Dispatch_Id"], Dispatch(row["Kernel_Name"], int(number(row, "Start_Timestamp", path)),
                                                     int(number(row, "End_Timestamp", path))))
    return list(seen.values())


def parse_agent_info(path: Path) -> tuple[str, int]:
    """The first GPU agent's name (product and gfx target) and compute-unit count."""
    for row in read_rows(path, ("Agent_Type",)):
        if row["Agent_Type"] == "GPU":
            product, gfx = row.get("Product_Name", "").strip(), row.get("Name", "").strip()
            machine = f"{product} ({gfx})" if product and gfx else product or gfx
            return machine, int(number(row, "Cu_Count", path)) if row.get("Cu_Count") else 0
    return "", 0


def find_files(directory: Path, suffix: str) -> list[Path]:
    return sorted(p for p in directory.rglob(f"*{suffix}") if p.is_file())


def read_run(directory: Path | str) -> RocprofRun:
    """Every counter collection, kernel trace and agent info file under `directory` (pmc_N/, pass_N/ included)."""
    root = Path(directory)
    counter_files, trace_files = find_files(root, COUNTER_FILE_SUFFIX), find_files(root, TRACE_FILE_SUFFIX)
    if not counter_files and not trace_files:
        raise RocprofError(f"no *_{COUNTER_FILE_SUFFIX} or *_{TRACE_FILE_SUFFIX} under {root}; run rocprofv3 with "
                           "--kernel-trace and --pmc COUNTERS (and --output-format csv) with -d pointing there")
    counters: dict[str, KernelCounters] = {}
    for path in counter_files:
        parse_counter_collection(path, counters)
    dispatches = [d for path in trace_files for d in parse_kernel_trace(path)]
    method = "rocprofv3_kernel_trace"
    if not dispatches:
        dispatches = [d for path in counter_files for d in counter_dispatches(path)]
        method = "rocprofv3_counter_collection"  # dispatches serialised and slowed by counter collection
    machine, cu_count = "", 0
    for path in find_files(root, AGENT_FILE_SUFFIX):
        machine, cu_count = parse_agent_info(path)
        if machine:
            break
    return RocprofRun(dispatches, counters, method, machine, cu_count)


# ---------------------------------------------------------------------------------------------------- kernels

_PARAMS = re.compile(r"\(.*\)\s*$")
_TEMPLATE = re.compile(r"<[^<>]*>")


def base_name(kernel_name: str) -> str:
    """`void ns::axpy<float, 4>(float*, int)` -> `ns::axpy`: what a task's `kernel` field names."""
    name = _PARAMS.sub("", kernel_name.strip())
    while _TEMPLATE.search(name):
        name = _TEMPLATE.sub("", name)
    return name.split()[-1] if name.split() else kernel_name


def matches(kernel_name: str, wanted: str) -> bool:
    base = base_name(kernel_name)
    return wanted in (kernel_name, base) or base.endswith(f"::{wanted}")


def kernel_times(run: RocprofRun) -> list[KernelTime]:
    """Kernels ranked by total traced time, longest first (ties by name)."""
    durations: dict[str, list[float]] = defaultdict(list)
    for dispatch in run.dispatches:
        durations[dispatch.kernel_name].append(dispatch.duration_ms)
    ranked = [KernelTime(name, base_name(name), len(d), sum(d), statistics.median(d)) for name, d in durations.items()]
    return sorted(ranked, key=lambda k: (-k.total_ms, k.kernel_name))


def select_kernel(run: RocprofRun, kernel: str | None) -> str:
    """The full name of the kernel asked for (its name, base name or last qualified part), or the costliest one."""
    ranked = kernel_times(run)
    names = [k.kernel_name for k in ranked] + sorted(set(run.counters) - {k.kernel_name for k in ranked})
    if not names:
        raise RocprofError("the rocprofv3 output holds no kernel dispatch")
    if kernel is None:
        return names[0]
    found = [name for name in names if matches(name, kernel)]
    if not found:
        known = ", ".join(sorted({base_name(n) for n in names}))
        raise RocprofError(f"no kernel {kernel!r} in the rocprofv3 output; kernels: {known}")
    return found[0]


# ---------------------------------------------------------------------------------------------------- profile


def timing_of(durations_ms: list[float], method: str) -> records.Timing:
    if not durations_ms:
        raise RocprofError("the kernel has counters but no timestamps: run rocprofv3 with --kernel-trace as well")
    if len(durations_ms) == 1:
        return records.Timing(durations_ms[0], durations_ms[0], durations_ms[0], 1, method)
    deciles = statistics.quantiles(durations_ms, n=10, method="inclusive")
    return records.Timing(statistics.median(durations_ms), deciles[0], deciles[-1], len(durations_ms), method)


def unit_of(counter: str) -> str:
    name = counter.removesuffix("_sum")
    if name in COUNTER_UNITS:
        return COUNTER_UNITS[name]
    return next((unit for prefix, unit in _UNIT_PREFIXES if name.startswith(prefix)), "")


def derived_counters(means: dict[str, float], median_ms: float, cu_count: int) -> list[records.CounterValue]:
    """Values perfforge computes from the raw counters, under rocprof's own names where rocprof defines the same
    formula (L2CacheHit, LDSBankConflict) and lowercase names otherwise."""
    derived = []
    hit, miss = means.get("TCC_HIT", means.get("TCC_HIT_sum")), means.get("TCC_MISS", means.get("TCC_MISS_sum"))
    if "L2CacheHit" not in means and hit is not None and miss is not None and hit + miss > 0:
        derived.append(records.CounterValue("L2CacheHit", 100.0 * hit / (hit + miss), "%"))
    conflicts, active = means.get("SQ_LDS_BANK_CONFLICT"), means.get("GRBM_GUI_ACTIVE")
    if "LDSBankConflict" not in means and conflicts is not None and active and cu_count:
        derived.append(records.CounterValue("LDSBankConflict", 100.0 * conflicts / active / cu_count, "%"))
    if "FETCH_SIZE" in means and "WRITE_SIZE" in means:
        dram_bytes = (means["FETCH_SIZE"] + means["WRITE_SIZE"]) * BYTES_PER_KB
        derived.append(records.CounterValue("dram_bytes", dram_bytes, "byte"))
        if median_ms > 0:
            derived.append(records.CounterValue("dram_gbyte_per_s", dram_bytes / (median_ms * 1e-3) / 1e9, "GB/s"))
    if "SQ_INSTS_VALU" in means and means.get("SQ_WAVES"):
        per_wave = means["SQ_INSTS_VALU"] / means["SQ_WAVES"]
        derived.append(records.CounterValue("valu_insts_per_wave", per_wave, "inst/wave"))
    return derived


def build_profile(run: RocprofRun, kernel: str | None = None, *,
                  tool_versions: str = "rocprofv3") -> records.Profile:
    """The Profile of one kernel (by name; default: the one with the most traced time)."""
    full_name = select_kernel(run, kernel)
    durations = [d.duration_ms for d in run.dispatches if d.kernel_name == full_name]
    timing = timing_of(durations, run.timing_method)
    kernel_counters = run.counters.get(full_name)
    means = kernel_counters.means() if kernel_counters else {}
    counters = [records.CounterValue(name, value, unit_of(name)) for name, value in means.items()]
    counters += derived_counters(means, timing.median_ms, run.cu_count)
    return records.Profile(machine=run.machine, tool_versions=tool_versions, timing=timing, counters=counters,
                   target="hip", kernel=base_name(full_name))


def load_profile(directory: Path | str, kernel: str | None = None, *,
                 tool_versions: str = "rocprofv3") -> records.Profile:
    """Parse the rocprofv3 CSV output under `directory` into the Profile of `kernel`."""
    return build_profile(read_run(directory), kernel, tool_versions=tool_versions)


def load_profiles(directory: Path | str, *, tool_versions: str = "rocprofv3") -> list[records.Profile]:
    """One Profile per traced kernel, costliest first."""
    run = read_run(directory)
    return [build_profile(run, k.kernel_name, tool_versions=tool_versions) for k in kernel_times(run)]
