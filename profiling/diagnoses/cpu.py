"""Diagnosis rules for CPU profiles (profiling/cpu/profile.py makes them).

Severity estimates recoverable time: the share of the kernel's cycles the fix the hint names could remove, in
[0, 1], so that ranking means "fixing this saves the most". Cycles are estimated from callgrind's simulated events
with the penalties of thresholds/cpu.toml (Ir + misses and mispredictions times their penalties), per hot line and
for the whole kernel, so severities of different rules compare (docs/cpu.md has the estimate per rule):
- cache_miss_bound: the miss penalties on lines with high miss rates, scaled by the share of misses that are
  refetches (1 - 1/amplification) when the task's traffic is known;
- poor_data_layout: the cost of the lines that access arrays of structures using at most half of each
  structure, scaled by the unused share; it claims those lines, so cache_miss_bound and missed_vectorization
  do not count them again; plus the miss cycles of lines moving arrays of a structure whose padding reordering
  the fields removes (at least min_padding_share of it), scaled by that share (not claimed: the misses that
  remain are cache_miss_bound's);
- loop_invariant_work: the cost of the invariant calls on hot lines;
- redundant_computation: the cost of the pure calls (or divisions) an outer loop recomputes with the same values;
- linear_search: the cycles of the scan's lines times the share a direct computation saves (not measured: a
  threshold); it claims its lines from missed_vectorization (an early-exit scan is not fixed by vectorising it);
- missing_parallelism: the dominant loop nest's share, less what the other diagnoses' fixes would remove first,
  times (1 - 1/cores) times the efficiency threads usually reach;
- poor_openmp_schedule: a statically scheduled triangular nest loses (p-1)/(2p-1) of its time to imbalance;
- missed_vectorization: the own instructions of unvectorised hot loops (or of loops vectorised but for a
  floating-point sum kept in order, a fold-left reduction, whose chain dependency_chain does not report: it claims
  those it reports) times (1 - 1/speed-up) of vector code;
- branch_mispredictions: the misprediction penalties (conditional and indirect branches) on lines with high
  misprediction rates;
- accumulator_in_memory: the own instructions of lines updating a loop-invariant memory location from its own
  value, times the share keeping it in a register saves (accumulator_saving: not measured); it claims those lines
  from missed_vectorization (the loop cannot be vectorised before the accumulator is in a register);
- dependency_chain: the miss cycles of a pointer-chasing loop's lines, times the share walking independent chains
  together overlaps (1 - 1/independent_chains); it claims those lines from cache_miss_bound and
  missed_vectorization; plus the time of a value updated from its own last value through at least
  min_chain_latency_cycles of latency an iteration (or a call: a generator's state), estimated as the loop's
  iterations (its line's branches) x that latency (by the operations' kinds and types: not measured, callgrind
  counts one cycle an instruction), times the share k independent chains overlap (1 - 1/k, k the updates adding
  independent terms, at least independent_chains), against the kernel's cycles plus the latency callgrind missed;
- call_overhead: a call's cost (call_overhead_cycles) against the estimated cycles of one call of the profiled
  function, when it is called often (min_calls); or, for the calls its lines make to other functions of its source
  file that were not inlined, their count times that cost against its estimated cycles (callee lines included);
- slow_integer_division: the latency of integer divisions on a loop-carried chain, which callgrind counts as one
  instruction each (not simulated: divisions x (integer_division_cycles - 1)), plus the divider's throughput for
  the other divisions the compiled code runs (the binary's div instructions x the line's runs:
  integer_division_throughput_cycles - 1 each), against the kernel's cycles plus those; it claims the chain's
  loop from missed_vectorization (its iterations wait on each other);
- store_forwarding_dependency: the updates of array elements at an index the loop loads (a histogram), times the
  share assumed to find their element among the last few stores (update_repeat_share: not measured, callgrind
  sees no values), times the store-to-load forwarding latency they then wait (store_forward_cycles: not
  simulated), against the kernel's cycles plus those; it claims the update's loop from missed_vectorization
  (lanes with equal indices conflict: vectorising is not its fix);
- false_sharing: the coherence misses of writes to per-thread slots of a shared array in a parallel region
  (not simulated: writes x coherence_miss_penalty x (1 - 1/cores)) against the kernel's cycles plus those.
"""

from __future__ import annotations

from perfforge.records import Diagnosis, Finding, HotLine, Profile
from perfforge.targets import profiled_with
from profiling.diagnoses.registry import RULES, Rule, Threshold, finding, make_diagnosis, register

# The rules read callgrind's simulated events: they apply to every target callgrind profiles (perfforge/targets.py).
TARGETS = profiled_with("callgrind")


def _m(line: HotLine, name: str) -> float:
    value = line.metric(name)
    return 0.0 if value is None else value


def _c(profile: Profile, name: str) -> float:
    value = profile.counter(name)
    return 0.0 if value is None else value


def _total_cycles(profile: Profile, th: dict[str, Threshold]) -> float:
    """Estimated cycles of one kernel call from the simulated events, the hot lines' DRAM streams at their
    bandwidth cost (_prefetched_cycles)."""
    misses_l1 = _c(profile, "I1mr") + _c(profile, "D1mr") + _c(profile, "D1mw")
    misses_ll = _c(profile, "ILmr") + _c(profile, "DLmr") + _c(profile, "DLmw")
    mispredicts = _c(profile, "Bcm") + _c(profile, "Bim")
    prefetched = sum(_prefetched_cycles(line, th) for line in profile.hot_lines)
    return (_c(profile, "Ir") + th["d1_miss_penalty"].value * misses_l1 + th["ll_miss_penalty"].value * misses_ll
            + th["mispredict_penalty"].value * mispredicts - prefetched)


# D1 miss rates (%) of a unit-stride walk of 1-, 2-, 4-, 8-, 16- and 32-byte accesses: one miss per 64-byte line
STREAM_MISS_RATES_PCT = (1.5625, 3.125, 6.25, 12.5, 25.0, 50.0)


def _at_stream_rate(line: HotLine, th: dict[str, Threshold]) -> bool:
    """Whether the line misses D1 once a 64-byte line of its accesses (its rate one of STREAM_MISS_RATES_PCT within
    stream_rate_tolerance): a unit-stride walk, which the hardware prefetcher follows."""
    tolerance, rate = th["stream_rate_tolerance"].value, _m(line, "D1_miss_rate")
    return tolerance > 0 and any(abs(rate - stream) <= tolerance * stream for stream in STREAM_MISS_RATES_PCT)


def _dram_stream(line: HotLine, th: dict[str, Threshold]) -> bool:
    """A unit-stride walk whose every D1 miss also misses the last level: a stream from DRAM, whose latency the
    prefetcher hides and whose cost is the lines' transfer (stream_line_cycles)."""
    d1 = _m(line, "D1_misses")
    every = _m(line, "LL_misses") >= (1 - th["stream_rate_tolerance"].value) * d1
    return d1 > 0 and every and _at_stream_rate(line, th)


def _latency_cycles(line: HotLine, th: dict[str, Threshold]) -> float:
    """Each of the line's misses at its latency (d1_miss_penalty, plus ll_miss_penalty where it also misses LL)."""
    return th["d1_miss_penalty"].value * _m(line, "D1_misses") + th["ll_miss_penalty"].value * _m(line, "LL_misses")


def _prefetched_cycles(line: HotLine, th: dict[str, Threshold]) -> float:
    """The miss latency a DRAM stream's lines do not pay (the prefetcher hides it; they cost stream_line_cycles
    each); 0 for any other line."""
    if not _dram_stream(line, th):
        return 0.0
    return _latency_cycles(line, th) - th["stream_line_cycles"].value * _m(line, "LL_misses")


def _miss_cycles(line: HotLine, th: dict[str, Threshold]) -> float:
    """The line's miss cycles: each miss's latency, a DRAM stream's lines at the bandwidth cost."""
    return _latency_cycles(line, th) - _prefetched_cycles(line, th)


def _mispredicts(line: HotLine) -> float:
    """Conditional and indirect branches of the line the simulated predictor got wrong."""
    return _m(line, "Bcm") + _m(line, "Bim")


def _line_cycles(line: HotLine, th: dict[str, Threshold]) -> float:
    return _m(line, "Ir") + _miss_cycles(line, th) + th["mispredict_penalty"].value * _mispredicts(line)


def _big_enough(line: HotLine, total: float, th: dict[str, Threshold]) -> bool:
    return total > 0 and _line_cycles(line, th) / total >= th["min_line_share"].value


def _aos_lines(profile: Profile, th: dict[str, Threshold]) -> list[HotLine]:
    """Hot lines that walk an array of structures using at most half of each, when those lines together miss D1
    (the structures come from beyond the first-level cache, not from a cache-resident array)."""
    lines = [line for line in profile.hot_lines if line.metric("static.aos_used_fraction") is not None
             and _m(line, "static.aos_used_fraction") <= th["aos_max_used_fraction"].value]
    accesses = sum(_m(line, "data_accesses") for line in lines)
    misses = sum(_m(line, "D1_misses") for line in lines)
    if not lines or accesses <= 0 or 100.0 * misses / accesses < th["aos_d1_miss_rate"].value:
        return []
    return lines


def _claimed(profile: Profile, th: dict[str, Threshold]) -> set[int]:
    return {line.line for line in _aos_lines(profile, th)}


def _chase_claimed(profile: Profile, th: dict[str, Threshold]) -> set[int]:
    """Lines of loops that chase pointers: their misses are serial, which walking in order or blocking does not
    fix (dependency_chain names them). Claimed only when dependency_chain reports them: a line no rule reports
    would drop out of every diagnosis."""
    if _check_chain(profile, th) is None:
        return set()
    return {line.line for line in profile.hot_lines if _m(line, "static.pointer_chase_loop")}


def _serial_chain_claimed(profile: Profile, th: dict[str, Threshold]) -> set[int]:
    """Lines of loops carrying a serial recurrence of at least min_chain_latency_cycles (a generator's state, a hash:
    no update adds an independent term): no vectoriser's loop, each iteration needs the last one's value, and
    vector lanes need chains of their own first (dependency_chain's fix). Claimed only when dependency_chain
    reports a chain."""
    if _check_chain(profile, th) is None:
        return set()
    return {line.line for line in profile.hot_lines
            if _m(line, "static.serial_chain_loop_latency_cycles") >= th["min_chain_latency_cycles"].value}


# the evidence of a floating-point sum gcc vectorised but keeps in order (missed_vectorization, dependency_chain)
IN_ORDER_SUM = ("gcc vectorised the loop's loads and arithmetic but keeps the floating-point sum in source order, one "
                "scalar add after another (a fold-left reduction: it may not reassociate the adds without "
                "-ffast-math); partial sums, or `#pragma omp simd reduction(+:...)` (-fopenmp-simd), let them overlap")


def _in_order_sum_claimed(profile: Profile, th: dict[str, Threshold]) -> set[int]:
    """Lines of a floating-point sum gcc vectorised but keeps in source order (a fold-left reduction) whose chain
    dependency_chain reports: its cost is the adds' latency, one after another, which that rule estimates (the
    vector code around it is already there); partial sums or a reassociated (vector) sum are the same fix, and the
    chain's evidence names both."""
    in_order = {line.line for line in profile.hot_lines if _m(line, "gcc.fold_left_reduction")}
    return in_order & _arithmetic_claimed(profile, th) if in_order else set()


def _search_claimed(profile: Profile) -> set[int]:
    """Lines of linear searches: gcc never vectorises their early exit, and vectorising is not their fix."""
    return {line.line for line in profile.hot_lines if _m(line, "static.linear_search_loop")}


def _accumulator_claimed(profile: Profile, th: dict[str, Threshold]) -> set[int]:
    """Lines updating a loop-invariant memory location: the loop cannot be vectorised before the accumulator is a
    register (gcc sees a possibly aliased load and store per iteration), so that is the fix to name first. Claimed
    only when accumulator_in_memory reports them."""
    if _check_accumulator(profile, th) is None:
        return set()
    return {line.line for line in _accumulator_lines(profile, th)}


def _accumulator_lines(profile: Profile, th: dict[str, Threshold]) -> list[HotLine]:
    """Lines with a memory accumulator that gcc did not vectorise (where it did, it proved the location unaliased
    and keeps it in a register: `restrict`, or a local it can see through), less the lines of an arithmetic chain
    dependency_chain reports: a location updated several times a step (`m[0] += a; m[0] += b; ...`) stays a chain
    of dependent adds in a register, and cutting it into partial results is the fix (in memory or not)."""
    chained = _arithmetic_claimed(profile, th)
    return [line for line in profile.hot_lines if _m(line, "static.memory_accumulators") >= 1
            and line.metric("gcc.vectorized") != 1.0 and line.line not in _slot_claimed(profile)
            and line.line not in chained]


def _arithmetic_claimed(profile: Profile, th: dict[str, Threshold]) -> set[int]:
    """Lines of the arithmetic chains dependency_chain reports."""
    total = _total_cycles(profile, th)
    if total <= 0:
        return set()
    return {line.line for lines in _reported_chains(profile, th, total).values() for line in lines}


# ---- cache_miss_bound -----------------------------------------------------------------------------------------------

def _streams(line: HotLine, th: dict[str, Threshold]) -> bool:
    """Whether the line's D1 misses are those of a unit-stride stream (_at_stream_rate) that never reaches DRAM:
    the prefetcher hides them."""
    return _m(line, "LLd_miss_rate") < th["line_ll_miss_rate"].value and _at_stream_rate(line, th)


def _check_cache(profile: Profile, th: dict[str, Threshold]) -> Diagnosis | None:
    total, claimed = _total_cycles(profile, th), _claimed(profile, th) | _chase_claimed(profile, th)
    lines = [line for line in profile.hot_lines if line.line not in claimed and _big_enough(line, total, th)
             and ((_m(line, "D1_miss_rate") >= th["line_d1_miss_rate"].value and not _streams(line, th))
                  or _m(line, "LLd_miss_rate") >= th["line_ll_miss_rate"].value)]
    amplification = profile.counter("D1_miss_amplification")
    limit = th["d1_miss_amplification"]
    if not lines or (amplification is not None and amplification < limit.value):
        return None
    refetched = 1.0 - 1.0 / amplification if amplification else 1.0
    severity = refetched * sum(_miss_cycles(line, th) for line in lines) / total
    findings = [_rate_finding(line, th) for line in lines]
    if amplification is not None:
        findings.append(finding("D1_miss_amplification", amplification, limit, ">="))
    return make_diagnosis("cache_miss_bound", severity, findings)


def _rate_finding(line: HotLine, th: dict[str, Threshold]) -> Finding:
    if _m(line, "D1_miss_rate") >= th["line_d1_miss_rate"].value:
        return finding("D1_miss_rate", _m(line, "D1_miss_rate"), th["line_d1_miss_rate"], ">=", [line.line])
    return finding("LLd_miss_rate", _m(line, "LLd_miss_rate"), th["line_ll_miss_rate"], ">=", [line.line])


# ---- poor_data_layout -----------------------------------------------------------------------------------------------

def _check_layout(profile: Profile, th: dict[str, Threshold]) -> Diagnosis | None:
    total = _total_cycles(profile, th)
    if total <= 0:
        return None
    lines = _aos_lines(profile, th)
    if lines and sum(_line_cycles(line, th) for line in lines) / total < th["min_line_share"].value:
        lines = []
    padded = [line for line in _padded_lines(profile, th) if line not in lines]
    if not lines and not padded:
        return None
    severity, findings, extra = 0.0, [], []
    if lines:
        # A loop over structures moves whole structures: its misses, and the strided gathers and shuffles the
        # vectoriser needs to pick fields out of them, grow with the structure's size. The unused share of each
        # structure is taken as the wasted share of the loop's cost.
        severity += sum(_line_cycles(line, th) * (1.0 - _m(line, "static.aos_used_fraction")) for line in lines)
        used = min(_m(line, "static.aos_used_fraction") for line in lines)
        struct_bytes = max(_m(line, "static.aos_struct_bytes") for line in lines)
        miss_rate = 100.0 * sum(_m(x, "D1_misses") for x in lines) / sum(_m(x, "data_accesses") for x in lines)
        findings += [finding("static.aos_used_fraction", used, th["aos_max_used_fraction"], "<=",
                             [x.line for x in lines]),
                     finding("D1_miss_rate", miss_rate, th["aos_d1_miss_rate"], ">=", [x.line for x in lines])]
        extra.append(f"the loop touches {used:.0%} of each {struct_bytes:.0f}-byte structure: the rest of every "
                     "cache line it fetches is wasted")
    if padded:
        # Reordering the fields shrinks each structure from its size to the packed size: the same elements fill
        # that share fewer cache lines, so that share of the lines' miss cycles goes (the misses the walk has left).
        severity += sum(_miss_cycles(line, th) * _padding(line) for line in padded)
        share = max(_padding(line) for line in padded)
        size = max(_m(line, "static.padded_struct_bytes") for line in padded)
        packed = min(_m(line, "static.packed_struct_bytes") for line in padded)
        findings.append(finding("padding_share", share, th["min_padding_share"], ">=", [x.line for x in padded]))
        findings += [_rate_finding(line, th) for line in padded]
        extra.append(f"line(s) {', '.join(str(x.line) for x in padded)} move arrays of a {size:.0f}-byte structure "
                     f"whose fields, ordered by decreasing alignment, need {packed:.0f} bytes: {share:.0%} of every "
                     "cache line they fetch is padding")
    return make_diagnosis("poor_data_layout", severity / total, findings, extra)


def _padding(line: HotLine) -> float:
    size = _m(line, "static.padded_struct_bytes")
    return 1.0 - _m(line, "static.packed_struct_bytes") / size if size > 0 else 0.0


def _padded_lines(profile: Profile, th: dict[str, Threshold]) -> list[HotLine]:
    """Hot lines moving arrays of a structure with at least min_padding_share padding, that miss as
    cache_miss_bound's lines do (a high D1 rate that is no prefetched stream, or a high last-level rate)."""
    total = _total_cycles(profile, th)
    return [line for line in profile.hot_lines if _padding(line) >= th["min_padding_share"].value
            and _big_enough(line, total, th)
            and ((_m(line, "D1_miss_rate") >= th["line_d1_miss_rate"].value and not _streams(line, th))
                 or _m(line, "LLd_miss_rate") >= th["line_ll_miss_rate"].value)]


# ---- loop_invariant_work --------------------------------------------------------------------------------------------

def _check_invariant(profile: Profile, th: dict[str, Threshold]) -> Diagnosis | None:
    """Pure calls a loop repeats with arguments it does not change: `static.invariant_calls` (the compiler could
    hoist them and did not), `static.invariant_calls_on_written_memory` (calls reading memory the loop writes, which
    the compiler may not hoist: strlen(s) in the test of a loop writing s[i]). The saving is the calls' cost: what
    the functions they call cost (source_call_Ir for the source's own, counted on their lines too), or an assumed
    share of an inlined call's line."""
    total = _total_cycles(profile, th)
    lines = [line for line in profile.hot_lines
             if (_m(line, "static.invariant_calls") >= 1 or _m(line, "static.invariant_calls_on_written_memory") >= 1)
             and _call_line_big_enough(line, total, th)]
    if not lines:
        return None
    hoistable = min(sum(_call_or_inlined_cost(line, th) for line in lines), total)
    findings = [finding(name, _m(line, name), _one(th), ">=", [line.line]) for line in lines
                for name in ("static.invariant_calls", "static.invariant_calls_on_written_memory")
                if _m(line, name) >= 1]
    extra = []
    for line in lines:
        cost = f"{_call_or_inlined_cost(line, th) / total:.0%} of the estimated cycles"
        if _m(line, "static.invariant_calls") >= 1:
            extra.append(f"line {line.line} ({cost}) repeats a call whose arguments do not change inside its loop: "
                         f"{line.code}")
        if _m(line, "static.invariant_calls_on_written_memory") >= 1:
            extra.append(f"line {line.line} ({cost}) repeats a call whose arguments do not change inside its loop, "
                         "on memory the loop writes: the compiler must call it again every iteration; where the "
                         f"loop's writes never change what the call reads, call it once before the loop: {line.code}")
    return make_diagnosis("loop_invariant_work", hoistable / total, findings, extra + _inlined_note(lines))


def _one(th: dict[str, Threshold]) -> Threshold:
    return Threshold("invariant_calls", 1.0, "expr", "one repeated call is redundant work")


def _call_or_inlined_cost(line: HotLine, th: dict[str, Threshold]) -> float:
    """What a pure call on the line costs: the time in the functions it calls (outside the source: Ir - Ir_self; the
    source's own: source_call_Ir), or, when it was inlined (callgrind then shows no call), a share of the line
    (invariant_inlined_fraction: not measured)."""
    call_cost = _m(line, "Ir") - _m(line, "Ir_self") + _m(line, "source_call_Ir")
    return call_cost if call_cost > 0 else th["invariant_inlined_fraction"].value * _line_cycles(line, th)


def _call_line_big_enough(line: HotLine, total: float, th: dict[str, Threshold]) -> bool:
    """A hot line that may hold a call: big enough when its own cycles or its call's cost (a same-file callee's
    cost sits on the callee's lines: the call line's own share may be near 0) reach min_line_share."""
    return total > 0 and max(_line_cycles(line, th), _call_or_inlined_cost(line, th)) / total \
        >= th["min_line_share"].value


# ---- redundant_computation ------------------------------------------------------------------------------------------

def _check_recomputed(profile: Profile, th: dict[str, Threshold]) -> Diagnosis | None:
    total = _total_cycles(profile, th)
    lines = [line for line in profile.hot_lines if _m(line, "static.recomputed_exprs") >= 1
             and _call_line_big_enough(line, total, th)]
    if not lines:
        return None
    saved = sum(_call_or_inlined_cost(line, th) for line in lines)
    findings = [finding("static.recomputed_exprs", _m(line, "static.recomputed_exprs"), _one(th), ">=", [line.line])
                for line in lines]
    extra = [f"line {line.line} ({_line_cycles(line, th) / total:.0%} of the estimated cycles) computes values that "
             "depend only on inner loop indices and on nothing the loop at line "
             f"{int(_m(line, 'static.recomputed_outer_loop'))} changes: each of its iterations recomputes the same "
             f"values: {line.code.strip()}" for line in lines]
    extra += _inlined_note(lines)
    outer = int(min(_m(line, "static.recomputed_outer_loop") for line in lines))
    hint = (f"compute those values once into a small table before the loop at line {outer} and read the table "
            "inside it")
    return make_diagnosis("redundant_computation", saved / total, findings, extra, hint=hint)


def _inlined_note(lines: list[HotLine]) -> list[str]:
    inlined = [line.line for line in lines if _m(line, "Ir") <= _m(line, "Ir_self") and not _m(line, "source_call_Ir")]
    if not inlined:
        return []
    return [f"the work on line(s) {', '.join(map(str, inlined))} was inlined: its own cost is not separable from "
            "the rest of the line, so the saving is an assumed share of the line (invariant_inlined_fraction)"]


# ---- linear_search --------------------------------------------------------------------------------------------------

def _check_search(profile: Profile, th: dict[str, Threshold]) -> Diagnosis | None:
    total = _total_cycles(profile, th)
    if total <= 0:
        return None
    scans: dict[int, list[HotLine]] = {}
    for line in profile.hot_lines:
        if _m(line, "static.linear_search_loop"):
            scans.setdefault(int(_m(line, "static.linear_search_loop")), []).append(line)
    scans = {loop: lines for loop, lines in scans.items()
             if sum(_line_cycles(x, th) for x in lines) / total >= th["min_line_share"].value}
    if not scans:
        return None
    saving = th["search_saving"].value
    findings, extra = [], []
    for loop, lines in sorted(scans.items()):
        share = sum(_line_cycles(x, th) for x in lines) / total
        findings.append(finding("linear_search_share", share, th["min_line_share"], ">=", [x.line for x in lines]))
        mispredicts = sum(_m(x, "Bcm") for x in lines)
        code = " / ".join(x.code.strip() for x in lines)
        if around := next((int(_m(x, "static.linear_search_call_loop")) for x in lines
                           if _m(x, "static.linear_search_call_loop")), 0):
            extra.append(f"line {loop} ({share:.0%} of the estimated cycles) calls a standard library scan inside the "
                         f"loop at line {around}: each call walks the range element by element, so every iteration "
                         f"costs the range's length (a hash set, a sorted range's binary search or a table indexed "
                         f"by the key does not): {code}")
            continue
        extra.append(f"the loop at line {loop} ({share:.0%} of the estimated cycles) scans a table element by element "
                     f"until one compares with a key it does not change, so its trip count grows with the table "
                     f"({mispredicts:.0f} mispredicted branches on its lines: data-dependent exits): {code}")
    extra.append(f"the saving is not measured (callgrind gives no trip count): {saving:.0%} of the scans' cycles is "
                 "assumed (search_saving)")
    share_all = sum(_line_cycles(x, th) for lines in scans.values() for x in lines) / total
    return make_diagnosis("linear_search", share_all * saving, findings, extra)


# ---- missing_parallelism and poor_openmp_schedule -------------------------------------------------------------------

def _nest_shares(profile: Profile, th: dict[str, Threshold], only_flag: str = "") -> dict[int, float]:
    """Estimated-cycle share of each loop nest (by its outermost loop's line) among the hot lines."""
    total, shares = _total_cycles(profile, th), {}
    for line in profile.hot_lines:
        nest = int(_m(line, "static.outer_loop_line"))
        if nest and total > 0 and (not only_flag or _m(line, only_flag) >= 1):
            shares[nest] = shares.get(nest, 0.0) + _line_cycles(line, th) / total
    return shares


def _check_parallelism(profile: Profile, th: dict[str, Threshold]) -> Diagnosis | None:
    cores = _c(profile, "cpu_cores")
    if cores < th["min_cores"].value or _c(profile, "static.openmp_pragmas") or _c(profile, "static.thread_spawns"):
        return None
    if profile.timing is not None and profile.timing.median_ms < th["min_parallel_time"].value:
        return None
    shares = _nest_shares(profile, th)
    if not shares:
        return None
    nest, share = max(shares.items(), key=lambda item: item[1])
    if share < th["dominant_nest_share"].value:
        return None
    others = _other_savings(profile, th)
    remaining = share
    for _, severity in others:  # each fix leaves (1 - its saving) of the time: they compose multiplicatively
        remaining *= 1.0 - severity
    saving = remaining * (1.0 - 1.0 / cores) * th["parallel_efficiency"].value
    findings = [finding("loop_nest_share", share, th["dominant_nest_share"], ">=", [nest])]
    # Cores and the absence of a pragma let the rule run; they do not point at the bottleneck.
    preconditions = [finding("cpu_cores", cores, th["min_cores"], ">="),
                     finding("static.openmp_pragmas", 0, Threshold("openmp_pragmas", 0, "pragma", "none"), "<=")]
    extra = [f"the loop nest at line {nest} has {share:.0%} of the estimated cycles and runs on one of "
             f"{cores:.0f} cores"]
    if others:
        named = ", ".join(f"{name} {severity:.2f}" for name, severity in others)
        extra.append(f"the other diagnoses' fixes ({named}) would leave the nest {remaining:.0%} of today's cycles: "
                     "sharing it among the cores saves a part of that, and depends on those fixes less than they "
                     "explain the time")
    scans, reductions = _carried(profile, nest)
    extra += [f"the loop at line {nest} carries `{name}` from one iteration to the next (updated at line {line} "
              "and its running value read in the loop)" for name, line in scans.items()]
    extra += [f"the loop at line {nest} accumulates `{name}` ({op}) across iterations (line {line})"
              for name, (op, line) in reductions.items()]
    return make_diagnosis("missing_parallelism", saving, findings, extra, preconditions=preconditions,
                          hint=_parallel_hint(scans, reductions))


def _other_savings(profile: Profile, th: dict[str, Threshold]) -> list[tuple[str, float]]:
    """(name, severity) of the serial diagnoses that fire: what their fixes would remove before threads share the
    rest. poor_openmp_schedule is not among them (it needs a pragma, which this rule's profiles lack)."""
    checks = (("cache_miss_bound", _check_cache), ("poor_data_layout", _check_layout),
              ("loop_invariant_work", _check_invariant), ("redundant_computation", _check_recomputed),
              ("linear_search", _check_search), ("missed_vectorization", _check_vectorization),
              ("branch_mispredictions", _check_branches), ("accumulator_in_memory", _check_accumulator),
              ("dependency_chain", _check_chain), ("call_overhead", _check_calls),
              ("slow_integer_division", _check_division), ("store_forwarding_dependency", _check_store_forwarding))
    found = [(name, check(profile, th)) for name, check in checks]
    return [(name, d.severity) for name, d in found if d is not None and d.severity > 0]


def _carried(profile: Profile, nest: int) -> tuple[dict[str, int], dict[str, tuple[str, int]]]:
    """Scalars the nest at line `nest` carries across iterations (profiling/cpu/profile.py's static.carried_*
    metrics): {name: line} of scans, {name: (operator, line)} of reductions."""
    scans: dict[str, int] = {}
    reductions: dict[str, tuple[str, int]] = {}
    for line in profile.hot_lines:
        if int(_m(line, "static.outer_loop_line")) != nest:
            continue
        for metric in line.metrics:
            if metric.name.startswith("static.carried_scan."):
                scans[metric.name.removeprefix("static.carried_scan.")] = int(metric.value)
            elif metric.name.startswith("static.carried_reduction."):
                op, _, name = metric.name.removeprefix("static.carried_reduction.").partition(".")
                reductions[name] = (op, int(metric.value))
    return scans, reductions


def _parallel_hint(scans: dict[str, int], reductions: dict[str, tuple[str, int]]) -> str:
    """The rule's hint, or the fix for a loop that carries a dependence (a bare parallel for would race on it)."""
    if scans:
        names = ", ".join(f"`{name}`" for name in sorted(scans))
        return (f"the loop carries {names} from one iteration to the next (a counter or running value, as a "
                "filter or compaction keeps): `#pragma omp parallel for` alone would race on it; count per thread, "
                "prefix-sum the counts (a scan) and let each thread write its own range, or keep the loop serial "
                "and look elsewhere")
    if reductions:
        clauses = " ".join(f"reduction({op}:{name})" for name, (op, _) in sorted(reductions.items()))
        return ("share the iterations of the dominant loop among the cores with `#pragma omp parallel for "
                f"{clauses}`: the loop carries only accumulations, which each thread can keep privately")
    return RULES["missing_parallelism"].hint


def _check_schedule(profile: Profile, th: dict[str, Threshold]) -> Diagnosis | None:
    cores = _c(profile, "cpu_cores")
    shares = _nest_shares(profile, th, only_flag="static.omp_static_triangular")
    if cores < th["min_cores"].value or not shares:
        return None
    nest, share = max(shares.items(), key=lambda item: item[1])
    if share < th["dominant_nest_share"].value:
        return None
    # Triangular work under a static schedule over p threads: the last thread's chunk holds (2p-1)/p^2 of the
    # work against 1/p balanced, so (p-1)/(2p-1) of the nest's time is lost to waiting.
    lost = (cores - 1.0) / (2.0 * cores - 1.0)
    findings = [finding("loop_nest_share", share, th["dominant_nest_share"], ">=", [nest])]
    extra = [f"the OpenMP loop at line {nest} has inner bounds that depend on its index (triangular work) and a "
             "static schedule: threads with the long rows finish last"]
    return make_diagnosis("poor_openmp_schedule", share * lost, findings, extra)


# ---- missed_vectorization -------------------------------------------------------------------------------------------

def _missed_reasons(line: HotLine) -> list[str]:
    reasons = [m.name.removeprefix("gcc.missed.") for m in line.metrics if m.name.startswith("gcc.missed.")]
    return reasons + ["in_order_fp_reduction"] if _m(line, "gcc.fold_left_reduction") else reasons


def _left_scalar(line: HotLine) -> bool:
    """gcc left the line's loop scalar, or vectorised all of it but its floating-point reduction, whose adds it
    keeps in source order, one lane after another (a fold-left reduction: no -ffast-math to reassociate them)."""
    return line.metric("gcc.vectorized") == 0.0 or bool(_m(line, "gcc.fold_left_reduction"))


def _check_vectorization(profile: Profile, th: dict[str, Threshold]) -> Diagnosis | None:
    total = _total_cycles(profile, th)
    # A pointer chase is no vectoriser's loop: each step's address is the last step's load (dependency_chain names
    # its fix, walking independent chains together).
    claimed = (_claimed(profile, th) | _search_claimed(profile) | _accumulator_claimed(profile, th)
               | _chase_claimed(profile, th) | _division_claimed(profile, th) | _serial_chain_claimed(profile, th)
               | _indexed_update_claimed(profile, th) | _in_order_sum_claimed(profile, th))
    # A loop written with vector registers by hand (intrinsics, vector types) is vectorised already: gcc's "not
    # vectorized" (unsupported type) is about its own vectoriser, not a loop left scalar.
    lines = [line for line in profile.hot_lines if _left_scalar(line)
             and not _m(line, "static.hand_vectorized") and line.line not in claimed
             and _missed_reasons(line) != ["outer_loop"] and _big_enough(line, total, th)]
    if not lines:
        return None
    own = sum(_m(line, "Ir_self") for line in lines)
    # Vector code runs the loop's own instructions vector_speedup times faster: 1 - 1/speed-up of them is saved.
    severity = (1.0 - 1.0 / th["vector_speedup"].value) * own / total
    share = own / total
    findings = [finding("unvectorized_loop_share", share, th["min_line_share"], ">=", [x.line for x in lines])]
    reasons = sorted({reason for line in lines for reason in _missed_reasons(line)})
    extra = [f"gcc did not vectorise the loop around line(s) {', '.join(str(x.line) for x in lines)}: "
             f"{', '.join(reasons)}"]
    if "in_order_fp_reduction" in reasons:
        extra.append(IN_ORDER_SUM)
    if "possible_aliasing" in reasons:
        extra.append("the pointers may alias: gcc would need too many run-time overlap checks; `restrict` on "
                     "pointers that never overlap lets it vectorise")
    return make_diagnosis("missed_vectorization", severity, findings, extra)


# ---- branch_mispredictions ------------------------------------------------------------------------------------------

def _check_branches(profile: Profile, th: dict[str, Threshold]) -> Diagnosis | None:
    """Lines whose branches (conditional and indirect: a call through a pointer or a virtual table has one target
    per call, which the predictor guesses from the last ones) mispredict often."""
    total = _total_cycles(profile, th)
    lines = [line for line in profile.hot_lines if _big_enough(line, total, th)
             and _m(line, "branch_mispredict_rate") >= th["line_branch_mispredict_rate"].value]
    if not lines:
        return None
    penalty = sum(th["mispredict_penalty"].value * _mispredicts(line) for line in lines)
    findings = [finding("branch_mispredict_rate", _m(line, "branch_mispredict_rate"),
                        th["line_branch_mispredict_rate"], ">=", [line.line]) for line in lines]
    indirect = [line for line in lines if _m(line, "Bim") > _m(line, "Bcm")]
    if not indirect:
        return make_diagnosis("branch_mispredictions", penalty / total, findings)
    extra = [f"line {line.line} mispredicts {100.0 * _m(line, 'Bim') / _m(line, 'Bi'):.0f}% of its "
             f"{_m(line, 'Bi'):.0f} indirect branches (a call through a pointer or virtual table whose target "
             f"changes from call to call): {line.code.strip()}" for line in indirect]
    hint = ("make consecutive indirect calls go to the same target: group or sort the objects by type (one loop "
            "per type, or per-type arrays), or replace the virtual call with a switch the compiler can turn into "
            "branchless code")
    return make_diagnosis("branch_mispredictions", penalty / total, findings, extra, hint=hint)


# ---- accumulator_in_memory ------------------------------------------------------------------------------------------

def _check_accumulator(profile: Profile, th: dict[str, Threshold]) -> Diagnosis | None:
    """An innermost loop updating a memory location at an address it does not change (`C(0, 1) += a * b` over p):
    unless the compiler proves nothing else in the loop aliases it, each iteration loads the location, updates it
    and stores it back, and the next iteration's load waits on that store (store-to-load forwarding) on the
    loop-carried chain. A local variable accumulating in a register and stored once after the loop has neither."""
    total = _total_cycles(profile, th)
    lines = _accumulator_lines(profile, th)
    own = sum(_m(line, "Ir_self") for line in lines)
    if not lines or total <= 0 or own / total < th["min_line_share"].value:
        return None
    saving = th["accumulator_saving"].value
    findings = [finding("memory_accumulator_share", own / total, th["min_line_share"], ">=", [x.line for x in lines])]
    extra = [f"line {line.line} updates a memory location whose address its loop does not change, from its own "
             f"value: {line.code.strip()}" for line in lines]
    extra.append(f"the saving is not measured (callgrind counts instructions, not the latency of the chain through "
                 f"memory): {saving:.0%} of those lines' own instructions is assumed (accumulator_saving)")
    return make_diagnosis("accumulator_in_memory", saving * own / total, findings, extra)


# ---- dependency_chain -----------------------------------------------------------------------------------------------

def _check_chain(profile: Profile, th: dict[str, Threshold]) -> Diagnosis | None:
    """Iterations that wait on each other through one value: a loop stepping a variable to a value loaded through
    it (`p = p->next`: each iteration's loads wait for the previous one's, so their misses are paid one after
    another), or a value updated from its own previous value in a run of dependent operations each iteration or
    each call (an xorshift generator's state, four `acc += ...` a step), whose latency is paid step after step
    however wide the core. Interleaving independent chains (several lists, generators or partial sums, advanced in
    the same loop) overlaps them."""
    total = _total_cycles(profile, th)
    if total <= 0:
        return None
    chase = _chase_part(profile, th, total)
    arithmetic = _arithmetic_part(profile, th, total)
    if chase is None and arithmetic is None:
        return None
    severity, findings, extra = 0.0, [], []
    for part in (chase, arithmetic):
        if part is not None:
            severity, findings, extra = severity + part[0], findings + part[1], extra + part[2]
    return make_diagnosis("dependency_chain", severity, findings, extra)


Part = tuple[float, list[Finding], list[str]]  # (severity, findings, evidence) of one kind of chain


def _chase_part(profile: Profile, th: dict[str, Threshold], total: float) -> Part | None:
    """Pointer chases: the miss cycles of their loops' lines, 1 - 1/independent_chains of them overlapped."""
    lines = [line for line in profile.hot_lines if _m(line, "static.pointer_chase_loop")]
    if not lines or sum(_line_cycles(x, th) for x in lines) / total < th["min_line_share"].value:
        return None
    misses = sum(_miss_cycles(line, th) for line in lines)
    if misses <= 0:
        return None
    chains = th["independent_chains"].value
    share = sum(_line_cycles(x, th) for x in lines) / total
    loops = sorted({int(_m(line, "static.pointer_chase_loop")) for line in lines})
    findings = [finding("pointer_chase_share", share, th["min_line_share"], ">=", [x.line for x in lines])]
    extra = [f"the loop at line(s) {', '.join(map(str, loops))} steps a variable to a value loaded through it "
             f"(a pointer chase): its {misses / total:.0%} of the estimated cycles in cache misses are paid one "
             "after another",
             f"the saving assumes {chains:.0f} independent chains walked together (independent_chains): "
             f"1 - 1/{chains:.0f} of the miss cycles"]
    return (1.0 - 1.0 / chains) * misses / total, findings, extra


def _chain_groups(profile: Profile, th: dict[str, Threshold]) -> dict[int, list[HotLine]]:
    """Hot lines of arithmetic chains of at least min_chain_latency_cycles of latency per iteration (or per call),
    by the loop carrying them (a chain's loop overlaps its independent chains: the one of most latency names it), or
    by chain for the state a function keeps across calls. A single update a step of a location in memory
    (`C(0, 1) += a * b`) is accumulator_in_memory's: once in a register its chain is one add."""
    accumulators = {int(_m(x, "static.chain_line")) for x in profile.hot_lines if _m(x, "static.memory_accumulators")
                    and x.line == int(_m(x, "static.chain_line")) and _m(x, "static.chain_operations") < 2}
    groups: dict[int, list[HotLine]] = {}
    for line in profile.hot_lines:
        if _m(line, "static.chain_latency_cycles") >= th["min_chain_latency_cycles"].value \
                and int(_m(line, "static.chain_line")) not in accumulators:
            loop = int(_m(line, "static.chain_loop_line"))
            groups.setdefault(loop or int(_m(line, "static.chain_line")), []).append(line)
    return groups


def _reported_chains(profile: Profile, th: dict[str, Threshold], total: float) -> dict[int, list[HotLine]]:
    """The chains long enough whose lines hold at least min_line_share of the estimated cycles."""
    return {first: lines for first, lines in _chain_groups(profile, th).items()
            if sum(_line_cycles(x, th) for x in lines) / total >= th["min_line_share"].value}


def _chain_steps(lines: list[HotLine]) -> float | None:
    """Iterations of a chain's loop: the conditional branches of its first line (gcc tests a loop's condition once
    an iteration, at the bottom, on the loop's line); one a call for the state a function keeps across calls (the
    profile counts one call); None when the loop's line is not among the hot lines."""
    loop = int(_m(lines[0], "static.chain_loop_line"))
    if not loop:
        return 1.0
    header = next((x for x in lines if x.line == loop), None)
    return _m(header, "Bc") if header is not None and _m(header, "Bc") > 0 else None


def _arithmetic_part(profile: Profile, th: dict[str, Threshold], total: float) -> Part | None:
    """Arithmetic chains: the chain's time, estimated as its loop's iterations x its latency a step (by the kinds
    and the type of its operations: callgrind counts one cycle an instruction, which under-counts a floating-point
    or multiplication chain), of which cutting the chain into k independent ones overlaps 1 - 1/k: k the updates
    that add an independent term (each can keep its own partial result), at least independent_chains (a second
    chain interleaved with the first, as a second generator). The latency callgrind did not count (the chain's time
    beyond its lines' own instructions) is added to the kernel's cycles. When the loop's iterations are not known
    (its line is not hot), the lines' own instructions stand for the chain's time."""
    groups = _reported_chains(profile, th, total)
    if not groups:
        return None
    severity, findings, extra = 0.0, [], []
    for _, lines in sorted(groups.items()):
        chain = max(lines, key=lambda x: _m(x, "static.chain_latency_cycles"))
        latency, split = _m(chain, "static.chain_latency_cycles"), _m(chain, "static.chain_reassociable")
        parts = max(th["independent_chains"].value, split)
        own = sum(_m(x, "Ir_self") for x in lines)
        steps = _chain_steps(lines)
        chain_time = own if steps is None else steps * latency
        lost = max(0.0, chain_time - own)
        severity += (1.0 - 1.0 / parts) * chain_time / (total + lost)
        findings.append(finding("chain_latency_cycles", latency, th["min_chain_latency_cycles"], ">=",
                                [x.line for x in lines]))
        extra.append(f"the value updated at line {_m(chain, 'static.chain_line'):.0f} depends on its own last value "
                     f"through {_m(chain, 'static.chain_operations'):.0f} operation(s) a step, about {latency:.0f} "
                     "cycles of latency (an estimate from the operations' kinds and the value's type: integer "
                     "add or logic 1, multiply 3, floating point 4), which the next step waits for: "
                     + " / ".join(x.code.strip() for x in lines))
        if steps is None:
            extra.append(f"the chain's time is not estimated (its loop's line is not hot): its lines' own "
                         f"instructions ({own / total:.0%} of the estimated cycles) stand for it")
        else:
            extra.append(f"estimated time of the chain: {steps:.0f} steps x {latency:.0f} cycles = {chain_time:.0f} "
                         f"cycles, where callgrind counts {own:.0f} instructions on its lines (an estimate: the "
                         "steps are its loop's branches)")
        if any(_m(x, "gcc.fold_left_reduction") for x in lines):
            extra.append(IN_ORDER_SUM)
        how = (f"{split:.0f} partial results (its updates add independent terms)"
               if split > th["independent_chains"].value
               else f"{parts:.0f} independent chains interleaved (independent_chains)")
        extra.append(f"the saving assumes {how}: 1 - 1/{parts:.0f} of the chain's time")
    return severity, findings, extra


# ---- call_overhead --------------------------------------------------------------------------------------------------

def _check_calls(profile: Profile, th: dict[str, Threshold]) -> Diagnosis | None:
    """A function doing little work per call and called very often (a comparator, an accessor through a
    pointer): the call itself (call, return, saving registers, passing arguments) is a large share of each call,
    and the caller's loop cannot be optimised across it (no cmov, no vectorising, no hoisting). Seen from either
    side: the profiled function is that function (its own calls), or it calls such functions of its source file
    that the compiler left out of line (their calls from its lines)."""
    own = _own_call_overhead(profile, th)
    made = _calls_made_overhead(profile, th)
    if own is None or (made is not None and made.severity > own.severity):
        return made
    return own


def _calls_made_overhead(profile: Profile, th: dict[str, Threshold]) -> Diagnosis | None:
    """The calls the profiled function's lines make to other functions of its source file (callgrind's call
    counts; inlined calls leave none): each costs call_overhead_cycles on top of the callee's work, counted
    against the function's estimated cycles, whose callees' lines are its own."""
    made = _c(profile, "source_calls")  # per call of the profiled function
    per_call = _total_cycles(profile, th)
    total_made = made * _c(profile, "kernel_calls_profiled")
    if total_made < th["min_calls"].value or per_call <= 0:
        return None
    overhead = made * th["call_overhead_cycles"].value
    share = overhead / (per_call + overhead)
    if share < th["min_line_share"].value:
        return None
    lines = [line for line in profile.hot_lines if _m(line, "source_calls") > 0]
    findings = [finding("call_overhead_share", share, th["min_line_share"], ">=", [x.line for x in lines]),
                finding("source_calls_profiled", total_made, th["min_calls"], ">=")]
    extra = [f"{made:.0f} calls, per call of the profiled function, to functions of its source file that were "
             f"not inlined, about {per_call / made:.0f} estimated cycles of work each: a call costs about "
             f"{th['call_overhead_cycles'].value:.0f} more (call_overhead_cycles)"]
    extra += [f"line {line.line} makes {_m(line, 'source_calls'):.0f} of them: {line.code.strip()}" for line in lines]
    return make_diagnosis("call_overhead", share, findings, extra)


def _own_call_overhead(profile: Profile, th: dict[str, Threshold]) -> Diagnosis | None:
    """The profiled function is the one called very often: a call's overhead against its own cycles a call."""
    calls = _c(profile, "kernel_calls_profiled")
    per_call = _total_cycles(profile, th)  # callgrind's totals are per call of the profiled function
    overhead = th["call_overhead_cycles"].value
    if calls < th["min_calls"].value or per_call <= 0:
        return None
    share = overhead / (per_call + overhead)
    if share < th["min_line_share"].value:
        return None
    findings = [finding("call_overhead_share", share, th["min_line_share"], ">="),
                finding("kernel_calls_profiled", calls, th["min_calls"], ">=")]
    extra = [f"{calls:.0f} calls of about {per_call:.0f} estimated cycles each: a call costs about "
             f"{overhead:.0f} more (call_overhead_cycles)"]
    recursive = _c(profile, "recursive_calls_profiled")
    if recursive < calls / 2:
        return make_diagnosis("call_overhead", share, findings, extra)
    # Most calls are the function calling itself: no caller to inline it into, the recursion is the fix's target.
    extra.append(f"{recursive:.0f} of the calls are the function calling itself (recursion)")
    hint = ("replace the recursion with a loop: descend one path at a time (decide which child holds the answer "
            "instead of calling both, one of which returns at once), or keep an explicit stack of pending work")
    return make_diagnosis("call_overhead", share, findings, extra, hint=hint)


# ---- slow_integer_division ------------------------------------------------------------------------------------------

def _carried_divisions(profile: Profile, th: dict[str, Threshold]) -> tuple[list[HotLine], float]:
    """The hot lines with integer divisions on a loop-carried chain, and how many divisions they ran a call: a
    division runs at least division_instructions of the line's own instructions (the sign extension and the div),
    so the line's own count bounds it."""
    lines = [line for line in profile.hot_lines if _m(line, "static.carried_divisions") >= 1]
    return lines, sum(_m(line, "Ir_self") for line in lines) / th["division_instructions"].value


def _division_claimed(profile: Profile, th: dict[str, Threshold]) -> set[int]:
    """Lines of a loop whose iterations wait on each other's divisions (each step needs the last one's remainder),
    and lines whose compiled code divides in a loop gcc left scalar: no x86 vector instruction divides integers, so
    the loop cannot be vectorised while the division stays (a divisor known at compile time is a multiplication,
    which can). Removing the division is the fix to name first. Claimed only when slow_integer_division reports
    them."""
    if _check_division(profile, th) is None:
        return set()
    return {line.line for line in profile.hot_lines if _m(line, "static.carried_division_loop")
            or _scalar_for_its_division(line)}


# gcc's reasons that a division can be behind (no vector type for the operation), or none at all; any other reason
# (a call, control flow, aliasing, a dependence, an outer loop) leaves the loop scalar with the division gone too
_DIVISION_REASONS = frozenset({"unsupported_type", "not_profitable"})


def _scalar_for_its_division(line: HotLine) -> bool:
    """A line whose compiled code divides, in a loop gcc left scalar for no reason but what a division explains."""
    return (_m(line, "binary.divisions") > 0 and line.metric("gcc.vectorized") == 0.0
            and set(_missed_reasons(line)) <= _DIVISION_REASONS)


def _check_division(profile: Profile, th: dict[str, Threshold]) -> Diagnosis | None:
    """Integer divisions the compiled code runs: each waiting for the last one's result (Euclid's `a %= b;
    swap(a, b)`, `h = (h * 31 + x) % p`, read from the source) costs a division's latency, tens of cycles where
    the other instructions take one, with nothing to overlap it; the others (a hash table's `key % buckets` a
    lookup, read from the binary's `div` instructions: disassembly.py) cost the divider's throughput. A division
    by a literal or a constant is a multiplication once compiled and is not reported."""
    lines, carried = _carried_divisions(profile, th)
    # callgrind counted one cycle of each division
    latency_lost = carried * (th["integer_division_cycles"].value - 1.0)
    on_chain = {line.line for line in lines}
    free = [line for line in profile.hot_lines if line.line not in on_chain and _m(line, "binary.divisions") > 0]
    divisions = sum(_m(line, "binary.divisions") for line in free)
    throughput_lost = divisions * (th["integer_division_throughput_cycles"].value - 1.0)
    lost = latency_lost + throughput_lost
    total = _total_cycles(profile, th) + lost
    if not (lines or free) or total <= 0 or lost / total < th["min_line_share"].value:
        return None
    named = [line.line for line in lines + free]
    findings = [finding("division_latency_share", lost / total, th["min_line_share"], ">=", named)]
    extra = [f"line {line.line} divides by a variable and its result feeds the loop's next division: "
             f"{line.code.strip()}" for line in lines]
    if lines:
        extra.append(f"callgrind counts a division as one instruction: its latency is estimated as "
                     f"{th['integer_division_cycles'].value:.0f} cycles (integer_division_cycles) for each of about "
                     f"{carried:.0f} divisions a call")
    extra += [f"line {line.line} runs about {_m(line, 'binary.divisions'):.0f} integer divisions a call (div "
              f"instructions in its compiled code): {line.code.strip()}" for line in free]
    if free:
        extra.append(f"divisions that do not wait on each other still hold the divider "
                     f"{th['integer_division_throughput_cycles'].value:.0f} cycles each "
                     "(integer_division_throughput_cycles), where callgrind counts one")
    if scalar := [line.line for line in free if _scalar_for_its_division(line)]:
        extra.append(f"gcc left the loop of line(s) {', '.join(map(str, scalar))} scalar as well: no x86 vector "
                     "instruction divides integers; without the division (a multiplication) it can be vectorised")
    return make_diagnosis("slow_integer_division", lost / total, findings, extra)


# ---- store_forwarding_dependency ------------------------------------------------------------------------------------

def _indexed_update_claimed(profile: Profile, th: dict[str, Threshold]) -> set[int]:
    """Lines of a loop updating elements at an index it loads (a histogram, a scatter-add): gcc cannot vectorise it
    (two lanes with one index would lose an update) and the fix is several copies of the array, not vector code.
    Claimed only when store_forwarding_dependency reports them."""
    if _check_store_forwarding(profile, th) is None:
        return set()
    return {line.line for line in profile.hot_lines if _m(line, "static.indexed_update_loop")}


def _check_store_forwarding(profile: Profile, th: dict[str, Threshold]) -> Diagnosis | None:
    """A loop updating array elements at an index it loads (`hist[pixels[i]]++`): an update whose element one of
    the last few updates stored loads it from the store buffer (store-to-load forwarding, 4-5 cycles), or, when the
    core speculated the load ahead of that store, is replayed after a memory-ordering machine clear; with runs of
    equal indices the loop's iterations wait on each other through memory. Several copies of the array, updated in
    turn and summed after the loop, keep consecutive updates apart. callgrind sees neither the forwarding nor the
    values, so the cost is an estimate from the updates it counts."""
    lines = [line for line in profile.hot_lines if _m(line, "static.indexed_updates") >= 1]
    updates = sum(_m(line, "data_writes") for line in lines)
    if not lines or updates <= 0:
        return None
    repeat, forward = th["update_repeat_share"].value, th["store_forward_cycles"].value
    lost = updates * repeat * forward
    total = _total_cycles(profile, th) + lost
    if total <= 0 or lost / total < th["min_line_share"].value:
        return None
    findings = [finding("store_forward_share", lost / total, th["min_line_share"], ">=", [x.line for x in lines])]
    extra = [f"line {line.line} updates an array element at an index its loop loads (a histogram or scatter-add): "
             f"{line.code.strip()}" for line in lines]
    extra.append(f"callgrind simulates no store forwarding and sees no values: the {lost / total:.0%} is estimated "
                 f"as {updates:.0f} updates x {repeat:.0%} assumed to repeat a recent index (update_repeat_share, "
                 f"not measured) x {forward:.0f} cycles of forwarding latency (store_forward_cycles)")
    return make_diagnosis("store_forwarding_dependency", lost / total, findings, extra)


# ---- false_sharing --------------------------------------------------------------------------------------------------

def _slot_claimed(profile: Profile) -> set[int]:
    return {line.line for line in profile.hot_lines if _m(line, "static.thread_slot_writes")}


def _check_false_sharing(profile: Profile, th: dict[str, Threshold]) -> Diagnosis | None:
    """Threads of an OpenMP region writing, in a loop, their own elements of one shared array (counters indexed
    by the thread id): neighbouring elements share a cache line, so each write invalidates it in the other cores
    and the next write there waits for the line to come back. callgrind runs the threads on one simulated core and
    never sees it; the cost is estimated from the writes it counts."""
    cores = _c(profile, "cpu_cores")
    lines = [line for line in profile.hot_lines if line.line in _slot_claimed(profile)]
    writes = sum(_slot_writes(profile, line) for line in lines)
    if cores < th["min_cores"].value or not lines or writes <= 0:
        return None
    # with p threads writing round the same line, a write finds it in another core's cache (p-1)/p of the time
    lost = writes * th["coherence_miss_penalty"].value * (1.0 - 1.0 / cores)
    total = _total_cycles(profile, th) + lost
    findings = [finding("thread_slot_writes", writes, _one_write(th), ">=", [x.line for x in lines]),
                finding("cpu_cores", cores, th["min_cores"], ">=")]
    extra = [f"line {line.line} writes a shared array's element selected by the thread id inside a parallel "
             f"loop: {line.code.strip()}" for line in lines]
    extra.append(f"callgrind runs the threads on one core: the {lost / total:.0%} is estimated as "
                 f"{writes:.0f} writes x {th['coherence_miss_penalty'].value:.0f} cycles x (1 - 1/{cores:.0f})")
    return make_diagnosis("false_sharing", lost / total, findings, extra)


def _slot_writes(profile: Profile, line: HotLine) -> float:
    """Writes of a slot-writing line: callgrind's count, or, when it counted none (valgrind does not count the data
    accesses of atomic read-modify-write instructions), the line's executions bounded by the fewest instructions
    of a hot line of the same loop (a line runs at least one instruction each time it runs)."""
    if _m(line, "data_writes") > 0:
        return _m(line, "data_writes")
    same_loop = [_m(x, "Ir_self") for x in profile.hot_lines if _m(x, "Ir_self") > 0
                 and _m(x, "static.outer_loop_line") == _m(line, "static.outer_loop_line")
                 and _m(x, "static.loop_depth") == _m(line, "static.loop_depth")]
    return min(same_loop, default=0.0)


def _one_write(th: dict[str, Threshold]) -> Threshold:
    return Threshold("thread_slot_writes", 1.0, "access", "one write per iteration to a shared line is enough")


# every rule weighs its lines against _total_cycles, which charges DRAM streams at their bandwidth (_miss_cycles)
_COMMON = ("d1_miss_penalty", "ll_miss_penalty", "mispredict_penalty", "min_line_share", "stream_rate_tolerance",
           "stream_line_cycles")
_EVENTS = ("Ir", "I1mr", "D1mr", "D1mw", "ILmr", "DLmr", "DLmw", "Bcm", "Bim")
_AOS = ("aos_max_used_fraction", "aos_d1_miss_rate")
# What every rule decides on: callgrind's instruction count (a profile without it measured nothing); the rules
# that share work among cores also need the core count (Rule.requires: missing, the rule is "not measured").
_MEASURED = ("Ir",)

register(Rule("cache_miss_bound", TARGETS, (*_EVENTS, "D1_miss_amplification"),
              (*_COMMON, "line_d1_miss_rate", "line_ll_miss_rate", "d1_miss_amplification",
               *_AOS),
              "walk memory in the order it is laid out (swap loops so the innermost index is contiguous) or block "
              "the loops so reused data stays in cache", _check_cache, requires=_MEASURED))
register(Rule("poor_data_layout", TARGETS, _EVENTS,
              (*_COMMON, *_AOS, "min_padding_share", "line_d1_miss_rate", "line_ll_miss_rate"),
              "store the fields the hot loop uses as separate arrays (structure of arrays), or copy them out once "
              "before the loop; order a structure's fields by decreasing size (or narrow them to the ranges they "
              "hold) so it carries no padding", _check_layout, requires=_MEASURED))
register(Rule("loop_invariant_work", TARGETS, _EVENTS, (*_COMMON, "invariant_inlined_fraction"),
              "compute the expression once before the loop that does not change it", _check_invariant,
              requires=_MEASURED))
register(Rule("redundant_computation", TARGETS, _EVENTS, (*_COMMON, "invariant_inlined_fraction"),
              "compute the values an outer loop recomputes once, into a table before it", _check_recomputed,
              requires=_MEASURED))
register(Rule("linear_search", TARGETS, _EVENTS, (*_COMMON, "search_saving"),
              "compute the index directly (uniform bins: (x - lo) / width), or binary-search sorted bounds, instead "
              "of scanning the table element by element", _check_search, requires=_MEASURED))
register(Rule("missing_parallelism", TARGETS, (*_EVENTS, "cpu_cores", "static.openmp_pragmas"),
              (*_COMMON, "min_cores", "dominant_nest_share", "min_parallel_time", "parallel_efficiency",
               "invariant_inlined_fraction", "search_saving", "vector_speedup", "line_d1_miss_rate",
               "line_ll_miss_rate", "d1_miss_amplification", "line_branch_mispredict_rate", "accumulator_saving",
               "independent_chains", "min_chain_latency_cycles", "call_overhead_cycles", "min_calls",
               "integer_division_cycles", "division_instructions", "update_repeat_share", "store_forward_cycles",
               *_AOS),
              "share the independent iterations of the dominant loop among the cores (#pragma omp parallel for)",
              _check_parallelism, requires=(*_MEASURED, "cpu_cores")))
register(Rule("poor_openmp_schedule", TARGETS, (*_EVENTS, "cpu_cores"), (*_COMMON, "min_cores", "dominant_nest_share"),
              "use schedule(dynamic, chunk) or schedule(guided) for loops whose iterations differ in cost",
              _check_schedule, requires=(*_MEASURED, "cpu_cores")))
register(Rule("missed_vectorization", TARGETS, _EVENTS, (*_COMMON, "vector_speedup", *_AOS),
              "remove what blocks the vectoriser (restrict on non-overlapping pointers, no calls or early exits in "
              "the loop, unit-stride accesses)", _check_vectorization, requires=_MEASURED))
register(Rule("branch_mispredictions", TARGETS, _EVENTS, (*_COMMON, "line_branch_mispredict_rate"),
              "replace the data-dependent branch with arithmetic or a conditional select (branchless code)",
              _check_branches, requires=_MEASURED))
register(Rule("accumulator_in_memory", TARGETS, _EVENTS, (*_COMMON, "accumulator_saving"),
              "accumulate into a local variable (a register) inside the loop and store it to memory once after it",
              _check_accumulator, requires=_MEASURED))
register(Rule("dependency_chain", TARGETS, _EVENTS, (*_COMMON, "independent_chains", "min_chain_latency_cycles"),
              "advance several independent chains at once (several lists, or one list split in parts; several "
              "generators or partial sums) in the same loop so their latencies overlap, or store a list's elements "
              "contiguously in an array",
              _check_chain, requires=_MEASURED))
register(Rule("call_overhead", TARGETS, (*_EVENTS, "kernel_calls_profiled"),
              (*_COMMON, "call_overhead_cycles", "min_calls"),
              "let the compiler inline the call: pass the function as a template argument or lambda (std::sort "
              "instead of qsort), make it static inline in the caller's file, or process many elements per call",
              _check_calls, requires=(*_MEASURED, "kernel_calls_profiled")))
register(Rule("slow_integer_division", TARGETS, _EVENTS,
              (*_COMMON, "integer_division_cycles", "integer_division_throughput_cycles", "division_instructions"),
              "take the division off the chain: an algorithm without it (binary GCD: shifts, count-trailing-zeros "
              "and subtraction), a divisor known at compile time (a multiplication once compiled), a power-of-two "
              "size and a mask in place of a modulus, or a precomputed reciprocal for a divisor that repeats "
              "(libdivide, Lemire's fastmod and fastrange)",
              _check_division, requires=_MEASURED))
register(Rule("store_forwarding_dependency", TARGETS, _EVENTS,
              (*_COMMON, "update_repeat_share", "store_forward_cycles"),
              "spread consecutive updates over several copies of the array (hist1[x[i]]++, hist2[x[i+1]]++, ... "
              "summed after the loop), so an update seldom loads what the last one stored",
              _check_store_forwarding, requires=_MEASURED))
register(Rule("false_sharing", TARGETS, (*_EVENTS, "cpu_cores"), (*_COMMON, "min_cores", "coherence_miss_penalty"),
              "accumulate into a variable local to each thread and write the shared slot once after the loop, or "
              "align and pad each thread's slot to its own cache line (alignas(64))",
              _check_false_sharing, requires=(*_MEASURED, "cpu_cores")))
