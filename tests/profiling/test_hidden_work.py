"""The checks on work moved outside a windowed call's timed window (profiling/validate.py _hidden_work,
_charged_windows; served.work_after_done_ms): pure, tested on the judge's own measurements without a GPU."""

from __future__ import annotations

import random

import pytest

from perfforge.verdict import Status
from profiling.served import CallTime, work_after_done_ms
from profiling.validate import (
    FLUSH_WAIT_FLOOR_MS,
    HIDDEN_WORK_SHARE,
    _charged_windows,
    _device_busy_after,
    _hidden_work,
    _lingering_work,
    _Stop,
)


def _outside(shift_ms: float, *, calls: int = 120, noise_ms: float = 0.3, seed: int = 1) -> dict[str, list[float]]:
    """Time outside the window per call: the same input copies and flush on both sides (40 ms, noisy), the
    candidate's shifted by what it moved out of the window."""
    rng = random.Random(seed)
    original = [40.0 + rng.gauss(0, noise_ms) for _ in range(calls)]
    candidate = [o + shift_ms + rng.gauss(0, noise_ms) for o in original]
    return {"original": original, "candidate": candidate}


@pytest.mark.parametrize("seed", range(5))
def test_the_same_harness_work_on_both_sides_passes(seed: int) -> None:
    _hidden_work(_outside(0.0, seed=seed), baseline_ms=2.0)


def test_a_candidate_cheaper_outside_its_window_passes() -> None:
    _hidden_work(_outside(-5.0), baseline_ms=2.0)


def test_work_moved_out_of_the_window_is_refused() -> None:
    """Attack: the kernel says "synced" early (or works in a signal handler before "start") and does a millisecond
    of its 2 ms of work where the window does not see it."""
    with pytest.raises(_Stop) as stopped:
        _hidden_work(_outside(1.0), baseline_ms=2.0)
    assert stopped.value.status is Status.REJECTED and "outside the kernel's timed window" in stopped.value.reason


def test_what_noise_allows_is_bounded_by_a_share_of_the_kernel() -> None:
    """Below a tenth of the original's kernel time nothing is refused, however quiet the measurements."""
    _hidden_work(_outside(0.9 * HIDDEN_WORK_SHARE * 2.0, noise_ms=0.001), baseline_ms=2.0)
    with pytest.raises(_Stop):
        _hidden_work(_outside(1.5 * HIDDEN_WORK_SHARE * 2.0, noise_ms=0.001), baseline_ms=2.0)


def _abba(kernel_ms: dict[str, float], *, second_ms: float, lingering_ms: float, seed: int = 1,
          calls: int = 60) -> tuple[dict[str, list[list[float]]], dict[str, list[bool]]]:
    """Durations in the judge's A B B A order: a call second in its pair (always right after the other side's)
    costs `second_ms` more, as the H200 showed for identical Triton code; a call right after the candidate's is
    slowed by `lingering_ms` (work it left running on the device)."""
    rng = random.Random(seed)
    durations: dict[str, list[list[float]]] = {"original": [[]], "candidate": [[]]}
    follows: dict[str, list[bool]] = {"original": [], "candidate": []}
    last = ""
    for trial in range(calls):
        for position, side in enumerate(("candidate", "original") if trial % 2 else ("original", "candidate")):
            slow = second_ms * position + (lingering_ms if last == "candidate" else 0.0)
            durations[side][0].append(kernel_ms[side] + slow + rng.gauss(0, 0.02))
            follows[side].append(last not in ("", side))
            last = side
    return durations, follows


@pytest.mark.parametrize("seed", range(5))
def test_the_place_in_the_order_is_not_lingering_work(seed: int) -> None:
    """Legitimate: identical code whose second call of a pair is 0.14 ms slower (copies, on the H200) passes."""
    _lingering_work(*_abba({"original": 1.0, "candidate": 1.0}, second_ms=0.14, lingering_ms=0.0, seed=seed))
    _lingering_work(*_abba({"original": 1.0, "candidate": 0.3}, second_ms=0.14, lingering_ms=0.0, seed=seed))


def test_work_left_running_after_done_is_refused() -> None:
    """Attack: the candidate says 'done' and leaves 0.5 ms of work on the device, slowing the next call."""
    with pytest.raises(_Stop) as stopped:
        _lingering_work(*_abba({"original": 1.0, "candidate": 0.3}, second_ms=0.14, lingering_ms=0.5))
    assert stopped.value.status is Status.REJECTED and "leaves work running" in stopped.value.reason


def _flushes(wait_ms: float, *, calls: int = 60, noise_ms: float = 0.03, seed: int = 1) -> dict[str, list[float]]:
    """The judge's flush right after each side's calls: 0.3 ms with noise, plus `wait_ms` after the candidate's
    (work it left running on the device, which the flush waits for)."""
    rng = random.Random(seed)
    return {"original": [0.3 + rng.gauss(0, noise_ms) for _ in range(calls)],
            "candidate": [0.3 + wait_ms + rng.gauss(0, noise_ms) for _ in range(calls)]}


@pytest.mark.parametrize("seed", range(5))
def test_flushes_alike_after_both_sides_pass(seed: int) -> None:
    """Legitimate: a candidate whose calls end with the device idle (its harness synchronised) leaves the judge's
    flush no slower than the original's calls do, whatever its speed."""
    _device_busy_after(_flushes(0.0, seed=seed), baseline_ms=1.0)
    _device_busy_after(_flushes(0.0, seed=seed, noise_ms=0.001), baseline_ms=0.01)


def test_a_spin_left_running_after_done_holds_the_flush_and_is_refused() -> None:
    """Attack (the Triton red team's 2M-round spin): outputs right, then a spin of a few milliseconds on a side
    stream with synchronisation disabled, so the original's next call shares the device. The judge's flush right
    after the candidate's call waits for it."""
    with pytest.raises(_Stop) as stopped:
        _device_busy_after(_flushes(2.0), baseline_ms=1.0)
    assert stopped.value.status is Status.REJECTED and "leaves work running" in stopped.value.reason


def test_the_flush_wait_allowed_is_bounded_below_by_the_floor_and_a_share_of_the_call() -> None:
    """Quiet measurements refuse a wait above both a tenth of the original's call and the floor, not below."""
    _device_busy_after(_flushes(0.9 * FLUSH_WAIT_FLOOR_MS, noise_ms=0.0005), baseline_ms=0.1)
    with pytest.raises(_Stop):
        _device_busy_after(_flushes(1.5 * FLUSH_WAIT_FLOOR_MS, noise_ms=0.0005), baseline_ms=0.1)
    _device_busy_after(_flushes(1.5 * FLUSH_WAIT_FLOOR_MS, noise_ms=0.0005), baseline_ms=1.0)


def test_no_flusher_means_no_check() -> None:
    """Without a GPU no flush ran (0 ms recorded on both sides): nothing to compare."""
    _device_busy_after({"original": [0.0] * 10, "candidate": [0.0] * 10}, baseline_ms=1.0)


# --- a CPU harness's threads after "done" (served.work_after_done_ms) ------------------------------------------

MAIN = 100  # the harness's main thread


def test_threads_asleep_at_done_show_nothing() -> None:
    """A pool whose threads slept before "done" (an OpenMP pool, joined pthreads) and a main thread asleep in its
    wait for the next word: taking the SIGSTOP costs each a few microseconds, under the slack. The main thread ran
    4.9 ms of a 5 ms call."""
    awake = {MAIN: 5_000_000, 101: 2_000_000, 102: 2_100_000}
    stopped = {MAIN: 5_004_000, 101: 2_004_000, 102: 2_106_000}
    assert work_after_done_ms(awake, stopped, main=MAIN, waking_ns=40_000, stopping_ns=120_000,
                              main_call_ns=(100_000, 5_000_000)) == 0.0


def test_the_main_thread_stopping_a_large_idle_pool_shows_nothing() -> None:
    """False rejection found by the nineteenth session's red team: an honest pool of 33 threads asleep at "done" (one
    did the work) cost the main thread, which takes the SIGSTOP and wakes the others into it, 57-81 us per stop, read
    as work after "done" (32- and 50-thread pools refused). Its allowance grows with the threads it stops; a worker's
    does not, and a main thread past its allowance still counts."""
    pool = {tid: 1_000_000 for tid in range(101, 134)}
    awake = {MAIN: 500_000, **pool}
    stopped = {MAIN: 581_000, **{tid: cpu + 3_000 for tid, cpu in pool.items()}}
    assert work_after_done_ms(awake, stopped, main=MAIN, waking_ns=40_000, stopping_ns=2_000_000,
                              main_call_ns=(100_000, 3_000_000)) == 0.0
    worker = {**stopped, MAIN: 503_000, 101: 1_081_000}  # the same 81 us gained by a worker: it worked on
    assert work_after_done_ms(awake, worker, main=MAIN, waking_ns=40_000, stopping_ns=2_000_000) == pytest.approx(2.04)
    main_past = {**stopped, MAIN: 800_000}  # 300 us: more than stopping 33 threads costs
    assert work_after_done_ms(awake, main_past, main=MAIN, waking_ns=40_000,
                              stopping_ns=2_000_000) == pytest.approx(2.04)


def test_a_main_thread_still_running_after_it_settled_counts() -> None:
    """The main thread was still on a CPU when the judge read it, 0.1 ms after waking: its reading lags by up to a
    tick (3 ms here), but it worked after "done" for as long as the stretch to the stop, which is what counts. One
    that was only waiting for a CPU read exact and gained microseconds."""
    assert work_after_done_ms({MAIN: 1_000_000}, {MAIN: 4_000_000}, main=MAIN, waking_ns=40_000,
                              stopping_ns=120_000) == pytest.approx(0.16)
    assert work_after_done_ms({MAIN: 1_000_000}, {MAIN: 1_008_000}, main=MAIN, waking_ns=40_000,
                              stopping_ns=400_000) == 0.0


def test_a_main_thread_that_worked_on_after_done_counts() -> None:
    """Ninth red team: the harness's `send` redirected through the GOT, so "done" goes out mid-body and the main
    thread finishes the rows after it, asleep again by the time the judge looks. Its exact CPU time from the stop
    before the call to the stop after (3.3 ms) exceeds the call's 3 ms from resumption to "done"."""
    awake = {MAIN: 4_300_000}
    stopped = {MAIN: 4_304_000}
    assert work_after_done_ms(awake, stopped, main=MAIN, waking_ns=40_000, stopping_ns=120_000,
                              main_call_ns=(1_004_000, 3_000_000)) == pytest.approx(0.16)
    honest = {MAIN: 4_004_000}  # the same call, its main thread asleep right after "done"
    assert work_after_done_ms(honest, honest, main=MAIN, waking_ns=40_000, stopping_ns=120_000,
                              main_call_ns=(1_004_000, 3_000_000)) == 0.0


def test_a_worker_still_running_counts_from_done_to_the_stop() -> None:
    """Attack: the body signals a worker and returns; the worker computes on after "done". It worked after the
    judge's waking, so everything from "done" to the stop counts (0.04 ms of waking, 0.3 ms to the stop)."""
    awake = {MAIN: 1_000_000, 101: 2_000_000}
    stopped = {MAIN: 1_010_000, 101: 2_300_000}
    assert work_after_done_ms(awake, stopped, main=MAIN, waking_ns=40_000, stopping_ns=300_000) == pytest.approx(0.34)


def test_a_stale_reading_counts_no_more_than_the_stretch() -> None:
    """A spinning worker was running at the waking: its reading lagged by a tick (4 ms), but it cannot have worked
    longer than the 0.12 ms from the waking to the stop."""
    awake = {MAIN: 1_000_000, 101: 2_000_000}
    stopped = {MAIN: 1_010_000, 101: 6_000_000}
    assert work_after_done_ms(awake, stopped, main=MAIN, waking_ns=40_000, stopping_ns=120_000) == pytest.approx(0.16)


def test_a_thread_born_after_the_waking_counts() -> None:
    """Attack: a thread started on the way out of the call, after the judge's reading: all its time is after."""
    assert work_after_done_ms({MAIN: 1_000_000}, {MAIN: 1_000_000, 103: 900_000}, main=MAIN, waking_ns=10_000,
                              stopping_ns=950_000) == pytest.approx(0.96)


def test_a_thread_that_ended_before_the_stop_counts_through_the_process_clock() -> None:
    """Red team: a worker works on after the judge's waking and exits before the stop, so neither list of threads
    has its time (0 before the process clock was read). The process gained 0.6 ms beyond the listed threads."""
    awake = {MAIN: 1_000_000, 101: 2_000_000}
    stopped = {MAIN: 1_010_000}
    assert work_after_done_ms(awake, stopped, main=MAIN, waking_ns=40_000, stopping_ns=700_000) == 0.0
    assert work_after_done_ms(awake, stopped, main=MAIN, waking_ns=40_000, stopping_ns=700_000,
                              process_ns=(3_000_000, 3_610_000)) == pytest.approx(0.74)


def test_threads_that_ended_asleep_and_a_late_tick_show_nothing() -> None:
    """A joined thread that ends after "done" adds nothing it had not already run; a tick landing between the
    threads' reading and the process's at the waking makes the process's gain smaller, not larger."""
    awake = {MAIN: 1_000_000, 101: 2_000_000, 102: 500_000}
    stopped = {MAIN: 1_010_000, 101: 2_004_000}
    assert work_after_done_ms(awake, stopped, main=MAIN, waking_ns=40_000, stopping_ns=120_000,
                              process_ns=(3_504_000 + 4_000, 3_514_000 + 4_000)) == 0.0


def test_work_after_done_in_most_calls_is_refused_and_a_rare_one_is_noise() -> None:
    """The check takes the median of the paired calls: a worker caught in transit once (a stale reading) passes,
    one that works on after every call is refused once it exceeds a tenth of the original's call."""
    rare = {"original": [0.0] * 40, "candidate": [0.0] * 39 + [3.0]}
    _hidden_work(rare, baseline_ms=2.0)
    steady = {"original": [0.0] * 40, "candidate": [0.5] * 40}
    with pytest.raises(_Stop) as stop:
        _hidden_work(steady, baseline_ms=2.0, where="after its call said 'done'")
    assert stop.value.status is Status.REJECTED and "after its call said 'done'" in stop.value.reason


# --- a CPU call's time outside its window (validate._charged_windows) ---------------------------------------------


def _calls(window_ms: float, outside_ms: list[float]) -> list[list[CallTime]]:
    return [[CallTime(duration_ms=window_ms, outer_ms=window_ms + ms) for ms in outside_ms]]


def test_time_outside_the_window_beyond_the_originals_is_charged() -> None:
    """Tenth red team: 0.7 ms of rows computed between "synced" and "done" (the harness's send redirected). The
    original's calls spend 0.07-0.09 ms outside their window; the candidate's 0.77 ms: 0.68 ms charged past the
    original's ceiling (median 0.08 plus three robust spreads of 0.01 ms)."""
    times = {"original": _calls(7.5, [0.07, 0.08, 0.09] * 5), "candidate": _calls(1.6, [0.77] * 15)}
    charged = _charged_windows(times)
    assert charged["candidate"][0][0] == pytest.approx(1.6 + 0.77 - (0.08 + 3 * 1.4826 * 0.01))
    assert max(charged["original"][0]) <= 7.5 + 1e-9  # its own spread is under its ceiling


def test_an_honest_candidate_is_charged_like_its_original() -> None:
    """The same harness on both sides: a candidate whose wake-ups vary like the original's is charged nothing but
    the rare call past the ceiling, and the work its threads did after "done" is added to each call."""
    times = {"original": _calls(7.5, [0.07, 0.08, 0.09, 0.08] * 5),
             "candidate": [[CallTime(duration_ms=2.0, outer_ms=2.08, after_done_ms=0.2)] * 20]}
    assert charged_ms(times) == [2.2] * 20


def charged_ms(times: dict[str, list[list[CallTime]]]) -> list[float]:
    return [round(ms, 9) for ms in _charged_windows(times)["candidate"][0]]
