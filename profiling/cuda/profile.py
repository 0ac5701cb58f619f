"""A perfforge Profile of one CUDA kernel from ncu's exported pages.

Inputs: the raw page (counters, stalls, roofline), the source page (hot lines), the timing measured beforehand
without the profiler (the caller's), optionally the application-mode page (launches per call) and the measured
copy bandwidth (the roofline's bandwidth peak). Counters keep ncu's names and units; derived figures carry the
prefix perfforge__.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from perfforge.records import CounterValue, Profile, Timing
from profiling.cuda.hot_lines import hot_lines
from profiling.cuda.launches import LaunchStats, launch_stats, read_application_page
from profiling.cuda.raw_csv import KernelLaunch, read_raw_page, select_launch
from profiling.cuda.roofline import roofline_point
from profiling.cuda.source_csv import SourceLine, lines_of, read_source_page
from profiling.cuda.stalls import stall_breakdown, stall_samples

COPY_GBYTE_PER_S = "perfforge__copy_gbyte_per_s"  # GB/s: measured device-to-device copy, read + write bytes


def build_profile(launch: KernelLaunch, source_lines: Sequence[SourceLine], *, timing: Timing, source_file: str,
                  machine: str, tool_versions: str, target: str = "cuda", kernel: str | None = None,
                  launches: LaunchStats | None = None, copy_gbyte_per_s: float | None = None,
                  top_lines: int = 10) -> Profile:
    """The Profile of `launch`; hot lines from the lines of its function in `source_file`."""
    counters = list(launch.counters.values())
    if launches is not None:
        counters += launches.counters()
    if copy_gbyte_per_s:
        counters.append(CounterValue(COPY_GBYTE_PER_S, copy_gbyte_per_s, "GB/s"))
    kernel_lines = lines_of(source_lines, launch.kernel_base) if source_lines else []
    total_samples = sum(stall_samples(launch).values()) or None
    return Profile(machine=machine, tool_versions=tool_versions, timing=timing, counters=counters,
                   stalls=stall_breakdown(launch), roofline=roofline_point(launch, copy_gbyte_per_s),
                   hot_lines=hot_lines(kernel_lines, source_file, top_lines, total_samples), target=target,
                   kernel=kernel or launch.kernel_base, source_file=source_file)


def profile_from_files(raw_csv: Path, source_csv: Path, *, timing: Timing, source_file: str, machine: str,
                       tool_versions: str, kernel: str | None = None, target: str = "cuda",
                       application_csv: Path | None = None, calls: int = 1,
                       copy_gbyte_per_s: float | None = None) -> Profile:
    """build_profile over exported CSV files (the first launch of `kernel` on the raw page)."""
    launch = select_launch(read_raw_page(raw_csv), kernel)
    launches = launch_stats(read_application_page(application_csv), calls) if application_csv else None
    return build_profile(launch, read_source_page(source_csv), timing=timing, source_file=source_file,
                         machine=machine, tool_versions=tool_versions, target=target, kernel=kernel,
                         launches=launches, copy_gbyte_per_s=copy_gbyte_per_s)

