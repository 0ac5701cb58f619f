"""Figures of the evaluation report, each returned as PNG bytes (the HTML embeds them, the Markdown links saved
files). matplotlib is imported inside the functions, and figures are drawn on matplotlib.figure.Figure with the
Agg canvas, never through pyplot's global state: the CLI imports this module without paying for matplotlib, and
the report can be drawn from a thread.
"""

from __future__ import annotations

import io
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from eval.metrics import fast_p_curve, group_rows, trusted_speedup
from perfforge.records import EvalRecord, HotLine, Profile, RooflinePoint

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

DPI = 110  # sharp enough on a laptop screen, small enough to embed a handful of figures in one HTML file
FAST_P_MAX = 4.0  # the fast_p curves' last threshold: beyond a 4x speedup the curves of small suites are flat
# fast_p drops right after 0 by the correct rows without a trusted speedup (untimed, held for review): the curve
# is evaluated just above 0 to show that drop, then at every speedup (where it steps down).
JUST_ABOVE_ZERO = 1e-9
JITTER = 0.12  # half-width of the strip plot's horizontal jitter, in box widths
MAX_CODE_CHARS = 40  # of a hot line's code in its bar label
MAX_HOT_LINES = 10  # bars per panel of the stall comparison: the rest is a long tail of small shares
MAX_LEGEND_TASKS = 10  # the roofline names tasks in its legend up to this many; beyond, the legend would hide it
NO_RESULT_SPEEDUP = 1.0  # where a row without a trusted correct speedup is drawn: the user keeps the original


def _figure(width_in: float = 7.0, height_in: float = 4.2) -> Figure:
    from matplotlib.figure import Figure

    return Figure(figsize=(width_in, height_in), dpi=DPI, layout="constrained")


def _png(fig: Figure) -> bytes:
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    FigureCanvasAgg(fig)
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", metadata={"Software": None})
    return buffer.getvalue()


def _no_data(ax: Axes, what: str) -> None:
    ax.text(0.5, 0.5, f"no {what}", ha="center", va="center", transform=ax.transAxes)
    ax.set_xticks([])
    ax.set_yticks([])


def group_label(configuration: str, variant: str, *, wrap: bool = False) -> str:
    """configuration [variant]; wrapped, a setting a line, for axis ticks and legends."""
    if not variant:
        return configuration
    return configuration + "\n" + variant.replace(";", "\n") if wrap else f"{configuration} [{variant}]"


def _groups(rows: Sequence[EvalRecord]) -> dict[str, list[EvalRecord]]:
    groups = group_rows(rows, lambda r: (r.configuration, r.variant))
    return {group_label(*key, wrap=True): group for key, group in groups.items()}


def _speedup_axis(ax: Axes) -> None:
    """Log scale labelled 0.5x, 1x, 2x, 5x, ... rather than powers of ten."""
    from matplotlib import ticker

    ax.set_yscale("log")
    ax.yaxis.set_major_locator(ticker.LogLocator(subs=(1.0, 1.5, 2.0, 3.0, 5.0, 7.0)))
    ax.yaxis.set_major_formatter(ticker.FuncFormatter(lambda y, _: f"{y:g}x"))
    ax.yaxis.set_minor_formatter(ticker.NullFormatter())


# --- speedups


def speedup_distribution(rows: Sequence[EvalRecord]) -> bytes:
    """Box and strip plot of trusted speedups per configuration (the human reference is one of them), log y.
    Rows without a trusted correct speedup are drawn at 1.0 as grey crosses and left out of the boxes."""
    groups = _groups(rows)
    fig = _figure(max(6.0, 1.3 * len(groups) + 2), 4.5)
    ax = fig.add_subplot()
    if not groups:
        _no_data(ax, "rows")
        return _png(fig)
    rng = np.random.default_rng(0)  # the jitter is part of the picture: the same rows give the same PNG
    for position, group in enumerate(groups.values(), start=1):
        _strip(ax, rng, position, group)
    ax.set_xticks(range(1, len(groups) + 1), list(groups), fontsize="small")
    _speedup_axis(ax)
    ax.axhline(1.0, color="grey", linewidth=0.8, linestyle="--")
    ax.set_ylabel("speedup over the original (log)")
    ax.set_title("Speedup per configuration\n(grey x at 1.0: no trusted correct speedup; left out of the boxes)",
                 fontsize="medium")
    return _png(fig)


def _strip(ax: Axes, rng: np.random.Generator, position: int, rows: list[EvalRecord]) -> None:
    speedups = [s for s in (trusted_speedup(r) for r in rows) if s is not None and s > 0]
    missing = len(rows) - len(speedups)
    if speedups:
        ax.boxplot([speedups], positions=[position], widths=0.5, showfliers=False)
        ax.scatter(position + rng.uniform(-JITTER, JITTER, len(speedups)), speedups, s=14, alpha=0.7,
                   color="tab:blue", zorder=3)
    if missing:
        ax.scatter(position + rng.uniform(-JITTER, JITTER, missing), [NO_RESULT_SPEEDUP] * missing, s=22,
                   marker="x", color="grey", zorder=3)


def fast_p_curves(rows: Sequence[EvalRecord], *, p_max: float = FAST_P_MAX) -> bytes:
    """fast_p against p from 0 to p_max, one line per configuration and variant."""
    fig = _figure()
    ax = fig.add_subplot()
    groups = _groups(rows)
    if not groups:
        _no_data(ax, "rows")
        return _png(fig)
    for label, group in groups.items():
        speedups = {s for s in (trusted_speedup(r) for r in group) if s is not None and 0 < s < p_max}
        curve = fast_p_curve(group, sorted({0.0, JUST_ABOVE_ZERO, p_max, *speedups}))
        ax.plot([p for p, _ in curve], [f for _, f in curve], label=label, drawstyle="steps-post")
    ax.axvline(1.0, color="grey", linewidth=0.8, linestyle="--")
    ax.set_xlabel("p (speedup threshold)")
    ax.set_ylabel("fast_p: share correct and faster than p")
    ax.set_ylim(-0.02, 1.02)
    ax.set_title("fast_p: fast_0 is the correctness rate; needs_review never counts as faster", fontsize="medium")
    ax.legend(fontsize="small")
    return _png(fig)


# --- ablations


def ablation_bars(entries: Sequence[dict[str, Any]], factor: str) -> bytes:
    """Correctness and fast_1 per value of one ablation factor (sources, rounds, candidates): the entries of
    eval.metrics.ablation, bars grouped by configuration (and the variant's other settings)."""
    fig = _figure(8.0, 4.2)
    axes = fig.subplots(1, 2, sharey=True)
    if not entries:
        for ax in axes:
            _no_data(ax, f"{factor} ablation")
        return _png(fig)
    values = list(dict.fromkeys(e["value"] for e in entries))
    series = list(dict.fromkeys(group_label(e["configuration"], e["variant"], wrap=True) for e in entries))
    drawn = []
    for ax, metric in zip(axes, ("correctness", "fast_1"), strict=True):
        ax.set_title(metric)
        if not any(e[metric] for e in entries):  # zero-high bars would leave an empty frame
            _no_data(ax, f"row with {metric} above 0%")
            continue
        _grouped_bars(ax, entries, values, series, metric)
        ax.set_xlabel(factor)
        drawn.append(ax)
    axes[0].set_ylabel("share of rows")
    axes[0].set_ylim(0, 1.05)
    if drawn:
        drawn[-1].legend(fontsize="small")
    return _png(fig)


def _grouped_bars(ax: Axes, entries: Sequence[dict[str, Any]], values: list[str], series: list[str],
                  metric: str) -> None:
    width = 0.8 / len(series)
    lookup = {(e["value"], group_label(e["configuration"], e["variant"], wrap=True)): e[metric] for e in entries}
    for index, label in enumerate(series):
        xs = [i + (index - (len(series) - 1) / 2) * width for i in range(len(values))]
        ax.bar(xs, [lookup.get((v, label), 0.0) for v in values], width=width, label=label)
    ax.set_xticks(range(len(values)), values, rotation=20 if len(values) > 4 else 0)


# --- per-line stalls


def stall_comparison(before: Profile, after: Profile, *, task: str = "") -> bytes:
    """Opal's Figure 4: each hot line's share before (left) and after (right) the edit, coloured by its dominant
    stall on GPU profiles; CPU profiles have no stall reasons, and then the bars are per-line cost shares."""
    fig = _figure(10.0, 4.8)
    axes = fig.subplots(1, 2, sharex=True)
    stalls = sorted({h.dominant_stall for p in (before, after) for h in p.hot_lines if h.dominant_stall})
    colours = _stall_colours(stalls)
    for ax, profile, name in zip(axes, (before, after), ("before", "after"), strict=True):
        _hot_line_bars(ax, profile.hot_lines, colours)
        ax.set_title(f"{name}: {profile.timing.median_ms:.3g} ms median")
    what = line_share_name(before, after)
    for ax in axes:
        ax.set_xlabel(what)
    if stalls:
        from matplotlib.patches import Patch

        fig.legend(handles=[Patch(color=colours[s], label=s) for s in stalls], loc="outside lower center",
                   ncols=min(len(stalls), 4), fontsize="small", title="dominant stall")
    fig.suptitle(f"{task}: per-line {what}" if task else f"per-line {what}")
    return _png(fig)


def has_stalls(before: Profile, after: Profile) -> bool:
    """Whether the profiles' hot lines carry stall reasons (GPU profiles do; CPU profiles have none)."""
    return any(h.dominant_stall for p in (before, after) for h in p.hot_lines)


def line_share_name(before: Profile, after: Profile) -> str:
    """What a hot line's share is of: stall samples on GPUs, the kernel's cost on CPUs (callgrind's estimate)."""
    return "share of stall samples" if has_stalls(before, after) else "share of cost"


def _stall_colours(stalls: list[str]) -> dict[str, Any]:
    from matplotlib import colormaps

    palette = colormaps["tab10"]
    return {s: palette(i % 10) for i, s in enumerate(stalls)}


def _hot_line_bars(ax: Axes, hot_lines: list[HotLine], colours: dict[str, Any]) -> None:
    lines = sorted(hot_lines, key=lambda h: h.share, reverse=True)[:MAX_HOT_LINES]
    if not lines:
        _no_data(ax, "hot lines")
        return
    labels = [hot_line_label(h) for h in lines]
    bar_colours = [colours.get(h.dominant_stall, "tab:blue") for h in lines]
    ax.barh(range(len(lines)), [h.share for h in lines], color=bar_colours)
    ax.set_yticks(range(len(lines)), labels, fontsize="small")
    ax.invert_yaxis()  # the costliest line on top


def hot_line_label(line: HotLine) -> str:
    code = " ".join(line.code.split())
    if len(code) > MAX_CODE_CHARS:
        code = code[:MAX_CODE_CHARS - 3] + "..."
    return f"line {line.line}: {code}"


# --- roofline


def _plottable(point: RooflinePoint | None) -> bool:
    """A point a log-log roofline can place: positive intensity and GFLOP/s (a pure copy has neither)."""
    return point is not None and point.arithmetic_intensity_flop_per_byte > 0 and point.achieved_gflop_per_s > 0


ROOF_TOLERANCE = 0.05  # relative difference under which two measured roofs are drawn as one


def roofline(rows: Sequence[EvalRecord]) -> bytes:
    """Log-log roofline: each machine roof (min of peak GFLOP/s and intensity x peak GB/s) and each row's
    original -> best candidate joined by an arrow. Rows lacking either point, or with no floating-point work
    (not placeable on log axes), are left out and counted in the title."""
    fig = _figure(7.0, 5.0)
    ax = fig.add_subplot()
    pairs = [r for r in rows if r.roofline_before is not None and r.roofline_after is not None]
    shown = [r for r in pairs if _plottable(r.roofline_before) and _plottable(r.roofline_after)]
    if not shown:
        _no_data(ax, "roofline points with floating-point work")
        return _png(fig)
    _roofs(ax, [p for r in shown for p in (r.roofline_before, r.roofline_after)])
    for row in shown:
        _arrow(ax, row, labelled=len(shown) <= MAX_LEGEND_TASKS)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("arithmetic intensity (FLOP/byte)")
    ax.set_ylabel("GFLOP/s")
    skipped = len(pairs) - len(shown)
    ax.set_title("Roofline: original (o) -> best candidate (^)" + (f"; {skipped} without FLOPs left out"
                                                                    if skipped else ""))
    ax.legend(fontsize="small")
    return _png(fig)


def _roofs(ax: Axes, points: list[RooflinePoint]) -> None:
    intensities = [p.arithmetic_intensity_flop_per_byte for p in points]
    # ncu derives its peaks from the clocks of each measurement, so one GPU's peaks differ by a fraction of a
    # percent between profiles: roofs within 5% of each other are one roof (drawn at their largest values).
    peaks: list[tuple[float, float]] = []
    for gflop, gbyte in sorted(((p.peak_gflop_per_s, p.peak_gbyte_per_s) for p in points if p.peak_gbyte_per_s > 0),
                               reverse=True):
        if not any(abs(gflop / g - 1) < ROOF_TOLERANCE and abs(gbyte / b - 1) < ROOF_TOLERANCE for g, b in peaks):
            peaks.append((gflop, gbyte))
    for gflop, gbyte in peaks:
        ridge = gflop / gbyte
        xs = np.geomspace(min(min(intensities), ridge) / 4, max(max(intensities), ridge) * 4, 200)
        ax.plot(xs, np.minimum(gflop, xs * gbyte), color="black", linewidth=1.2,
                label=f"roof: {gflop:,.0f} GFLOP/s, {gbyte:,.0f} GB/s")


def _arrow(ax: Axes, row: EvalRecord, *, labelled: bool) -> None:
    before, after = row.roofline_before, row.roofline_after
    assert before is not None and after is not None  # _plottable checked both
    start = (before.arithmetic_intensity_flop_per_byte, before.achieved_gflop_per_s)
    end = (after.arithmetic_intensity_flop_per_byte, after.achieved_gflop_per_s)
    line = ax.plot(*zip(start, end, strict=True), linestyle="none")[0]  # only to take the next colour
    colour = line.get_color()
    ax.scatter(*start, marker="o", color=colour, zorder=3)
    ax.scatter(*end, marker="^", color=colour, zorder=3,
               label=f"{row.task} ({row.configuration})" if labelled else None)
    ax.annotate("", xy=end, xytext=start, arrowprops={"arrowstyle": "->", "color": colour})
