"""Pure statistics and scoring of timings: no building, no running, tested without a GPU (KernelBench's split).

The speedup is the ratio of medians over every timed call of each side. The noise floor is how much the same
version disagrees with itself between rounds (A against A): a difference inside it is "no change" (rule 13).
A speedup above PLAUSIBLE_SPEEDUP, or a throughput above the machine's peak, is flagged for review (rule 14).

The round is the unit of evidence (twenty-fourth session). The served CPU path spawns both sides' processes afresh
every round, and a process keeps what it was given for its life (its core, or one whose SMT sibling is busy; its
pages): on the idle 2-core VM about one process in ten ran sort_copy's insertion sort 1.25-1.7x slower for its
whole round. Interleaving the two sides' calls in time cancels load that both see, not a place that one of them
holds, so a round's calls are not independent draws:
- the interval draws whole rounds (both sides of a round together), then calls within them;
- a reading of fewer than CONFIRMING_ROUNDS rounds (the planned 4) is faster (slower) only where the pooled speedup
  clears the noise floor, the interval clears 1 and every round's own ratio is above (below) 1;
- where that reading's noise floor is above NOISY_FLOOR it is not final: the judge times rounds on fresh processes up
  to CONFIRMING_ROUNDS (rounds_wanted), and over that many the rounds decide: the sign test of their ratios at
  SIGN_TEST_ALPHA (exact for any placement that favours neither side), the interval, and the pooled speedup above a
  noise floor that a minority of slowed processes does not set (robust_noise_floor).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from perfforge.records import Timing

# Above 10x a speedup is more often a broken measurement or an exploited harness than a real optimisation
# (KernelBench flags the same; the public 10-100x CUDA-agent claims were harness exploits): review it.
PLAUSIBLE_SPEEDUP = 10.0
# The smallest noise floor used even when rounds agree closely: shared machines drift by a few percent
# between processes (measured: same binary, 2% between runs on an idle 2-core VM).
MIN_NOISE_FLOOR = 0.02
BOOTSTRAP_RESAMPLES = 2000
CONFIDENCE = 0.95
# Above this noise floor the planned rounds' reading is not final (rounds_wanted). Identical code's verdicts on the
# idle 2-core VM (sort_copy's original against itself, 4 timed rounds) read floors of 2-7% in 15 of 32, 10.1% in 2,
# and 23-69% in the 15 where a process ran its whole round 1.25-1.7x slower; the loaded H200 host's false win read
# 33.7%. 10% leaves the verdicts with no slowed process at their planned rounds.
NOISY_FLOOR = 0.10
# Timed rounds a noisy reading is judged over, and the one-sided level of the sign test that decides there. Over 4
# rounds, all 4 favour one side in 1 verdict in 16 by placement alone; the loaded H200 host's 1.608x of identical
# code over a 33.7% floor fits 3 or 4 of 4 rounds with the original's process slowed. Over 12 the test needs 11
# rounds ahead (13 in 4,096 by placement alone); in the simulation of docs/validation.md ("The twenty-fourth
# session") identical code read faster in 0.5% and 0.1% of 1,500 verdicts where 3 and 5 processes in 10 are slowed,
# against 3.6% and 4.0% before. 8 rounds more of sort_copy cost about 2 s on the 2-core VM.
CONFIRMING_ROUNDS = 12
SIGN_TEST_ALPHA = 0.005
# The range of 4 draws of a normal distribution, in standard deviations (the statistician's d2 for 4): the robust
# noise floor is the range the planned rounds would show if no process had been slowed, from the robust standard
# deviation (1.4826 median absolute deviations) of one side's round medians.
PLANNED_RANGE_SDS = 2.059


@dataclass
class SpeedupEstimate:
    speedup: float  # baseline median / candidate median: > 1 is faster
    ci_low: float
    ci_high: float
    noise_floor: float  # relative: 0.05 means rounds of one version differ by up to 5%
    baseline: Timing
    candidate: Timing
    # per timed round, the baseline's median over the candidate's (the two processes spawned for it)
    round_ratios: tuple[float, ...] = ()

    @property
    def confirmed_by_rounds(self) -> bool:
        """Enough rounds for the rounds themselves to decide (the sign test); fewer must all agree."""
        return len(self.round_ratios) >= CONFIRMING_ROUNDS

    @property
    def faster(self) -> bool:
        if not (self.speedup > 1.0 + self.noise_floor and self.ci_low > 1.0):
            return False
        return self._rounds_agree(sum(r > 1.0 for r in self.round_ratios))

    @property
    def slower(self) -> bool:
        if not (self.speedup < 1.0 / (1.0 + self.noise_floor) and self.ci_high < 1.0):
            return False
        return self._rounds_agree(sum(r < 1.0 for r in self.round_ratios))

    def _rounds_agree(self, ahead: int) -> bool:
        """Over CONFIRMING_ROUNDS rounds or more, the sign test at SIGN_TEST_ALPHA; over fewer, every round."""
        rounds = len(self.round_ratios)
        if self.confirmed_by_rounds:
            return sign_test_p(ahead, rounds) <= SIGN_TEST_ALPHA
        return ahead == rounds

    def rounds_summary(self) -> str:
        """How the rounds read: their count, how many favour each side, their ratios' range."""
        ratios = self.round_ratios
        if not ratios:
            return ""
        ahead = sum(r > 1.0 for r in ratios)
        text = (f"{len(ratios)} timed rounds, {ahead} favouring the candidate, {len(ratios) - ahead} the original "
                f"(per-round ratios {min(ratios):.3f}-{max(ratios):.3f}")
        if self.confirmed_by_rounds:
            text += (f"; sign test p {sign_test_p(max(ahead, len(ratios) - ahead), len(ratios)):.2g}, "
                     f"{SIGN_TEST_ALPHA:g} needed")
        return text + ")"


def sign_test_p(ahead: int, rounds: int) -> float:
    """Exact one-sided p-value of the sign test: the chance that at least `ahead` of `rounds` rounds favour one side
    were each a coin toss. That holds for each round's ratio whenever placement favours neither side, however often
    and however far it slows a process."""
    return sum(math.comb(rounds, k) for k in range(ahead, rounds + 1)) / 2.0 ** rounds


def timing_stats(rounds_ms: list[list[float]], method: str) -> Timing:
    times = np.concatenate([np.asarray(r, dtype=np.float64) for r in rounds_ms])
    return Timing(median_ms=float(np.median(times)), p10_ms=float(np.percentile(times, 10)),
                  p90_ms=float(np.percentile(times, 90)), trials=int(times.size), method=method)


def noise_floor(rounds_ms: list[list[float]]) -> float:
    """Relative spread of one version against itself: (max - min) / median of its per-round medians."""
    medians = np.array([np.median(r) for r in rounds_ms if r])
    if medians.size < 2:
        return MIN_NOISE_FLOOR
    return max(MIN_NOISE_FLOOR, float((medians.max() - medians.min()) / np.median(medians)))


def robust_noise_floor(rounds_ms: list[list[float]]) -> float:
    """The noise floor the planned rounds would read had no process been slowed: PLANNED_RANGE_SDS robust standard
    deviations of one version's per-round medians, relative to their median. A minority of rounds with a slowed
    process moves it little (the sign test weighs those rounds); where about half are slowed it is the spread of the
    two clusters."""
    medians = np.array([np.median(r) for r in rounds_ms if r])
    if medians.size < 2:
        return MIN_NOISE_FLOOR
    middle = np.median(medians)
    spread = 1.4826 * np.median(np.abs(medians - middle))
    return max(MIN_NOISE_FLOOR, float(PLANNED_RANGE_SDS * spread / middle))


def _paired_rounds(baseline_ms: list[list[float]],
                   candidate_ms: list[list[float]]) -> list[tuple[list[float], list[float]]]:
    """The two sides' rounds taken in pairs (round i of each), those where both sides hold calls."""
    return [(a, b) for a, b in zip(baseline_ms, candidate_ms, strict=True) if len(a) and len(b)]


def round_ratios(baseline_ms: list[list[float]], candidate_ms: list[list[float]]) -> tuple[float, ...]:
    """Per round (the two sides' rounds taken in pairs), the baseline's median over the candidate's."""
    return tuple(float(np.median(a) / max(np.median(b), 1e-12)) for a, b in _paired_rounds(baseline_ms, candidate_ms))


def _resampled_medians(rounds_ms: list[list[float]], picks: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Per resample (a row of `picks`: round indices drawn with replacement), the median of the drawn rounds' calls,
    each round's calls drawn again with replacement (as many as it has)."""
    lengths = np.array([len(r) for r in rounds_ms])
    padded = np.full((len(rounds_ms), lengths.max()), np.nan)
    for index, r in enumerate(rounds_ms):
        padded[index, :len(r)] = r
    drawn_lengths = lengths[picks][..., None]  # (resamples, rounds, 1)
    calls = (rng.random(picks.shape + (padded.shape[1],)) * drawn_lengths).astype(np.int64)
    values = padded[picks[..., None], calls]
    values[np.arange(padded.shape[1]) >= drawn_lengths] = np.nan  # a shorter round draws only as many as it has
    return np.nanmedian(values.reshape(picks.shape[0], -1), axis=1)


def estimate_speedup(baseline_ms: list[list[float]], candidate_ms: list[list[float]], method: str,
                     *, seed: int = 0) -> SpeedupEstimate:
    """Speedup of candidate over baseline, with a bootstrap confidence interval that draws whole rounds (the two
    sides' round i together: its processes share a placement and a stretch of the machine's load), then calls within
    each drawn round. Drawing calls pooled over rounds took a round's placement for independent evidence: identical
    code whose original was slowed in 3 of 4 rounds read 1.608x, CI 1.546-1.638."""
    pairs = _paired_rounds(baseline_ms, candidate_ms)
    a = np.concatenate([np.asarray(r, dtype=np.float64) for r in baseline_ms])
    b = np.concatenate([np.asarray(r, dtype=np.float64) for r in candidate_ms])
    rng = np.random.default_rng(seed)  # fixed seed: the same timings always give the same interval
    picks = rng.integers(len(pairs), size=(BOOTSTRAP_RESAMPLES, len(pairs)))
    a_medians = _resampled_medians([p[0] for p in pairs], picks, rng)
    b_medians = _resampled_medians([p[1] for p in pairs], picks, rng)
    ratios = a_medians / np.maximum(b_medians, 1e-12)
    tail = (1.0 - CONFIDENCE) / 2 * 100
    floor = robust_noise_floor if len(pairs) >= CONFIRMING_ROUNDS else noise_floor
    return SpeedupEstimate(
        speedup=float(np.median(a) / max(np.median(b), 1e-12)),
        ci_low=float(np.percentile(ratios, tail)), ci_high=float(np.percentile(ratios, 100 - tail)),
        # the larger spread of the two: with the original's alone, the original itself judged as a candidate on a
        # loaded machine came out "improved" at 1.04x (CI 1.01-1.07). An erratic candidate can widen the band and
        # turn "slower" into "no change" (the red team's finding): neither is a win, so the wider band is the safe
        # side. Over CONFIRMING_ROUNDS rounds the sign test weighs the rounds of slowed processes, and the floor is the
        # spread without them: the range, set by one process in ten on the quiet VM, read honest 1.24x and 1.37x wins
        # of sort_copy with 11 and 12 rounds of 12 ahead as "no change" (floors of 30% and 82%)
        noise_floor=max(floor(baseline_ms), floor(candidate_ms)),
        baseline=timing_stats(baseline_ms, method), candidate=timing_stats(candidate_ms, method),
        round_ratios=round_ratios(baseline_ms, candidate_ms))


def rounds_wanted(estimate: SpeedupEstimate) -> int:
    """How many timed rounds the verdict needs in all, given what its rounds so far read: as many as it has, or
    CONFIRMING_ROUNDS where their noise floor is above NOISY_FLOOR (a loaded host, or a process slowed for its
    round), whatever they read: a win read beside a slowed process may be placement, and a no-change reading there
    may be a win the range of 4 rounds hid."""
    done = len(estimate.round_ratios)
    return max(done, CONFIRMING_ROUNDS) if estimate.noise_floor > NOISY_FLOOR else done


def plausibility_problems(estimate: SpeedupEstimate, *, flops: float | None, bytes_moved: float | None,
                          peak_gflop_per_s: float | None, peak_gbyte_per_s: float | None) -> list[str]:
    """Reasons to hold a win for review: an implausible speedup, or a throughput above the machine's peak."""
    problems = []
    if estimate.speedup > PLAUSIBLE_SPEEDUP:
        problems.append(f"speedup {estimate.speedup:.1f}x is above {PLAUSIBLE_SPEEDUP:g}x: review before reporting "
                        "(broken timing or an exploited harness is likelier than a real gain)")
    seconds = estimate.candidate.median_ms / 1e3
    if seconds > 0 and bytes_moved and peak_gbyte_per_s:
        achieved = bytes_moved / seconds / 1e9
        if achieved > peak_gbyte_per_s:
            problems.append(f"candidate moves {achieved:.0f} GB/s, above the machine's peak "
                            f"{peak_gbyte_per_s:.0f} GB/s "
                            "for the task's minimum traffic: the measurement cannot be right")
    if seconds > 0 and flops and peak_gflop_per_s:
        achieved = flops / seconds / 1e9
        if achieved > peak_gflop_per_s:
            problems.append(f"candidate computes {achieved:.0f} GFLOP/s, above the machine's peak "
                            f"{peak_gflop_per_s:.0f} GFLOP/s: the measurement cannot be right")
    return problems
