"""Hardware counters from `perf stat`, where the machine lets us read them.

Many virtual machines expose no performance-monitoring unit: `perf stat -e instructions true` then prints
`<not supported>` and every hardware event is unavailable (this is the case on the project's 2-core CPU machine).
`perf_stat_available()` asks once per process. When it answers yes, `run_perf_stat` counts the harness process in
profile mode (its input generation included: perf counts the whole process, not the kernel alone; the
callgrind counters are the kernel-only ones).

`perf stat -x,` writes one CSV line per event: value, unit, event, run time, percentage of run time the event
was counted (below 100 when perf multiplexed counters), and an optional derived metric and its unit.
"""

from __future__ import annotations

import functools
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

from perfforge.errors import PerfforgeError
from perfforge.records import CounterValue
from profiling import sandbox

# The hardware events asked for, and the unit each counts.
EVENTS: dict[str, str] = {
    "cycles": "cycle",  # core clock cycles while the process ran
    "instructions": "inst",  # instructions retired
    "cache-references": "access",  # last-level cache accesses (the vendor's generic LLC event)
    "cache-misses": "miss",  # of which missed: went to memory
    "branches": "branch",  # branch instructions retired
    "branch-misses": "mispredict",  # mispredicted branches
}
PREFIX = "perf."  # counter names: perf.cycles, perf.instructions, ... (callgrind's names have none)
PROBE_TIMEOUT_S = 20.0


@dataclass(frozen=True)
class PerfEvent:
    """One line of `perf stat -x,` output."""

    event: str
    value: float | None  # None: <not supported> or <not counted>
    unit: str
    status: str  # "counted", "not supported", "not counted"
    running_pct: float  # share of the run the event was counted; below 100 when perf multiplexed it


def parse_perf_stat_csv(text: str) -> list[PerfEvent]:
    """The events of `perf stat -x,` output (comment and blank lines skipped)."""
    events = []
    for line in text.splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        fields = line.split(",")
        if len(fields) < 3:
            continue
        raw, unit, name = fields[0].strip(), fields[1].strip(), fields[2].strip()
        running = _float(fields[4]) if len(fields) > 4 else None
        if raw.startswith("<"):
            events.append(PerfEvent(name, None, unit, raw.strip("<>"), running or 0.0))
        elif (value := _float(raw)) is not None:
            events.append(PerfEvent(name, value, unit, "counted", 100.0 if running is None else running))
    return events


def _float(text: str) -> float | None:
    try:
        return float(text)
    except ValueError:
        return None


@functools.cache
def perf_stat_available() -> bool:
    """Whether `perf stat` counts hardware instructions here (cached: the answer does not change in a process)."""
    perf = shutil.which("perf")
    if perf is None:
        return False
    with tempfile.TemporaryDirectory(prefix="perfforge-perf-probe-") as scratch:
        out = Path(scratch) / "probe.csv"
        result = sandbox.run([perf, "stat", "-x,", "-o", str(out), "-e", "instructions", "true"], cwd=Path(scratch),
                             limits=sandbox.Limits(timeout_s=PROBE_TIMEOUT_S, memory_bytes=None))
        if not result.ok or not out.is_file():
            return False
        return probe_says_supported(out.read_text(encoding="utf-8", errors="replace"))


def probe_says_supported(text: str) -> bool:
    """Whether the probe's output holds a counted, non-zero instructions event."""
    return any(e.event.startswith("instructions") and e.status == "counted" and (e.value or 0) > 0
               for e in parse_perf_stat_csv(text))


def counters_from_events(events: list[PerfEvent]) -> list[CounterValue]:
    """Counted events as counters (scaled values, as perf prints them), plus IPC and the miss rates."""
    values = {e.event.split(":")[0]: e.value for e in events if e.value is not None}
    found = [CounterValue(PREFIX + name, value, EVENTS.get(name, _unit(events, name))) for name, value in
             values.items()]
    ratios = (("ipc", "instructions", "cycles", "inst/cycle", 1.0),
              ("cache_miss_rate", "cache-misses", "cache-references", "%", 100.0),
              ("branch_miss_rate", "branch-misses", "branches", "%", 100.0))
    for name, numerator, denominator, unit, scale in ratios:
        if values.get(numerator) is not None and values.get(denominator):
            found.append(CounterValue(PREFIX + name, scale * values[numerator] / values[denominator], unit))
    return found


def _unit(events: list[PerfEvent], name: str) -> str:
    return next((e.unit for e in events if e.event.split(":")[0] == name and e.unit), "count")


def run_perf_stat(binary: Path, config_args: list[str], scratch: Path, timeout_s: float = 120.0) -> list[CounterValue]:
    """Hardware counters of the harness in profile mode; empty when perf stat cannot count here."""
    if not perf_stat_available():
        return []
    out_dir = scratch / "perf-out"
    out_dir.mkdir(parents=True, exist_ok=True)
    csv_path = scratch / "perf_stat.csv"
    argv = [shutil.which("perf") or "perf", "stat", "-x,", "-o", str(csv_path), "-e", ",".join(EVENTS), "--",
            str(binary), "profile", "--seed", "0", "--out", str(out_dir), *config_args]
    result = sandbox.run(argv, cwd=scratch, limits=sandbox.Limits(timeout_s=timeout_s, memory_bytes=None))
    if not result.ok or not csv_path.is_file():
        raise PerfforgeError(f"the harness failed under perf stat: {result.reason() or 'no output file'}")
    return counters_from_events(parse_perf_stat_csv(csv_path.read_text(encoding="utf-8", errors="replace")))
