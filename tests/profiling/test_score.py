"""Pure scoring of timings (no runs): speedup, interval, noise floor, the plausibility gate, and the rounds as the
unit of evidence (a round's two processes share a placement for its whole length)."""

from __future__ import annotations

import numpy as np

from profiling.score import (
    CONFIRMING_ROUNDS,
    MIN_NOISE_FLOOR,
    NOISY_FLOOR,
    estimate_speedup,
    noise_floor,
    plausibility_problems,
    robust_noise_floor,
    rounds_wanted,
    sign_test_p,
)


def _rounds(median_ms: float, spread: float, rounds: int = 4, trials: int = 20, seed: int = 0) -> list[list[float]]:
    rng = np.random.default_rng(seed)
    return [list(median_ms * (1 + spread * rng.standard_normal(trials))) for _ in range(rounds)]


def test_clear_speedup_has_an_interval_above_one() -> None:
    estimate = estimate_speedup(_rounds(2.0, 0.01), _rounds(1.0, 0.01, seed=1), "monotonic_clock")
    assert 1.9 < estimate.speedup < 2.1 and estimate.ci_low > 1.8 and estimate.faster and not estimate.slower
    assert estimate.baseline.trials == 80 and estimate.baseline.method == "monotonic_clock"


def test_difference_inside_the_noise_floor_is_no_change() -> None:
    noisy = [[1.0] * 10, [1.08] * 10, [0.97] * 10, [1.05] * 10]
    assert abs(noise_floor(noisy) - 0.11 / 1.025) < 1e-9
    estimate = estimate_speedup(noisy, [[0.97] * 10, [0.99] * 10, [1.0] * 10, [0.98] * 10], "cuda_events")
    assert not estimate.faster and not estimate.slower


def test_noise_floor_never_drops_below_the_minimum() -> None:
    assert noise_floor([[1.0] * 5, [1.0] * 5]) == MIN_NOISE_FLOOR
    assert noise_floor([[1.0] * 5]) == MIN_NOISE_FLOOR


def test_slower_is_slower() -> None:
    estimate = estimate_speedup(_rounds(1.0, 0.01), _rounds(1.5, 0.01, seed=2), "monotonic_clock")
    assert estimate.slower and not estimate.faster


def test_the_same_timings_give_the_same_interval() -> None:
    a, b = _rounds(2.0, 0.05), _rounds(1.5, 0.05, seed=3)
    assert estimate_speedup(a, b, "x").ci_low == estimate_speedup(a, b, "x").ci_low


def test_plausibility_gate_flags_big_speedups_and_above_peak_throughput() -> None:
    estimate = estimate_speedup(_rounds(12.0, 0.001), _rounds(1.0, 0.001, seed=4), "cuda_events")
    problems = plausibility_problems(estimate, flops=None, bytes_moved=None, peak_gflop_per_s=None,
                                     peak_gbyte_per_s=None)
    assert len(problems) == 1 and "above 10x" in problems[0]
    modest = estimate_speedup(_rounds(2.0, 0.001), _rounds(1.0, 0.001, seed=5), "cuda_events")
    # 1 ms for 8 GB is 8000 GB/s: above an H200's 4800
    assert "above the machine's peak" in plausibility_problems(modest, flops=None, bytes_moved=8e9,
                                                               peak_gflop_per_s=None, peak_gbyte_per_s=4800.0)[0]
    assert plausibility_problems(modest, flops=1e9, bytes_moved=1e9, peak_gflop_per_s=67_000.0,
                                 peak_gbyte_per_s=4800.0) == []


def test_an_erratic_candidate_widens_the_band_but_never_into_a_win() -> None:
    """Found by the red team: a candidate twice as slow whose rounds vary wildly widens the noise floor (the larger
    spread of the two sides) until it reads 'no change' instead of 'slower'. Kept so, because the original's spread
    alone let identical code under load read 'improved'; what must hold is that no erratic candidate is faster."""
    baseline = [[1.0, 1.01, 0.99, 1.0]] * 4
    candidate = [[2.0, 2.1, 2.0, 2.05], [4.5, 4.4, 4.6, 4.5], [2.0, 2.02, 1.98, 2.0], [2.1, 2.0, 2.05, 2.1]]
    estimate = estimate_speedup(baseline, candidate, "judge_clock")
    assert estimate.noise_floor == noise_floor(candidate) > noise_floor(baseline)
    assert not estimate.faster and estimate.speedup < 0.6


def _placed(median_ms: float, slowdowns: list[float], spread: float = 0.01, trials: int = 30,
            seed: int = 0) -> list[list[float]]:
    """Rounds of one version whose process ran each round `slowdowns[i]` times slower (its placement)."""
    rng = np.random.default_rng(seed)
    return [list(median_ms * slow * (1 + spread * rng.standard_normal(trials))) for slow in slowdowns]


def test_a_modest_true_speedup_on_a_quiet_host_is_faster_on_its_planned_rounds() -> None:
    """An honest 1.15x, every round alike (1% call noise, no process slowed): faster on the 4 planned rounds, no
    round more wanted."""
    estimate = estimate_speedup(_placed(1.15, [1.0] * 4), _placed(1.0, [1.0] * 4, seed=1), "judge_clock")
    assert estimate.faster and 1.13 < estimate.speedup < 1.17 and estimate.ci_low > 1.1
    assert estimate.noise_floor <= NOISY_FLOOR and rounds_wanted(estimate) == 4
    assert len(estimate.round_ratios) == 4 and all(1.1 < r < 1.2 for r in estimate.round_ratios)


def test_identical_code_whose_original_was_slowed_in_its_rounds_is_confirmed_and_not_a_win() -> None:
    """The twenty-third session's false win on the loaded H200 host: identical code, the original's process placed
    badly in 3 of 4 rounds (1.6x) and less so in the 4th (1.3x), the candidate's in none. Every round favours the
    candidate, the pooled medians read about 1.6x over a noise floor of about 20%, and the four planned rounds alone
    read faster. The floor is above NOISY_FLOOR, so the rounds go on to CONFIRMING_ROUNDS on fresh processes,
    where placement is a coin toss: 2 more rounds slow the original, 2 the candidate, 2 both, 2 neither. 9 or 10
    rounds of 12 ahead is not enough for the sign test: not faster."""
    baseline, candidate = _placed(2.5, [1.68, 1.68, 1.64, 1.32]), _placed(2.5, [1.0] * 4, seed=1)
    planned = estimate_speedup(baseline, candidate, "judge_clock")
    assert planned.faster and planned.speedup > 1.5 and planned.noise_floor > NOISY_FLOOR
    assert rounds_wanted(planned) == CONFIRMING_ROUNDS
    baseline += _placed(2.5, [1.6, 1.6, 1.0, 1.0, 1.6, 1.6, 1.0, 1.0], seed=2)
    candidate += _placed(2.5, [1.0, 1.0, 1.6, 1.6, 1.6, 1.6, 1.0, 1.0], seed=3)
    confirmed = estimate_speedup(baseline, candidate, "judge_clock")
    assert len(confirmed.round_ratios) == CONFIRMING_ROUNDS and sum(r > 1 for r in confirmed.round_ratios) <= 10
    assert not confirmed.faster and not confirmed.slower


def test_identical_code_favoured_in_every_round_by_placements_that_vary_is_not_faster() -> None:
    """Identical code whose candidate was placed better in 4 of 4 rounds by different amounts (5-40%), while the
    host's load moved both sides' rounds by up to 30%: every round ahead, but the rounds disagree with themselves by
    more than the candidate gains. No change on the planned rounds, and they want confirming."""
    load = [1.0, 1.3, 0.9, 1.2]
    offsets = [1.05, 1.3, 1.1, 1.4]
    baseline = _placed(1.0, [shared * o for shared, o in zip(load, offsets, strict=True)])
    candidate = _placed(1.0, load, seed=1)
    estimate = estimate_speedup(baseline, candidate, "judge_clock")
    assert all(r > 1 for r in estimate.round_ratios) and estimate.speedup > 1.1
    assert not estimate.faster and rounds_wanted(estimate) == CONFIRMING_ROUNDS


def test_the_interval_draws_whole_rounds_not_calls_pooled_over_them() -> None:
    """Rounds whose own ratios disagree (0.9x to 1.3x), each tight within itself: calls drawn pooled over the
    rounds gave an interval clear of 1 (as for the 1.608x false win, CI 1.546-1.638); drawing rounds keeps 1 inside
    it."""
    baseline = _placed(1.0, [0.9, 1.3, 1.0, 1.25], spread=0.005)
    candidate = _placed(1.0, [1.0] * 4, spread=0.005, seed=1)
    estimate = estimate_speedup(baseline, candidate, "judge_clock")
    assert estimate.ci_low < 1.0 < estimate.ci_high
    pooled_a, pooled_b = np.concatenate(baseline), np.concatenate(candidate)
    rng = np.random.default_rng(0)
    pooled = (np.median(rng.choice(pooled_a, size=(2000, pooled_a.size)), axis=1)
              / np.median(rng.choice(pooled_b, size=(2000, pooled_b.size)), axis=1))
    assert np.percentile(pooled, 2.5) > 1.0  # what the calls pooled over rounds said
    assert not estimate.faster


def test_a_true_win_over_twelve_rounds_survives_a_slowed_process_on_either_side() -> None:
    """An honest 1.3x judged over 12 rounds on a host that slowed one process in ten (the 2-core VM): one round
    with the candidate's process slowed 1.6x (0.81x that round), one with the original's (2.1x). The range of the
    round medians (60%) read such wins as no change; the sign test (11 of 12 ahead) with the floor of the other
    rounds reads it faster."""
    slow_original = [1.0] * 12
    slow_original[3] = 1.6
    slow_candidate = [1.0] * 12
    slow_candidate[8] = 1.6
    baseline = _placed(1.3, slow_original)
    candidate = _placed(1.0, slow_candidate, seed=1)
    assert max(noise_floor(baseline), noise_floor(candidate)) > 0.5
    estimate = estimate_speedup(baseline, candidate, "judge_clock")
    assert sum(r > 1 for r in estimate.round_ratios) == 11 and estimate.noise_floor < 0.1
    assert estimate.faster and rounds_wanted(estimate) == CONFIRMING_ROUNDS


def test_two_rounds_of_twelve_against_a_win_leave_it_unconfirmed() -> None:
    """10 of 12 rounds ahead happens in 79 of 4,096 verdicts by placement alone (1.9%), above SIGN_TEST_ALPHA:
    however clear the other ten are, no change."""
    slow_candidate = [1.0] * 12
    slow_candidate[2] = slow_candidate[7] = 1.6
    estimate = estimate_speedup(_placed(1.3, [1.0] * 12), _placed(1.0, slow_candidate, seed=1), "judge_clock")
    assert sum(r > 1 for r in estimate.round_ratios) == 10 and estimate.speedup > 1.25
    assert not estimate.faster


def test_slower_needs_every_planned_round_to_agree() -> None:
    """Twice as slow in 3 rounds, ahead in the 4th (its own process slowed the original there): not slower."""
    baseline = _placed(1.0, [1.0, 1.0, 1.0, 2.5])
    candidate = _placed(2.0, [1.0] * 4, seed=1)
    estimate = estimate_speedup(baseline, candidate, "judge_clock")
    assert sum(r < 1 for r in estimate.round_ratios) == 3 and not estimate.slower and not estimate.faster


def test_sign_test_and_robust_floor_values() -> None:
    assert sign_test_p(12, 12) == 1 / 4096 and sign_test_p(11, 12) == 13 / 4096 and sign_test_p(4, 4) == 1 / 16
    assert sign_test_p(0, 12) == 1.0
    # a minority of slowed rounds barely moves the robust floor; rounds split between two placements set it
    assert robust_noise_floor(_placed(1.0, [1.0] * 10 + [1.6, 1.6], spread=0.0)) == MIN_NOISE_FLOOR
    assert robust_noise_floor(_placed(1.0, [1.0] * 6 + [1.6] * 6, spread=0.0)) > 0.5


def test_quiet_rounds_want_no_more() -> None:
    """Below NOISY_FLOOR, whatever the reading (faster, no change, slower), the planned rounds decide."""
    for candidate_ms in (0.8, 1.0, 1.25):
        estimate = estimate_speedup(_placed(1.0, [1.0, 1.02, 0.99, 1.01]), _placed(candidate_ms, [1.0] * 4, seed=1),
                                    "judge_clock")
        assert estimate.noise_floor <= NOISY_FLOOR and rounds_wanted(estimate) == 4
