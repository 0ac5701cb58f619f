"""`perfforge validate TASK --candidate FILE`: the verdict on one candidate, following every rule of VALIDATION.md.

Order of work: static checks (nothing is built for a rejected candidate), builds, the binary policy on the
candidate's object (served targets), correctness over every configuration, degenerate-test detection on the
oracle's outputs, interleaved timing on the default configuration, the plausibility gate. The first failure ends
the verdict with its precise reason.

Served targets (perfforge/targets.py: cpu, cuda) are judged by this process through kernel processes it drives
(profiling/served.py, profiling/paired.py): per configuration one process per side serves every call; the judge
draws fresh inputs for each call (edge values on every other correctness call), gives both sides the same ones,
compares every correctness call's outputs, the candidate's second run of the first inputs included, and every timed
call's or, for large outputs, a share it picks after the call, and times calls with its own clock, interleaved
A B B A (CUDA: the harness's start-synced window, and the whole call for _hidden_work). Other targets still run
the harness's own check and time modes (one process per seed and round, the harness drawing and timing in the
candidate's process).
"""

from __future__ import annotations

import contextlib
import itertools
import math
import os
import random
import statistics
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from perfforge.models import cache_dir
from perfforge.targets import target_spec
from perfforge.task import Task, TaskConfig
from perfforge.verdict import RuleCheck, RuleStatus, Status, Verdict
from profiling import sandbox
from profiling.binary_policy import BinaryPolicyError, check_object
from profiling.build import Build, build, harness_object_name, preprocessed_name
from profiling.correctness import FLUSHED_NOTE, compare_run, degenerate_reason
from profiling.cuda.ncu import NcuError
from profiling.cuda.raw_csv import NcuCsvError
from profiling.device_turns import GPU_TURNS
from profiling.harness_run import MALLOC_PERTURB_BYTES, HarnessRun, TamperedBuild, run_harness
from profiling.inputs import Side
from profiling.kernel_coverage import (
    Coverage,
    coverage_of,
    defined_kernels,
    profiled_launches,
    reference_kernel_forms,
)
from profiling.machine import describe_machine, describe_tools, gpu_peaks
from profiling.paired import PLAIN, Draw, Inputs, Mismatch, OriginalFailed, Pair, SideResult
from profiling.score import (
    CONFIRMING_ROUNDS,
    NOISY_FLOOR,
    SpeedupEstimate,
    estimate_speedup,
    plausibility_problems,
    rounds_wanted,
)
from profiling.served import CallTime, ProtocolError
from profiling.static_checks import run_static_checks
from profiling.timing import TimingRuns, time_interleaved

# A candidate may take this many times the original's check-run duration before it counts as hung (at least
# MIN_CANDIDATE_TIMEOUT_S, at most the task's timeout): a slower candidate is a result, a hang is not.
CANDIDATE_TIMEOUT_FACTOR = 20.0
MIN_CANDIDATE_TIMEOUT_S = 5.0
# Share of timed calls whose outputs are compared when they are large, picked after the call: a kernel that skips
# its work on a tenth of its timed calls to gain 10% escapes all of 30 checks with probability 0.9^30 < 5%, and
# every correctness call before them is compared. Comparing every timed call cost as much as the calls themselves
# on 64 MB outputs (parity_divergence on the H100); up to TIMED_CHECK_ALL_BYTES of outputs, every call is compared.
TIMED_CHECK_SHARE = 0.25
TIMED_CHECK_ALL_BYTES = 8 << 20
# Null calls whose median is the protocol's round trip (resuming the stopped process, a message each way): 21 keep
# the median steady to a few microseconds on a loaded 2-core machine.
NULL_CALLS = 21
MIN_CALL_MS = 1e-4  # a call never counts as shorter than 0.1 us, whatever the round trip's noise
# Work a staged (CUDA) candidate may do outside its timed window beyond the original's before it is refused
# (_hidden_work): a tenth of the original's kernel time, or four standard errors of the paired difference's median
# (the input copies of a 256 MB buffer vary by a fraction of a millisecond between calls).
HIDDEN_WORK_SHARE = 0.1
HIDDEN_WORK_SE = 4.0
# Robust spreads (_robust_spread) of the original's time outside its window above its median before a CPU call's
# own time there is charged to it (_charged_windows): honest wake-ups vary by microseconds; past three spreads lie
# a few calls in a thousand of a normal distribution, the original's alike.
OUTSIDE_SPREAD = 3.0
# Calls the original makes in a row before and after an interpreted candidate's process is killed
# (_original_alone), and the slowdown with the candidate alive that is refused: half of the original's time alone
# (an idle honest process cost it 20% on the H200, a persistent spin 440%). A spin tuned under this bound still
# inflates a speedup by up to 1.5x: docs/validation.md.
ALONE_CALLS = 15
ALONE_SLOWDOWN_SHARE = 0.5
# The least wait of the judge's flush after the candidate's calls, beyond that after the original's, refused as
# work left running (_device_busy_after): on an H100 a flush took 0.3-0.9 ms within a verdict (a switch of
# contexts, a fill of twice the L2, a pipe round trip), with medians equal on both sides to 0.01 ms for honest and
# identical code; work of another context holds it for a time slice (about 2 ms).
FLUSH_WAIT_FLOOR_MS = 0.05
# ncu over one profiled call of a torch-target answer (Python and torch start-up, its kernels compiled from cache)
COVERAGE_TIMEOUT_S = 300.0
# Under perfforge's cache, one file per build of a torch task's reference (its digest): the kernels one profiled
# call of it launches, per compute capability and configuration's arguments
REFERENCE_LAUNCHES_DIR = "reference-launches"


class _Phases:
    """Adds the wall-clock seconds of each phase of a verdict to verdict.phase_durations_s (a phase entered again,
    the served correctness of each configuration, adds up)."""

    def __init__(self, verdict: Verdict) -> None:
        self.verdict = verdict

    @contextlib.contextmanager
    def __call__(self, name: str) -> Iterator[None]:
        started = time.monotonic()
        try:
            yield
        finally:
            durations = self.verdict.phase_durations_s
            durations[name] = round(durations.get(name, 0.0) + time.monotonic() - started, 3)


class _Stop(Exception):
    """Ends validation early with a status and its reason."""

    def __init__(self, status: Status, reason: str):
        super().__init__(reason)
        self.status, self.reason = status, reason


@dataclass
class _Session:
    task: Task
    work_dir: Path
    original: Build
    candidate: Build
    oracle_duration_s: float | None = None
    filtered: bool | None = None  # served: whether the candidate's process ran under the system-call filter
    on_device: bool = False  # served: whether the candidate's process ran its kernels on a GPU
    coverage: Coverage | None = None  # kernel_coverage targets: what the profiled call showed
    coverage_failure: str = ""  # why the call could not be profiled
    # compiled CPU targets: the candidate's program counters sampled over the verdict (pc_samples.py); None where
    # perf events were unavailable or the target is not sampled
    pcs_sampled: int | None = None
    # the same targets: how many times the candidate's threads' floating-point modes were read mid-call
    # (fp_probe.py); None where ptrace was refused or the target is not probed
    fp_probes: int | None = None

    def candidate_timeout_s(self) -> float:
        if self.oracle_duration_s is None:
            return self.task.validate.timeout_s
        return min(self.task.validate.timeout_s,
                   max(MIN_CANDIDATE_TIMEOUT_S, CANDIDATE_TIMEOUT_FACTOR * self.oracle_duration_s))

    def note_original(self, duration_s: float) -> None:
        self.oracle_duration_s = max(self.oracle_duration_s or 0.0, duration_s)




def validate(task: Task, candidate: Path, work_dir: Path, *, timing: bool = True,
             served: bool | None = None) -> Verdict:
    """Judge `candidate` (a file standing in for the task's editable source) against the task's original.
    served: force the served path (True) or the harness-driven one (False); None, the target's own
    (perfforge/targets.py). Only bench/bench_verdict.py forces it, to time the two paths side by side."""
    served = target_spec(task.target).served if served is None else served
    started = time.monotonic()
    work_dir = work_dir.resolve()  # builds and runs happen in directories of their own
    verdict = Verdict(task=task.name, candidate=str(candidate), target=task.target, status=Status.NO_CHANGE,
                      reason="", machine=describe_machine(), tools=describe_tools(task.build.compiler))
    session: _Session | None = None
    phase = _Phases(verdict)
    try:
        with phase("static"):
            _static(task, candidate, verdict)
        with phase("build"):
            session = _build_both(task, candidate, work_dir)
        interpreted = task.target == "triton" and os.environ.get("TRITON_INTERPRET") == "1"
        timing = timing and not interpreted
        if served:
            if target_spec(task.target).binary_policy:
                with phase("binary_policy"):
                    _binary_policy(session)
            with GPU_TURNS if target_spec(task.target).gpu else contextlib.nullcontext():
                _served(session, verdict, timing, phase)
                if target_spec(task.target).kernel_coverage and verdict.status.correct and session.on_device:
                    with phase("coverage"):
                        _kernel_coverage(session, verdict)
        else:
            with phase("correctness"):
                _check_correctness(session, verdict)
        if timing and not served:
            with phase("timing"):
                _time_and_score(session, verdict)
        elif not timing:
            verdict.status = Status.CORRECT
            why = ("Triton's CPU interpreter (TRITON_INTERPRET=1) runs the kernels, and its times say nothing of a "
                   "GPU" if interpreted else "--no-timing")
            verdict.reason = f"correct on {len(verdict.checked_runs)} checked runs; not timed ({why})"
    except _Stop as stop:
        verdict.status, verdict.reason = stop.status, stop.reason
    except TamperedBuild as tampered:
        verdict.status, verdict.reason = Status.REJECTED, f"rejected: {tampered}"
    verdict.rules = rule_table(task, verdict, timing, served=served, filtered=session.filtered if session else None,
                               coverage=session.coverage if session else None,
                               coverage_failure=session.coverage_failure if session else "",
                               pcs_sampled=session.pcs_sampled if session else None,
                               fp_probes=session.fp_probes if session else None)
    verdict.duration_s = round(time.monotonic() - started, 3)
    return verdict


def speedup_by_config(task: Task, candidate: Path, work_dir: Path) -> dict[str, dict[str, Any]]:
    """The candidate's speedup on each of the task's input configurations: an optimisation found (and judged) at
    the default size, re-measured at the others (perfforge eval's generalisation check, as the Opal paper reports
    it). Only for a candidate already judged correct by validate(): this builds both versions and times them
    interleaved per configuration, and checks nothing else.

    {config name: {"speedup", "ci_low", "ci_high", "baseline_ms", "candidate_ms"}, or {"failure": reason}}
    """
    work_dir = work_dir.resolve()
    try:
        session = _build_both(task, candidate, work_dir)
    except _Stop as stop:
        return {config.name: {"failure": stop.reason.splitlines()[0]} for config in task.configs}
    measured: dict[str, dict[str, Any]] = {}
    for config in task.configs:
        try:
            runs, estimate = _timed(session, config)
        except TamperedBuild as tampered:  # a candidate that behaved until now: no figure from here on is sound
            return {c.name: {"failure": f"rejected: {tampered}"} for c in task.configs}
        if estimate is None:
            measured[config.name] = {"failure": runs.stopped.splitlines()[0]}
            continue
        measured[config.name] = {"speedup": estimate.speedup, "ci_low": estimate.ci_low,
                                 "ci_high": estimate.ci_high, "baseline_ms": estimate.baseline.median_ms,
                                 "candidate_ms": estimate.candidate.median_ms}
    return measured


def _static(task: Task, candidate: Path, verdict: Verdict) -> None:
    if not candidate.is_file():
        raise _Stop(Status.REJECTED, f"candidate file {candidate} does not exist")
    findings = run_static_checks(candidate.read_text(errors="replace"), task)
    verdict.static_findings = [f.__dict__ for f in findings]
    strict = [f for f in findings if f.strict]
    if strict:
        raise _Stop(Status.REJECTED, "; ".join(f"line {f.line}: {f.message} [{f.check}]" for f in strict))


def _build_both(task: Task, candidate: Path, work_dir: Path) -> _Session:
    original = build(task, task.source_path, work_dir)
    if not original.ok:
        raise _Stop(Status.TASK_INVALID, f"the task's original source does not build: {original.reason()}")
    built = build(task, candidate, work_dir)
    if not built.ok:
        raise _Stop(Status.BUILD_FAILED, built.reason())
    return _Session(task, work_dir, original, built)


def _check_correctness(session: _Session, verdict: Verdict) -> None:
    task = session.task
    for config in task.configs:
        oracle_runs = []
        for seed in range(task.validate.seeds):
            oracle_runs.append(_check_seed(session, config, seed, verdict))
            verdict.checked_runs.append(f"{config.name}/seed{seed}")
        reason = degenerate_reason(task.outputs, oracle_runs)
        if reason:
            raise _Stop(Status.TASK_INVALID, f"degenerate test in config {config.name!r}: {reason}; fix the harness's "
                                             "inputs or outputs before judging candidates")


def _check_seed(session: _Session, config: TaskConfig, seed: int, verdict: Verdict) -> dict[str, np.ndarray]:
    """Candidate, oracle, candidate again (another heap perturbation): every call compared. Returns the oracle's
    outputs of the first call. The oracle's files are read and deleted before the candidate runs again: no
    candidate process ever finds a reference result on disk (rule 3)."""
    where = f"config {config.name!r}, seed {seed}"
    first = _run_candidate(session, config, seed, 0, where)
    oracle = _run_oracle(session, config, seed)
    oracle_calls = oracle.take(range(session.task.validate.calls))
    second = _run_candidate(session, config, seed, 1, where + ", second run")
    outputs = session.task.outputs
    for call, (want, want_digests) in oracle_calls.items():
        result = compare_run(outputs, first.buffers(call), want, first.digests(call), want_digests)
        if not result.ok:
            raise _Stop(Status.INCORRECT, f"{where}, call {call}: {result.problem}")
        if verdict.worst_margin is None or result.worst_margin > verdict.worst_margin:
            verdict.worst_margin, verdict.worst_output = result.worst_margin, result.worst_output
        again = compare_run(outputs, second.buffers(call), first.buffers(call), second.digests(call),
                            first.digests(call))
        if not again.ok:
            raise _Stop(Status.INCORRECT, f"{where}, call {call}: two runs on identical inputs disagree "
                                          f"({again.problem}): the kernel reads uninitialised memory or races")
    return oracle_calls[0][0]


def _run_candidate(session: _Session, config: TaskConfig, seed: int, perturbation: int, where: str) -> HarnessRun:
    run = run_harness(session.task, session.candidate, "check", config,
                      session.work_dir / f"cand-{config.name}-{seed}-{perturbation}", seed=seed,
                      timeout_s=session.candidate_timeout_s(), malloc_perturb=MALLOC_PERTURB_BYTES[perturbation])
    if run.result.timed_out:
        raise _Stop(Status.TIMEOUT, f"{where}: the candidate {run.reason()}")
    if run.result.returncode == 3:
        raise _Stop(Status.INCORRECT, f"{where}: the candidate {run.reason()}")
    if not run.ok:
        raise _Stop(Status.CRASHED, f"{where}: the candidate {run.reason()}")
    return run


def _run_oracle(session: _Session, config: TaskConfig, seed: int) -> HarnessRun:
    run = run_harness(session.task, session.original, "check", config,
                      session.work_dir / f"oracle-{config.name}-{seed}", seed=seed)
    if not run.ok:
        raise _Stop(Status.TASK_INVALID, f"the task's original source fails (config {config.name!r}, seed {seed}): "
                                         f"{run.reason()}")
    duration = run.result.duration_s
    session.note_original(duration)
    return run


def _binary_policy(session: _Session) -> None:
    """The candidate's object against the binary policy (rule 22): nothing of it has run yet."""
    directory = session.candidate.directory
    try:
        preprocessed = (directory / preprocessed_name(session.task)).read_text(errors="replace")
        refusals = check_object(session.task, directory / session.candidate.object_name, preprocessed,
                                directory / harness_object_name(session.task),
                                session.original.directory / session.original.object_name)
    except (OSError, BinaryPolicyError) as error:
        raise _Stop(Status.REJECTED, f"the binary policy could not read the candidate's object ({error}): no verdict "
                                     "without it") from None
    if refusals:
        raise _Stop(Status.REJECTED, "; ".join(f"{r.message} [{r.rule}]" for r in refusals))


def _served(session: _Session, verdict: Verdict, timing: bool, phase: _Phases) -> None:
    """Correctness on every configuration, then timing on the default one with the same processes (it comes
    last). Every configuration's processes are spawned at once, so their set-ups overlap; each pair is closed
    when its configuration is done. Every failure of the candidate's process, or of its outputs, ends the verdict
    with its reason."""
    task = session.task
    default = task.config()
    configs = [c for c in task.configs if c.name != default.name] + [default]
    with contextlib.ExitStack() as pairs:
        spawned = []
        for config in configs:
            with _protocol_failures(config), phase("start"):
                spawned.append(pairs.enter_context(Pair.spawn(task, config, session.original, session.candidate,
                                                              session.work_dir)))
        for config, pair in zip(configs, spawned, strict=True):
            with _protocol_failures(config), pair:
                with phase("start"):  # both processes' set-ups done
                    pair.ready()
                session.filtered = pair.filtered if session.filtered is None else session.filtered and pair.filtered
                session.on_device = pair.candidate.staged  # a staged process copies buffers to a device
                with phase("correctness"):
                    _served_correctness(session, pair, verdict, probed_after=timing)
                if timing and config.name == default.name:
                    with phase("timing"):
                        _served_timing(session, pair, verdict)
                _hand_found_routines(session, pair)
                _foreign_fp_modes(session, pair)


# Timing rounds whose calls are probed and whose times are not used: a candidate that cheats in each process (or
# each call) with probability s and stays honest once it sees a probe's stop escapes all of them with probability
# (1 - s) ** PROBED_ROUNDS. One let the nineteenth session's red team cheat in a random half of the rounds and pass
# 4 of 12 verdicts (6.2-11.7x); each more costs a round of calls.
PROBED_ROUNDS = 2

# A probed timing round's probes that must hold the candidate's threads inside its calls' bodies (before its
# "synced"), and the calls it may add, all probed, to get them: a probe lands after a fast body has ended as often as
# not (0.25 ms bodies: 11 of 19 inside on the 2-core VM), and a round whose first probe was drawn late had one or two
# (a candidate sorting with libc's qsort in the round it saw unwatched passed 1 verdict in about 10, 8.4x). Each hold
# is on a process never stopped before (the pair is renewed after every hold); with 4 the twenty-second session's
# qsort_in_short_calls_after_honest_long_ones.c read improved in 2 of 7 runs of its test (2.53x), with 8 in none of 11.
MIN_PROBES_IN_BODY = 8
MAX_EXTRA_PROBED_CALLS = 200
# Fewer mid-body probes than this in a probed round hold a win for review: its calls were too short for the probe
# (or the judge too late on a loaded host) to read them as they ran. Not MIN_PROBES_IN_BODY: an honest matvec of
# short bodies, judged beside another test on the 2-core VM, fell short of 8 in 90 calls and was held (twice, in
# a full run of the suite).
MIN_PROBES_IN_BODY_FOR_A_WIN = 2

# The same for the correctness calls of a verdict without timing (with it, the probed timing rounds read the
# default configuration's calls, the only ones a mode could speed up): their bodies are the edge and plain draws',
# often shorter than the judge's wake-up and hold on a loaded host (decay's 20-70 us calls held 110-450 us after
# "start" on the 2-core VM: FTZ set within each call, and put back, read in 1 call of 22 and went unseen in about 1
# verdict in 4). Checked calls are added, each probed, until this many probes held the candidate mid-body: one
# reading in a foreign mode refuses.
MIN_CORRECTNESS_PROBES_IN_BODY = 4
MAX_EXTRA_CHECKED_CALLS = 100

# perf samples in one watched routine that refuse a candidate: one could be a misattributed helper beside it (a
# sample's instruction pointer can skid past the instruction interrupted). One probe's reading refuses: it is read
# with the thread held (fp_probe.py), and a process that saw the probe's stop could keep away from a second one.
HAND_FOUND_MIN_SAMPLES = 2


def _hand_found_routines(session: _Session, pair: Pair) -> None:
    """Rule 22 at run time (compiled CPU targets): no sample of the candidate's program counter may land in a
    library routine its object cannot import (pc_samples.py: the seventeenth red team found libc's qsort and libm's
    fesetenv through its process's memory)."""
    if pair.watch is None:
        return
    routines = pair.hand_found_routines()
    if not pair.was_sampled:  # no perf events and no probe
        return
    session.pcs_sampled = (session.pcs_sampled or 0) + pair.sampled
    probed = pair.probed_routines
    found = [(name, count) for name, count in (routines + probed).most_common()
             if routines[name] >= HAND_FOUND_MIN_SAMPLES or probed[name]]
    if found:
        named = ", ".join(f"{name} ({count} of {pair.sampled} samples and probe readings)"
                          for name, count in found[:3])
        raise _Stop(Status.REJECTED, f"rejected after it ran: its calls ran {named}, which its object does not "
                                     "import: a library routine found by hand (write the algorithm itself)")


def _foreign_fp_modes(session: _Session, pair: Pair) -> None:
    """Rules 22 and 25 at run time (the correctness calls and the probed timing round): no thread of the
    candidate's may run its calls in a floating-point mode the original's do not (flush-to-zero,
    denormals-are-zero, another rounding or precision) though it puts the registers back before it returns
    (fp_probe.py: the eighteenth red team's setcontext found by hand)."""
    foreign = pair.foreign_fp_modes()
    if pair.fp_probes["candidate"]:
        session.fp_probes = (session.fp_probes or 0) + pair.fp_probes["candidate"]
    if foreign:
        named = "; ".join(f"{mode.describe()} ({n} thread readings)" for mode, n in foreign.most_common(2))
        raise _Stop(Status.REJECTED, f"rejected after it ran: its threads were found mid-call in {named}, which the "
                                     "original's never were: a kernel keeps the task's floating-point rules "
                                     "through the whole call, not only at its end")


def _kernel_coverage(session: _Session, verdict: Verdict) -> None:
    """Rule 9 at run time (torch target): the answer's own kernels must have done the work of a profiled call
    (profiling/kernel_coverage.py). Fails closed: a win that could not be profiled is held for review."""
    task, built, original = session.task, session.candidate, session.original
    served_ms = verdict.candidate_timing.median_ms if verdict.candidate_timing else None
    args = task.config().args()
    try:
        launches = profiled_launches(built.argv, dict(built.env), args, session.work_dir / "coverage",
                                     writable=built.cache_dirs, timeout_s=COVERAGE_TIMEOUT_S)
        # the reference's own launches on this kind of GPU: a launch printed as one of them is never the answer's
        capability = launches[0].compute_capability if launches else "none"
        reference = reference_kernel_forms(original.argv, dict(original.env), args,
                                           cache_dir() / REFERENCE_LAUNCHES_DIR / f"{original.digest}.json",
                                           f"sm {capability}: {' '.join(args)}",
                                           work_dir=session.work_dir / "reference-coverage",
                                           writable=original.cache_dirs, timeout_s=COVERAGE_TIMEOUT_S)
        coverage = coverage_of(launches, defined_kernels((built.directory / task.source).read_text(errors="replace")),
                               reference_kernels=reference)
    except (NcuError, NcuCsvError) as error:
        session.coverage_failure = str(error).splitlines()[0][:300]
        verdict.review.append(f"its kernels' share of the device time could not be measured: "
                              f"{session.coverage_failure}")
        if verdict.status is Status.IMPROVED:
            verdict.status = Status.NEEDS_REVIEW
            verdict.reason += f"; held for review: {verdict.review[-1]}"
        return
    session.coverage = coverage
    problem = coverage.problem(served_ms)
    if problem:
        raise _Stop(Status.REJECTED, f"rejected after it ran correctly: {problem}")
    verdict.reason += f"; {coverage.summary()}"


@contextlib.contextmanager
def _protocol_failures(config: TaskConfig) -> Iterator[None]:
    """What went wrong in a configuration's served calls, as the verdict's status and reason."""
    try:
        yield
    except OriginalFailed as failed:
        raise _Stop(Status.TASK_INVALID, f"the task's original source fails (config {config.name!r}): "
                                         f"{failed}") from None
    except Mismatch as mismatch:
        raise _Stop(Status.INCORRECT, f"config {config.name!r}: {mismatch}") from None
    except ProtocolError as error:
        status = {"timeout": Status.TIMEOUT, "deviation": Status.REJECTED}.get(error.kind, Status.CRASHED)
        raise _Stop(status, f"config {config.name!r}: {error.reason}") from None


def _served_correctness(session: _Session, pair: Pair, verdict: Verdict, *, probed_after: bool) -> None:
    """seeds x calls input sets (edge values in half of them, at places drawn under the judge's secret key), each
    on both sides; the candidate's first call made twice (the same inputs must give the same outputs); the oracle's
    outputs checked for a degenerate test. Without probed timing rounds in the verdict (`probed_after`), checked
    calls are added until the candidate was probed mid-body often enough (_probe_until_read_mid_body)."""
    task, config = session.task, pair.config
    oracle_runs = []
    calls = task.validate.seeds * task.validate.calls
    # half the calls carry edge values, at places no candidate can count to (a red team's argmax told them by
    # counting its calls when they were every other one: 1.63x "improved"), drawn under the judge's secret key
    edge_calls = _edge_calls(pair.plan, calls)
    # and two of them one-sided, each side once (left to each draw, a verdict's 10 edge calls missed the lower side
    # in about a quarter of verdicts: a column maximum started at FLT_MIN read correct in 5 of 12), and a third
    # from both ends of the range at once (Side.ENDS)
    sides = dict(zip(edge_calls, (Side.LOWER, Side.UPPER, Side.ENDS), strict=False))  # fewer edge calls: fewer
    # where one edge call cannot hold all the task's marks, successive edge calls take successive parts of them,
    # from a first part drawn under the key: with at least as many edge calls as parts every mark is on one (drawn
    # per call, a 120-breakpoint table's 1,086 marks in 5 edge calls of 512 missed one breakpoint in about 4% of
    # verdicts: a candidate strict at breakpoint 110 read correct 3 of 3 on the H200 host)
    first_part = int(pair.plan.integers(1 << 16))
    parts = {call: first_part + ordinal for ordinal, call in enumerate(sorted(edge_calls))}
    asked = [Draw(True, sides.get(call), parts[call]) if call in parts else PLAIN for call in range(calls)]
    for call in range(calls):
        # the last one draws ahead for the first timed call (edges off), unused when no timing follows
        inputs = pair.draw(asked[call], following=asked[call + 1] if call + 1 < calls else PLAIN)
        want, got = _checked_call(session, pair, inputs, f"call {call}", verdict)
        if call == 0:
            first = {name: values.copy() for name, values in got.outputs.items()}  # the next call overwrites them
            again = pair.run("candidate", inputs, timeout_s=session.candidate_timeout_s())
            assert again.outputs is not None
            same = compare_run(task.outputs, again.outputs, first)
            if not same.ok:
                raise Mismatch(f"call 0: two runs on identical inputs disagree ({same.problem}): the kernel reads "
                               "uninitialised memory, races, or keeps state between calls")
        if call not in edge_calls and len(oracle_runs) < task.validate.seeds:
            # plain draws only: an edge call's one-sided buffer can zero a filter's output (a red team's candidate
            # read task_invalid in 4 of 6 verdicts once edge calls could come first)
            oracle_runs.append({name: values.copy() for name, values in want.outputs.items()})
        verdict.checked_runs.append(f"{config.name}/call{call}")
    if not probed_after:
        _probe_until_read_mid_body(session, pair, verdict)
    reason = degenerate_reason(task.outputs, oracle_runs)
    if reason:
        raise _Stop(Status.TASK_INVALID, f"degenerate test in config {config.name!r}: {reason}; fix the harness's "
                                         "inputs or outputs before judging candidates")


def _probe_until_read_mid_body(session: _Session, pair: Pair, verdict: Verdict) -> None:
    """Plain checked calls, both sides, every one probed, until the candidate's threads were held inside a body
    MIN_CORRECTNESS_PROBES_IN_BODY times or MAX_EXTRA_CHECKED_CALLS were added (a process whose calls are probed,
    where ptrace allows)."""
    candidate = pair.candidate
    if not (candidate.probe_calls and candidate.probing):
        return
    for extra in range(MAX_EXTRA_CHECKED_CALLS):
        if candidate.probes_in_body >= MIN_CORRECTNESS_PROBES_IN_BODY or not candidate.probing:
            return
        _checked_call(session, pair, pair.draw(following=PLAIN), f"probed call {extra}", verdict)
        verdict.checked_runs.append(f"{pair.config.name}/probed{extra}")


def _checked_call(session: _Session, pair: Pair, inputs: Inputs, where: str,
                  verdict: Verdict) -> tuple[SideResult, SideResult]:
    """One call of each side on `inputs`, the candidate's outputs compared with the original's: (original's,
    candidate's)."""
    want = pair.run("original", inputs, timeout_s=session.task.validate.timeout_s)
    session.note_original(want.duration_ms / 1e3)
    got = pair.run("candidate", inputs, timeout_s=session.candidate_timeout_s())
    assert got.outputs is not None and want.outputs is not None
    _compare(session.task, got.outputs, want.outputs, where, verdict)
    return want, got


def _edge_calls(plan: np.random.Generator, calls: int) -> list[int]:
    """Which of a configuration's checked calls carry edge values: half of them, in the order drawn."""
    return [int(call) for call in plan.permutation(calls)[:calls // 2]]


def _compare(task: Task, got: dict[str, np.ndarray], want: dict[str, np.ndarray], where: str,
             verdict: Verdict) -> None:
    result = compare_run(task.outputs, got, want, subnormals=target_spec(task.target).keeps_subnormals)
    if not result.ok:
        raise Mismatch(f"{where}: {result.problem}")
    if result.flushed and not any(FLUSHED_NOTE in note for note in verdict.review):
        verdict.review.append(f"{where}: {result.flushed}")  # once: a faster verdict is held for review (_score)
    if verdict.worst_margin is None or result.worst_margin > verdict.worst_margin:
        verdict.worst_margin, verdict.worst_output = result.worst_margin, result.worst_output


def _served_timing(session: _Session, pair: Pair, verdict: Verdict) -> None:
    """rounds x (warm-up + trials) calls per side, each pair of calls on fresh inputs of its own, the order flipping
    every call (A B B A ...), a cache flush before each; up to CONFIRMING_ROUNDS rounds where the planned ones read
    a noise floor above NOISY_FLOOR and every round runs on fresh processes (score.rounds_wanted; probed rounds
    drawn among the extra ones too where processes are watched). The judge's
    clock times each call from resuming the process to its 'done' (CUDA: from 'start' to 'synced', and the whole
    call too: _hidden_work). Outputs are compared for every timed call, or when they are large for a share that the
    judge picks after both sides have made them (TIMED_CHECK_SHARE, and the last call of every round; a CUDA process
    copies back only those), so nothing either process knows tells it which.

    An interpreted GPU candidate (a Python harness: Triton) can rewrite its own harness, so its 'start' and
    'synced' say nothing. Each call of both sides is three round trips (Pair.run): 'stage' copies the inputs up,
    the judge's own process flushes the L2, 'call' is only the kernel and is timed whole, 'fetch' copies the
    outputs back. Work moved into the staging trips shows in their judge-timed length (_hidden_work); a sample of
    the outputs is read the moment they are fetched and compared with the original's on every call; work left
    running after a call shows in the call after it (_lingering_work) or, left for good, in the original's calls
    before and after the candidate's process is killed (_original_alone)."""
    task = session.task
    spec = task.validate
    picker = random.SystemRandom()
    share = 1.0 if pair.output_bytes <= TIMED_CHECK_ALL_BYTES else TIMED_CHECK_SHARE
    whole_call = pair.candidate.interpreted and pair.candidate.staged
    windows = pair.candidate.windowed  # each call's body timed (its harness's "start" to "synced"), or the whole call
    # the protocol's own round trip, measured on the original's process (the candidate's could slow its own null
    # calls down to have more subtracted), taken off every call of both sides
    overhead_ms = pair.original.overhead_ms(NULL_CALLS, task.validate.timeout_s, whole_call=whole_call)
    times: dict[str, list[list[CallTime]]] = {"original": [], "candidate": []}
    follows_other: dict[str, list[bool]] = {"original": [], "candidate": []}  # per timed call: the other side's
    # call came just before it (else its own did)
    # the judge's flush right after each call, warm-up ones too (_device_busy_after)
    settle_ms: dict[str, list[float]] = {"original": [], "candidate": []}
    flip, last_side = False, ""
    # where kernel processes are watched (compiled CPU kernels), PROBED_ROUNDS rounds more, at places drawn from the
    # plan, have both sides' calls probed mid-call from a timed call the plan draws (fp_probe.py: the threads' modes
    # and instruction pointers) and their times are not used.
    # Nothing tells their processes from the timed rounds' before the first probe has read
    # them: no perf events (their interrupts told the correctness processes apart: the nineteenth red team kept its
    # tricks to the processes that saw none, FTZ 1.18-1.25x, hand-found qsort 7.25-7.42x), and the timed rounds'
    # calls are never stopped (probing a fifth of them, times dropped, still lowered matmul_loop_order's speedup in
    # 6 of 15 verdicts against 1 of 14: bench/bench_pc_sampling.py and docs/validation.md)
    probed_rounds = set(pair.plan.choice(spec.rounds + PROBED_ROUNDS, PROBED_ROUNDS, replace=False).tolist()) \
        if pair.watch is not None else set()
    # (a probed round goes on past its trials, every call probed, until MIN_PROBES_IN_BODY of its probes held the
    # candidate's threads inside a body)
    # Where every round runs on fresh processes (all but staged and interpreted candidates, whose processes serve
    # every round), a round is a placement: planned rounds whose noise floor is above NOISY_FLOOR (a loaded host, or
    # a process slowed for its round) are followed by more, on fresh processes, up to CONFIRMING_ROUNDS timed
    # rounds, and the verdict is made on all of them (score.rounds_wanted). Where processes are watched,
    # PROBED_ROUNDS probed rounds more are drawn among those extra rounds as among the planned ones: a process can
    # tell it serves an extra round (it can read the verdict's clock from its stdout.log's times: the red team's,
    # tests/profiling/test_judge_extension_adversary.py), and unprobed extra rounds let a candidate honest until
    # the planned rounds were over sort with libc's qsort in 8 timed rounds of 12, none of them read
    fresh_rounds = bool(probed_rounds) or not (pair.candidate.staged or pair.candidate.interpreted)
    timed_rounds, first_reading, extra_probed = spec.rounds, None, 0
    for round_index in itertools.count():
        if round_index >= timed_rounds + len(probed_rounds):
            if not fresh_rounds or first_reading is not None:
                break
            first_reading = estimate_speedup(
                *_timed_ms(times, overhead_ms, windows=windows, staged=pair.candidate.staged, whole_call=whole_call),
                "judge_clock")
            timed_rounds = rounds_wanted(first_reading)
            if probed_rounds and timed_rounds > spec.rounds:
                extra_probed = PROBED_ROUNDS
                places = pair.plan.choice(timed_rounds - spec.rounds + extra_probed, extra_probed, replace=False)
                probed_rounds |= {round_index + int(place) for place in places}
            if round_index >= timed_rounds + len(probed_rounds):
                break
        sampling = round_index in probed_rounds
        if probed_rounds:  # the correctness phase's processes were watched: fresh ones every round
            pair.renew(swap=round_index % 2 == 1, sample_pcs=False, probe_calls=False)
        elif round_index and not (pair.candidate.staged or pair.candidate.interpreted):
            # fresh processes every round (Pair.renew): milliseconds for a C harness; an interpreter imports torch
            pair.renew(swap=round_index % 2 == 1)
        # a probed round's first probe, drawn over its timed calls, never its warm-up (the nineteenth session's
        # second red team stayed honest through the warm-up calls, saw no probe's stop and cheated: every round read
        # unwatched); every call from there on is probed. A candidate that cheats in a share s of each round's
        # timed calls escapes a round when its first probe lands on a call it spent honest: 1 - s, under a half for
        # any cheat that moves the median (PROBED_ROUNDS)
        def first_probe_after(trial: int) -> int:  # warm-up calls unprobed, then a draw over the trials
            return trial + spec.warmup + int(pair.plan.integers(spec.trials))

        first_probed = first_probe_after(0) if sampling else None
        if not sampling:
            times["original"].append([])
            times["candidate"].append([])
        calls = spec.warmup + spec.trials
        in_body = 0  # this round's probes that held the candidate inside a body (each on a process of its own)
        for trial in itertools.count():
            if trial >= calls and not (sampling and in_body < MIN_PROBES_IN_BODY
                                       and trial < calls + MAX_EXTRA_PROBED_CALLS):
                break
            inputs = pair.draw(following=PLAIN)
            results = {}
            sample = None
            order = ("candidate", "original") if flip else ("original", "candidate")
            follows = {}
            for side in order:
                follows[side] = last_side not in ("", side)
                results[side] = pair.run(side, inputs, timeout_s=_timeout_s(session, side), flush=True, fetch=False,
                                         probe=first_probed is not None and trial >= first_probed)
                settle_ms[side].append(results[side].time.settle_ms)
                if side == "candidate" and whole_call:
                    sample = pair.sample_outputs("candidate", picker)  # at once, while it is stopped
                last_side = side
            flip = not flip
            where = f"timed call {trial} of round {round_index}"
            checked = trial == spec.warmup + spec.trials - 1 or picker.random() < share
            if checked or sample is not None:
                # read in the order they ran: the side read last has its buffers warm in the caches for its next
                # call, so that must alternate like the order does. With the candidate always read last, identical
                # code read 1.03x "improved" in 1 of 3 runs on a 2-core VM whose last-level cache (480 MB) the
                # flush does not cover; 6 of 6 read no_change after.
                outputs = {side: pair.fetch(side, inputs, timeout_s=_timeout_s(session, side)) for side in order}
                if sample is not None:
                    final = outputs["candidate"] if checked else None
                    problem = pair.sample_problem(sample, outputs["original"], final)
                    if problem:
                        raise Mismatch(f"{where}: {problem}")
                if checked:
                    _compare(task, outputs["candidate"], outputs["original"], where, verdict)
            if trial >= spec.warmup and not sampling:
                for side in times:
                    times[side][-1].append(results[side].time)
                    follows_other[side].append(follows[side])
            if sampling and pair.candidate.holds:
                # a probe held the candidate: it may have seen the stop, whatever the probe read (after its body:
                # nothing; inside it: one moment). Fresh processes have seen none, and their first probe is drawn
                # again over a round's timed calls from here, so each hold reads a process that has never been
                # stopped: a candidate that cheats until it sees a stop cheats again where the next probe can read
                # it. Renewed after late holds only, `qsort_until_a_probe_is_seen.c` was caught (a skip of probes
                # estimated too late had been the only defence: improved 5.1x in a CI run), but the twenty-second
                # session's red team alternated long calls with an honest prefix and short cheating ones: the
                # probe, drawn within the last call's body, held the long one in its prefix, and the process
                # stayed honest for good while the timed rounds cheated (improved 13 of 28). Renewed after every
                # hold: rejected 14 of 14, at about 8 x (warmup + trials / 2) calls a probed round
                in_body += pair.candidate.probes_in_body
                pair.renew(swap=round_index % 2 == 1, sample_pcs=False, probe_calls=False)
                first_probed = first_probe_after(trial + 1)
                last_side = ""
        if sampling and pair.candidate.probing and in_body < MIN_PROBES_IN_BODY_FOR_A_WIN:
            # a body shorter than a probe takes to hold the threads (about 60 us on the 2-core VM) is never read
            # mid-call: a win there is held for review (the twentieth session's red team sorted 512 values, 40-55
            # us a call, with libc's qsort found by hand: 3 of 10 verdicts improved, 1.07-1.24x)
            verdict.review.append(f"a probed round held the candidate's threads inside a call's body "
                                  f"{in_body} times in {trial} calls, fewer than "
                                  f"{MIN_PROBES_IN_BODY_FOR_A_WIN}: its calls are too short to be read as they run")
    baseline, candidate = _timed_ms(times, overhead_ms, windows=windows, staged=pair.candidate.staged,
                                    whole_call=whole_call)
    baseline_ms = statistics.median(x for r in baseline for x in r)
    if whole_call:  # work moved into the staging round trips, left running after a call, or left for good
        _hidden_work({side: [t.staging_ms for r in times[side] for t in r] for side in times}, baseline_ms,
                     where="in the round trip that copies its inputs up (before the call)")
        _hidden_work({side: [t.fetch_ms for r in times[side] for t in r] for side in times}, baseline_ms,
                     where="in the round trip that copies its outputs back (after the call)")
        _device_busy_after(settle_ms, baseline_ms)
        _lingering_work({"original": baseline, "candidate": candidate}, follows_other)
        _original_alone(session, pair, overhead_ms)
    elif windows:
        # a tenth of the original's call: the faster side's (tried after the eighth red team's SIGCONT handler,
        # which the filter now refuses) refused honest code whose 48 idle threads each take ~4 us to wake
        _hidden_work({side: [t.outer_ms - t.duration_ms for r in times[side] for t in r] for side in times},
                     baseline_ms)
        _hidden_work({side: [t.after_done_ms for r in times[side] for t in r] for side in times}, baseline_ms,
                     where="after its call said 'done' (threads of it still working when the judge woke)")
    estimate = estimate_speedup(baseline, candidate, "judge_clock")
    _score(session, verdict, estimate, pair.config, context={})
    what = ("whole call (copies staged in round trips of their own, the L2 flushed by the judge)" if whole_call
            else "call's body (its harness's 'start' to 'synced', stamped by the kernel as they were sent)" if windows
            else "call")
    verdict.reason += (f"; each {what} timed by the judge's clock, the protocol's round trip "
                       f"({overhead_ms * 1e3:.0f} us, {NULL_CALLS} null calls) taken off")
    if first_reading is not None and timed_rounds > spec.rounds:
        verdict.reason += (f"; the first {spec.rounds} timed rounds read {first_reading.speedup:.3f}x with a noise "
                           f"floor of {first_reading.noise_floor:.1%}, above {NOISY_FLOOR:.0%}: judged over "
                           f"{timed_rounds} timed rounds on fresh processes"
                           + (f", {extra_probed} probed rounds more among the extra ones" if extra_probed else ""))


def _timed_ms(times: dict[str, list[list[CallTime]]], overhead_ms: float, *, windows: bool, staged: bool,
              whole_call: bool) -> tuple[list[list[float]], list[list[float]]]:
    """Per side (original, candidate), each timed round's call times as charged, the protocol's round trip taken
    off: a CPU call is charged its work outside its window (_charged_windows); a staged (CUDA) one is timed from
    "start" to "synced" (its round trips around the window are checked by _hidden_work), an interpreted one whole."""
    if windows and not staged:
        charged = _charged_windows(times)
    else:
        charged = {side: [[t.outer_ms if whole_call else t.duration_ms for t in r] for r in times[side]]
                   for side in times}
    baseline, candidate = ([[max(ms - overhead_ms, MIN_CALL_MS) for ms in r] for r in charged[side]]
                           for side in ("original", "candidate"))
    return baseline, candidate


def _lingering_work(durations: dict[str, list[list[float]]], follows_other: dict[str, list[bool]]) -> None:
    """A candidate that says 'done' with work still running on the device (or launches more after it) slows the
    call that follows it. The A B B A order makes each side's calls follow the other side's half the time and its
    own the other half, each always at the same place in a pair of calls (the other's just before: second; its
    own: first), so where a call sits affects both sides alike. Refused when the original's slowdown after the
    candidate's calls exceeds the candidate's after the original's (a difference of differences of medians) by
    more than HIDDEN_WORK_SHARE of the original's median and HIDDEN_WORK_SE standard errors. Identical code read
    0.14 ms (14%) "slower after the other side" on the original alone on the H200, from the position only."""
    slowdown_ms, variance = 0.0, 0.0
    for side, sign in (("original", 1.0), ("candidate", -1.0)):
        flat = [x for r in durations[side] for x in r]
        after = [x for x, follows in zip(flat, follows_other[side], strict=True) if follows]
        before = [x for x, follows in zip(flat, follows_other[side], strict=True) if not follows]
        if len(after) < 2 or len(before) < 2:
            return
        slowdown_ms += sign * (statistics.median(after) - statistics.median(before))
        variance += _median_standard_error(after) ** 2 + _median_standard_error(before) ** 2
    baseline_ms = statistics.median(x for r in durations["original"] for x in r)
    allowed_ms = max(HIDDEN_WORK_SHARE * baseline_ms, HIDDEN_WORK_SE * math.sqrt(variance))
    if slowdown_ms > allowed_ms:
        raise _Stop(Status.REJECTED, f"the original's calls were {slowdown_ms:.3g} ms slower right after the "
                                     "candidate's than right after its own, beyond what the same place in the order "
                                     f"does to the candidate's (at most {allowed_ms:.3g} ms is noise): the candidate "
                                     "leaves work running on the device after its call says 'done'")


def _device_busy_after(settle_ms: dict[str, list[float]], baseline_ms: float) -> None:
    """The judge's L2 flush is a kernel of its own context, and contexts take turns on the device: while a call
    left work running (a spin on a side stream after a disabled synchronisation), a flush made the moment its
    outputs are fetched waits for that work or for the end of its time slice (about 2 ms on an H100: a flush of
    0.05 ms took 2.1-2.4 ms while a spin ran in another process). Nothing of the other side runs in between, and
    an honest harness synchronised the whole device before "fetched". Refused when the flushes right after the
    candidate's calls took longer than those right after the original's by more than HIDDEN_WORK_SHARE of the
    original's call, HIDDEN_WORK_SE standard errors and FLUSH_WAIT_FLOOR_MS. Unlike _lingering_work this does not
    depend on the work overlapping the original's next call: between calls the judge draws and compares on the
    host for longer than a spin of milliseconds runs."""
    after_candidate, after_original = settle_ms["candidate"], settle_ms["original"]
    if len(after_candidate) < 3 or len(after_original) < 3 or not any(after_candidate + after_original):
        return  # no flusher (no GPU), or too few calls to compare
    wait_ms = statistics.median(after_candidate) - statistics.median(after_original)
    noise_ms = math.hypot(_median_standard_error(after_candidate), _median_standard_error(after_original))
    allowed_ms = max(HIDDEN_WORK_SHARE * baseline_ms, HIDDEN_WORK_SE * noise_ms, FLUSH_WAIT_FLOOR_MS)
    if wait_ms > allowed_ms:
        raise _Stop(Status.REJECTED, f"the judge's cache flush right after the candidate's calls took {wait_ms:.3g} ms "
                                     "longer than right after the original's (at most "
                                     f"{allowed_ms:.3g} ms is noise): the candidate leaves work running on the "
                                     "device after its call says 'done'")


def _original_alone(session: _Session, pair: Pair, overhead_ms: float) -> None:
    """Work a candidate leaves running for good (a spin longer than a whole pair of calls) slows every call of the
    original alike, so _lingering_work cannot see it. Once timing is over the original makes ALONE_CALLS calls in
    a row with the candidate's process alive (stopped, not called), then the candidate's process is killed (its
    device work dies with its context) and it makes ALONE_CALLS more: refused when the first were slower by more
    than ALONE_SLOWDOWN_SHARE of the second's median and HIDDEN_WORK_SE standard errors. On the H200 an honest,
    idle candidate process alone left its original 0.11 ms (about 20%) slower than after the kill (cause not
    found); a spin left running for good made it 2.2 ms (about 440%) slower and read 9x where the honest kernel
    reads 2.5x."""
    def calls() -> list[float]:
        durations = []
        for _ in range(ALONE_CALLS):
            inputs = pair.draw()
            result = pair.run("original", inputs, timeout_s=_timeout_s(session, "original"), flush=True,
                              fetch=False)
            durations.append(max(result.time.outer_ms - overhead_ms, MIN_CALL_MS))
        return durations

    shared = calls()
    pair.candidate.close()
    alone = calls()
    slowdown_ms = statistics.median(shared) - statistics.median(alone)
    noise_ms = math.hypot(_median_standard_error(shared), _median_standard_error(alone))
    allowed_ms = max(ALONE_SLOWDOWN_SHARE * statistics.median(alone), HIDDEN_WORK_SE * noise_ms)
    if slowdown_ms > allowed_ms:
        raise _Stop(Status.REJECTED, f"the original's calls were {slowdown_ms:.3g} ms slower while the candidate's "
                                     f"process lived ({ALONE_CALLS} calls in a row) than in as many after it was "
                                     f"killed (at most {allowed_ms:.3g} ms is noise): the candidate leaves work "
                                     "running on the device")


def _charged_windows(times: dict[str, list[list[CallTime]]]) -> dict[str, list[list[float]]]:
    """Each windowed (CPU) call's time as charged: its window ("start" to "synced"), what its threads did after
    "done", and what it spent outside the window (from the resumption to "start", from "synced" to "done") beyond
    the original's calls there: the same harness on both sides says "start" and "done" the same way, so anything
    more is the candidate's work. The tenth red team redirected the harness's `send` through its GOT and computed
    25% of the rows before passing "start" on, or 30% after "synced" before the harness's "done": 4.1-4.9x
    against the honest 2.2-3.6x on the 2-core VM, under the refusal's tenth of the original's call. The ceiling
    is the original's median there plus OUTSIDE_SPREAD robust spreads (its wake-ups vary by microseconds), so an
    honest candidate is charged nothing in all but a few calls, like the original."""
    outside = [t.outer_ms - t.duration_ms for r in times["original"] for t in r]
    ceiling_ms = statistics.median(outside) + OUTSIDE_SPREAD * _robust_spread(outside) if outside else math.inf
    return {side: [[t.duration_ms + t.after_done_ms + max(t.outer_ms - t.duration_ms - ceiling_ms, 0.0) for t in r]
                   for r in times[side]] for side in times}


def _robust_spread(values: list[float]) -> float:
    """1.4826 x the median absolute deviation: the standard deviation where the values are normal, unmoved by a
    few outliers."""
    middle = statistics.median(values)
    return 1.4826 * statistics.median(abs(v - middle) for v in values)


def _median_standard_error(values: list[float]) -> float:
    """1.2533 x the robust spread over the square root of the count."""
    return 1.2533 * _robust_spread(values) / math.sqrt(len(values))


def _timeout_s(session: _Session, side: str) -> float:
    return session.task.validate.timeout_s if side == "original" else session.candidate_timeout_s()


def _hidden_work(outside_ms: dict[str, list[float]], baseline_ms: float, *,
                 where: str = "outside the kernel's timed window") -> None:
    """A staged (CUDA) call is timed from the process's "start" to its "synced": what it does around them (copying
    the inputs up, the L2 flush, the messages) is the harness's, the same on both sides for the same buffers. Code
    that moved work outside that window (said "synced" early, worked in a signal handler before "start") makes
    the candidate's calls longer outside it than the original's: refused when the paired difference's median
    exceeds both HIDDEN_WORK_SHARE of the original's kernel time and HIDDEN_WORK_SE standard errors."""
    differences = [c - o for c, o in zip(outside_ms["candidate"], outside_ms["original"], strict=True)]
    if len(differences) < 2:
        return
    hidden_ms = statistics.median(differences)
    standard_error_ms = _median_standard_error(differences)
    allowed_ms = max(HIDDEN_WORK_SHARE * baseline_ms, HIDDEN_WORK_SE * standard_error_ms)
    if hidden_ms > allowed_ms:
        raise _Stop(Status.REJECTED, f"the candidate's calls took {hidden_ms:.3g} ms more than the original's {where} "
                                     f"(median of {len(differences)} paired calls; at most {allowed_ms:.3g} ms is "
                                     "noise): work moved out of the timed region")


def _timed(session: _Session, config: TaskConfig) -> tuple[TimingRuns, SpeedupEstimate | None]:
    """Both versions timed interleaved on `config`, and their speedup (None when a run failed)."""
    runs = time_interleaved(session.task, session.original, session.candidate, config, session.work_dir,
                            candidate_timeout_s=session.candidate_timeout_s())
    return runs, None if runs.stopped else estimate_speedup(runs.baseline_ms, runs.candidate_ms, runs.method)


def _time_and_score(session: _Session, verdict: Verdict) -> None:
    task = session.task
    config = task.config()
    runs, estimate = _timed(session, config)
    if runs.timed_mismatch:
        raise _Stop(Status.INCORRECT, f"the outputs of the timed runs differ from the original's "
                                      f"({runs.timed_mismatch}): the kernel behaves differently when timed")
    if estimate is None:
        status = Status.TIMEOUT if "timed out" in runs.failure else Status.CRASHED
        raise _Stop(status, runs.failure)
    _score(session, verdict, estimate, config, runs.context)


def _score(session: _Session, verdict: Verdict, estimate: SpeedupEstimate, config: TaskConfig,
           context: dict[str, Any]) -> None:
    """The verdict's speedup, status and reason from the timing estimate, with the plausibility gate (rule 14)."""
    task = session.task
    verdict.speedup, verdict.speedup_ci = estimate.speedup, (estimate.ci_low, estimate.ci_high)
    verdict.noise_floor = estimate.noise_floor
    verdict.baseline_timing, verdict.candidate_timing = estimate.baseline, estimate.candidate
    verdict.machine = describe_machine(context)
    verdict.tools = describe_tools(task.build.compiler, context)
    flops, bytes_moved = task.work.evaluate(config.params)
    peaks = gpu_peaks(context.get("device", ""))
    # with what the checks noted (subnormals written as zero: _compare)
    verdict.review = plausibility_problems(estimate, flops=flops, bytes_moved=bytes_moved,
                                           peak_gflop_per_s=peaks.fp32_gflop_per_s if peaks else None,
                                           peak_gbyte_per_s=peaks.dram_gbyte_per_s if peaks else None) + verdict.review
    spread = (f"baseline {estimate.baseline.median_ms:.4g} ms [p10 {estimate.baseline.p10_ms:.4g}, p90 "
              f"{estimate.baseline.p90_ms:.4g}], candidate {estimate.candidate.median_ms:.4g} ms [p10 "
              f"{estimate.candidate.p10_ms:.4g}, p90 {estimate.candidate.p90_ms:.4g}], speedup {estimate.speedup:.3f}x "
              f"(95% CI {estimate.ci_low:.3f}-{estimate.ci_high:.3f}, noise floor {estimate.noise_floor:.1%}) "
              f"on config {config.name!r}") + (f", {estimate.rounds_summary()}" if estimate.round_ratios else "")
    if estimate.faster:
        status = Status.NEEDS_REVIEW if verdict.review else Status.IMPROVED
    else:
        status = Status.SLOWER if estimate.slower else Status.NO_CHANGE
    verdict.status = status
    verdict.reason = f"correct on {len(verdict.checked_runs)} checked runs; {spread}" + (
        "; held for review: " + "; ".join(verdict.review) if status == Status.NEEDS_REVIEW else "")


def rule_table(task: Task, verdict: Verdict, timed: bool, *, served: bool,
               filtered: bool | None = None, coverage: Coverage | None = None,
               coverage_failure: str = "", pcs_sampled: int | None = None,
               fp_probes: int | None = None) -> list[RuleCheck]:
    """How each rule of VALIDATION.md was applied to this verdict. served: judged through kernel processes;
    filtered: whether the candidate's ran under the system-call filter (None when it never started); coverage:
    what the profiled call showed of the answer's own kernels (kernel_coverage targets), or coverage_failure why
    it could not be profiled; pcs_sampled: how many of the candidate's program counters were sampled (None: not
    sampled)."""
    E, P, N, NA = RuleStatus.ENFORCED, RuleStatus.PARTLY, RuleStatus.NOT_ENFORCED, RuleStatus.NOT_APPLICABLE
    gpu = target_spec(task.target).gpu
    n_configs = len(task.configs)
    timing_status = E if timed else N
    network = sandbox.network_namespace_available()
    fenced = sandbox.filesystem_isolation_available()
    # System V IPC and POSIX shared memory (/dev/shm) of its own: nothing cached there reaches another run
    ipc = sandbox.ipc_namespace_available() and sandbox.private_shared_memory_available()
    v = task.validate
    rules = [
        RuleCheck(1, "fresh random inputs, several seeds and shapes", E if n_configs > 1 else P,
                  f"{v.seeds * v.calls} input sets drawn by the judge x {n_configs} configuration(s), edge values in "
                  "every other one; every timed call on fresh inputs" if served else
                  f"{v.seeds} seeds x {n_configs} configuration(s), inputs redrawn per call"),
        RuleCheck(2, "degenerate tests rejected", E, "oracle outputs checked for zero, constant, input-independent"),
        RuleCheck(3, "candidate never sees reference results", E,
                  "the oracle's outputs stay in the judge's memory; each side's buffers are its own shared memory, "
                  "poisoned before every call" if served else
                  "separate processes; outputs poisoned before each call, timed ones too; candidate runs before and "
                  "after the oracle, whose outputs are deleted once read"),
        RuleCheck(4, "every output compared with dtype-aware tolerances", E,
                  ", ".join(f"{o.name}: {o.dtype} rtol {o.rtol:g} atol {o.atol:g}" for o in task.outputs)),
        RuleCheck(5, "every call checked", E, "every correctness call of both sides compared, and the timed ones (all, "
                  f"or above {TIMED_CHECK_ALL_BYTES >> 20} MiB of outputs a share picked after the call)" if served
                  else f"{v.calls} calls per run, fresh inputs per call"),
        RuleCheck(6, "inputs unchanged", E, "every input and fixed buffer compared bit for bit with the judge's copy "
                  "after every compared call (all correctness calls; the timed ones whose outputs are compared)"
                  if served else "every non-output buffer compared bit for bit after each call"),
        RuleCheck(7, "candidate twice on identical inputs agrees", E,
                  "the first inputs run twice in the same process" if served else
                  "second run with another heap perturbation (MALLOC_PERTURB_)" if not gpu else "second run compared"),
        RuleCheck(8, "precision downgrades flagged, output dtype matches", E,
                  "half-precision instructions and fast-math pragmas read from the compiled object and the "
                  "preprocessed source; dtype of every output" if served else "static check + dtype of every output"),
        RuleCheck(9, "no fallback to the reference or a library", E if not gpu or coverage is not None else P,
                  "static checks" + ("; imports on an allow-list (binary policy)" if served else "")
                  + (f"; the answer's own kernels in a profiled call (ncu): {coverage.summary()}" if coverage else
                     f"; the answer's own kernels not measured ({coverage_failure})" if coverage_failure else
                     "; device kernel launch checked statically, not by counting launches" if gpu else "")),
        RuleCheck(10, "fail closed", E, "no outputs declared -> task refused; original failing -> task_invalid"),
        RuleCheck(11, "device events / monotonic clock, warm-up, many trials, median and spread", timing_status,
                  f"{v.warmup} warm-up + {v.trials} trials x {v.rounds} rounds"
                  + (", each call timed by the judge's monotonic clock" if served else "")),
        RuleCheck(12, "cache flushed between trials", timing_status,
                  "memset of 2x L2 before each call" if gpu else "write over 2x LLC (at most 64 MiB) before each call"),
        RuleCheck(13, "interleaved A/B with a noise floor", timing_status,
                  ("A B B A per call, noise floor from A vs A, interval drawn over rounds, every round agreeing (on "
                   f"a noisy host, rounds of fresh processes extended to {CONFIRMING_ROUNDS} and a sign test)")
                  if served else
                  "ABBA rounds, noise floor from A vs A, interval drawn over rounds, every round agreeing"),
        RuleCheck(14, "plausibility gate (10x, roofline)", (E if gpu else P) if timed else N,
                  "10x gate; peak-throughput gate " + ("against the device's datasheet peaks" if gpu else
                                                      "not enforced: no peak known for this CPU")),
        RuleCheck(15, "context recorded", E, "machine and tool versions in the verdict"),
        RuleCheck(16, "never timed under the profiler", E, "timing runs have no profiler attached"),
        RuleCheck(17, "isolated subprocesses", E if network and fenced else P,
                  "timeout, CPU/file-size" + ("" if gpu else "/address-space") + " limits, scratch dir, scrubbed env"
                  + ("; writes only to its own directories (Landlock)" if fenced
                     else "; filesystem NOT isolated: no Landlock in this kernel, tampering only detected")
                  + ("; no network (namespace)" if network else "; network NOT isolated: no namespace available")),
        RuleCheck(18, "launch errors checked", E if gpu else NA,
                  "cudaGetLastError + synchronise after every call" if gpu else "no device launches on the CPU"),
        RuleCheck(19, "counter improvements count only with correct output and no regression", NA,
                  "verdicts judge outputs and time; counter deltas are reported by `perfforge profile`"),
    ]
    if served:
        interpreted = task.language == "python"
        if interpreted and gpu:
            rules[5] = RuleCheck(6, "inputs unchanged", P, "on the CPU every input compared bit for bit; on a GPU the "
                                 "inputs are staged to the device and not read back (an interpreted process could "
                                 "restore them): a kernel that writes them is caught only through wrong outputs")
        if interpreted:
            rules[7] = RuleCheck(8, "precision downgrades flagged, output dtype matches", P,
                                 "static check of the source + dtype of every output (no object to read)")
        return rules + _adversary_rules(filtered, ipc, fenced, target_spec(task.target).binary_policy, gpu,
                                        interpreted=interpreted, pcs_sampled=pcs_sampled, fp_probes=fp_probes)
    return rules + [RuleCheck(n, title, N, f"not yet for {task.target}: the harness draws, times and checks inside "
                              "the candidate's process (docs/validation.md)") for n, title in ADVERSARY_RULES]


def _interpreted_adversary_rules(filtered: bool | None, fence: RuleStatus, gpu: bool) -> list[RuleCheck]:
    """Rules 20-25 for a Python (Triton) candidate, whose interpreter can rewrite its own harness."""
    E, P, N = RuleStatus.ENFORCED, RuleStatus.PARTLY, RuleStatus.NOT_ENFORCED
    return [
        RuleCheck(20, ADVERSARY_RULES[0][1], E, "this process draws, times (its own clock, the kernel process stopped "
                  "between round trips) and reads outputs from its own mapping; nothing the interpreter says is "
                  "evidence" + ("; inputs staged and outputs fetched in judge-timed round trips of their own, the L2 "
                                "flushed from a process of the judge's, the call timed whole; work moved into the "
                                "staging or left running refused by comparing both sides and the original alone" if gpu
                                else "")),
        RuleCheck(21, ADVERSARY_RULES[1][1], E, "inputs from the judge's generator under a secret key; every "
                  "correctness call checked, a sample of every timed call's outputs and all of a share picked after "
                  "the call"),
        RuleCheck(22, ADVERSARY_RULES[2][1], N, "an interpreter has no object to read: source checks only; a process "
                  "that is not alone after its set-up is refused"),
        RuleCheck(23, ADVERSARY_RULES[3][1], fence, ", ".join([
            "system-call filter (seccomp, in before the candidate's module is imported; on a GPU completed after a "
            "warm-up call, where Triton compiles): no new process, exec, executable mapping, io_uring, signal to "
            "another process or setting of the clocks" if filtered else "system-call filter NOT installed",
            "reads fenced to its build, the runtime and the interpreter's libraries",
            "every process it started killed when the verdict ends"])),
        RuleCheck(24, ADVERSARY_RULES[4][1], P if gpu else E, "edge values in every other correctness call; inputs "
                  + ("staged to the device, not read back" if gpu else "compared byte for byte after every compared "
                     "call")),
        RuleCheck(25, ADVERSARY_RULES[5][1], E, "an exit, signal, hang or message out of turn ends the verdict with "
                  "its reason"),
    ]


ADVERSARY_RULES = ((20, "the judge outside the candidate's process"), (21, "fresh inputs, nothing to learn of checks"),
                   (22, "binary policy"), (23, "each run fenced"), (24, "inputs checked bitwise, edge values"),
                   (25, "every deviation a failing verdict"))


def _adversary_rules(filtered: bool | None, ipc: bool, fenced: bool, policy: bool,
                     gpu: bool = False, *, interpreted: bool = False,
                     pcs_sampled: int | None = None, fp_probes: int | None = None) -> list[RuleCheck]:
    E, P, N = RuleStatus.ENFORCED, RuleStatus.PARTLY, RuleStatus.NOT_ENFORCED
    fence = E if filtered and ipc and fenced else P
    if interpreted:
        return _interpreted_adversary_rules(filtered, fence, gpu)
    return [
        RuleCheck(20, ADVERSARY_RULES[0][1], E, "this process draws, times (its own clock, the kernel process stopped "
                  "between calls) and reads outputs from its own mapping of the shared memory" + (
                      "; the device's time from the harness's 'start' to 'synced', the whole call too, and work moved "
                      "outside that window refused by comparing both sides" if gpu else "")),
        RuleCheck(21, ADVERSARY_RULES[1][1], E, "inputs from the judge's generator, seeded by a keyed hash under a "
                  "secret key no fenced process can read; every correctness call checked, and every timed one or, "
                  f"above {TIMED_CHECK_ALL_BYTES >> 20} MiB of outputs, a share picked after the call"),
        RuleCheck(22, ADVERSARY_RULES[2][1], E if policy else N,
                  "defined symbols (GNU-unique and start-up hooks included), imports allow-list, no constructors"
                  + (" but nvcc's registration (which may call only the runtime's registration)" if gpu else "") +
                  ", no syscall instruction in the disassembly (a first filter: bytes hidden in other instructions "
                  "meet the system-call filter), no half or bfloat16 precision" + (
                      " (host code, and the device's SASS: half, bfloat16, TF32 and fp8 instructions)" if gpu
                      else "") + ", no optimize switch" + (
                      "" if gpu else f"; at run time {pcs_sampled} program-counter samples read for library "
                      "routines it cannot import" if pcs_sampled is not None else
                      "; library routines run without an import NOT sampled (no perf events)") + (
                      "" if gpu else f"; its threads' floating-point modes read mid-call {fp_probes} times"
                      if fp_probes is not None else "; floating-point modes mid-call NOT read (no ptrace)")
                  if policy else
                  "not for this target yet: source checks only; at run time the filter refuses new threads and "
                  "executable mappings"),
        RuleCheck(23, ADVERSARY_RULES[3][1], fence, ", ".join([
            "system-call filter (seccomp): no file, socket, process, IPC or scheduling call" if filtered
            else "system-call filter NOT installed (no seccomp for this build or kernel)",
            "own IPC namespace and /dev/shm" if ipc else "IPC namespace or private /dev/shm NOT available",
            "compiler reads only its build directory and the system's" if fenced else "reads NOT fenced",
            "every process it started killed when the verdict ends"])),
        RuleCheck(24, ADVERSARY_RULES[4][1], E, "inputs compared byte for byte with the judge's private copy after "
                  "every compared call; zeros, ties, subnormals and the range's ends in every other correctness call"),
        RuleCheck(25, ADVERSARY_RULES[5][1], E, "an exit, signal, hang or message out of turn ends the verdict with "
                  "its reason"),
    ]
