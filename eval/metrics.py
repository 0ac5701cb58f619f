"""Scores of `perfforge eval`, computed from its rows (perfforge.records.EvalRecord): fast_p, the geometric-mean
speedup with a bootstrap confidence interval, roofline fractions, cost per success, and the ablation and
generalisation tables.

Pure Python and numpy: the report is rebuilt from results.parquet on any machine, without a GPU or a model.
Every function takes a list of rows and gives empty tables (or None) for empty input, never a division by zero.

A row's trusted speedup is its best correct candidate's speedup, unless that candidate is held for review
(needs_review: correct, but faster beyond plausibility). Such a result counts as correct and never as faster.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np

from perfforge.records import EvalRecord, RooflinePoint
from perfforge.verdict import Status

# The verdict's own notion of correct (improved, no_change, slower, needs_review, correct). Rows hold statuses as
# strings (they come from parquet), which compare equal to the Status members.
CORRECT_STATUSES = frozenset(s for s in Status if s.correct)
# Correct and timed with a speedup the verdict trusts: needs_review is left out (never faster until a person
# reviews it), and correct (untimed) has no speedup.
TRUSTED_TIMED_STATUSES = frozenset(s for s in Status if s.trusted_speedup)
REFERENCE_KIND = "reference"
MODEL_KIND = "model"

# The thresholds of the summary table: fast_0 is the correctness rate and fast_1 "faster at all"; KernelBench's
# analysis script reports 0, 0.5, 0.8, 1, 1.5 and 2, and 1.2 separates a marginal win from a real one.
FAST_PS = (0.0, 0.5, 0.8, 1.0, 1.2, 1.5, 2.0)
# A 95% normal interval spans 2 x 1.96 standard deviations: the sd of a log-speedup from its measured CI.
Z_95_WIDTH = 3.92
ABLATION_FACTORS = ("sources", "rounds", "candidates")
# Bootstrap replicates of a confidence interval: at 2000 the 2.5th and 97.5th percentiles move by well under the
# width of a typical interval between seeds, and a table of a few hundred rows still takes milliseconds.
BOOTSTRAP_RESAMPLES = 2000


@dataclass(frozen=True)
class Estimate:
    """A point estimate with its 95% confidence interval, over n rows; all None when n is 0."""

    value: float | None
    ci_low: float | None
    ci_high: float | None
    n: int

    def text(self, digits: int = 2) -> str:
        """e.g. 1.42x [1.21, 1.70] (n=12); a dash when there is nothing to estimate."""
        if self.value is None:
            return "-"
        if self.ci_low is None or self.ci_high is None:
            return f"{self.value:.{digits}f}x (n={self.n})"
        return f"{self.value:.{digits}f}x [{self.ci_low:.{digits}f}, {self.ci_high:.{digits}f}] (n={self.n})"


class Outcome(NamedTuple):
    """What a row (or a prefix of its attempts) achieved: correct, and the trusted speedup with its measured CI."""

    correct: bool
    speedup: float | None
    ci_low: float | None = None
    ci_high: float | None = None
    proven_faster: bool = False  # the validator judged it faster beyond the noise floor (status improved)


# --- one row


def trusted_speedup(row: EvalRecord) -> float | None:
    """The row's speedup when correct and not held for review; None otherwise."""
    if not row.correct or row.status == Status.NEEDS_REVIEW or row.speedup is None:
        return None
    return row.speedup


def outcome(row: EvalRecord) -> Outcome:
    speedup = trusted_speedup(row)
    if speedup is None:
        return Outcome(row.correct, None)
    return Outcome(True, speedup, row.speedup_ci_low, row.speedup_ci_high, row.status == Status.IMPROVED)


def best_attempt_key(status: str, speedup: float) -> tuple[bool, float]:
    """Order of a row's trusted attempts: a proven win (improved) before any unproven one however fast its point
    estimate, then the faster; the row's speedup and its proof then always come from one attempt."""
    return status == Status.IMPROVED, speedup


def best_within(row: EvalRecord, *, rounds: int | None = None,
                first_candidates: int | None = None) -> tuple[bool, float | None, bool]:
    """(correct, trusted speedup, proven faster) of the row's attempts within the first `rounds` rounds, or among
    the first `first_candidates` candidates of round 1 (both given: attempts meeting both).

    first_candidates=k estimates "k candidates per round" for a single round only: a later round's prompt carries
    the feedback of every earlier candidate, so its attempts cannot be cut down to k after the fact.
    """
    _check_attempt_lists(row)
    correct, best = False, None
    for round_, candidate, status, speedup in zip(row.attempt_rounds, row.attempt_candidates,
                                                  row.attempt_statuses, row.attempt_speedups, strict=True):
        if rounds is not None and round_ > rounds:
            continue
        if first_candidates is not None and (round_ != 1 or candidate > first_candidates):
            continue
        correct = correct or status in CORRECT_STATUSES
        if status in TRUSTED_TIMED_STATUSES and speedup is not None:
            key = best_attempt_key(status, speedup)
            best = key if best is None else max(best, key)
    return correct, best[1] if best else None, bool(best and best[0])


def _prefix_outcome(correct: bool, speedup: float | None, proven: bool) -> Outcome:
    return Outcome(correct, speedup, proven_faster=proven)


def _check_attempt_lists(row: EvalRecord) -> None:
    lengths = {len(row.attempt_rounds), len(row.attempt_candidates), len(row.attempt_statuses),
               len(row.attempt_speedups)}
    if len(lengths) > 1:
        raise ValueError(f"row {row.key}: attempt_rounds, attempt_candidates, attempt_statuses and "
                         f"attempt_speedups differ in length ({sorted(lengths)})")


def roofline_fraction(point: RooflinePoint) -> float | None:
    """Achieved over attainable performance, unclamped (above 1 means the measured peaks were beaten, e.g. by
    cache-resident data against a DRAM roof: worth seeing, not hiding).

    Floating-point work (achieved GFLOP/s and intensity above 0): attainable = min(peak GFLOP/s, intensity x peak
    GB/s). No floating-point work (a copy, a transpose): bound by bandwidth, achieved GB/s over peak GB/s.
    None when the needed peak is not positive.
    """
    ai = point.arithmetic_intensity_flop_per_byte
    if point.achieved_gflop_per_s > 0 and ai > 0:
        attainable = min(point.peak_gflop_per_s, ai * point.peak_gbyte_per_s)
        return point.achieved_gflop_per_s / attainable if attainable > 0 else None
    if point.peak_gbyte_per_s <= 0:
        return None
    return point.achieved_gbyte_per_s / point.peak_gbyte_per_s


def row_roofline_fractions(row: EvalRecord) -> tuple[float | None, float | None]:
    """(before, after): the share of the roofline bound of the row's original and best candidate."""
    before = roofline_fraction(row.roofline_before) if row.roofline_before is not None else None
    after = roofline_fraction(row.roofline_after) if row.roofline_after is not None else None
    return before, after


# --- rates over outcomes (rows, or attempt prefixes of rows)


def _fast_p_of(outcomes: Sequence[Outcome], p: float) -> float | None:
    """Share of outcomes correct with trusted speedup > p; at p <= 0 every correct outcome counts (timed or not),
    so fast_0 is the correctness rate. None for no outcomes."""
    if not outcomes:
        return None
    hits = sum(1 for o in outcomes if o.correct and (p <= 0 or _faster_than(o, p)))
    return hits / len(outcomes)


def _faster_than(o: Outcome, p: float) -> bool:
    """Speedup above p; from p = 1 up, only a speedup the validator proved (improved: beyond the noise floor, CI
    above 1) counts, so a no_change measured at 1.03x is never "faster" (KernelBench counts any point estimate)."""
    return o.speedup is not None and o.speedup > p and (p < 1 or o.proven_faster)


def _log_sd(o: Outcome) -> float:
    """sd of the log-speedup from the row's own 95% measurement CI; 0 when it has none."""
    if o.ci_low is None or o.ci_high is None or o.ci_low <= 0 or o.ci_high <= o.ci_low:
        return 0.0
    return (math.log(o.ci_high) - math.log(o.ci_low)) / Z_95_WIDTH


def _geomean_of(outcomes: Sequence[Outcome], *, fallback_to_original: bool, resamples: int,
                seed: int) -> Estimate:
    # a non-positive speedup is a broken measurement with no logarithm: treated as no speedup
    timed = [o.speedup is not None and o.speedup > 0 for o in outcomes]
    kept = [o if ok else Outcome(o.correct, 1.0) for o, ok in zip(outcomes, timed, strict=True)
            if ok or fallback_to_original]
    if not kept:
        return Estimate(None, None, None, 0)
    log_means = np.log(np.array([o.speedup for o in kept]))
    value = float(np.exp(log_means.mean()))
    if resamples < 1:
        return Estimate(value, None, None, len(kept))
    low, high = _bootstrap_log_mean(log_means, np.array([_log_sd(o) for o in kept]), resamples, seed)
    return Estimate(value, float(np.exp(low)), float(np.exp(high)), len(kept))


def _bootstrap_log_mean(log_means: np.ndarray, log_sds: np.ndarray, resamples: int,
                        seed: int) -> tuple[float, float]:
    """2.5th and 97.5th percentiles of the mean log-speedup under the two-level bootstrap (geomean_speedup)."""
    rng = np.random.default_rng(seed)
    n = len(log_means)
    picks = rng.integers(0, n, size=(resamples, n))
    draws = log_means[picks] + log_sds[picks] * rng.standard_normal((resamples, n))
    low, high = np.percentile(draws.mean(axis=1), [2.5, 97.5])
    return float(low), float(high)


# --- public rates over rows


def fast_p(rows: Sequence[EvalRecord], p: float) -> float:
    """KernelBench's fast_p: the share of rows that are correct AND have a trusted speedup above p (needs_review
    never counts as faster). fast_0 is the correctness rate. 0.0 for no rows."""
    return _fast_p_of([outcome(r) for r in rows], p) or 0.0


def fast_p_curve(rows: Sequence[EvalRecord], ps: Iterable[float]) -> list[tuple[float, float]]:
    outcomes = [outcome(r) for r in rows]
    return [(p, _fast_p_of(outcomes, p) or 0.0) for p in ps]


def correctness_rate(rows: Sequence[EvalRecord]) -> float:
    """Share of rows with at least one correct candidate; 0.0 for no rows."""
    return sum(1 for r in rows if r.correct) / len(rows) if rows else 0.0


def geomean_speedup(rows: Sequence[EvalRecord], *, fallback_to_original: bool = True,
                    resamples: int = BOOTSTRAP_RESAMPLES, seed: int = 0) -> Estimate:
    """Geometric mean of the rows' trusted speedups, with a 95% confidence interval.

    fallback_to_original: a row without a trusted correct speedup (incorrect, untimed, held for review) counts
    1.0, since the user keeps the original; without it only rows with a trusted speedup count (n says how many).

    The interval is a two-level bootstrap, so that it covers both the choice of tasks and the confidence
    intervals over repeated measurements: each of `resamples` replicates draws the rows with replacement, and for
    each drawn row draws its log-speedup from a normal centred on the measured log-speedup whose sd comes from
    that row's own measured 95% CI, (log high - log low) / 3.92 (0 when the row has no CI, as for a fallback
    row). The 2.5th and 97.5th percentiles of the replicates' mean log-speedup, exponentiated, bound the
    interval. Deterministic for a given seed; resamples=0 gives the value without an interval.
    """
    return _geomean_of([outcome(r) for r in rows], fallback_to_original=fallback_to_original,
                       resamples=resamples, seed=seed)


def successes(rows: Sequence[EvalRecord]) -> int:
    """Rows whose best result is improved: correct and faster beyond the noise, trusted."""
    return sum(1 for r in rows if r.correct and r.status == Status.IMPROVED and r.speedup is not None)


def attempts_per_success(rows: Sequence[EvalRecord]) -> float | None:
    """Candidates judged over all rows, per row with an improved result; None when none improved."""
    wins = successes(rows)
    return sum(r.attempts for r in rows) / wins if wins else None


def tokens_per_success(rows: Sequence[EvalRecord]) -> float | None:
    """Prompt plus completion tokens over all rows, per row with an improved result; None when none improved."""
    wins = successes(rows)
    return sum(r.prompt_tokens + r.completion_tokens for r in rows) / wins if wins else None


def compiled_share(rows: Sequence[EvalRecord]) -> float | None:
    """Share of judged candidates that built; None when no candidate was judged (the reference)."""
    attempts = sum(r.attempts for r in rows)
    return sum(r.compiled for r in rows) / attempts if attempts else None


def mean_roofline_fractions(rows: Sequence[EvalRecord]) -> tuple[float | None, float | None, int]:
    """(mean before, mean after, n) over rows having both fractions, so that the two means are paired."""
    pairs = [f for f in (row_roofline_fractions(r) for r in rows) if f[0] is not None and f[1] is not None]
    if not pairs:
        return None, None, 0
    return (sum(b for b, _ in pairs) / len(pairs), sum(a for _, a in pairs) / len(pairs), len(pairs))


# --- tables


def parse_variant(variant: str) -> dict[str, str]:
    """'sources=roofline,counters;candidates=4' -> {'sources': 'roofline,counters', 'candidates': '4'}."""
    settings: dict[str, str] = {}
    for part in filter(None, (p.strip() for p in variant.split(";"))):
        key, sep, value = part.partition("=")
        if not sep or not key.strip():
            raise ValueError(f"variant {variant!r}: {part!r} is not key=value")
        settings[key.strip()] = value.strip()
    return settings


def format_variant(settings: dict[str, Any]) -> str:
    """{'sources': 'all', 'candidates': 4} -> 'sources=all;candidates=4' (parse_variant reads it back)."""
    return ";".join(f"{key}={value}" for key, value in settings.items())


def variant_without(variant: str, key: str) -> str:
    """The variant with one setting removed (the settings an ablation holds fixed)."""
    return format_variant({k: v for k, v in parse_variant(variant).items() if k != key})


def group_rows(rows: Iterable[EvalRecord],
               key: Callable[[EvalRecord], tuple[Any, ...]]) -> dict[tuple[Any, ...], list[EvalRecord]]:
    """Rows by key, groups in a stable order: the human reference first, then by key."""
    groups: dict[tuple[Any, ...], list[EvalRecord]] = defaultdict(list)
    for row in rows:
        groups[key(row)].append(row)
    return dict(sorted(groups.items(), key=lambda item: (item[1][0].kind != REFERENCE_KIND, _sortable(item[0]))))


def _sortable(key: tuple[Any, ...]) -> tuple[str, ...]:
    return tuple(f"{k:012.4f}" if isinstance(k, int | float) else str(k) for k in key)


def fast_key(p: float) -> str:
    """Column name of fast_p: fast_0, fast_1, fast_1.5."""
    return f"fast_{p:g}"


def summary_table(rows: Sequence[EvalRecord]) -> list[dict[str, Any]]:
    """One entry per (configuration, variant); rates are over rows (task x seed), costs are None for the
    reference. geomean falls back to 1.0 for rows without a trusted speedup; geomean_correct keeps only rows
    with one."""
    return [_summary_entry(configuration, variant, group)
            for (configuration, variant), group in group_rows(rows, lambda r: (r.configuration, r.variant)).items()]


def _summary_entry(configuration: str, variant: str, rows: list[EvalRecord]) -> dict[str, Any]:
    is_model = any(r.kind == MODEL_KIND for r in rows)
    before, after, n_roofline = mean_roofline_fractions(rows)
    entry: dict[str, Any] = {
        "configuration": configuration, "variant": variant, "kind": rows[0].kind,
        "rows": len(rows), "tasks": len({(r.suite, r.task) for r in rows}),
        "correctness": correctness_rate(rows),
    }
    entry.update({fast_key(p): fast_p(rows, p) for p in FAST_PS})
    entry.update({
        "geomean": geomean_speedup(rows), "geomean_correct": geomean_speedup(rows, fallback_to_original=False),
        "roofline_before": before, "roofline_after": after, "roofline_rows": n_roofline,
        "held_for_review": sum(r.held_for_review for r in rows),
        "attempts_per_row": sum(r.attempts for r in rows) / len(rows) if is_model else None,
        "attempts_per_success": attempts_per_success(rows) if is_model else None,
        "compiled_share": compiled_share(rows) if is_model else None,
        "tokens_per_success": tokens_per_success(rows) if is_model else None,
    })
    return entry


def ablation(rows: Sequence[EvalRecord], factor: str) -> list[dict[str, Any]]:
    """The ablation of one factor over model rows, grouped by configuration and the other variant settings.

    sources: rows grouped by the sources value of their variant (the row's sources field when the variant does
    not set it). rounds: for r = 1..the most rounds, each row's best attempt within r rounds. candidates: for
    k = 1..the most candidates, each row's best among the first k candidates of round 1 (see best_within).
    rounds and candidates use only rows whose loop could run r rounds (k candidates): a shorter run says nothing
    about round r. Entries: factor, value, configuration, variant (the fixed settings), rows, correctness,
    fast_1, geomean (Estimate; fallback 1.0)."""
    if factor not in ABLATION_FACTORS:
        raise ValueError(f"unknown ablation factor {factor!r}: one of {', '.join(ABLATION_FACTORS)}")
    models = [r for r in rows if r.kind == MODEL_KIND]
    if factor == "sources":
        return _sources_ablation(models)
    return _prefix_ablation(models, factor)


def _sources_ablation(rows: list[EvalRecord]) -> list[dict[str, Any]]:
    def key(row: EvalRecord) -> tuple[str, str, str]:
        value = parse_variant(row.variant).get("sources", row.sources)
        return row.configuration, variant_without(row.variant, "sources"), value

    return [_ablation_entry("sources", value, configuration, fixed, [outcome(r) for r in group])
            for (configuration, fixed, value), group in group_rows(rows, key).items()]


def _prefix_ablation(rows: list[EvalRecord], factor: str) -> list[dict[str, Any]]:
    limit = (lambda r: r.rounds) if factor == "rounds" else (lambda r: r.candidates)
    entries = []
    groups = group_rows(rows, lambda r: (r.configuration, variant_without(r.variant, factor)))
    for (configuration, fixed), group in groups.items():
        for n in range(1, max(limit(r) for r in group) + 1):
            able = [r for r in group if limit(r) >= n]
            prefix = {"rounds": n} if factor == "rounds" else {"first_candidates": n}
            outcomes = [_prefix_outcome(*best_within(r, **prefix)) for r in able]
            entries.append(_ablation_entry(factor, str(n), configuration, fixed, outcomes))
    return entries


def _ablation_entry(factor: str, value: str, configuration: str, fixed: str,
                    outcomes: list[Outcome]) -> dict[str, Any]:
    return {"factor": factor, "value": value, "configuration": configuration, "variant": fixed,
            "rows": len(outcomes), "correctness": _fast_p_of(outcomes, 0.0) or 0.0,
            "fast_1": _fast_p_of(outcomes, 1.0) or 0.0,
            "geomean": _geomean_of(outcomes, fallback_to_original=True, resamples=BOOTSTRAP_RESAMPLES, seed=0)}


def generalisation(rows: Sequence[EvalRecord]) -> list[dict[str, Any]]:
    """Speedups of a best candidate re-measured on the task's input configurations (Opal reports min, default
    and max): one entry per (task, configuration) with at least two configurations, from the row with the best
    trusted speedup (its variant and seed are named). min and max are over the measured configurations (None
    where every measurement failed); default is the default_config's speedup (None when it was not measured)."""
    entries = []
    candidates = [r for r in rows if len(r.config_names) >= 2]
    for (_, task, configuration), group in group_rows(candidates,
                                                      lambda r: (r.suite, r.task, r.configuration)).items():
        best = max(group, key=lambda r: trusted_speedup(r) or 0.0)
        entries.append({"task": task, "configuration": configuration, "variant": best.variant, "seed": best.seed,
                        **_spread(best)})
    return entries


def _spread(row: EvalRecord) -> dict[str, Any]:
    if len(row.config_names) != len(row.config_speedups):
        raise ValueError(f"row {row.key}: config_names and config_speedups differ in length")
    measured = {n: s for n, s in zip(row.config_names, row.config_speedups, strict=True) if s is not None}
    low = min(measured, key=measured.__getitem__, default=None)
    high = max(measured, key=measured.__getitem__, default=None)
    return {"configs": len(row.config_names), "failed": len(row.config_names) - len(measured),
            "min": measured.get(low), "min_config": low or "",
            "default": measured.get(row.default_config), "default_config": row.default_config,
            "max": measured.get(high), "max_config": high or ""}
