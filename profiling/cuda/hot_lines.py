"""Hot lines of a kernel from its source page: the CUDA lines with most PC samples, with their per-line counters.

A line's share is its samples over the kernel's samples (the raw page's sum over stall reasons when given, else
the sum over the page's lines). ncu counts an inlined function's samples both on its own lines and on the call
site, so shares of nested lines can add up past 1; each share is still the fraction of time spent in that line.
Lines that carry excess shared-memory wavefronts (bank conflicts), excess global sectors (uncoalesced access) or
divergent branches are kept even outside the top N, since rules cite them.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from perfforge.records import CounterValue, HotLine
from profiling.cuda.source_csv import SourceLine
from profiling.cuda.stalls import long_reason

FLAG_METRICS = ("shared_excessive_wavefronts", "global_excessive_sectors", "divergent_branches")
EXTRA_FLAGGED_LINES = 5  # flagged lines kept beyond the top N


def same_file(path: str, source_file: str) -> bool:
    """ncu prints absolute paths; the task names its source relative to its directory."""
    return Path(path).name == Path(source_file).name


def hot_lines(lines: Sequence[SourceLine], source_file: str, top: int = 10,
              total_samples: float | None = None) -> list[HotLine]:
    """The top lines of `source_file` by samples, then flagged lines; most samples first."""
    total = total_samples or sum(line.samples for line in lines) or 1.0
    own = [line for line in lines if same_file(line.path, source_file)]
    ranked = sorted(own, key=lambda line: (-line.samples, line.line))
    chosen = [line for line in ranked[:top] if line.samples > 0]
    flagged = [line for line in ranked if line not in chosen and any(line.value(f) > 0 for f in FLAG_METRICS)]
    chosen += flagged[:EXTRA_FLAGGED_LINES]
    return [_hot_line(line, total) for line in chosen]


def _hot_line(line: SourceLine, total_samples: float) -> HotLine:
    stalls = line.stall_samples()
    dominant = max(stalls, key=lambda name: stalls[name]) if any(stalls.values()) else ""
    metrics = [CounterValue(name=name, value=value, unit=unit) for name, (value, unit) in line.metrics.items()
               if value != 0 or name == "warp_stall_samples"]
    return HotLine(line=line.line, code=line.code, share=line.samples / total_samples,
                   dominant_stall=long_reason(dominant) if dominant else "", metrics=metrics)
