"""The validator against adversarial candidates: one candidate per known hack, each rejected with the right reason,
and honest candidates accepted (KernelBench's test_eval_adversarial habit). Every candidate is a real C file built
and run through the sandbox on the matrix-vector task of conftest.py."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from perfforge.task import load_task
from perfforge.verdict import RuleStatus, Status
from profiling import fp_probe, score
from profiling.score import CONFIRMING_ROUNDS
from profiling.validate import MAX_EXTRA_PROBED_CALLS, MIN_PROBES_IN_BODY, PROBED_ROUNDS, validate
from tests.profiling.conftest import FAST_C, SLOW_C, TASK_TOML, write_task

HEADER = "void matvec(int n, const float *m, const float *w, float *out) {\n"
ROW_LOOP = """\
    for (int i = 0; i < n; i++) {
        float acc = 0.0f;
        for (int j = 0; j < n; j++) acc += m[(long)i * n + j] * w[j];
        out[i] = acc;
    }
"""


def judge(task_dir: Path, tmp_path: Path, code: str, *, timing: bool = False):
    candidate = tmp_path / "candidate.c"
    candidate.write_text(code)
    return validate(load_task(task_dir), candidate, tmp_path / "work", timing=timing)


@pytest.mark.alone
def test_fast_candidate_is_improved_with_every_rule_accounted_for(cpu_task_dir: Path, tmp_path: Path) -> None:
    verdict = judge(cpu_task_dir, tmp_path, FAST_C, timing=True)
    assert verdict.status == Status.IMPROVED, verdict.reason
    assert verdict.speedup > 1.3 and verdict.speedup_ci[0] > 1.0
    assert verdict.worst_margin is not None and verdict.worst_margin <= 1.0
    assert len(verdict.checked_runs) == 20  # 2 configs x 5 seeds x 2 calls, each on input sets of its own
    assert [r.rule for r in verdict.rules] == list(range(1, 26))  # rules 20-25: the adversary
    assert verdict.rules[17].status == RuleStatus.NOT_APPLICABLE  # launch errors: no device on the CPU
    assert "improved" in verdict.headline() and "ms ->" in verdict.headline()


@pytest.mark.alone
def test_no_reference_result_is_left_on_disk_for_a_later_candidate(cpu_task_dir: Path, tmp_path: Path) -> None:
    """The oracle's outputs never touch the disk: the judge reads them from its own mapping of the original's shared
    memory and keeps them in its memory, so candidates validated later in the same work directory find nothing."""
    verdict = judge(cpu_task_dir, tmp_path, FAST_C, timing=True)
    assert verdict.status == Status.IMPROVED, verdict.reason
    assert not list((tmp_path / "work").rglob("*.npy"))


def test_untimed_correct_candidate_is_correct(cpu_task_dir: Path, tmp_path: Path) -> None:
    verdict = judge(cpu_task_dir, tmp_path, FAST_C)
    assert verdict.status == Status.CORRECT and verdict.speedup is None
    assert "not timed" in verdict.reason


@pytest.mark.alone
def test_unchanged_candidate_is_no_change(cpu_task_dir: Path, tmp_path: Path) -> None:
    verdict = judge(cpu_task_dir, tmp_path, SLOW_C, timing=True)
    assert verdict.status == Status.NO_CHANGE, verdict.reason


@pytest.mark.alone
def test_every_timing_round_runs_on_fresh_processes(cpu_task_dir: Path, tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """A process's pages keep their place in the caches for its life, which favoured one side of identical code by
    up to 9% for a whole verdict (no_change failed in 3 of 12 runs on the 2-core VM): each timing round after the
    first starts both sides afresh, in alternating order, and the verdict still stands. A compiled CPU kernel's
    processes are watched: every round does, and PROBED_ROUNDS more rounds have their calls probed mid-call from a
    timed call the plan draws (their times unused; no perf events in any timing round)."""
    from profiling.paired import Pair

    renewed: list[tuple[int, int, bool, bool | None, bool | None]] = []  # one per round
    late: list[tuple[bool, bool | None, bool | None]] = []  # within a probed round, after a probe held it
    renew = Pair.renew

    in_body: list[tuple[int, int]] = []  # per timing round of the candidate's: probes held mid-body, calls
    this_round = [0, 0]

    def spy(self: Pair, *, swap: bool = False, sample_pcs: bool | None = None,
            probe_calls: bool | None = None) -> None:
        timing = self.candidate.probe_calls is False  # a timing round's process, about to be replaced
        within = timing and self.candidate.holds > 0  # after a probe held it
        if timing:
            this_round[0] += self.candidate.probes_in_body
            this_round[1] += self.candidate.calls
            if not within:
                in_body.append((this_round[0], this_round[1]))
                this_round[:] = [0, 0]
        renew(self, swap=swap, sample_pcs=sample_pcs, probe_calls=probe_calls)
        if within:
            late.append((swap, sample_pcs, probe_calls))
        else:
            renewed.append((self.original.pid, self.candidate.pid, swap, sample_pcs, probe_calls))

    monkeypatch.setattr(Pair, "renew", spy)
    verdict = judge(cpu_task_dir, tmp_path, FAST_C, timing=True)
    assert verdict.status == Status.IMPROVED, verdict.reason
    spec = load_task(cpu_task_dir).validate
    # the planned rounds, or CONFIRMING_ROUNDS where their noise floor was above NOISY_FLOOR (a process slowed for
    # its round, about one in ten on the 2-core VM)
    rounds = verdict.baseline_timing.trials // spec.trials
    assert rounds in (spec.rounds, CONFIRMING_ROUNDS), verdict.reason
    # the probed rounds besides: PROBED_ROUNDS among the planned ones, as many again among the extra ones (the red
    # team of the extension: test_judge_extension_adversary.py)
    probed_rounds = PROBED_ROUNDS * (2 if rounds > spec.rounds else 1)
    total = rounds + probed_rounds
    assert [swap for _, _, swap, _, _ in renewed] == [r % 2 == 1 for r in range(total)]
    assert len({pid for pids in renewed for pid in pids[:2]}) == 2 * total
    assert not any(sample for *_, sample, _ in renewed)  # no perf events in any timing round
    # a probed round's processes replaced after a late hold stay timing processes: no perf events, no probe of
    # every call
    assert all(sample_pcs is False and probe_calls is False for _, sample_pcs, probe_calls in late), late
    if fp_probe.available():  # each probed round held the candidate mid-body MIN_PROBES_IN_BODY times, or ran out
        spec = load_task(cpu_task_dir).validate
        probed = [(held, calls) for held, calls in in_body if held or calls > spec.warmup + spec.trials]
        assert 1 <= len(probed) <= probed_rounds  # the last round's process is closed, not renewed
        assert all(held >= MIN_PROBES_IN_BODY or calls == spec.warmup + spec.trials + MAX_EXTRA_PROBED_CALLS
                   for held, calls in probed), probed
    rule = next(r for r in verdict.rules if r.rule == 22)
    assert re.search(r"modes read mid-call [1-9]\d* times", rule.detail) or "NOT read" in rule.detail, rule.detail


@pytest.mark.alone
def test_noisy_planned_rounds_are_judged_over_more_rounds_of_fresh_processes(
        cpu_task_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Planned rounds whose noise floor is above NOISY_FLOOR (here every floor, by a NOISY_FLOOR below zero) are
    followed by rounds up to CONFIRMING_ROUNDS timed ones, each on processes of its own, PROBED_ROUNDS probed
    rounds drawn among them where processes are watched (the extension's red team), and the verdict is made on all
    the timed ones: the honest fast version still reads improved, with the reason saying so."""
    from profiling.paired import Pair

    pids: list[tuple[int, int]] = []
    renew = Pair.renew

    def spy(self: Pair, **kwargs: bool | None) -> None:
        renew(self, **kwargs)
        pids.append((self.original.pid, self.candidate.pid))

    monkeypatch.setattr(Pair, "renew", spy)
    monkeypatch.setattr(score, "NOISY_FLOOR", -1.0)
    verdict = judge(cpu_task_dir, tmp_path, FAST_C, timing=True)
    assert verdict.status == Status.IMPROVED, verdict.reason
    spec = load_task(cpu_task_dir).validate
    assert verdict.baseline_timing.trials == CONFIRMING_ROUNDS * spec.trials
    assert f"judged over {CONFIRMING_ROUNDS} timed rounds on fresh processes" in verdict.reason
    assert f"{PROBED_ROUNDS} probed rounds more among the extra ones" in verdict.reason, verdict.reason
    assert f"{CONFIRMING_ROUNDS} timed rounds, " in verdict.reason and "sign test p" in verdict.reason
    # every round after the first on processes of its own (the first too where the checked ones were watched)
    assert len(pids) >= CONFIRMING_ROUNDS - 1 and len({pid for pair in pids for pid in pair}) == 2 * len(pids)


@pytest.mark.alone
def test_slower_candidate_is_slower(cpu_task_dir: Path, tmp_path: Path) -> None:
    twice = SLOW_C.replace("    for (int i = 0; i < n; i++) out[i] = 0.0f;\n",
                           "    for (int rep = 0; rep < 3; rep++) {\n    for (int i = 0; i < n; i++) out[i] = 0.0f;\n"
                           ).replace("* w[j];\n}", "* w[j];\n    }\n}")
    verdict = judge(cpu_task_dir, tmp_path, twice, timing=True)
    assert verdict.status == Status.SLOWER, verdict.reason


def test_output_cache_keyed_by_pointer_is_caught_on_the_second_call(cpu_task_dir: Path, tmp_path: Path) -> None:
    """The hack behind a published 17.7x: return the previous result when called again with the same pointers."""
    code = ("#include <string.h>\nstatic const float *last_m; static float cache[1 << 16]; static int have;\n" + HEADER
            + "    if (have && m == last_m) { memcpy(out, cache, sizeof(float) * n); return; }\n" + ROW_LOOP
            + "    memcpy(cache, out, sizeof(float) * n); last_m = m; have = 1;\n}\n")
    verdict = judge(cpu_task_dir, tmp_path, code)
    assert verdict.status == Status.INCORRECT
    assert "call 1" in verdict.reason and "output 'out'" in verdict.reason


@pytest.mark.alone
def test_skipping_work_once_timed_is_caught_by_the_last_timed_call(cpu_task_dir: Path, tmp_path: Path) -> None:
    """A kernel that does half the rows once it has been called more often than a check calls it, hoping to pass
    the checked calls and time as 2x: every call of a served process is checked, the timed ones too."""
    code = "static int calls;\n" + HEADER + "    int rows = ++calls > 3 ? n / 2 : n;\n" + \
        ROW_LOOP.replace("i < n;", "i < rows;") + "}\n"
    verdict = judge(cpu_task_dir, tmp_path, code, timing=True)
    assert verdict.status == Status.INCORRECT, verdict.reason
    assert "never written" in verdict.reason


@pytest.mark.alone
def test_a_kernel_answering_from_memory_when_inputs_repeat_is_caught(cpu_task_dir: Path, tmp_path: Path) -> None:
    """A kernel that answers from memory when it sees the inputs of its previous call (here: a wrong value). Timed
    calls never repeat inputs, so it never profits there; the one deliberate repeat (the determinism check of the
    first inputs) catches it."""
    code = ("static float last_m0, last_w0; static int seen;\n" + HEADER
            + ROW_LOOP + "    if (seen && m[0] == last_m0 && w[0] == last_w0) out[0] = 12345.0f;\n"
            + "    last_m0 = m[0]; last_w0 = w[0]; seen = 1;\n}\n")
    verdict = judge(cpu_task_dir, tmp_path, code, timing=True)
    assert verdict.status == Status.INCORRECT and "two runs on identical inputs disagree" in verdict.reason


def test_partial_write_is_reported_as_never_written(cpu_task_dir: Path, tmp_path: Path) -> None:
    code = HEADER + ROW_LOOP.replace("i < n;", "i < n / 2;") + "}\n"
    verdict = judge(cpu_task_dir, tmp_path, code)
    assert verdict.status == Status.INCORRECT
    assert "never written" in verdict.reason and "index 24" in verdict.reason


def test_uninitialised_heap_read_is_caught_by_the_second_run(cpu_task_dir: Path, tmp_path: Path) -> None:
    code = ("#include <stdlib.h>\n" + HEADER + "    float *acc = malloc(sizeof(float) * n);\n"
            "    for (int i = 0; i < n; i++) for (int j = 0; j < n; j++) acc[i] += m[(long)i * n + j] * w[j];\n"
            "    for (int i = 0; i < n; i++) out[i] = acc[i];\n    free(acc);\n}\n")
    verdict = judge(cpu_task_dir, tmp_path, code)
    assert verdict.status == Status.INCORRECT
    assert "two runs on identical inputs disagree" in verdict.reason and "uninitialised" in verdict.reason


def test_modified_input_is_caught(cpu_task_dir: Path, tmp_path: Path) -> None:
    code = HEADER + ROW_LOOP + "    ((float *)w)[3] = 0.0f;\n}\n"
    verdict = judge(cpu_task_dir, tmp_path, code)
    assert verdict.status == Status.INCORRECT
    assert "input 'w' was modified" in verdict.reason


@pytest.mark.alone
def test_hang_times_out(tmp_path: Path) -> None:
    task_dir = write_task(tmp_path / "task", toml=TASK_TOML.replace("timeout_s = 30", "timeout_s = 3"))
    code = HEADER + "    volatile int spin = 1;\n    while (spin) {}\n" + ROW_LOOP + "}\n"
    verdict = judge(task_dir, tmp_path, code)
    assert verdict.status == Status.TIMEOUT
    assert "timed out" in verdict.reason


def test_lower_precision_type_is_rejected_statically(cpu_task_dir: Path, tmp_path: Path) -> None:
    """The compiled object holds the half-precision conversions (the binary policy reads it, not the words)."""
    code = HEADER + ROW_LOOP.replace("float acc", "_Float16 acc") + "}\n"
    verdict = judge(cpu_task_dir, tmp_path, code)
    assert verdict.status == Status.REJECTED
    assert "computes in half precision" in verdict.reason and "[precision]" in verdict.reason


def test_lower_precision_arithmetic_is_caught_numerically(cpu_task_dir: Path, tmp_path: Path) -> None:
    """Keeps 10 mantissa bits (fp16's) by masking: no half type for the static check to see."""
    code = HEADER + ROW_LOOP.replace(
        "out[i] = acc;", "union { float f; unsigned u; } v; v.f = acc; v.u &= 0xFFFFE000u; out[i] = v.f;") + "}\n"
    verdict = judge(cpu_task_dir, tmp_path, code)
    assert verdict.status == Status.INCORRECT
    assert "outside tolerance" in verdict.reason


def test_including_the_reference_is_rejected(cpu_task_dir: Path, tmp_path: Path) -> None:
    verdict = judge(cpu_task_dir, tmp_path, '#include "fast.c"\n')
    assert verdict.status == Status.REJECTED
    assert "includes_reference" in verdict.reason


def test_library_fallback_is_rejected(cpu_task_dir: Path, tmp_path: Path) -> None:
    code = ("#include <cblas.h>\n" + HEADER
            + "    cblas_sgemv(CblasRowMajor, CblasNoTrans, n, n, 1.0f, m, n, w, 1, 0.0f, out, 1);\n}\n")
    verdict = judge(cpu_task_dir, tmp_path, code)
    assert verdict.status == Status.REJECTED and "library_fallback" in verdict.reason


def test_file_and_environment_access_is_rejected(cpu_task_dir: Path, tmp_path: Path) -> None:
    code = "#include <stdio.h>\n#include <stdlib.h>\n" + HEADER + '    FILE *f = fopen("/tmp/answers", "r");\n' + \
        '    (void)getenv("HOME");\n' + ROW_LOOP + "}\n"
    verdict = judge(cpu_task_dir, tmp_path, code)
    assert verdict.status == Status.REJECTED
    assert "fopen" in verdict.reason and "getenv" in verdict.reason


def test_timer_interposition_is_rejected(cpu_task_dir: Path, tmp_path: Path) -> None:
    code = ("#include <time.h>\nint clock_gettime(clockid_t c, struct timespec *t) { t->tv_sec = 0; t->tv_nsec = 0; "
            "return 0; }\n" + HEADER + ROW_LOOP + "}\n")
    verdict = judge(cpu_task_dir, tmp_path, code)
    assert verdict.status == Status.REJECTED and "defines clock_gettime" in verdict.reason


def test_out_of_bounds_write_is_caught_by_the_guard_zone(cpu_task_dir: Path, tmp_path: Path) -> None:
    code = HEADER + ROW_LOOP + "    out[n + 1] = 1.0f;\n}\n"
    verdict = judge(cpu_task_dir, tmp_path, code)
    assert verdict.status == Status.INCORRECT
    assert "out of bounds" in verdict.reason and "'out'" in verdict.reason


def test_crash_names_the_signal(cpu_task_dir: Path, tmp_path: Path) -> None:
    code = HEADER + "    volatile float *p = 0;\n    *p = 1.0f;\n" + ROW_LOOP + "}\n"
    verdict = judge(cpu_task_dir, tmp_path, code)
    assert verdict.status == Status.CRASHED
    assert "SIGSEGV" in verdict.reason


def test_compile_error_gives_the_compiler_message(cpu_task_dir: Path, tmp_path: Path) -> None:
    code = HEADER + "    out[0] = undefined_name;\n}\n"
    verdict = judge(cpu_task_dir, tmp_path, code)
    assert verdict.status == Status.BUILD_FAILED
    assert "undefined_name" in verdict.reason and "error" in verdict.reason.splitlines()[0]


def test_correct_only_at_one_size_is_caught_at_another(cpu_task_dir: Path, tmp_path: Path) -> None:
    code = HEADER + "    if (n > 64) { for (int i = 0; i < n; i++) out[i] = 0.0f; return; }\n" + ROW_LOOP + "}\n"
    verdict = judge(cpu_task_dir, tmp_path, code)
    assert verdict.status == Status.INCORRECT
    assert "config 'default'" in verdict.reason


def test_state_kept_between_calls_is_caught(cpu_task_dir: Path, tmp_path: Path) -> None:
    code = "static int calls;\n" + HEADER + ROW_LOOP + "    out[0] += (float)calls++;\n}\n"
    verdict = judge(cpu_task_dir, tmp_path, code)
    assert verdict.status == Status.INCORRECT and "identical inputs disagree" in verdict.reason


@pytest.mark.alone
def test_implausible_speedup_is_held_for_review(tmp_path: Path) -> None:
    """An original that repeats its work 60 times: the row-walking candidate is 'faster' by far more than 10x."""
    slow = SLOW_C.replace("void matvec(", "static void once(") + (
        "void matvec(int n, const float *m, const float *w, float *out) {\n"
        "    for (int rep = 0; rep < 60; rep++) once(n, m, w, out);\n}\n")
    task_dir = write_task(tmp_path / "task", kernel=slow,
                          toml=TASK_TOML.replace("n = 1536", "n = 512"))
    verdict = judge(task_dir, tmp_path, FAST_C, timing=True)
    assert verdict.status == Status.NEEDS_REVIEW, verdict.reason
    assert verdict.speedup > 10 and "review" in verdict.reason


def test_degenerate_test_makes_the_task_invalid(tmp_path: Path) -> None:
    from tests.profiling.conftest import HARNESS_C
    harness = HARNESS_C.replace('"w", PF_F32, (size_t)n, -1.0, 1.0', '"w", PF_F32, (size_t)n, 0.0, 0.0')
    task_dir = write_task(tmp_path / "task", harness=harness)
    verdict = judge(task_dir, tmp_path, FAST_C)
    assert verdict.status == Status.TASK_INVALID
    assert "all (near) zero" in verdict.reason


def test_original_that_crashes_makes_the_task_invalid(tmp_path: Path) -> None:
    task_dir = write_task(tmp_path / "task", kernel=HEADER + "    volatile float *p = 0;\n    *p = 1.0f;\n}\n")
    verdict = judge(task_dir, tmp_path, FAST_C)
    assert verdict.status == Status.TASK_INVALID and "original" in verdict.reason


@pytest.mark.parametrize("status", list(Status))
def test_every_status_says_whether_it_is_correct(status: Status) -> None:
    assert status.correct == (status in {Status.IMPROVED, Status.NO_CHANGE, Status.SLOWER, Status.NEEDS_REVIEW,
                                         Status.CORRECT})


@pytest.mark.alone
def test_a_build_changed_after_it_was_made_is_never_run_nor_reused(cpu_task_dir: Path, tmp_path: Path) -> None:
    """Code under test can write to the disk: a rewritten original's binary (a slower baseline, a faster-looking
    candidate) stops the verdict, and the build cache makes such a build again instead of serving it."""
    from profiling.build import build
    from profiling.harness_run import TamperedBuild, run_harness

    task = load_task(cpu_task_dir)
    original = build(task, task.source_path, tmp_path / "work")
    assert original.ok and original.intact()
    binary = original.directory / "bin"
    binary.write_bytes(binary.read_bytes() + b"\0")  # what a candidate with write access could do
    assert not original.intact()
    with pytest.raises(TamperedBuild, match="changed after it was built"):
        run_harness(task, original, "check", task.config(), tmp_path / "run")
    again = build(task, task.source_path, tmp_path / "work")
    assert again.ok and again.intact() and again.duration_s > 0  # compiled anew, not served from the cache


def test_no_reference_result_is_on_disk_while_a_candidate_is_timed(cpu_task_dir: Path, tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """The baseline's saved timed outputs are reference results: read and deleted before the next process runs,
    also when a run fails."""
    import profiling.timing as timing
    from profiling.build import build

    task = load_task(cpu_task_dir)
    work = tmp_path / "work"
    original, fast = build(task, task.source_path, work), build(task, write_fast(tmp_path), work)
    seen: list[list[Path]] = []
    run_harness = timing.run_harness

    def looking(*args: object, **kw: object) -> object:
        seen.append(sorted(work.rglob("*.npy")))  # what the process about to start could read
        return run_harness(*args, **kw)

    monkeypatch.setattr(timing, "run_harness", looking)
    runs = timing.time_interleaved(task, original, fast, task.config(), work, rounds=2, trials=3)
    assert not runs.failure and not runs.timed_mismatch
    assert len(seen) == 4 and seen == [[]] * 4 and not list(work.rglob("*.npy"))


def write_fast(tmp_path: Path) -> Path:
    path = tmp_path / "fast.c"
    path.write_text(FAST_C)
    return path


def test_a_build_tampered_with_during_the_generalisation_check_fails_it_in_one_line(
        cpu_task_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import profiling.validate as validation
    from profiling.harness_run import TamperedBuild

    def tampered(*args: object, **kw: object) -> object:
        raise TamperedBuild("the original's build changed after it was built")

    monkeypatch.setattr(validation, "time_interleaved", tampered)
    by_config = validation.speedup_by_config(load_task(cpu_task_dir), write_fast(tmp_path), tmp_path / "work")
    failures = [v["failure"] for v in by_config.values()]
    assert failures and all(f.startswith("rejected: the original's build changed") for f in failures)


def test_gpu_verdicts_in_threads_take_turns_on_the_device(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """eval --parallel-runs and iterate --jobs judge in threads of one process. A GPU verdict's rules read the
    device as its two processes' own (a slow flush or a slowed original is the candidate's hidden work), so another
    judge's kernels running at the same time would reject a fair candidate: three GPU verdicts at once must run
    their served phases one at a time. (The build and the served runs are stood in for: no GPU here.)"""
    import threading
    import time

    from profiling import validate as validate_module
    from tests.profiling.test_static_checks import CUDA_KERNEL, CUDA_TOML, _task

    task = _task(tmp_path, CUDA_TOML, CUDA_KERNEL, ("kernel.cu", "harness.cu", "fast.cu"))
    counting, in_flight, most = threading.Lock(), [0], [0]

    def served(session: object, verdict: object, timing: bool, phase: object) -> None:
        with counting:
            in_flight[0] += 1
            most[0] = max(most[0], in_flight[0])
        time.sleep(0.3)  # long enough for the other threads to arrive if nothing held them back
        with counting:
            in_flight[0] -= 1

    monkeypatch.setattr(validate_module, "_static", lambda *args: None)
    monkeypatch.setattr(validate_module, "_binary_policy", lambda session: None)
    monkeypatch.setattr(validate_module, "_build_both",
                        lambda task, candidate, work_dir: validate_module._Session(task, work_dir, None, None))
    monkeypatch.setattr(validate_module, "_served", served)
    threads = [threading.Thread(target=validate, args=(task, task.source_path, tmp_path / f"w{i}")) for i in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert most[0] == 1
