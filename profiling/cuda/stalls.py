"""The warp-state breakdown of a launch: PC-sampling counts per stall reason (ncu's SourceCounters section).

Each sample records the state of one warp: `selected` (issuing) or stalled for a reason. Shares are the counts
over their sum, so they sum to 1. The source page names the same reasons in short (`stall_long_sb`); SHORT_NAMES
maps them to the raw page's names so that kernel-wide and per-line stalls read alike.
"""

from __future__ import annotations

from perfforge.records import Stall
from profiling.cuda import metrics as m
from profiling.cuda.raw_csv import KernelLaunch

# source-page column (without "stall_") -> raw-page reason
SHORT_NAMES = {"long_sb": "long_scoreboard", "short_sb": "short_scoreboard", "lg": "lg_throttle",
               "mio": "mio_throttle", "math": "math_pipe_throttle", "tex": "tex_throttle",
               "dispatch": "dispatch_stall", "imc": "imc_miss", "no_inst": "no_instructions", "sleep": "sleeping"}


def stall_samples(launch: KernelLaunch) -> dict[str, float]:
    """Samples per reason (raw-page names), zero counts dropped."""
    counts = {reason: launch.value(m.STALL_PREFIX + reason) or 0.0 for reason in m.STALL_REASONS}
    return {reason: count for reason, count in counts.items() if count > 0}


def stall_breakdown(launch: KernelLaunch) -> list[Stall]:
    """Shares of sampled warp states, largest first; empty when the launch was not PC-sampled."""
    counts = stall_samples(launch)
    total = sum(counts.values())
    if total <= 0:
        return []
    ranked = sorted(counts.items(), key=lambda item: (-item[1], item[0]))
    return [Stall(reason=reason, share=count / total) for reason, count in ranked]


def long_reason(source_column: str) -> str:
    """`stall_long_sb` -> `long_scoreboard`; raw-page names pass through."""
    short = source_column.removeprefix("stall_")
    return SHORT_NAMES.get(short, short)
