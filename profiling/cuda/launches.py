"""Application mode: rank a program's kernels by GPU time from an ncu run that collected only durations.

Input: the raw page of `ncu --metrics gpu__time_duration.sum PROGRAM` (profiling.cuda.ncu.application_command):
one row per launch. Output: per kernel (base name), the launches, total and mean milliseconds and the share of
all kernel time, most expensive first, so the top N can be profiled in depth. `launch_stats` turns the same page
into the per-call figures the launch_overhead and unfused_elementwise_chain diagnoses read.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from perfforge.records import CounterValue
from profiling.cuda.metrics import DURATION
from profiling.cuda.raw_csv import KernelLaunch, NcuCsvError, read_raw_page

# Derived counters a Profile carries when application-mode figures are known (prefix: computed by perfforge).
LAUNCHES_PER_CALL = "perfforge__launches_per_call"  # launch: kernel launches per call of the task's launcher
MEAN_LAUNCH_DURATION_US = "perfforge__mean_launch_duration_us"  # us: mean GPU duration of those launches
KERNEL_TIME_PER_CALL_MS = "perfforge__kernel_time_per_call_ms"  # ms: summed GPU durations per call
DISTINCT_KERNELS_PER_CALL = "perfforge__distinct_kernels_per_call"  # kernel: different kernels (base names) launched


@dataclass(frozen=True)
class KernelTime:
    kernel: str
    launches: int
    total_ms: float
    share: float  # of all kernel time in the page

    @property
    def mean_ms(self) -> float:
        return self.total_ms / self.launches


@dataclass(frozen=True)
class LaunchStats:
    launches_per_call: float
    kernel_time_per_call_ms: float
    distinct_kernels: int = 0  # different kernels (base names) among the launches; 0 when unknown

    @property
    def mean_launch_duration_us(self) -> float:
        return 1e3 * self.kernel_time_per_call_ms / self.launches_per_call if self.launches_per_call else 0.0

    def counters(self) -> list[CounterValue]:
        return [CounterValue(LAUNCHES_PER_CALL, self.launches_per_call, "launch"),
                CounterValue(MEAN_LAUNCH_DURATION_US, self.mean_launch_duration_us, "us"),
                CounterValue(KERNEL_TIME_PER_CALL_MS, self.kernel_time_per_call_ms, "ms"),
                CounterValue(DISTINCT_KERNELS_PER_CALL, float(self.distinct_kernels), "kernel")]


def launch_duration_ms(launch: KernelLaunch) -> float:
    counter = launch.counters.get(DURATION)
    if counter is None:
        raise NcuCsvError(f"launch {launch.launch_id} has no {DURATION}: collect it (ncu --metrics {DURATION})")
    scale = {"ns": 1e-6, "usecond": 1e-3, "us": 1e-3, "msecond": 1.0, "ms": 1.0}.get(counter.unit)
    if scale is None:
        raise NcuCsvError(f"{DURATION} in unit {counter.unit!r}: export with --print-units base (ns)")
    return counter.value * scale


def rank_kernels(launches: Sequence[KernelLaunch], top: int | None = None) -> list[KernelTime]:
    """Kernels by total GPU time, most first (ties by name)."""
    totals: dict[str, list[float]] = {}
    for launch in launches:
        totals.setdefault(launch.kernel_base, []).append(launch_duration_ms(launch))
    grand_total_ms = sum(sum(times) for times in totals.values()) or 1.0
    ranked = sorted((KernelTime(kernel, len(times), sum(times), sum(times) / grand_total_ms)
                     for kernel, times in totals.items()), key=lambda k: (-k.total_ms, k.kernel))
    return ranked[:top] if top else ranked


def launch_stats(launches: Sequence[KernelLaunch], calls: int) -> LaunchStats:
    """Per-call launch count and kernel time of a run that made `calls` calls of the launcher."""
    if calls < 1:
        raise ValueError("calls must be at least 1")
    total_ms = sum(launch_duration_ms(launch) for launch in launches)
    return LaunchStats(launches_per_call=len(launches) / calls, kernel_time_per_call_ms=total_ms / calls,
                       distinct_kernels=len({launch.kernel_base for launch in launches}))


def read_application_page(path: Path) -> list[KernelLaunch]:
    return read_raw_page(path)

