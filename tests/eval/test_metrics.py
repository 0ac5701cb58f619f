"""eval.metrics: fast_p, correctness, the geometric mean and its bootstrap interval, roofline fractions, cost per
success, prefixes of a run's attempts, and the summary, ablation and generalisation tables. Every expectation is
computed by hand from rows built here."""

from __future__ import annotations

import math
from typing import Any

import pytest

from eval.metrics import (
    FAST_PS,
    Estimate,
    ablation,
    attempts_per_success,
    best_within,
    correctness_rate,
    fast_p,
    fast_p_curve,
    generalisation,
    geomean_speedup,
    parse_variant,
    roofline_fraction,
    summary_table,
    tokens_per_success,
)
from perfforge.records import EvalRecord, RooflinePoint

CORRECT = {"improved", "no_change", "slower", "needs_review", "correct"}

Attempt = tuple[int, int, str, float | None]  # (round, candidate, status, speedup)


def make_row(task: str = "t1", configuration: str = "base", *, status: str = "improved",
             speedup: float | None = None, ci: tuple[float, float] | None = None,
             variant: str = "sources=all;candidates=4;rounds=2", attempts: list[Attempt] | None = None,
             **fields: Any) -> EvalRecord:
    """A row as `perfforge eval` writes it; kind follows the configuration (human is the reference), fields
    override anything else."""
    human = configuration == "human"
    attempts = attempts or []
    values: dict[str, Any] = {
        "suite": "catalogue", "task": task, "configuration": configuration, "variant": "" if human else variant,
        "seed": 0, "target": "cpu", "language": "c", "kernel": "k", "pattern": "", "split": "", "bottleneck": "",
        "kind": "reference" if human else "model", "model": "", "sources": "" if human else "all",
        "candidates": 0 if human else 4, "rounds": 0 if human else 2, "temperature": 0.0 if human else 0.8,
        "status": status, "correct": status in CORRECT, "speedup": speedup,
        "speedup_ci_low": ci[0] if ci else None, "speedup_ci_high": ci[1] if ci else None,
        "attempts": len(attempts), "attempt_rounds": [a[0] for a in attempts],
        "attempt_candidates": [a[1] for a in attempts], "attempt_statuses": [a[2] for a in attempts],
        "attempt_speedups": [a[3] for a in attempts], "attempt_tokens": [10] * len(attempts),
    }
    return EvalRecord(**{**values, **fields})


@pytest.fixture
def mixed_rows() -> list[EvalRecord]:
    """Six tasks: two faster (2.0, 1.2), one correct but slower (0.8), one held for review with an implausible
    50x that must never count as faster, one incorrect, one correct but untimed."""
    return [make_row("a", speedup=2.0), make_row("b", speedup=1.2), make_row("c", status="slower", speedup=0.8),
            make_row("d", status="needs_review", speedup=50.0), make_row("e", status="incorrect"),
            make_row("f", status="correct")]


def test_fast_p_counts_correct_and_trusted_faster_only(mixed_rows: list[EvalRecord]) -> None:
    assert fast_p(mixed_rows, 0.0) == pytest.approx(5 / 6)  # every correct row, needs_review and untimed included
    assert fast_p(mixed_rows, 0.5) == pytest.approx(3 / 6)  # 2.0, 1.2, 0.8: not the untimed nor the held one
    assert fast_p(mixed_rows, 1.0) == pytest.approx(2 / 6)
    assert fast_p(mixed_rows, 1.5) == pytest.approx(1 / 6)
    assert fast_p(mixed_rows, 2.0) == 0.0  # strictly above p: 2.0 is not faster than 2x
    assert fast_p(mixed_rows, 10.0) == 0.0  # the 50x held for review is not counted
    assert fast_p([], 1.0) == 0.0


def test_a_speedup_within_the_noise_is_never_faster() -> None:
    rows = [make_row("a", status="no_change", speedup=1.04), make_row("b", speedup=1.3)]
    assert fast_p(rows, 1.0) == pytest.approx(1 / 2)  # the no_change at 1.04x is not faster than the original
    assert fast_p(rows, 0.5) == pytest.approx(2 / 2)  # but it is above half the original's speed


def test_fast_p_curve_and_correctness_rate(mixed_rows: list[EvalRecord]) -> None:
    assert fast_p_curve(mixed_rows, [0.0, 1.0, 3.0]) == [(0.0, pytest.approx(5 / 6)), (1.0, pytest.approx(2 / 6)),
                                                         (3.0, 0.0)]
    assert correctness_rate(mixed_rows) == pytest.approx(5 / 6)
    assert correctness_rate([]) == 0.0
    assert FAST_PS[0] == 0.0  # the summary's first column is the correctness rate


def test_geomean_with_and_without_fallback(mixed_rows: list[EvalRecord]) -> None:
    with_fallback = geomean_speedup(mixed_rows)
    assert with_fallback.value == pytest.approx((2.0 * 1.2 * 0.8) ** (1 / 6))  # d, e, f count 1.0
    assert with_fallback.n == 6
    correct_only = geomean_speedup(mixed_rows, fallback_to_original=False)
    assert correct_only.value == pytest.approx((2.0 * 1.2 * 0.8) ** (1 / 3))
    assert correct_only.n == 3
    for estimate in (with_fallback, correct_only):
        assert estimate.ci_low is not None and estimate.ci_high is not None
        assert estimate.ci_low < estimate.value < estimate.ci_high


def test_geomean_of_nothing_is_empty() -> None:
    assert geomean_speedup([]) == Estimate(None, None, None, 0)
    assert geomean_speedup([make_row(status="incorrect")], fallback_to_original=False).n == 0
    assert geomean_speedup([make_row(status="incorrect")]).value == 1.0


def test_a_wide_measurement_interval_widens_the_geomean_interval() -> None:
    tight = [make_row("a", speedup=2.0), make_row("b", speedup=1.5), make_row("c", speedup=1.2)]
    wide = [make_row("a", speedup=2.0, ci=(1.0, 4.0)), *tight[1:]]
    tight_ci, wide_ci = geomean_speedup(tight), geomean_speedup(wide)
    assert tight_ci.value == wide_ci.value  # the point estimate ignores the spread
    assert wide_ci.ci_low <= tight_ci.ci_low and wide_ci.ci_high > 1.05 * tight_ci.ci_high
    same = [make_row(t, speedup=1.5) for t in "abc"]  # identical rows: resampling them changes nothing
    assert geomean_speedup(same).ci_high == pytest.approx(geomean_speedup(same).ci_low)
    noisy = geomean_speedup([make_row("a", speedup=1.5, ci=(1.0, 2.25)), *same[1:]])
    assert noisy.ci_low < 1.4 and noisy.ci_high > 1.6  # only the measurement noise of row a spreads it


def test_a_single_row_interval_is_its_measurement_interval() -> None:
    """One row: the row bootstrap has nothing to resample, so the interval is that row's own (a normal of sd
    log(4) / 3.92 around log 2 gives back about [1, 4])."""
    estimate = geomean_speedup([make_row(speedup=2.0, ci=(1.0, 4.0))], resamples=4000)
    assert estimate.value == pytest.approx(2.0)
    assert estimate.ci_low == pytest.approx(1.0, rel=0.08)
    assert estimate.ci_high == pytest.approx(4.0, rel=0.08)
    exact = geomean_speedup([make_row(speedup=2.0)])  # no measurement CI: nothing to widen
    assert (exact.value, exact.ci_low, exact.ci_high, exact.n) == pytest.approx((2.0, 2.0, 2.0, 1))


def test_roofline_fraction() -> None:
    compute_bound = RooflinePoint(arithmetic_intensity_flop_per_byte=100.0, achieved_gflop_per_s=500.0,
                                  achieved_gbyte_per_s=5.0, peak_gflop_per_s=1000.0, peak_gbyte_per_s=100.0)
    assert roofline_fraction(compute_bound) == pytest.approx(0.5)  # attainable min(1000, 100 x 100) = 1000
    memory_bound = RooflinePoint(1.0, 80.0, 80.0, 1000.0, 100.0)
    assert roofline_fraction(memory_bound) == pytest.approx(0.8)  # attainable 1 x 100 = 100
    copy = RooflinePoint(0.0, 0.0, 150.0, 1000.0, 200.0)
    assert roofline_fraction(copy) == pytest.approx(0.75)  # no FLOPs: bandwidth over peak bandwidth
    cached_copy = RooflinePoint(0.0, 0.0, 300.0, 1000.0, 200.0)
    assert roofline_fraction(cached_copy) == pytest.approx(1.5)  # not clamped
    assert roofline_fraction(RooflinePoint(0.0, 0.0, 1.0, 1.0, 0.0)) is None


def test_attempts_and_tokens_per_success() -> None:
    rows = [make_row("a", speedup=1.5, attempts=[(1, 1, "improved", 1.5)] * 4, prompt_tokens=100,
                     completion_tokens=50),
            make_row("b", status="incorrect", attempts=[(1, 1, "incorrect", None)] * 4, prompt_tokens=100,
                     completion_tokens=60),
            make_row("c", status="needs_review", speedup=9.0, attempts=[(1, 1, "needs_review", 9.0)] * 2)]
    assert attempts_per_success(rows) == pytest.approx(10 / 1)  # only a improved: needs_review is no success
    assert tokens_per_success(rows) == pytest.approx((150 + 160) / 1)
    assert attempts_per_success(rows[1:]) is None
    assert tokens_per_success([]) is None


RUN: list[Attempt] = [(1, 1, "build_failed", None), (1, 2, "slower", 0.9), (1, 3, "needs_review", 30.0),
                      (1, 4, "incorrect", None), (2, 1, "improved", 1.6), (2, 2, "improved", 2.4)]


def test_best_within_rounds_and_first_candidates() -> None:
    row = make_row(speedup=2.4, attempts=RUN)
    assert best_within(row) == (True, 2.4, True)
    assert best_within(row, rounds=0) == (False, None, False)
    assert best_within(row, rounds=1) == (True, 0.9, False)
    assert best_within(row, rounds=2) == (True, 2.4, True)
    assert best_within(row, first_candidates=1) == (False, None, False)  # a build failure only
    assert best_within(row, first_candidates=2) == (True, 0.9, False)
    assert best_within(row, first_candidates=3) == (True, 0.9, False)  # the 30x held for review is not a speedup
    assert best_within(row, first_candidates=4) == (True, 0.9, False)  # round 2 never enters


def test_an_unproven_point_estimate_never_lends_its_speedup_to_a_proven_win() -> None:
    """An improved 1.05x and a no_change 2.5x (its CI spans 1): the row's win is the 1.05x, never 2.5x proven."""
    row = make_row(speedup=1.05, attempts=[(1, 1, "improved", 1.05), (1, 2, "no_change", 2.5)])
    assert best_within(row) == (True, 1.05, True)
    assert best_within(row, first_candidates=1) == (True, 1.05, True)
    no_win = make_row(status="no_change", speedup=2.5, attempts=[(1, 1, "no_change", 2.5), (1, 2, "slower", 0.8)])
    assert best_within(no_win) == (True, 2.5, False)


def test_best_within_rejects_ragged_attempt_lists() -> None:
    row = make_row(attempts=RUN)
    row.attempt_speedups.pop()
    with pytest.raises(ValueError, match="differ in length"):
        best_within(row)


def test_ablation_by_sources_groups_model_rows_by_the_variants_value() -> None:
    rows = [make_row("a", variant="sources=none;candidates=4", speedup=1.5),
            make_row("b", variant="sources=none;candidates=4", status="incorrect"),
            make_row("a", variant="sources=roofline,counters;candidates=4", speedup=2.0),
            make_row("b", variant="sources=roofline,counters;candidates=4", speedup=1.2),
            make_row("a", "human", speedup=3.0)]  # the reference is not part of a model ablation
    entries = {e["value"]: e for e in ablation(rows, "sources")}
    assert set(entries) == {"none", "roofline,counters"}
    none, both = entries["none"], entries["roofline,counters"]
    assert (none["configuration"], none["variant"], none["rows"]) == ("base", "candidates=4", 2)
    assert (none["correctness"], none["fast_1"]) == (0.5, 0.5)
    assert none["geomean"].value == pytest.approx(math.sqrt(1.5))
    assert (both["correctness"], both["fast_1"]) == (1.0, 1.0)
    assert both["geomean"].value == pytest.approx(math.sqrt(2.4))


def test_ablation_by_rounds_and_candidates_reads_the_attempts() -> None:
    one_round = [(1, 1, "improved", 1.3)]
    rows = [make_row("a", speedup=2.4, attempts=RUN, variant="rounds=2"),
            make_row("b", speedup=1.3, attempts=one_round, variant="rounds=2", rounds=2, candidates=1)]
    by_round = {e["value"]: e for e in ablation(rows, "rounds")}
    assert (by_round["1"]["correctness"], by_round["1"]["fast_1"]) == (1.0, 0.5)  # a: 0.9 in round 1; b: 1.3
    assert (by_round["2"]["correctness"], by_round["2"]["fast_1"]) == (1.0, 1.0)
    assert by_round["2"]["geomean"].value == pytest.approx(math.sqrt(2.4 * 1.3))
    by_k = {e["value"]: e for e in ablation(rows, "candidates")}
    assert list(by_k) == ["1", "2", "3", "4"]
    assert (by_k["1"]["rows"], by_k["1"]["correctness"]) == (2, 0.5)  # a's first candidate did not build
    assert by_k["2"]["rows"] == 1  # b sampled one candidate a round: it says nothing about k = 2
    assert (by_k["4"]["correctness"], by_k["4"]["fast_1"]) == (1.0, 0.0)
    with pytest.raises(ValueError, match="unknown ablation factor"):
        ablation(rows, "temperature")


def test_generalisation_min_default_max() -> None:
    names = ["small", "default", "large", "huge"]
    best = make_row("a", speedup=2.0, config_names=names, config_speedups=[1.1, 2.0, 3.0, None],
                    default_config="default")
    worse_seed = make_row("a", speedup=1.5, config_names=names, config_speedups=[1.0, 1.5, 1.6, 1.7],
                          default_config="default", seed=1)
    single = make_row("b", speedup=2.0, config_names=["default"], config_speedups=[2.0], default_config="default")
    [entry] = generalisation([worse_seed, best, single])
    assert (entry["task"], entry["configuration"], entry["seed"]) == ("a", "base", 0)
    assert (entry["min"], entry["min_config"]) == (1.1, "small")
    assert (entry["default"], entry["default_config"]) == (2.0, "default")
    assert (entry["max"], entry["max_config"]) == (3.0, "large")
    assert (entry["failed"], entry["configs"]) == (1, 4)
    assert generalisation([]) == []


def test_summary_table(mixed_rows: list[EvalRecord]) -> None:
    point = RooflinePoint(10.0, 100.0, 10.0, 1000.0, 100.0)  # fraction 0.1
    better = RooflinePoint(10.0, 400.0, 40.0, 1000.0, 100.0)  # fraction 0.4
    human = [make_row(t, "human", speedup=3.0, roofline_before=point, roofline_after=better) for t in "ab"]
    model = [make_row(r.task, status=r.status, speedup=r.speedup, attempts=[(1, 1, r.status, r.speedup)] * 4,
                      compiled=3, prompt_tokens=100, completion_tokens=20) for r in mixed_rows]
    table = summary_table(model + human)
    assert [e["configuration"] for e in table] == ["human", "base"]  # the reference first
    reference, base = table
    assert (reference["tasks"], reference["fast_2"], reference["geomean"].value) == (2, 1.0, pytest.approx(3.0))
    assert (reference["roofline_before"], reference["roofline_after"]) == (pytest.approx(0.1), pytest.approx(0.4))
    assert reference["attempts_per_success"] is None  # the reference has no loop to pay for
    assert (base["rows"], base["correctness"], base["fast_1"], base["fast_1.5"]) == (6, 5 / 6, 2 / 6, 1 / 6)
    assert base["geomean_correct"].n == 3
    assert base["attempts_per_success"] == pytest.approx(24 / 2)
    assert base["compiled_share"] == pytest.approx(18 / 24)
    assert base["tokens_per_success"] == pytest.approx(6 * 120 / 2)
    assert base["roofline_rows"] == 0 and base["roofline_before"] is None
    assert summary_table([]) == []


def test_parse_variant() -> None:
    assert parse_variant("sources=roofline,counters;candidates=4;rounds=2") == {
        "sources": "roofline,counters", "candidates": "4", "rounds": "2"}
    assert parse_variant("") == {}
    with pytest.raises(ValueError, match="not key=value"):
        parse_variant("sources=all;fast")


def test_the_runners_best_attempt_is_the_fastest_proven_win() -> None:
    from eval.runner import _best
    from perfforge.records import AttemptRecord

    def attempt(candidate: int, status: str, speedup: float | None) -> AttemptRecord:
        text = {k: "" for k in ("task", "target", "language", "kernel", "pattern", "bottleneck", "model",
                                "prompt_version", "sources", "system", "prompt", "completion", "code",
                                "finish_reason", "reason")}
        return AttemptRecord(**text, round=1, candidate=candidate, prompt_tokens=0, completion_tokens=0,
                             status=status, speedup=speedup)

    attempts = [attempt(1, "improved", 1.05), attempt(2, "no_change", 2.5), attempt(3, "needs_review", 30.0)]
    assert _best(attempts).candidate == 1
    assert _best([attempt(1, "slower", 0.8), attempt(2, "no_change", 1.02)]).candidate == 2
    assert _best([attempt(1, "incorrect", None)]) is None
