"""Diagnoses of CUDA (and Triton) kernels profiled with Nsight Compute.

Each rule reads the ncu metrics named in profiling/cuda/metrics.py (their meaning and unit are documented there)
and the thresholds of thresholds/cuda.toml. Severity is in [0, 1]: roughly the share of the kernel's time the
problem explains, weighted by how busy the unit it hurts is. Problems that name a cause (bank conflicts, atomics,
divergence, spills, occupancy, launches, cache re-reads, unfused element-wise chains, narrow loads, redundant
stencil loads, barrier waits, threads idle after one load) can reach 1; the three regime diagnoses (dram_bound,
compute_bound, latency_bound) describe where a kernel sits, not what to fix, and stay at or below 0.6 so that a
cause outranks its symptom.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from perfforge.records import Diagnosis, Finding, HotLine, Profile
from perfforge.targets import profiled_with
from profiling.cuda import launches as ln
from profiling.cuda import metrics as m
from profiling.diagnoses.registry import Rule, Threshold, finding, make_diagnosis, register

# The rules read ncu metrics: they apply to every target ncu profiles (cuda and triton; perfforge/targets.py).
TARGETS = profiled_with("ncu")
REGIME_WEIGHT = 0.6  # the most a regime diagnosis (dram/compute/latency bound) weighs
SYMPTOM_WEIGHT = 0.5  # a diagnosis that is the symptom of another one's cause weighs at most half
# warp states of a warp waiting on a global load: its data (long_scoreboard) or room in the L1's request queue
# (lg_throttle); on the global memory path at all, also its stores leaving before it exits (drain: 47% of the
# naive transpose's samples, whose stores are the uncoalesced side)
GLOBAL_LOAD_STALLS = ("long_scoreboard", "lg_throttle")
GLOBAL_WAIT_STALLS = (*GLOBAL_LOAD_STALLS, "drain")
# warp states of a warp waiting on the shared-memory pipe: room in the MIO queue that feeds it (mio_throttle) or a
# shared load's result (short_scoreboard, which special-function results share)
SHARED_WAIT_STALLS = ("mio_throttle", "short_scoreboard")
# warp state of a warp waiting at a block barrier (__syncthreads) for its block's other warps
BARRIER_STALLS = ("barrier",)
Check = Callable[[Profile, dict[str, Threshold]], Diagnosis | None]


def _threshold(thresholds: dict[str, Threshold], name: str) -> Threshold:
    """The named threshold of the target (triton's spec names cuda.toml: perfforge/targets.py)."""
    return thresholds[name]


def _value(profile: Profile, metric: str) -> float:
    return profile.counter(metric) or 0.0


def _ratio(numerator: float, denominator: float) -> float:
    return numerator / denominator if denominator > 0 else 0.0


def _stall_share(profile: Profile, reasons: tuple[str, ...]) -> float:
    """The share of the sampled warp states in any of the reasons (0 when none was sampled in them)."""
    return min(1.0, sum(s.share for s in profile.stalls if s.reason in reasons))


def _lines(profile: Profile, metric: str, top: int = 3) -> list[int]:
    """Hot lines carrying the per-line metric, largest first."""
    carrying = [h for h in profile.hot_lines if (h.metric(metric) or 0.0) > 0]
    return [h.line for h in sorted(carrying, key=lambda h: -(h.metric(metric) or 0.0))[:top]]


def _lines_where(profile: Profile, keep: Callable[[HotLine], bool], top: int = 3) -> list[int]:
    return [h.line for h in profile.hot_lines if keep(h)][:top]


def _memory_stall_lines(profile: Profile) -> list[int]:
    """Hot lines whose warps mostly wait on global memory (a load's result, or the load/store queue)."""
    return _lines_where(profile, lambda h: h.dominant_stall in GLOBAL_LOAD_STALLS)


def _rule(name: str, counters: tuple[str, ...], thresholds: tuple[str, ...], hint: str,
          requires: tuple[str, ...] | None = None) -> Callable[[Check], Check]:
    """requires: the counters the rule decides on (default: the first it reads); without one it is not run."""
    def wrap(check: Check) -> Check:
        register(Rule(name=name, targets=TARGETS, counters=counters, thresholds=thresholds, hint=hint, check=check,
                      requires=counters[:1] if requires is None else requires))
        return check
    return wrap


@_rule("shared_memory_bank_conflicts", (m.SHARED_BANK_CONFLICTS, m.SHARED_WAVEFRONTS, m.L1_THROUGHPUT_PCT),
       ("bank_conflict_share",),
       "pad shared-memory rows by one element (or swizzle) so a warp's accesses fall in 32 different banks",
       requires=(m.SHARED_BANK_CONFLICTS, m.SHARED_WAVEFRONTS))
def bank_conflicts(profile: Profile, th: dict[str, Threshold]) -> Diagnosis | None:
    share = _ratio(_value(profile, m.SHARED_BANK_CONFLICTS), _value(profile, m.SHARED_WAVEFRONTS))
    limit = _threshold(th, "bank_conflict_share")
    if share <= limit.value:
        return None
    l1_busy = max(_value(profile, m.L1_THROUGHPUT_PCT), _value(profile, m.MEMORY_THROUGHPUT_PCT)) / 100
    lines = _lines(profile, "shared_excessive_wavefronts")
    return make_diagnosis("shared_memory_bank_conflicts", min(1.0, share) * l1_busy,
                          [finding("bank_conflicts_per_shared_wavefront", share, limit, ">", lines)])


@_rule("shared_memory_bound", (m.L1_THROUGHPUT_PCT, m.SHARED_WAVEFRONTS, m.SHARED_EXCESSIVE_WAVEFRONTS),
       ("shared_wait_share", "cache_bound_pct", "bank_conflict_share"),
       "compute several results per thread from values held in registers (register tiling: each shared load feeds "
       "several FMAs), and load shared memory in wider words",
       requires=(m.L1_THROUGHPUT_PCT, m.SHARED_WAVEFRONTS))
def shared_memory_bound(profile: Profile, th: dict[str, Threshold]) -> Diagnosis | None:
    """Conflict-free shared memory that is still the bound: the L1/shared unit near its peak and the warps waiting
    on it, because each thread issues about one shared load per result (SGEMM_CUDA's shared-memory-blocked kernel:
    mio_throttle 54% of the samples, L1 93%). Bank conflicts (excess wavefronts) are the other rule's."""
    if not profile.stalls:
        return None
    waiting = min(1.0, sum(s.share for s in profile.stalls if s.reason in SHARED_WAIT_STALLS))
    l1_busy = _value(profile, m.L1_THROUGHPUT_PCT)
    conflicts = _ratio(_value(profile, m.SHARED_EXCESSIVE_WAVEFRONTS), _value(profile, m.SHARED_WAVEFRONTS))
    wait_limit, busy_limit = _threshold(th, "shared_wait_share"), _threshold(th, "cache_bound_pct")
    conflicted = conflicts > _threshold(th, "bank_conflict_share").value
    if waiting < wait_limit.value or l1_busy < busy_limit.value or conflicted:
        return None
    findings = [finding("shared_pipe_wait_share", waiting, wait_limit, ">="),
                finding(m.L1_THROUGHPUT_PCT, l1_busy, busy_limit, ">=")]
    findings[0].lines = _lines_where(profile, lambda h: h.dominant_stall in SHARED_WAIT_STALLS)
    extra = [f"{waiting:.0%} of sampled warp states wait on the shared-memory pipe ({', '.join(SHARED_WAIT_STALLS)}), "
             f"{conflicts:.0%} of its wavefronts are bank-conflict excess"]
    # Recoverable time: the share of the warps' time spent waiting on the pipe, while it is the busy unit
    return make_diagnosis("shared_memory_bound", waiting * l1_busy / 100, findings, extra)


def _per_warp(profile: Profile, metric: str) -> float | None:
    """The metric (warp-level requests) per warp the launch ran (grid x warps per block); None where the launch's
    size or the metric was not measured."""
    count, grid, block = (profile.counter(name) for name in (metric, m.GRID_SIZE, m.BLOCK_SIZE))
    if count is None or grid is None or block is None or grid <= 0 or block <= 0:
        return None
    return count / (grid * -(-block // 32))


def _loads_per_warp(profile: Profile) -> float | None:
    """Warp-level global load requests per warp launched."""
    return _per_warp(profile, m.GLOBAL_LD_REQUESTS)


def _one_load_then_barriers(profile: Profile, th: dict[str, Threshold]) -> bool:
    """idle_threads' condition: each warp issues at most idle_loads_per_warp global load requests in its life, then
    waits at block barriers for at least barrier_wait_share of the samples (a block-wide tree over one element a
    thread: a reduction or scan whose first step already leaves half the threads idle)."""
    per_warp = _loads_per_warp(profile)
    return (per_warp is not None and 0 < per_warp <= _threshold(th, "idle_loads_per_warp").value
            and _stall_share(profile, BARRIER_STALLS) >= _threshold(th, "barrier_wait_share").value)


@_rule("barrier_stalls", (m.PC_SAMPLE_COUNT, m.GLOBAL_LD_REQUESTS, m.GRID_SIZE, m.BLOCK_SIZE),
       ("barrier_wait_share", "idle_loads_per_warp"),
       "synchronise less: finish the last steps of a block reduction inside one warp (warp shuffles, no "
       "__syncthreads), or give each barrier more work between them",
       requires=(m.PC_SAMPLE_COUNT,))
def barrier_stalls(profile: Profile, th: dict[str, Threshold]) -> Diagnosis | None:
    """Warps waiting at block barriers: a shared-memory tree reduction with a __syncthreads after every halving
    step, down to one thread (How_to_optimize_in_GPU's reduce v3 on the H100: 15% of the samples at the barrier,
    SM 70%, nothing else firing; its next version finishes the last warp without barriers)."""
    if not profile.stalls:
        return None
    share, limit = _stall_share(profile, BARRIER_STALLS), _threshold(th, "barrier_wait_share")
    if share < limit.value:
        return None
    findings = [finding("barrier_wait_share", share, limit, ">=")]
    findings[0].lines = _lines_where(profile, lambda h: h.dominant_stall in BARRIER_STALLS)
    extra = [f"{share:.0%} of sampled warp states wait at a block barrier for the block's other warps"]
    # Recoverable time: the warps' share of time at the barrier (ncu's estimate of a stall reason's local speedup)
    severity = share
    if _one_load_then_barriers(profile, th):
        severity *= SYMPTOM_WEIGHT
        extra.append("each warp loads once, then the block's tree halves its active threads at every barrier: the "
                     "barriers are the symptom of too little work per thread (see idle_threads)")
    return make_diagnosis("barrier_stalls", severity, findings, extra)


@_rule("idle_threads", (m.GLOBAL_LD_REQUESTS, m.GRID_SIZE, m.BLOCK_SIZE, m.PC_SAMPLE_COUNT),
       ("idle_loads_per_warp", "barrier_wait_share"),
       "give each thread several elements: accumulate them in a register while loading (a grid-stride loop), "
       "launch fewer blocks, then reduce across the block once",
       requires=(m.GLOBAL_LD_REQUESTS, m.GRID_SIZE, m.BLOCK_SIZE, m.PC_SAMPLE_COUNT))
def idle_threads(profile: Profile, th: dict[str, Threshold]) -> Diagnosis | None:
    """A thread per element before a block-wide tree: each warp issues one global load in its life, then the block
    reduces through shared memory with a barrier per step, the active threads halving each time (How_to_optimize_in
    _GPU's reduce v2 on the H100: 1.0 load request a warp, 15% of the samples at barriers; its next version adds two
    elements a thread while loading, with half the blocks). Elementwise kernels also load once a warp but do not
    wait at barriers."""
    if not profile.stalls or not _one_load_then_barriers(profile, th):
        return None
    per_warp = _loads_per_warp(profile) or 0.0
    share = _stall_share(profile, BARRIER_STALLS)
    loads, barrier = _threshold(th, "idle_loads_per_warp"), _threshold(th, "barrier_wait_share")
    findings = [finding("global_load_requests_per_warp", per_warp, loads, "<="),
                finding("barrier_wait_share", share, barrier, ">=")]
    extra = [f"{per_warp:.2f} global load requests per warp launched ({m.GLOBAL_LD_REQUESTS} over "
             f"{m.GRID_SIZE} x warps per block): every warp's life is one load and the tree after it"]
    # Recoverable time: the barrier waits of the tree, which several elements per thread divide among as many
    # elements (the loads then keep the threads busy that the tree leaves idle)
    return make_diagnosis("idle_threads", share, findings, extra)


@_rule("uncoalesced_global_access", (m.GLOBAL_EXCESSIVE_SECTORS, m.GLOBAL_LD_SECTORS, m.GLOBAL_ST_SECTORS,
                                     m.GLOBAL_LD_BYTES_PER_SECTOR, m.GLOBAL_ST_BYTES_PER_SECTOR),
       ("uncoalesced_sector_share",),
       "make consecutive threads touch consecutive addresses (stage through shared memory to transpose the access)",
       requires=(m.GLOBAL_EXCESSIVE_SECTORS, m.GLOBAL_LD_SECTORS))
def uncoalesced(profile: Profile, th: dict[str, Threshold]) -> Diagnosis | None:
    share = _excess_sector_share(profile)
    limit = _threshold(th, "uncoalesced_sector_share")
    if share <= limit.value:
        return None
    extra = [f"{name} = {profile.counter(metric):.3g} byte/sector (32 when coalesced)"
             for name, metric in (("loads", m.GLOBAL_LD_BYTES_PER_SECTOR), ("stores", m.GLOBAL_ST_BYTES_PER_SECTOR))
             if profile.counter(metric) is not None]
    # Recoverable time, of which the excess sectors are the wasted part: the larger of the memory units' busy share
    # and the share of sampled warp states waiting on global memory. Busy alone under-weighed the one-thread-per-row
    # kernels of the external set (memory 18-31% busy while 96% of the samples wait on loads and 7 of 8 bytes of
    # each sector go unused): the fix ranked behind its own symptoms.
    waiting = _global_wait_share(profile)
    if waiting is not None:
        extra.append(f"{waiting:.0%} of sampled warp states wait on global memory ({', '.join(GLOBAL_WAIT_STALLS)})")
    weight = max(_value(profile, m.MEMORY_THROUGHPUT_PCT) / 100, waiting or 0.0)
    lines = _lines(profile, "global_excessive_sectors")
    return make_diagnosis("uncoalesced_global_access", min(1.0, share) * weight,
                          [finding("excess_sectors_per_global_sector", share, limit, ">", lines)], extra)


def _global_wait_share(profile: Profile) -> float | None:
    """The share of sampled warp states waiting on global memory; None when no stalls were sampled."""
    if not profile.stalls:
        return None
    return min(1.0, sum(s.share for s in profile.stalls if s.reason in GLOBAL_WAIT_STALLS))


@_rule("atomic_contention", (m.L2_ATOM_SECTORS, m.L2_RED_SECTORS, m.GLOBAL_ATOM_REQUESTS, m.GLOBAL_RED_REQUESTS,
                             m.SM_THROUGHPUT_PCT, m.MEMORY_THROUGHPUT_PCT), ("atomic_ops_per_request",),
       "reduce in registers and shared memory first (warp shuffles, block reduction), then one atomic per block",
       requires=(m.L2_ATOM_SECTORS, m.GLOBAL_ATOM_REQUESTS))
def atomic_contention(profile: Profile, th: dict[str, Threshold]) -> Diagnosis | None:
    requests = _value(profile, m.GLOBAL_ATOM_REQUESTS) + _value(profile, m.GLOBAL_RED_REQUESTS)
    ops_per_request = _ratio(_value(profile, m.L2_ATOM_SECTORS) + _value(profile, m.L2_RED_SECTORS), requests)
    limit = _threshold(th, "atomic_ops_per_request")
    if ops_per_request <= limit.value:
        return None
    idle = 1 - max(_value(profile, m.SM_THROUGHPUT_PCT), _value(profile, m.MEMORY_THROUGHPUT_PCT)) / 100
    lines = _lines_where(profile, lambda h: "atomic" in h.code.lower())
    return make_diagnosis("atomic_contention", min(1.0, ops_per_request / 32) * idle,
                          [finding("l2_atomic_ops_per_request", ops_per_request, limit, ">", lines)])


def occupancy_limit_text(profile: Profile, theoretical_pct: float, th: dict[str, Threshold]) -> str:
    """Which limit holds occupancy down: a launch resource, or a grid too small to fill the SMs."""
    if theoretical_pct <= _threshold(th, "achieved_occupancy_pct").value:
        limits = {name: profile.counter(metric) for name, metric in m.OCCUPANCY_LIMITS.items()
                  if profile.counter(metric) is not None}
        name = min(limits, key=lambda key: limits[key])
        return (f"limited by {name}: {limits[name]:.0f} block(s) per SM ({m.OCCUPANCY_LIMITS[name]}), "
                f"theoretical occupancy {theoretical_pct:.1f}%")
    waves = _value(profile, m.WAVES_PER_SM)
    if waves < 1:
        return f"grid too small: {waves:.2f} waves of blocks across the SMs ({m.WAVES_PER_SM})"
    return f"theoretical occupancy {theoretical_pct:.1f}%: warps finish unevenly (tail or imbalance)"


@_rule("low_occupancy", (m.ACHIEVED_OCCUPANCY_PCT, m.THEORETICAL_OCCUPANCY_PCT, *m.OCCUPANCY_LIMITS.values(),
                         m.WAVES_PER_SM, m.ISSUE_ACTIVE_PCT), ("achieved_occupancy_pct",),
       "raise resident warps: smaller shared-memory or register footprint per block, more threads or more blocks")
def low_occupancy(profile: Profile, th: dict[str, Threshold]) -> Diagnosis | None:
    achieved = profile.counter(m.ACHIEVED_OCCUPANCY_PCT)
    limit = _threshold(th, "achieved_occupancy_pct")
    if achieved is None or achieved >= limit.value:
        return None
    theoretical = _value(profile, m.THEORETICAL_OCCUPANCY_PCT)
    idle_issue = 1 - _value(profile, m.ISSUE_ACTIVE_PCT) / 100
    extra = [occupancy_limit_text(profile, theoretical, th)]
    severity = (1 - achieved / limit.value) * idle_issue
    if _many_short_launches(profile, th):
        severity *= SYMPTOM_WEIGHT
        extra.append("one of many short launches per call: its occupancy is its size (see launch_overhead)")
    elif _small_grid_of_uncoalesced_threads(profile, th, theoretical):
        severity *= SYMPTOM_WEIGHT
        extra.append("a grid too small to fill the GPU, whose threads each walk memory uncoalesced: often one thread "
                     "per row, where a warp per row both coalesces the loads and fills the GPU (see "
                     "uncoalesced_global_access)")
    return make_diagnosis("low_occupancy", severity, [finding(m.ACHIEVED_OCCUPANCY_PCT, achieved, limit, "<")], extra)


def _small_grid_of_uncoalesced_threads(profile: Profile, th: dict[str, Threshold], theoretical_pct: float) -> bool:
    """Low occupancy because the grid is small (not a launch resource), in a kernel whose global accesses are
    uncoalesced (uncoalesced_global_access's condition): the symptom of per-thread serial work over rows (a
    softmax with one thread per row, issue 20), whose cause the uncoalesced diagnosis names."""
    if theoretical_pct <= _threshold(th, "achieved_occupancy_pct").value:
        return False  # a resource limit holds occupancy down, not the grid
    waves = profile.counter(m.WAVES_PER_SM)
    if waves is None or waves >= 1:
        return False
    return _uncoalesced(profile, th)


def _uncoalesced(profile: Profile, th: dict[str, Threshold]) -> bool:
    """uncoalesced_global_access's condition."""
    return _excess_sector_share(profile) > _threshold(th, "uncoalesced_sector_share").value


def _excess_sector_share(profile: Profile) -> float:
    """The share of the global load and store sectors that are excess (more than a coalesced access needs)."""
    sectors = _value(profile, m.GLOBAL_LD_SECTORS) + _value(profile, m.GLOBAL_ST_SECTORS)
    return _ratio(_value(profile, m.GLOBAL_EXCESSIVE_SECTORS), sectors)


def _many_short_launches(profile: Profile, th: dict[str, Threshold]) -> bool:
    """launch_overhead's condition. The launches of such a call are tiny (one row each, measured 6% occupancy
    on the H100), so their low occupancy is their size, not a resource limit: launch_overhead names the cause,
    and low occupancy is weighed as its symptom (SYMPTOM_WEIGHT)."""
    launches, mean_us = profile.counter(ln.LAUNCHES_PER_CALL), profile.counter(ln.MEAN_LAUNCH_DURATION_US)
    return (launches is not None and mean_us is not None and launches >= _threshold(th, "launches_per_call").value
            and mean_us < _threshold(th, "short_launch_us").value)


@_rule("register_spills", (m.SPILL_REQUESTS, m.LOCAL_LD_SECTORS, m.LOCAL_ST_SECTORS, m.GLOBAL_LD_SECTORS,
                           m.GLOBAL_ST_SECTORS, m.REGISTERS_PER_THREAD), ("spill_local_share",),
       "give the compiler registers back (looser __launch_bounds__ or -maxrregcount) or shrink per-thread arrays",
       requires=(m.SPILL_REQUESTS,))
def register_spills(profile: Profile, th: dict[str, Threshold]) -> Diagnosis | None:
    if _value(profile, m.SPILL_REQUESTS) <= 0:
        return None
    local = _value(profile, m.LOCAL_LD_SECTORS) + _value(profile, m.LOCAL_ST_SECTORS)
    share = _ratio(local, local + _value(profile, m.GLOBAL_LD_SECTORS) + _value(profile, m.GLOBAL_ST_SECTORS))
    limit = _threshold(th, "spill_local_share")
    if share <= limit.value:
        return None
    busy = max(_value(profile, m.MEMORY_THROUGHPUT_PCT), _value(profile, m.L1_THROUGHPUT_PCT)) / 100
    extra = [f"{m.SPILL_REQUESTS} = {_value(profile, m.SPILL_REQUESTS):.4g} requests; "
             f"{m.REGISTERS_PER_THREAD} = {_value(profile, m.REGISTERS_PER_THREAD):.0f}"]
    return make_diagnosis("register_spills", share * busy, [finding("local_sectors_share", share, limit, ">")], extra)


# A branch condition on the thread index modulo a stride, or masked by an expression: `if (tid % (2*s) == 0)`,
# `if ((threadIdx.x & (2*s - 1)) == 0)`. Whatever the divisor past 1, lanes of one warp disagree (tid % k == 0 holds
# for one lane in k), so the branch splits every warp it runs in.
LANE_SPLIT_RE = re.compile(r"\bif\s*\(.*\b(?:threadIdx\.[xyz]|tid|thread_rank\(\))\s*(?:%|&\s*\()")


def _lane_split_lines(profile: Profile, th: dict[str, Threshold]) -> list[HotLine]:
    """Hot lines whose branch condition splits warps by thread index (LANE_SPLIT_RE), holding at least
    source_line_share of the samples; the statement each guards (the next line, where hot) follows it."""
    limit = _threshold(th, "source_line_share").value
    by_line = {h.line: h for h in profile.hot_lines}
    found: list[HotLine] = []
    for h in profile.hot_lines:
        if h.share >= limit and LANE_SPLIT_RE.search(h.code) and h not in found:
            found.append(h)
            guarded = by_line.get(h.line + 1)
            if guarded is not None and guarded not in found:
                found.append(guarded)
    return found


@_rule("branch_divergence", (m.THREADS_PER_INST, m.THREADS_PER_INST_PRED_ON, m.DIVERGENT_BRANCHES,
                             m.SM_THROUGHPUT_PCT, m.ISSUE_ACTIVE_PCT),
       ("threads_per_inst", "source_line_share"),
       "make branch conditions uniform per warp (remap work so a warp's lanes take the same path), or predicate")
def branch_divergence(profile: Profile, th: dict[str, Threshold]) -> Diagnosis | None:
    """Lanes of a warp taking different paths: measured (active threads per instruction under threads_per_inst),
    or read from a hot branch whose condition splits warps by thread index (the interleaved reduction's
    `tid % (2*s) == 0`, whose short body nvcc predicates: ncu then counts the predicated-off lanes as active and
    measures 31.9 threads per instruction on How_to_optimize_in_GPU's reduce v0, cuda-samples' reduce0 and
    CoffeeBeforeArch's diverged sum, all on an H200)."""
    threads = profile.counter(m.THREADS_PER_INST)
    limit = _threshold(th, "threads_per_inst")
    busy = max(_value(profile, m.SM_THROUGHPUT_PCT), _value(profile, m.ISSUE_ACTIVE_PCT)) / 100
    findings: list[Finding] = []
    extra: list[str] = []
    severity = 0.0
    if threads is not None and threads < limit.value:
        # Recoverable time: the idle lanes' share of the issued work, while the SM is busy issuing it
        severity = min(1.0, 2 * (1 - threads / 32)) * busy
        findings.append(finding(m.THREADS_PER_INST, threads, limit, "<", _lines(profile, "divergent_branches")))
        extra.append(f"{m.DIVERGENT_BRANCHES} = {_value(profile, m.DIVERGENT_BRANCHES):.4g}")
    split = _lane_split_lines(profile, th)
    if split:
        share = min(1.0, sum(h.share for h in split))
        # Recoverable time: the samples on the splitting branch and the statement it guards, which the fix (the
        # active lanes packed into whole warps) runs in fewer, full warps, while the SM is busy issuing them
        severity = max(severity, share * busy)
        findings.append(finding("source_line_share", share, _threshold(th, "source_line_share"), ">=",
                                [h.line for h in split]))
        pred_on = profile.counter(m.THREADS_PER_INST_PRED_ON)
        measured = (f"; ncu counts predicated-off lanes as active ({threads:.4g} threads per instruction, "
                    f"{pred_on:.4g} not predicated off)" if threads is not None and pred_on is not None else "")
        extra.append(f"line {split[0].line} (`{split[0].code.strip()}`) branches on the thread index modulo a "
                     f"stride: lanes of one warp take different paths{measured}")
    if not findings:
        return None
    return make_diagnosis("branch_divergence", severity, findings, extra)


# A compound assignment to an element through an index: `c[row * N + col] += a[...] * b[...]`, or the same written
# out (`c[i] = c[i] + ...`); and the loop variable of a `for` line.
ACCUMULATE_RE = re.compile(r"^\s*(\w+)\s*\[([^\]]+)\]\s*"
                           r"(?:(?:[-+*/|&^]|<<|>>)=(?!=)|=\s*\1\s*\[\s*\2\s*\]\s*[-+*/|&^])")
FOR_VARIABLE_RE = re.compile(r"^\s*for\s*\(\s*(?:[\w:<>]+\s+)*(\w+)\s*=")


def _global_accumulator_lines(profile: Profile, th: dict[str, Threshold]) -> list[HotLine]:
    """Hot lines (at least source_line_share of the samples) that touch global memory and update an element whose
    index does not name the variable of the nearest `for` line above them: the same address loaded and stored at
    every step of the loop."""
    limit = _threshold(th, "source_line_share").value
    loops = sorted((h.line, match.group(1)) for h in profile.hot_lines if (match := FOR_VARIABLE_RE.match(h.code)))
    found = []
    for h in profile.hot_lines:
        update = ACCUMULATE_RE.match(h.code)
        if h.share < limit or update is None or not (h.metric("global_sectors") or 0) > 0:
            continue
        above = [variable for line, variable in loops if line < h.line]
        if above and not re.search(rf"\b{re.escape(above[-1])}\b", update.group(2)):
            found.append(h)
    return found


@_rule("accumulator_in_global_memory", (m.GLOBAL_ST_REQUESTS, m.GLOBAL_LD_REQUESTS, m.GRID_SIZE, m.BLOCK_SIZE),
       ("source_line_share", "accumulator_stores_per_warp"),
       "accumulate in a local variable (a register) and store the result once after the loop; __restrict__ "
       "pointers let the compiler keep it in a register itself",
       requires=(m.GLOBAL_ST_REQUESTS, m.GLOBAL_LD_REQUESTS, m.GRID_SIZE, m.BLOCK_SIZE))
def accumulator_in_global_memory(profile: Profile, th: dict[str, Threshold]) -> Diagnosis | None:
    """A thread's running sum kept in its output element in global memory: loaded and stored at every step of its
    loop, because the compiler must assume the output may alias the inputs (CoffeeBeforeArch's baseline matmul on
    an H200: 99% of the samples on `c[row * N + col] += a[row * N + k] * b[k * N + col]`, 1025 stores a warp; its
    next version sums into a local `tmp` and stores once). The CUDA counterpart of the CPU's accumulator_in_memory."""
    stores, loads = _value(profile, m.GLOBAL_ST_REQUESTS), _value(profile, m.GLOBAL_LD_REQUESTS)
    per_warp, limit = _per_warp(profile, m.GLOBAL_ST_REQUESTS) or 0.0, _threshold(th, "accumulator_stores_per_warp")
    if per_warp < limit.value:
        return None
    lines = _global_accumulator_lines(profile, th)
    if not lines:
        return None
    share = min(1.0, sum(h.share for h in lines))
    findings = [finding("global_store_requests_per_warp", per_warp, limit, ">=", [h.line for h in lines]),
                finding("source_line_share", share, _threshold(th, "source_line_share"), ">=",
                        [h.line for h in lines])]
    extra = [f"line {lines[0].line} (`{lines[0].code.strip()}`) updates an element whose index does not change in "
             "its loop: a global load and store of the same address at every step"]
    # Recoverable time: the samples on the line times the share of the kernel's global accesses that are the
    # accumulator's reload and store (one of each per store), which a register removes
    return make_diagnosis("accumulator_in_global_memory", share * min(1.0, _ratio(2 * stores, stores + loads)),
                          findings, extra)


def _roofline_text(profile: Profile) -> list[str]:
    r = profile.roofline
    if r is None:
        return []
    return [f"achieved {r.achieved_gbyte_per_s:.0f} GB/s of {r.peak_gbyte_per_s:.0f} GB/s, "
            f"{r.achieved_gflop_per_s:.0f} GFLOP/s of {r.peak_gflop_per_s:.0f} GFLOP/s "
            f"(intensity {r.arithmetic_intensity_flop_per_byte:.3g} FLOP/byte)"]


@_rule("dram_bound", (m.DRAM_THROUGHPUT_PCT,), ("dram_bound_pct",),
       "move fewer bytes: fuse passes, use narrower types, keep reused data on chip")
def dram_bound(profile: Profile, th: dict[str, Threshold]) -> Diagnosis | None:
    dram = profile.counter(m.DRAM_THROUGHPUT_PCT)
    limit = _threshold(th, "dram_bound_pct")
    if dram is None or dram < limit.value:
        return None
    return make_diagnosis("dram_bound", REGIME_WEIGHT * dram / 100, [finding(m.DRAM_THROUGHPUT_PCT, dram, limit, ">=")],
                          _roofline_text(profile))


@_rule("compute_bound", (m.SM_THROUGHPUT_PCT, m.MEMORY_THROUGHPUT_PCT, m.FMA_PIPE_PCT), ("compute_bound_pct",),
       "do less arithmetic per result (fused multiply-adds, cheaper math, tensor cores for matrix work)",
       requires=(m.SM_THROUGHPUT_PCT, m.MEMORY_THROUGHPUT_PCT))
def compute_bound(profile: Profile, th: dict[str, Threshold]) -> Diagnosis | None:
    sm, memory = profile.counter(m.SM_THROUGHPUT_PCT), _value(profile, m.MEMORY_THROUGHPUT_PCT)
    limit = _threshold(th, "compute_bound_pct")
    if sm is None or sm < limit.value or sm < memory:
        return None
    return make_diagnosis("compute_bound", REGIME_WEIGHT * sm / 100 * 0.8,
                          [finding(m.SM_THROUGHPUT_PCT, sm, limit, ">=")], _roofline_text(profile))


@_rule("latency_bound", (m.SM_THROUGHPUT_PCT, m.MEMORY_THROUGHPUT_PCT), ("latency_bound_pct",),
       "put more independent work in flight: more warps, more loads per thread before first use, fewer barriers",
       requires=(m.SM_THROUGHPUT_PCT, m.MEMORY_THROUGHPUT_PCT))
def latency_bound(profile: Profile, th: dict[str, Threshold]) -> Diagnosis | None:
    sm, memory = profile.counter(m.SM_THROUGHPUT_PCT), profile.counter(m.MEMORY_THROUGHPUT_PCT)
    limit = _threshold(th, "latency_bound_pct")
    if sm is None or memory is None or max(sm, memory) >= limit.value:
        return None
    findings = [finding(m.SM_THROUGHPUT_PCT, sm, limit, "<"), finding(m.MEMORY_THROUGHPUT_PCT, memory, limit, "<")]
    top_stall = ([f"most sampled warp state: {profile.stalls[0].reason} ({profile.stalls[0].share:.0%})"]
                 if profile.stalls else [])
    return make_diagnosis("latency_bound", REGIME_WEIGHT * (1 - max(sm, memory) / limit.value), findings, top_stall)


@_rule("poor_cache_locality", (m.L1_THROUGHPUT_PCT, m.DRAM_THROUGHPUT_PCT, m.GLOBAL_LD_SECTORS, m.GLOBAL_ST_SECTORS,
                               m.SHARED_WAVEFRONTS, m.L1_HIT_RATE_PCT),
       ("cache_bound_pct", "cache_bound_dram_pct", "cache_bound_global_share"),
       "keep reused data in registers and shared memory (tiling) so each byte is fetched from the caches once",
       requires=(m.L1_THROUGHPUT_PCT, m.DRAM_THROUGHPUT_PCT))
def poor_cache_locality(profile: Profile, th: dict[str, Threshold]) -> Diagnosis | None:
    l1, dram = _value(profile, m.L1_THROUGHPUT_PCT), _value(profile, m.DRAM_THROUGHPUT_PCT)
    global_sectors = _value(profile, m.GLOBAL_LD_SECTORS) + _value(profile, m.GLOBAL_ST_SECTORS)
    global_share = _ratio(global_sectors, global_sectors + _value(profile, m.SHARED_WAVEFRONTS))
    busy, low_dram = _threshold(th, "cache_bound_pct"), _threshold(th, "cache_bound_dram_pct")
    share = _threshold(th, "cache_bound_global_share")
    if l1 < busy.value or dram >= low_dram.value or global_share < share.value:
        return None
    findings = [finding(m.L1_THROUGHPUT_PCT, l1, busy, ">="), finding(m.DRAM_THROUGHPUT_PCT, dram, low_dram, "<"),
                finding("global_share_of_l1_passes", global_share, share, ">=")]
    dram_bytes = profile.roofline.achieved_gbyte_per_s * profile.timing.median_ms * 1e6 if profile.roofline else 0
    extra = [f"{m.L1_HIT_RATE_PCT} = {_value(profile, m.L1_HIT_RATE_PCT):.1f} %"]
    if dram_bytes > 0:
        extra.append(f"about {32 * global_sectors / dram_bytes:.0f} bytes requested from L1 per DRAM byte")
    findings[0].lines = _memory_stall_lines(profile)
    severity = l1 / 100 * global_share * (1 - dram / 100)
    if _uncoalesced(profile, th):
        # the L1 busy re-serving the sectors each uncoalesced request wastes: the naive matmuls of SGEMM_CUDA (1)
        # and llm.c (matmul_forward 1), L1 97-99% busy, whose next versions coalesce (and stay L1-bound, which
        # their next fix, tiling, removes)
        severity *= SYMPTOM_WEIGHT
        extra.append("its global accesses are uncoalesced: the L1 is busy serving the sectors they waste (see "
                     "uncoalesced_global_access, the fix to make first)")
    return make_diagnosis("poor_cache_locality", severity, findings, extra)


@_rule("launch_overhead", (ln.LAUNCHES_PER_CALL, ln.MEAN_LAUNCH_DURATION_US), ("launches_per_call", "short_launch_us"),
       "fuse the small kernels into one launch (a block per row or a grid-stride loop), or capture a CUDA graph",
       requires=(ln.LAUNCHES_PER_CALL, ln.MEAN_LAUNCH_DURATION_US))
def launch_overhead(profile: Profile, th: dict[str, Threshold]) -> Diagnosis | None:
    if not _many_short_launches(profile, th):
        return None
    launches, mean_us = _value(profile, ln.LAUNCHES_PER_CALL), _value(profile, ln.MEAN_LAUNCH_DURATION_US)
    many, short = _threshold(th, "launches_per_call"), _threshold(th, "short_launch_us")
    findings: list[Finding] = [finding(ln.LAUNCHES_PER_CALL, launches, many, ">="),
                               finding(ln.MEAN_LAUNCH_DURATION_US, mean_us, short, "<")]
    extra = [f"{launches:.0f} launches per call of {profile.timing.median_ms:.3f} ms"]
    return make_diagnosis("launch_overhead", (1 - mean_us / short.value) * min(1.0, launches / many.value),
                          findings, extra)


@_rule("unfused_elementwise_chain", (ln.LAUNCHES_PER_CALL, ln.DISTINCT_KERNELS_PER_CALL, m.DRAM_THROUGHPUT_PCT),
       ("fusion_min_launches", "launches_per_call", "dram_bound_pct", "fusion_max_intensity"),
       "fuse the element-wise kernels into one that reads the inputs once and writes the result once",
       requires=(ln.LAUNCHES_PER_CALL, ln.DISTINCT_KERNELS_PER_CALL))
def unfused_elementwise_chain(profile: Profile, th: dict[str, Threshold]) -> Diagnosis | None:
    launches, dram = profile.counter(ln.LAUNCHES_PER_CALL), profile.counter(m.DRAM_THROUGHPUT_PCT)
    few, many = _threshold(th, "fusion_min_launches"), _threshold(th, "launches_per_call")
    busy, light = _threshold(th, "dram_bound_pct"), _threshold(th, "fusion_max_intensity")
    if launches is None or dram is None or not few.value <= launches < many.value or dram < busy.value:
        return None
    intensity = profile.roofline.arithmetic_intensity_flop_per_byte if profile.roofline else None
    if intensity is not None and intensity > light.value:
        return None
    findings = [finding(ln.LAUNCHES_PER_CALL, launches, few, ">="), finding(m.DRAM_THROUGHPUT_PCT, dram, busy, ">=")]
    if intensity is not None:
        findings.append(finding("arithmetic_intensity_flop_per_byte", intensity, light, "<="))
    kernels = profile.counter(ln.DISTINCT_KERNELS_PER_CALL)
    extra = [f"{launches:.0f} launches per call" + (f" of {kernels:.0f} different kernels" if kernels else "")
             + ", each streaming its operands through DRAM"]
    # A cause, so it outranks the dram_bound regime it produces: half for being a DRAM-bound chain at all, the
    # other half growing with the share of the traffic fusion removes ((k - 1) / k of k passes).
    severity = min(1.0, dram / busy.value) * (0.5 + 0.5 * (1 - 1 / launches))
    return make_diagnosis("unfused_elementwise_chain", severity, findings, extra + _roofline_text(profile))


@_rule("scalar_global_loads", (m.GLOBAL_LD_REQUESTS, m.GLOBAL_LD_SECTORS, m.GLOBAL_LD_BYTES_PER_SECTOR,
                               m.DRAM_THROUGHPUT_PCT, m.FMA_PIPE_PCT, m.SM_THROUGHPUT_PCT),
       ("load_sectors_per_request", "scalar_load_bytes_per_sector", "dram_bound_pct", "compute_bound_pct"),
       "load wider words per thread (uchar4/uint4, half2/float4 or __ldg of a vector type) and unpack in registers",
       requires=(m.GLOBAL_LD_REQUESTS, m.GLOBAL_LD_SECTORS))
def scalar_global_loads(profile: Profile, th: dict[str, Threshold]) -> Diagnosis | None:
    requests, sectors = _value(profile, m.GLOBAL_LD_REQUESTS), _value(profile, m.GLOBAL_LD_SECTORS)
    narrow, dense = _threshold(th, "load_sectors_per_request"), _threshold(th, "scalar_load_bytes_per_sector")
    dram_limit, compute_limit = _threshold(th, "dram_bound_pct"), _threshold(th, "compute_bound_pct")
    if requests <= 0 or sectors <= 0:
        return None
    per_request = sectors / requests
    bytes_per_sector = profile.counter(m.GLOBAL_LD_BYTES_PER_SECTOR)
    # Few sectors per request with every byte of each sector used: narrow, coalesced loads (a broadcast or a
    # strided access has few used bytes per sector and is another problem).
    if per_request > narrow.value or (bytes_per_sector is not None and bytes_per_sector < dense.value):
        return None
    # Narrow loads matter when they keep DRAM from its bandwidth: too few bytes in flight per warp (measured on
    # the H100: one byte per lane, DRAM at 21%, 83% of warps waiting on loads). At DRAM's bound, or when the
    # arithmetic is the limit, wider loads gain nothing. The arithmetic is the FMA pipe where it was measured: the
    # SM throughput is its busiest sub-unit, which for narrow loads is often the issue of the per-element load and
    # index instructions themselves, the instructions a wider load divides (llm.c's encoder_forward/2 on the H100:
    # SM 61%, FMA pipe 27%, issue 66%, bf16 loads of 1.7 sectors a request, DRAM 15%; its next version loads 16
    # bytes a lane). Without the pipe's figure, the SM throughput stands in for it (the conservative reading).
    dram = _value(profile, m.DRAM_THROUGHPUT_PCT)
    arithmetic = profile.counter(m.FMA_PIPE_PCT)
    if arithmetic is None:
        arithmetic = _value(profile, m.SM_THROUGHPUT_PCT)
    if dram >= dram_limit.value or arithmetic >= compute_limit.value:
        return None
    findings = [finding("global_load_sectors_per_request", per_request, narrow, "<="),
                finding(m.DRAM_THROUGHPUT_PCT, dram, dram_limit, "<")]
    extra = [f"about {32 * per_request:.0f} bytes per warp-level load (a 16-byte vector load per lane moves 512)"]
    findings[0].lines = _memory_stall_lines(profile)
    return make_diagnosis("scalar_global_loads", (1 - dram / 100) * (1 - per_request / 16), findings, extra)


@_rule("redundant_global_loads", (m.GLOBAL_LD_SECTORS, m.DRAM_BYTES_READ, m.L1_THROUGHPUT_PCT, m.SHARED_WAVEFRONTS,
                                  m.GLOBAL_ST_SECTORS, m.L1_HIT_RATE_PCT, m.ISSUE_ACTIVE_PCT,
                                  m.GLOBAL_EXCESSIVE_SECTORS),
       ("redundant_busy_pct", "redundant_load_ratio", "redundant_load_ratio_max", "cache_bound_global_share",
        "redundant_wait_share"),
       "stage each block's inputs (with the halo) in shared memory once, then read the neighbours from there; "
       "a thread that reads the same values again keeps them in registers",
       requires=(m.GLOBAL_LD_SECTORS, m.DRAM_BYTES_READ))
def redundant_global_loads(profile: Profile, th: dict[str, Threshold]) -> Diagnosis | None:
    loaded = _value(profile, m.GLOBAL_LD_SECTORS)
    # The re-reads cost L1 bandwidth or, as measured on the H100 stencil (L1 59%, issue 81%), the issue slots of
    # the load instructions themselves: whichever is busier. Or, with neither unit busy, the warps' time waiting on
    # them: a re-read that hits L1 or L2 still costs its latency, and a warp that reads its row several times from
    # global memory waits several times (llm.c's layernorm_forward/3 on the H100: each row read three times, 5
    # load sectors per DRAM sector, L1 29%, issue 43%, 81% of the warps' samples waiting on global loads; its next
    # version reads the row once). The wait is read as the share of the kernel's time the re-reads hold, when it
    # is at least redundant_wait_share; the busier of the two measures weighs the diagnosis.
    l1, issue = _value(profile, m.L1_THROUGHPUT_PCT), _value(profile, m.ISSUE_ACTIVE_PCT)
    busiest_name, busiest = max((m.L1_THROUGHPUT_PCT, l1), (m.ISSUE_ACTIVE_PCT, issue), key=lambda kv: kv[1])
    waiting = _stall_share(profile, GLOBAL_LOAD_STALLS)
    dram_read_sectors = _value(profile, m.DRAM_BYTES_READ) / 32
    global_sectors = loaded + _value(profile, m.GLOBAL_ST_SECTORS)
    global_share = _ratio(global_sectors, global_sectors + _value(profile, m.SHARED_WAVEFRONTS))
    busy, low, high, wait_limit = (_threshold(th, name) for name in (
        "redundant_busy_pct", "redundant_load_ratio", "redundant_load_ratio_max", "redundant_wait_share"))
    share = _threshold(th, "cache_bound_global_share")
    unit_busy, warps_wait = busiest >= busy.value, waiting >= wait_limit.value
    if dram_read_sectors <= 0 or not (unit_busy or warps_wait) or global_share < share.value:
        return None
    ratio = loaded / dram_read_sectors
    if not low.value <= ratio < high.value:
        return None
    cost = finding(busiest_name, busiest, busy, ">=")
    weight = busiest / 100 if unit_busy else 0.0
    if warps_wait and waiting > weight:
        cost = finding("global_load_wait_share", waiting, wait_limit, ">=")
        weight = waiting
    findings = [finding("global_load_sectors_per_dram_sector", ratio, low, ">="), cost,
                finding("global_share_of_l1_passes", global_share, share, ">=")]
    extra = [f"{m.L1_HIT_RATE_PCT} = {_value(profile, m.L1_HIT_RATE_PCT):.1f} %: each DRAM byte is loaded about "
             f"{ratio:.0f} times through L1"]
    findings[0].lines = _memory_stall_lines(profile)
    severity = weight * global_share * (1 - 1 / ratio)
    if _uncoalesced(profile, th):
        # the sectors re-read are those each uncoalesced request wastes, and the warps wait on them: the one-thread-
        # per-row kernels of llm.c (layernorm_forward/1, softmax_forward/1, fused_residual_forward/2: 19-31 load
        # sectors per DRAM sector, 83-97% of the samples waiting on loads), whose next versions coalesce
        severity *= SYMPTOM_WEIGHT
        extra.append("its global accesses are uncoalesced: the re-read sectors are the ones they waste (see "
                     "uncoalesced_global_access, the fix to make first)")
    return make_diagnosis("redundant_global_loads", severity, findings, extra)
