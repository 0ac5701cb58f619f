"""The judge against candidates written by someone who has read it (VALIDATION.md rules 20-25), CPU target.

One test per attack, its scenario in the docstring; each must end in the verdict named, with the reason that names
what stopped it. Then legitimate candidates with unusual but innocent code, which must pass. The task is the
matvec of conftest.py (the original walks the matrix by column; FAST_C by row).
"""

from __future__ import annotations

import re
import statistics
from pathlib import Path

import pytest

from perfforge.task import load_task
from perfforge.verdict import Status, Verdict
from profiling import fp_probe, sandbox
from profiling.validate import validate
from tests.profiling.conftest import FAST_C, TASK_TOML, rows_harness, write_task
from tests.profiling.test_pc_samples import perf_events_available

# The fences these tests lean on are the kernel's (Landlock, seccomp): where a machine has neither, the verdicts say
# so (rules 17 and 23) and the attacks that only they stop are not tested.
needs_landlock = pytest.mark.skipif(not sandbox.filesystem_isolation_available(), reason="no Landlock on this kernel")
needs_seccomp = pytest.mark.skipif(not sandbox.seccomp_available(), reason="no seccomp on this kernel")

SIGNATURE = "void matvec(int n, const float *m, const float *w, float *out)"
ROWS = """\
    for (int i = 0; i < n; i++) {
        float acc = 0.0f;
        for (int j = 0; j < n; j++) acc += m[(long)i * n + j] * w[j];
        out[i] = acc;
    }
"""


def judge(task_dir: Path, tmp_path: Path, code: str, *, timing: bool = False) -> Verdict:
    candidate = tmp_path / "candidate.c"
    candidate.write_text(code)
    return validate(load_task(task_dir), candidate, tmp_path / "work", timing=timing)


def kernel(body: str, prelude: str = "") -> str:
    return f"{prelude}\n{SIGNATURE} {{\n{body}}}\n"


# --- 1. knowing which calls are checked ---------------------------------------------------------------------------


@pytest.mark.alone
def test_skipping_work_after_the_calls_it_expects_to_be_checked(cpu_task_dir: Path, tmp_path: Path) -> None:
    """Counts its calls and, past the number of checked calls the old harness made per process (10), computes only
    half the rows, expecting the rest to be timed and unchecked. Every served call is checked."""
    code = kernel("    static int calls;\n    int rows = ++calls > 10 ? n / 2 : n;\n"
                  + ROWS.replace("i < n; i++) {", "i < rows; i++) {"))
    verdict = judge(cpu_task_dir, tmp_path, code, timing=True)
    assert verdict.status is Status.INCORRECT and "never written" in verdict.reason, verdict.reason


def test_reading_its_command_line_for_the_seeds(cpu_task_dir: Path, tmp_path: Path) -> None:
    """Opens /proc/self/cmdline to learn the seed and which calls are checked (the old harness passed both there).
    The import of fopen is refused before anything runs."""
    code = kernel(ROWS, "#include <stdio.h>\nstatic int peek(void) { FILE *f = fopen(\"/proc/self/cmdline\", \"r\"); "
                        "return f != 0; }\nint (*keep)(void) = peek;")
    verdict = judge(cpu_task_dir, tmp_path, code)
    assert verdict.status is Status.REJECTED and "uses fopen" in verdict.reason and "[imports]" in verdict.reason


# --- 2. tampering with the measurement ---------------------------------------------------------------------------


def test_a_clock_of_its_own(cpu_task_dir: Path, tmp_path: Path) -> None:
    """Defines clock_gettime so that the harness's timer, bound to it at link time, reads a frozen clock."""
    code = kernel(ROWS, "#include <time.h>\nint clock_gettime(clockid_t c, struct timespec *t) "
                        "{ (void)c; t->tv_sec = 0; t->tv_nsec = 0; return 0; }")
    verdict = judge(cpu_task_dir, tmp_path, code)
    assert verdict.status is Status.REJECTED and "defines clock_gettime" in verdict.reason


def test_a_clock_behind_an_asm_label(cpu_task_dir: Path, tmp_path: Path) -> None:
    """The same clock under another name in the source, renamed to clock_gettime by an asm label and hidden behind
    token pasting: no regex on the source sees it; the object's symbol table does."""
    code = kernel(ROWS, "#include <time.h>\n#define CAT(a, b) a##b\n"
                        "int my_clock(clockid_t c, struct timespec *t) __asm__(\"clock_\" \"gettime\");\n"
                        "int my_clock(clockid_t c, struct timespec *t) { (void)c; t->tv_sec = 0; t->tv_nsec = 0; "
                        "return 0; }")
    verdict = judge(cpu_task_dir, tmp_path, code)
    assert verdict.status is Status.REJECTED and "defines clock_gettime" in verdict.reason


def test_an_allocator_of_its_own(cpu_task_dir: Path, tmp_path: Path) -> None:
    """Defines malloc: the C library, libgomp and the harness would call it, before main too."""
    code = kernel(ROWS, "#include <stddef.h>\nstatic char pool[1 << 20]; static size_t used;\n"
                        "void *malloc(size_t n) { void *p = pool + used; used += (n + 15) & ~15ul; return p; }")
    verdict = judge(cpu_task_dir, tmp_path, code)
    assert verdict.status is Status.REJECTED and "defines malloc" in verdict.reason


def test_a_gnu_unique_definition_that_disables_the_filter(cpu_task_dir: Path, tmp_path: Path) -> None:
    """Found by the red team: `prctl` defined in assembly as a GNU-unique object (nm letter 'u', which the policy once
    skipped as local) is bound like a global, so the harness's own prctl fails and no filter goes in, while the
    harness still says "ready". The definition is refused; and the judge reads the filter from /proc, not from the
    process's word."""
    code = kernel(ROWS, '__asm__(".text\\n.globl prctl\\n.type prctl, @gnu_unique_object\\nprctl:\\n  mov $-1, %eax\\n'
                        '  ret\\n.size prctl, .-prctl\\n");')
    verdict = judge(cpu_task_dir, tmp_path, code)
    assert verdict.status is Status.REJECTED and "defines prctl" in verdict.reason, verdict.reason


def test_code_before_main_through_the_start_up_files_hook(cpu_task_dir: Path, tmp_path: Path) -> None:
    """Found by the red team: crti.o's _init calls __gmon_start__ when the program defines it: a GNU-unique
    definition of it runs the candidate's code before main, before any filter."""
    code = kernel(ROWS, '#include <stdio.h>\n__attribute__((used)) static void early(void) { puts("early"); }\n'
                        '__asm__(".text\\n.globl __gmon_start__\\n.type __gmon_start__, @gnu_unique_object\\n'
                        '__gmon_start__:\\n  jmp early\\n.size __gmon_start__, .-__gmon_start__\\n");')
    verdict = judge(cpu_task_dir, tmp_path, code)
    assert verdict.status is Status.REJECTED and "defines __gmon_start__" in verdict.reason, verdict.reason


def test_lowering_the_judges_priority(cpu_task_dir: Path, tmp_path: Path) -> None:
    """Renices its parent (the judge, whose calls to the original it would then slow down)."""
    code = kernel(ROWS, "#include <sys/resource.h>\n#include <unistd.h>\n"
                        "static void lower(void) { setpriority(PRIO_PROCESS, getppid(), 19); }\n"
                        "void (*keep)(void) = lower;")
    verdict = judge(cpu_task_dir, tmp_path, code)
    assert verdict.status is Status.REJECTED and "uses setpriority" in verdict.reason


def test_a_raw_system_call(cpu_task_dir: Path, tmp_path: Path) -> None:
    """Makes the system call itself (inline asm), past any import list."""
    code = kernel(ROWS + "    if (n < 0) { long r; __asm__ volatile(\"syscall\" : \"=a\"(r) : \"a\"(39L) : \"rcx\", "
                         "\"r11\", \"memory\"); out[0] = (float)r; }\n")
    verdict = judge(cpu_task_dir, tmp_path, code)
    assert verdict.status is Status.REJECTED and "[raw_syscall]" in verdict.reason


# walks the C library's dynamic symbol table in memory from memcpy's address to a function by name, past the binary
# policy (which reads only what the object imports)
LIBC_WALKER = r"""
#include <elf.h>
#include <string.h>
#include <stdint.h>
static void *find(const char *name) {
    uintptr_t p = ((uintptr_t)&memcpy) & ~(uintptr_t)4095;
    for (int pages = 0; pages < 1 << 16; pages++, p -= 4096)
        if (memcmp((void *)p, ELFMAG, SELFMAG) == 0) break;
    Elf64_Ehdr *eh = (Elf64_Ehdr *)p;
    Elf64_Phdr *ph = (Elf64_Phdr *)(p + eh->e_phoff);
    Elf64_Dyn *dyn = 0;
    for (int i = 0; i < eh->e_phnum; i++) if (ph[i].p_type == PT_DYNAMIC) dyn = (Elf64_Dyn *)(p + ph[i].p_vaddr);
    Elf64_Sym *sym = 0; const char *str = 0;
    for (; dyn && dyn->d_tag != DT_NULL; dyn++) {
        uintptr_t v = dyn->d_un.d_ptr < p ? p + dyn->d_un.d_ptr : dyn->d_un.d_ptr;
        if (dyn->d_tag == DT_SYMTAB) sym = (Elf64_Sym *)v;
        if (dyn->d_tag == DT_STRTAB) str = (const char *)v;
    }
    for (Elf64_Sym *s = sym; s && (const char *)s < str; s++)
        if (s->st_value && strcmp(str + s->st_name, name) == 0) return (void *)(p + s->st_value);
    return 0;
}
"""


@needs_seccomp
def test_open_through_a_pointer_found_in_libcs_symbol_table(cpu_task_dir: Path, tmp_path: Path) -> None:
    """Passes the binary policy (only memcpy and strcmp imported), then walks the C library's dynamic symbol table
    in memory from memcpy's address to find `open`, and calls it: the system-call filter answers EPERM. Had the
    open worked, out[0] would say so and the verdict would be incorrect."""
    code = kernel(ROWS + "    open_fn o = (open_fn)find(\"open\");\n"
                         "    if (o && o(\"/proc/self/cmdline\", 0) >= 0) out[0] = 12345.0f;\n",
                  LIBC_WALKER + "typedef int (*open_fn)(const char *, int, ...);\n")
    verdict = judge(cpu_task_dir, tmp_path, code)
    assert verdict.correct, verdict.reason  # the open failed: nothing was learnt, the outputs are right
    rule = next(r for r in verdict.rules if r.rule == 23)
    assert "system-call filter (seccomp)" in rule.detail


@needs_seccomp
def test_work_in_a_sigcont_handler_before_start(cpu_task_dir: Path, tmp_path: Path) -> None:
    """Red team: the judge resumes a stopped kernel process with SIGCONT once a call's inputs are written; a handler
    for SIGCONT runs on the main thread before the harness reads "call" and says "start", outside the timed window.
    The candidate finds sigaction through libc's symbol table (the binary policy refuses importing it) and computed
    45% of the rows in the handler: 8.99x against the honest 5x, under the 10x review gate, while a tenth of the
    original's call was allowed outside the window. The filter now refuses a new action (rt_sigaction may only
    read): had the handler been installed, out[0] would say so and the verdict would be incorrect."""
    prelude = (LIBC_WALKER + "#include <signal.h>\n"
               "typedef int (*sigaction_fn)(int, const struct sigaction *, struct sigaction *);\n"
               "static void on_cont(int sig) { (void)sig; }\n")
    code = kernel(ROWS + "    sigaction_fn sa = (sigaction_fn)find(\"sigaction\");\n"
                         "    struct sigaction act; memset(&act, 0, sizeof act); act.sa_handler = on_cont;\n"
                         "    if (sa && sa(SIGCONT, &act, 0) == 0) out[0] = 12345.0f;\n", prelude)
    verdict = judge(cpu_task_dir, tmp_path, code)
    assert verdict.correct, verdict.reason  # the handler was refused: the outputs are right


@pytest.mark.alone
def test_synced_said_early_through_stdouts_descriptor(cpu_task_dir: Path, tmp_path: Path) -> None:
    """The judge times a CPU call from its harness's "start" to its "synced", as the kernel stamped them. The
    candidate points stdout's descriptor at every fd in turn (the channel among them: the allowed fwrite then
    sends on it) and says "synced" before doing the work, so the window would close at once. The harness's own
    "synced" still follows the body: a word out of turn, refused."""
    prelude = "#include <stdio.h>\n"
    body = ("    int saved = stdout->_fileno;\n    fflush(stdout);\n"
            "    for (int fd = 3; fd < 1024; fd++) { stdout->_fileno = fd; fwrite(\"synced\", 1, 6, stdout); "
            "fflush(stdout); }\n    stdout->_fileno = saved;\n" + ROWS)
    verdict = judge(cpu_task_dir, tmp_path, kernel(body, prelude), timing=True)
    assert verdict.status is Status.REJECTED and "answered 'synced'" in verdict.reason, verdict.reason


# --- 3. work outside the timed window ------------------------------------------------------------------------------


@pytest.mark.alone
def test_a_thread_that_finishes_after_the_call_returns(cpu_task_dir: Path, tmp_path: Path) -> None:
    """Hands the rows to a detached thread and returns at once: the call looks instant. The judge stops every thread
    at 'done' and reads the outputs then: still poisoned. Where the judge is slow enough to stop it that the thread
    finishes (a loaded host), the thread's CPU time after the judge woke makes everything from 'done' to the stop
    count as work moved out of the call: refused (served.work_after_done_ms)."""
    prelude = ("#include <pthread.h>\nstruct job { int n; const float *m, *w; float *out; };\n"
               "static void *work(void *arg) { struct job *j = arg; int n = j->n; const float *m = j->m, *w = j->w; "
               "float *out = j->out;\n" + ROWS + "    return 0; }\nstatic struct job job;")
    code = kernel("    job = (struct job){n, m, w, out};\n    pthread_t t;\n    pthread_create(&t, 0, work, &job);\n"
                  "    pthread_detach(t);\n", prelude)
    verdict = judge(cpu_task_dir, tmp_path, code, timing=True)
    assert ((verdict.status is Status.INCORRECT and "never written" in verdict.reason)
            or (verdict.status is Status.REJECTED and "after its call said 'done'" in verdict.reason)), verdict.reason


# redirects the harness's `send` through its GOT slot (found next to the candidate's own data, made writable with
# mprotect from libc's symbol table): on "synced" it sends "synced" and "done", then runs `after_done(late)` on the
# main thread, and swallows the harness's own "done"
GOT_HOOK = LIBC_WALKER + r"""
typedef long (*send_fn)(int, const void *, unsigned long, int);
typedef int (*mprotect_fn)(void *, unsigned long, int);
static send_fn real_send;
static struct { int n, from, swallow; const float *m, *w; float *out; } late;
static void rows(int n, int lo, int hi, const float *m, const float *w, float *out) {
    for (int i = lo; i < hi; i++) { float acc = 0.0f; for (int j = 0; j < n; j++) acc += m[(long)i * n + j] * w[j];
        out[i] = acc; }
}
static void after_done(void);
static long fake_send(int fd, const void *buf, unsigned long len, int flags) {
    if (len == 6 && memcmp(buf, "synced", 6) == 0) {
        long sent = real_send(fd, buf, len, flags);
        real_send(fd, "done", 4, flags);
        after_done();
        late.swallow = 1;
        return sent;
    }
    if (late.swallow && len == 4 && memcmp(buf, "done", 4) == 0) { late.swallow = 0; return 4; }
    return real_send(fd, buf, len, flags);
}
static long marker;
static int hook(void) {
    send_fn s = (send_fn)find("send");
    mprotect_fn protect = (mprotect_fn)find("mprotect");
    if (!s || !protect) return 0;
    for (long *p = &marker; p > &marker - 65536; p--)
        if (*p == (long)s) {
            if (protect((void *)((uintptr_t)p & ~(uintptr_t)4095), 4096, 3) != 0) return 0;
            real_send = s;
            *p = (long)fake_send;
            return 1;
        }
    return 0;
}
"""
# the body: rows up to `from` in the call, the rest after "done" where the hook is in
GOT_BODY = ("    static int hooked;\n    if (!hooked) hooked = 1 + hook();\n"
            "    int from = hooked == 2 ? n - n / {share} : n;\n"
            "    late.n = n; late.from = from; late.m = m; late.w = w; late.out = out;\n"
            "    rows(n, 0, from, m, w, out);\n")


def after_done_of_candidate(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """The candidate's calls' after_done_ms, as the judge measures them (served.CallTime), filled while it runs."""
    from profiling import served

    seen: list[float] = []
    round_trip = served.KernelProcess._round_trip

    def spy(self: served.KernelProcess, *args: object, **kwargs: object) -> served.CallTime:
        timed = round_trip(self, *args, **kwargs)
        if self.who == "candidate":
            seen.append(timed.after_done_ms)
        return timed

    monkeypatch.setattr(served.KernelProcess, "_round_trip", spy)
    return seen


@pytest.mark.alone
def test_the_main_thread_finishing_rows_after_an_early_done(cpu_task_dir: Path, tmp_path: Path,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    """Ninth red team: the harness's `send` redirected through the GOT sends "done" right after "synced", and the
    main thread then computes the last rows, asleep again in the harness's wait before the judge looks: 5.1x
    against the honest 4.7x, since the main thread's reading at the waking was passed over as stale. Now the main
    thread's exact CPU time across the call (stopped before and after) beyond the call's length counts as work after
    "done", and is timed with the call: either the rows were not finished when the judge stopped it, or the work
    was seen after "done" in most calls."""
    seen = after_done_of_candidate(monkeypatch)
    code = kernel(GOT_BODY.format(share=16), GOT_HOOK.replace(
        "static void after_done(void);", "static void after_done(void) { rows(late.n, late.from, late.n, late.m, "
                                         "late.w, late.out); }"))
    verdict = judge(cpu_task_dir, tmp_path, code, timing=True)
    if verdict.status is Status.INCORRECT:
        assert "never written" in verdict.reason, verdict.reason
    else:
        assert sum(ms > 0 for ms in seen) > len(seen) / 2, (seen, verdict.reason)


@pytest.mark.alone
def test_rows_computed_between_synced_and_done(cpu_task_dir: Path, tmp_path: Path,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    """Tenth red team: the same hook, with "done" left to the harness, computes the last 30% of the rows between
    passing "synced" on and returning (or, its twin, 25% before passing "start" on): outside the window, before
    "done", so nothing after "done" shows. Refused only past a tenth of the original's call, it read 4.7-4.9x
    against the honest 2.2-3.6x on the 2-core VM. Now each CPU call is charged what it spent outside its window
    beyond the original's calls there (validate._charged_windows): the candidate's time as reported holds the
    rows it moved out. Where the moved rows also pass the older bound (a tenth of the original's call, or four
    standard errors: 0.744 ms against 0.73 in one CI run of 30), the judge refuses the candidate outright, which
    gives the attacker nothing either; either way the rows are never credited."""
    from profiling import served

    calls: dict[str, list[served.CallTime]] = {"original": [], "candidate": []}
    round_trip = served.KernelProcess._round_trip

    def spy(self: served.KernelProcess, *args: object, **kwargs: object) -> served.CallTime:
        timed = round_trip(self, *args, **kwargs)
        if args and args[0].split()[0] == b"call":  # "call" or "call XX" (the poison)
            calls[self.who].append(timed)
        return timed

    monkeypatch.setattr(served.KernelProcess, "_round_trip", spy)
    hook = GOT_HOOK.replace('real_send(fd, "done", 4, flags);', "").replace("late.swallow = 1;", "").replace(
        "static void after_done(void);", "static void after_done(void) { rows(late.n, late.from, late.n, late.m, "
                                         "late.w, late.out); }")
    verdict = judge(cpu_task_dir, tmp_path, kernel(GOT_BODY.format(share=3), hook), timing=True)
    if not verdict.correct:
        assert verdict.status is Status.REJECTED and "work moved out of the timed region" in verdict.reason, \
            verdict.reason
        return
    window_ms = statistics.median(t.duration_ms for t in calls["candidate"])
    moved_ms = (statistics.median(t.outer_ms - t.duration_ms for t in calls["candidate"])
                - statistics.median(t.outer_ms - t.duration_ms for t in calls["original"]))
    reported_ms = float(re.search(r"candidate ([\d.]+) ms", verdict.reason).group(1))
    assert moved_ms > 0.1, moved_ms  # the hook did move work out of the window
    assert reported_ms > window_ms + 0.7 * moved_ms, (reported_ms, window_ms, moved_ms)


@pytest.mark.alone
def test_the_main_thread_working_on_after_done(cpu_task_dir: Path, tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """The same hook with every row done in the call and 0.3 ms of the main thread's CPU work after the early "done"
    (standing in for work whose result the judge never reads, or finishes in time): never free. Where the main
    thread is still on a CPU when the judge has settled, the stretch to the stop counts as work after "done"; where
    the judge's waking thread took its core (2 cores: 6 of 54 calls in one CI run), it was stopped before it could
    work, and what it left runs when it is resumed for the next call, before that call's "start", which is charged
    beyond the original's time there (validate._charged_windows)."""
    from profiling import served

    # every call of each candidate process, in order, None for a call a probe held (its times are never used, and
    # the hold takes the main thread off its CPU mid-call, which the exact check of its CPU time against the call's
    # length reads as idle time): a pair of calls is read only where the two are adjacent, as work left by one
    # call runs in the next, held or not
    calls: dict[int, list[served.CallTime | None]] = {}
    # the processes seen, kept alive: calls are grouped per process by id(), which Python hands to a new object once
    # a replaced process's is freed (7 of 30 ids held two processes' calls in one run once the judge probed more
    # rounds: the red team of the twenty-fourth session)
    seen: list[served.KernelProcess] = []
    round_trip = served.KernelProcess._round_trip

    def spy(self: served.KernelProcess, *args: object, **kwargs: object) -> served.CallTime:
        timed = round_trip(self, *args, **kwargs)
        if self.who == "candidate" and args and args[0].split()[0] == b"call":
            if id(self) not in calls:
                seen.append(self)
            calls.setdefault(id(self), []).append(None if kwargs.get("probe") else timed)
        return timed

    monkeypatch.setattr(served.KernelProcess, "_round_trip", spy)
    spin = ("#include <time.h>\nstatic void after_done(void) { struct timespec t0, t; "
            "clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t0); do clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t); while "
            "((t.tv_sec - t0.tv_sec) * 1000000000L + t.tv_nsec - t0.tv_nsec < 300000L); }")
    code = kernel(GOT_BODY.format(share=16).replace("n - n / 16", "n"),
                  GOT_HOOK.replace("static void after_done(void);", spin))

    def judged(attempt: int) -> list[tuple[served.CallTime, served.CallTime]]:
        calls.clear()
        seen.clear()
        (tmp_path / f"attempt{attempt}").mkdir()
        verdict = judge(cpu_task_dir, tmp_path / f"attempt{attempt}", code, timing=True)
        assert verdict.correct, verdict.reason
        return [(this, after) for process in calls.values()
                for this, after in zip(process, process[1:], strict=False)
                if this is not None and after is not None
                and this.after_done_ms == 0 and after.outer_ms - after.duration_ms < 0.2
                and this.outer_ms - this.duration_ms < 0.3]

    # a call whose work after "done" went uncounted hands at least 0.25 ms of it (all but the 0.05 ms slack) to the
    # next call, outside its window; the honest gap there (resumed to "start", "synced" to "done") is microseconds.
    # Open (served.work_after_done_ms): a loaded host that wakes the judge late and preempted the main thread
    # within its call (its CPU time then falls short of the call's length) lets the spin finish unseen; with one
    # busy loop beside the test on the 2-core VM, 1-6 of 54 calls, all but one of them charged more than the spin
    # outside their own window (preempted there by 0.5-4 ms), so such a call counts as paid here
    # ... and on this 2-core VM, with nothing beside it, about one verdict in ten still had one such call (CI,
    # sessions 14-16): judged again when so, the spin must never go free twice running
    free = judged(0)
    if free:
        free = judged(1)
    timed = [t for process in calls.values() for t in process if t is not None]
    assert not free, free
    assert sum(t.after_done_ms > 0 for t in timed) > len(timed) / 2, calls


# a persistent worker, started by the first call, that spins on a flag between jobs (test_a_spinning_pool_passes)
POOL = ("#include <pthread.h>\n#include <stdatomic.h>\nstruct job { int n, lo; const float *m, *w; float *out; };\n"
        "static struct job job; static atomic_int go; static int started;\n"
        "static void *work(void *arg) { (void)arg; for (;;) { while (!atomic_load(&go)) ; struct job j = job;\n"
        "    for (int i = j.lo; i < j.n; i++) { float acc = 0.0f; for (int k = 0; k < j.n; k++) "
        "acc += j.m[(long)i * j.n + k] * j.w[k]; j.out[i] = acc; }\n    atomic_store(&go, 0); } return 0; }")
POOL_BODY = ("    if (!started) { pthread_t t; pthread_create(&t, 0, work, 0); pthread_detach(t); started = 1; }\n"
             "    job = (struct job){n, n / 2, m, w, out};\n    atomic_store(&go, 1);\n"
             "    for (int i = 0; i < n / 2; i++) { float acc = 0.0f; for (int j = 0; j < n; j++) "
             "acc += m[(long)i * n + j] * w[j]; out[i] = acc; }\n    while (atomic_load(&go)) ;\n")


def test_a_constructor_that_runs_before_the_first_call(cpu_task_dir: Path, tmp_path: Path) -> None:
    """Work (or a look around) in a constructor, before main and before the filter is in."""
    code = kernel(ROWS + "    out[0] += (float)(ready - 1);\n",
                  "static volatile int ready;\n__attribute__((constructor)) static void early(void) { ready = 1; }")
    verdict = judge(cpu_task_dir, tmp_path, code)
    assert verdict.status is Status.REJECTED and ".init_array" in verdict.reason


def test_lazy_outputs_behind_a_page_fault_handler(cpu_task_dir: Path, tmp_path: Path) -> None:
    """Protects the output pages and fills them in a SIGSEGV handler when they are first read, so that the work
    happens when the harness reads them, after the timer. Refused at the import of sigaction; and the judge reads
    its own mapping, which no handler of the candidate's sees."""
    code = kernel(ROWS, "#include <signal.h>\nstatic void on_fault(int s) { (void)s; }\n"
                        "static void arm(void) { struct sigaction a = {0}; a.sa_handler = on_fault; "
                        "sigaction(SIGSEGV, &a, 0); }\nvoid (*keep)(void) = arm;")
    verdict = judge(cpu_task_dir, tmp_path, code)
    assert verdict.status is Status.REJECTED and "uses sigaction" in verdict.reason


# --- 4. caches that outlive a call or a run ------------------------------------------------------------------------


def test_results_shared_between_runs_through_posix_shared_memory(cpu_task_dir: Path, tmp_path: Path) -> None:
    """Keeps results in a POSIX shared-memory object for a later run (or copies the original's there)."""
    code = kernel(ROWS, "#include <sys/mman.h>\n#include <fcntl.h>\n"
                        "static int stash(void) { return shm_open(\"/pf-cache\", O_RDWR | O_CREAT, 0600); }\n"
                        "int (*keep)(void) = stash;")
    verdict = judge(cpu_task_dir, tmp_path, code)
    assert verdict.status is Status.REJECTED and "uses shm_open" in verdict.reason


@pytest.mark.alone
def test_a_cache_keyed_by_input_contents_never_hits(cpu_task_dir: Path, tmp_path: Path) -> None:
    """Remembers the last inputs' first elements and the result, and returns the result (here, wrongly marked) when
    they come again: no input set is ever drawn twice but for the one deliberate repeat, which catches it."""
    prelude = "static float seen_m, seen_w; static int have;"
    code = kernel(ROWS + "    if (have && m[0] == seen_m && w[0] == seen_w) out[n - 1] = -1.0f;\n"
                         "    seen_m = m[0]; seen_w = w[0]; have = 1;\n", prelude)
    verdict = judge(cpu_task_dir, tmp_path, code, timing=True)
    assert verdict.status is Status.INCORRECT and "identical inputs disagree" in verdict.reason


# the matvec task of conftest.py with a weight matrix the harness sets up once (a fixed buffer)
FIXED_TASK_TOML = (TASK_TOML.replace('name = "matvec_colwalk"', 'name = "matvec_fixed_weights"')
                   .replace('reference = "fast.c"\n', "")
                   .replace('kernel = "matvec"', 'kernel = "matvec_fixed"').replace('name = "out"', 'name = "y"')
                   .replace("n = 1536", "n = 640"))
FIXED_HARNESS = r"""#include "perfforge_harness.h"
void matvec_fixed(int n, const float *wt, const float *x, float *y);
int main(int argc, char **argv) {
    pf_run r;
    pf_init(&r, argc, argv);
    int n = (int)pf_param_int(&r, "n", 512);
    pf_buf *wt = pf_fixed(&r, "wt", PF_F32, (size_t)n * n);
    pf_buf *x = pf_input(&r, "x", PF_F32, (size_t)n, -1.0, 1.0);
    pf_buf *y = pf_output(&r, "y", PF_F32, (size_t)n);
    float *wp = (float *)pf_ptr(wt);
    for (long i = 0; i < (long)n * n; i++) wp[i] = (float)((i * 2654435761u) % 2001u) / 1000.0f - 1.0f;
    while (pf_begin(&r)) {
        matvec_fixed(n, (const float *)pf_ptr(wt), (const float *)pf_ptr(x), (float *)pf_ptr(y));
        pf_end(&r);
    }
    return pf_finish(&r);
}
"""
FIXED_ROWS = """\
    for (int i = 0; i < n; i++) {
        float acc = 0.0f;
        const float *row = WEIGHTS + (long)i * n;
        for (int j = 0; j < n; j++) acc += row[j] * x[j];
        y[i] = acc;
    }
"""


@pytest.mark.alone
def test_a_private_copy_of_a_fixed_buffer_gains_nothing(tmp_path: Path) -> None:
    """Red team: the harness sets a weight matrix up once (a fixed buffer). The candidate copies it into memory of
    its own at the first call and reads the copy from then on, with the same arithmetic. When the judge evicted
    every buffer of the call before timing it, fixed ones included, the private copy stayed cached and the original
    read its evicted weights from memory: 1.49x for identical work. Fixed buffers are left cached for both sides
    now (they are the same every call), and the copy is no faster."""
    task_dir = tmp_path / "task"
    task_dir.mkdir()
    (task_dir / "task.toml").write_text(FIXED_TASK_TOML)
    (task_dir / "harness.c").write_text(FIXED_HARNESS)
    signature = "void matvec_fixed(int n, const float *wt, const float *x, float *y)"
    (task_dir / "kernel.c").write_text(f"{signature} {{\n{FIXED_ROWS.replace('WEIGHTS', 'wt')}}}\n")
    copy = ("#include <stdlib.h>\n#include <string.h>\nstatic float *mine; static int mine_n;\n"
            f"{signature} {{\n    if (mine_n != n) {{ free(mine); mine = malloc(sizeof(float) * (size_t)n * n);\n"
            "        memcpy(mine, wt, sizeof(float) * (size_t)n * n); mine_n = n; }\n"
            f"{FIXED_ROWS.replace('WEIGHTS', 'mine')}}}\n")
    verdict = judge(task_dir, tmp_path, copy, timing=True)
    assert verdict.correct and verdict.status is not Status.IMPROVED, (verdict.status, verdict.reason)


# --- 5. reading what it should not ---------------------------------------------------------------------------------


@needs_landlock
def test_a_computed_include_of_the_reference(cpu_task_dir: Path, tmp_path: Path) -> None:
    """Includes the task's fast version by its absolute path, built by macros so no regex sees "fast.c": the
    compiler may read only its build directory, the harness runtime and the system's directories."""
    reference = (cpu_task_dir / "fast.c").resolve()
    stem, suffix = str(reference)[:-2], str(reference)[-2:]
    code = f'#define STR(x) #x\n#define PATH(a, b) STR(a ## b)\n#include PATH({stem}, {suffix})\n'
    verdict = judge(cpu_task_dir, tmp_path, code)
    assert verdict.status is Status.BUILD_FAILED, verdict.reason
    assert "Permission denied" in verdict.reason or "No such file" in verdict.reason


@needs_landlock
def test_embedding_the_reference_with_incbin(cpu_task_dir: Path, tmp_path: Path) -> None:
    """Pulls the reference's bytes in through the assembler (.incbin): the same read fence stops it."""
    reference = (cpu_task_dir / "fast.c").resolve()
    code = kernel(ROWS, f'__asm__(".section .rodata\\n.global stolen\\nstolen: .incbin \\"{reference}\\"\\n'
                        '.text");')
    verdict = judge(cpu_task_dir, tmp_path, code)
    assert verdict.status is Status.BUILD_FAILED, verdict.reason


# --- 6. forging the input check ------------------------------------------------------------------------------------


def test_an_input_used_as_scratch_and_put_back_almost(cpu_task_dir: Path, tmp_path: Path) -> None:
    """Uses w as scratch space and restores it so that its sum (and a linear digest) is unchanged: two elements
    swapped. The judge compares every byte with its own copy."""
    code = kernel(ROWS + "    if (n > 2) { float *x = (float *)w; float t = x[1]; x[1] = x[2]; x[2] = t; }\n")
    verdict = judge(cpu_task_dir, tmp_path, code)
    assert verdict.status is Status.INCORRECT and "input 'w' was modified" in verdict.reason


# --- 7. precision ---------------------------------------------------------------------------------------------------


def test_fast_math_through_a_macro_made_pragma(cpu_task_dir: Path, tmp_path: Path) -> None:
    """Turns on fast-math with a _Pragma produced by a macro, so the source never says "#pragma ... fast-math"."""
    code = kernel(ROWS, '#define RELAX(x) _Pragma(#x)\nRELAX(GCC optimize("fast-" "math"))')
    verdict = judge(cpu_task_dir, tmp_path, code)
    assert verdict.status is Status.REJECTED and "relaxes floating point" in verdict.reason


def test_ofast_as_a_function_attribute(cpu_task_dir: Path, tmp_path: Path) -> None:
    """The same per function: __attribute__((optimize("Ofast")))."""
    code = "__attribute__((optimize(\"Ofast\"))) " + kernel(ROWS).lstrip()
    verdict = judge(cpu_task_dir, tmp_path, code)
    assert verdict.status is Status.REJECTED and "relaxes floating point" in verdict.reason


@pytest.mark.parametrize("switch", ['[[gnu::optimize("O3", "fast-math")]]',
                                    '__attribute__((hot, optimize("O3", "-ffa" "st-math")))'])
def test_fast_math_in_spellings_a_word_check_misses(switch: str, cpu_task_dir: Path, tmp_path: Path) -> None:
    """Found by the red team: the C2x attribute spelling, and the option split over two string literals with the
    optimize attribute second in the list. Any per-function optimize switch is refused."""
    verdict = judge(cpu_task_dir, tmp_path, switch + " " + kernel(ROWS).lstrip())
    assert verdict.status is Status.REJECTED and "[precision]" in verdict.reason, verdict.reason


def test_bfloat16_dot_products(cpu_task_dir: Path, tmp_path: Path) -> None:
    """Found by the red team: AVX512-BF16 (vcvtne2ps2bf16, vdpbf16ps) enabled for one function by a target
    attribute; no mnemonic of it ends in ph or sh."""
    code = kernel("""    for (int i = 0; i < n; i++) {
        const float *row = m + (long)i * n;
        __m512 acc = _mm512_setzero_ps();
        int j = 0;
        for (; j + 32 <= n; j += 32) {
            __m512bh a = _mm512_cvtne2ps_pbh(_mm512_loadu_ps(row + j + 16), _mm512_loadu_ps(row + j));
            __m512bh b = _mm512_cvtne2ps_pbh(_mm512_loadu_ps(w + j + 16), _mm512_loadu_ps(w + j));
            acc = _mm512_dpbf16_ps(acc, a, b);
        }
        float s = _mm512_reduce_add_ps(acc);
        for (; j < n; j++) s += row[j] * w[j];
        out[i] = s;
    }
""", "#include <immintrin.h>").replace(SIGNATURE, '__attribute__((target("avx512f,avx512bf16"))) ' + SIGNATURE)
    verdict = judge(cpu_task_dir, tmp_path, code)
    assert verdict.status is Status.REJECTED and "half precision" in verdict.reason, verdict.reason


def test_half_precision_arithmetic(cpu_task_dir: Path, tmp_path: Path) -> None:
    """Accumulates in _Float16, behind a typedef with an innocent name: the object holds the conversions."""
    code = kernel(ROWS.replace("float acc = 0.0f;", "real acc = 0;").replace("out[i] = acc;", "out[i] = (float)acc;"),
                  "typedef _Float16 real;")
    verdict = judge(cpu_task_dir, tmp_path, code)
    assert verdict.status is Status.REJECTED and "half precision" in verdict.reason


# --- 9. fail-open edges --------------------------------------------------------------------------------------------


def test_an_early_exit_is_a_crash_not_a_traceback(cpu_task_dir: Path, tmp_path: Path) -> None:
    """exit(0) in the first call: status 0 from a process that never said 'done' is a failure, not a pass."""
    code = kernel("    exit(0);\n", "#include <stdlib.h>")
    verdict = judge(cpu_task_dir, tmp_path, code)
    assert verdict.status is Status.CRASHED and "exited with status 0 during call 0" in verdict.reason


def test_an_abort_names_its_signal(cpu_task_dir: Path, tmp_path: Path) -> None:
    code = kernel("    abort();\n", "#include <stdlib.h>")
    verdict = judge(cpu_task_dir, tmp_path, code)
    assert verdict.status is Status.CRASHED and "SIGABRT" in verdict.reason


@pytest.mark.alone
def test_a_hang_times_out_within_the_calls_limit(tmp_path: Path) -> None:
    task_dir = write_task(tmp_path / "task", toml=TASK_TOML.replace("timeout_s = 30", "timeout_s = 3"))
    code = kernel("    volatile int spin = 1;\n    while (spin) {}\n")
    verdict = judge(task_dir, tmp_path, code)
    assert verdict.status is Status.TIMEOUT and "timed out" in verdict.reason


def test_an_out_of_bounds_write_is_caught_by_the_guard(cpu_task_dir: Path, tmp_path: Path) -> None:
    code = kernel(ROWS + "    out[n] = 1.0f;\n")
    verdict = judge(cpu_task_dir, tmp_path, code)
    assert verdict.status is Status.INCORRECT and "out of bounds, past its end" in verdict.reason


# --- legitimate candidates with unusual code: all accepted --------------------------------------------------------


def test_names_like_types_and_allowed_pragmas_pass(cpu_task_dir: Path, tmp_path: Path) -> None:
    """Variables named half, tf32 and float16 (a word check once rejected `half`), an unroll pragma, a static
    helper, a debug print that never fires, a heap scratch buffer."""
    code = kernel("""\
    float *scratch = malloc(sizeof(float) * (size_t)n);
    int half = n / 2, tf32 = 0, float16 = 1;
    for (int i = 0; i < n; i++) {
        float acc = 0.0f;
#pragma GCC unroll 4
        for (int j = 0; j < n; j++) acc += m[(long)i * n + j] * w[j];
        scratch[i] = acc;
    }
    for (int i = 0; i < n; i++) out[i] = scratch[i];
    if (half < 0 && tf32 == float16) printf("never\\n");
    free(scratch);
""", "#include <stdio.h>\n#include <stdlib.h>")
    verdict = judge(cpu_task_dir, tmp_path, code)
    assert verdict.correct, verdict.reason


def test_threads_of_its_own_pass(cpu_task_dir: Path, tmp_path: Path) -> None:
    """Splits the rows over two pthreads and joins them inside the call: threads are allowed (clone with
    CLONE_THREAD passes the filter)."""
    prelude = ("#include <pthread.h>\nstruct part { int n, lo, hi; const float *m, *w; float *out; };\n"
               "static void *rows(void *arg) { struct part *p = arg; int n = p->n; for (int i = p->lo; i < p->hi; "
               "i++) { float acc = 0.0f; for (int j = 0; j < n; j++) acc += p->m[(long)i * n + j] * p->w[j]; "
               "p->out[i] = acc; } return 0; }")
    code = kernel("    struct part a = {n, 0, n / 2, m, w, out}, b = {n, n / 2, n, m, w, out};\n"
                  "    pthread_t t;\n    pthread_create(&t, 0, rows, &a);\n    rows(&b);\n    pthread_join(t, 0);\n",
                  prelude)
    verdict = judge(cpu_task_dir, tmp_path, code)
    assert verdict.correct, verdict.reason


@pytest.mark.parametrize("ending", ["pthread_exit(0);", "thrd_exit(0);"])
def test_threads_that_end_by_exiting_pass(cpu_task_dir: Path, tmp_path: Path, ending: str) -> None:
    """False rejection found by the nineteenth session's second red team: a worker that ends with pthread_exit or
    C11's thrd_exit (both allowed imports) crashed every candidate: glibc loads libgcc_s (its unwinder) at the first
    thread exit, and the filter refuses executable mappings once "ready" is said. The harness has libgcc_s loaded
    before its filter goes in."""
    prelude = ("#include <pthread.h>\n#include <threads.h>\n"
               "struct part { int n, lo, hi; const float *m, *w; float *out; };\n"
               "static void *rows(void *arg) { struct part *p = arg; int n = p->n; for (int i = p->lo; i < p->hi; "
               "i++) { float acc = 0.0f; for (int j = 0; j < n; j++) acc += p->m[(long)i * n + j] * p->w[j]; "
               f"p->out[i] = acc; }} if (p->lo == 0) {{ {ending} }} return 0; }}")
    code = kernel("    struct part a = {n, 0, n / 2, m, w, out}, b = {n, n / 2, n, m, w, out};\n"
                  "    pthread_t t;\n    pthread_create(&t, 0, rows, &a);\n    rows(&b);\n    pthread_join(t, 0);\n",
                  prelude)
    verdict = judge(cpu_task_dir, tmp_path, code)
    assert verdict.correct, verdict.reason


@pytest.mark.alone
def test_a_spinning_pool_passes(cpu_task_dir: Path, tmp_path: Path) -> None:
    """A persistent worker that spin-waits for its next job between calls (no sleep, no futex): the body hands it
    half the rows and waits for it. Spinning after 'done' is a few microseconds of CPU before the judge stops it,
    far under a tenth of the call."""
    verdict = judge(cpu_task_dir, tmp_path, kernel(POOL_BODY, POOL), timing=True)
    assert verdict.correct and verdict.status is not Status.REJECTED, verdict.reason


@pytest.mark.alone
def test_openmp_passes(tmp_path: Path) -> None:
    """An OpenMP parallel loop in a task built with OpenMP: libgomp's thread pool runs under the filter."""
    task_dir = write_task(tmp_path / "task", toml=TASK_TOML.replace('flags = ["-O2", "-g"]',
                                                                    'flags = ["-O2", "-g"]\nopenmp = true'))
    code = kernel(ROWS.replace("    for (int i = 0; i < n; i++) {", "#pragma omp parallel for\n"
                                                                     "    for (int i = 0; i < n; i++) {"))
    verdict = judge(task_dir, tmp_path, code, timing=True)
    assert verdict.correct and verdict.speedup is not None, verdict.reason


def test_a_kernel_named_like_an_obscure_libc_function_passes(tmp_path: Path) -> None:
    """A helper called `advance` (glibc exports one, nothing calls it): a name is the candidate's unless the harness
    or a runtime library calls it."""
    code = ("static float advance(const float *row, const float *w, int n) { float acc = 0.0f; "
            "for (int j = 0; j < n; j++) acc += row[j] * w[j]; return acc; }\n"
            "float index_of(int i) { return (float)i; }\n"
            + kernel("    for (int i = 0; i < n; i++) out[i] = advance(m + (long)i * n, w, n);\n"))
    task_dir = write_task(tmp_path / "task")
    verdict = judge(task_dir, tmp_path, code)
    assert verdict.correct, verdict.reason


@pytest.mark.parametrize("name", ["decay_loop_invariant", "matmul_loop_order"])
def test_the_example_tasks_known_fixes_are_accepted(name: str, tmp_path: Path) -> None:
    """Every example task's own fast version is a correct candidate under the new judge (timed in the benchmark)."""
    task = load_task(Path(__file__).resolve().parents[2] / "examples" / "tasks" / "cpu" / name)
    verdict = validate(task, task.reference_path, tmp_path / "work", timing=False)
    assert verdict.correct, verdict.reason


def test_an_edge_call_first_never_makes_the_test_degenerate(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """False rejection found by the sixteenth red team once edge calls fell at random places: filter_branchy's
    oracle output is all zeros on a one-sided (all-negative) edge draw, and when such a call came first the
    degenerate-test check read the task as invalid (4 of 6 verdicts of a correct candidate). The check reads plain
    calls only. Here every edge call is one-sided below the middle and the first calls are edge calls."""
    from profiling import inputs
    from profiling import validate as validate_module

    monkeypatch.setattr(validate_module, "_edge_calls", lambda plan, calls: list(range(calls // 2)))
    monkeypatch.setattr(inputs, "_side", lambda rng: inputs.Side.LOWER)
    task = load_task(Path(__file__).resolve().parents[2] / "examples" / "tasks" / "cpu" / "filter_branchy")
    verdict = validate(task, task.reference_path, tmp_path / "work", timing=False)
    assert verdict.correct, verdict.reason


@pytest.mark.alone
def test_fast_c_is_improved(cpu_task_dir: Path, tmp_path: Path) -> None:
    verdict = judge(cpu_task_dir, tmp_path, FAST_C, timing=True)
    assert verdict.status is Status.IMPROVED, verdict.reason


# ---------------------------------------------------------------------------------- ties with the task's own numbers

COUNT_ABOVE_C = """\
void count_above(const float *a, float *out, int n) {
    for (int i = 0; i < n; i++) {
        float c = 0.0f;
        for (int j = 0; j < n; j++) c += a[(long)i * n + j] >= 0.5f ? 1.0f : 0.0f;
        out[i] = c;
    }
}
"""
COUNT_TASK_TOML = (TASK_TOML.replace('name = "matvec_colwalk"', 'name = "count_above"')
                   .replace('kernel = "matvec"', 'kernel = "count_above"').replace('reference = "fast.c"\n', ""))


def test_a_threshold_parameter_rewritten_as_a_strict_comparison_is_incorrect(tmp_path: Path) -> None:
    """Scenario (found in a fine-tuned SmolLM2's eval on an H100, proven 4.07x faster and accepted): the catalogue's
    branchy_select compacts the elements with `x >= threshold`, threshold a parameter of the configuration (0.2);
    the candidate's branch-free rewrite counts `(v >= t) & (v > t)`, that is `v > t`. It differs only on elements
    equal to the threshold, which uniform floats in [-1, 1) never give: every check passed. Edge calls now carry
    the configuration's numbers as elements. The catalogue's own fast version (`>=` kept) stays correct."""
    from synth.instance import write_task as write_instance
    from synth.patterns import generate

    task_dir = write_instance(generate("cpu/branchy_select", 301), tmp_path / "task")
    original = (task_dir / "kernel.c").read_text()
    assert original.count("] >= threshold") == 2  # first[i] and second[i]
    verdict = judge(task_dir, _fresh(tmp_path / "strict"), original.replace("] >= threshold", "] > threshold"))
    assert verdict.status is Status.INCORRECT, verdict.reason
    assert judge(task_dir, _fresh(tmp_path / "fast"), (task_dir / "fast.c").read_text()).status is Status.CORRECT


def test_a_literal_threshold_rewritten_as_a_strict_comparison_is_incorrect(tmp_path: Path) -> None:
    """Scenario: the original counts a row's elements `>= 0.5f`, a constant of its source; the candidate counts
    `> 0.5f` (one comparison fewer on some ISAs). Only elements equal to 0.5 tell them apart: the original's
    float literals (and their negatives) are among the edge calls' values. The same count written another way
    (a branch-free sum of the comparison) is correct."""
    task_dir = write_task(tmp_path / "task", kernel=COUNT_ABOVE_C, harness=rows_harness("count_above", 64),
                          toml=COUNT_TASK_TOML, fast=COUNT_ABOVE_C)
    verdict = judge(task_dir, _fresh(tmp_path / "strict"), COUNT_ABOVE_C.replace(">= 0.5f", "> 0.5f"))
    assert verdict.status is Status.INCORRECT, verdict.reason
    legit = COUNT_ABOVE_C.replace("c += a[(long)i * n + j] >= 0.5f ? 1.0f : 0.0f;",
                                  "c += (float)(a[(long)i * n + j] >= 0.5f);")
    assert judge(task_dir, _fresh(tmp_path / "legit"), legit).status is Status.CORRECT


def test_an_integer_threshold_rewritten_as_a_strict_comparison_is_incorrect(tmp_path: Path) -> None:
    """Scenario: inputs in [0, 100); the original counts a row's elements `>= 41`, an integer literal compared
    with floats; the candidate counts `> 41`. Uniform floats in that range are never exactly 41 (no k / 2^24 times 100
    rounds to it in float32; 37 would be hit), and integer literals are not the source's float literals: the
    literals on either side of a comparison are marks too, integers included."""
    kernel = COUNT_ABOVE_C.replace(">= 0.5f", ">= 41")
    task_dir = write_task(tmp_path / "task", kernel=kernel, toml=COUNT_TASK_TOML, fast=kernel,
                          harness=rows_harness("count_above", 64).replace("-1.0, 1.0", "0.0, 100.0"))
    verdict = judge(task_dir, _fresh(tmp_path / "strict"), kernel.replace(">= 41", "> 41"))
    assert verdict.status is Status.INCORRECT, verdict.reason
    legit = kernel.replace("c += a[(long)i * n + j] >= 41 ? 1.0f : 0.0f;", "c += (float)(41.0f <= a[(long)i * n + j]);")
    assert judge(task_dir, _fresh(tmp_path / "legit"), legit).status is Status.CORRECT


# --- wrong only on inputs a uniform draw never gives (red team of session 15) -----------------------------------------

RARE_INPUTS = Path(__file__).parent / "data" / "rare_inputs"


def _catalogue_verdict(pattern: str, seed: int, candidate: str, tmp_path: Path) -> Verdict:
    from synth.instance import write_task as write_instance
    from synth.patterns import generate

    task_dir = write_instance(generate(pattern, seed), tmp_path / "task")
    return validate(load_task(task_dir), RARE_INPUTS / candidate, _fresh(tmp_path / candidate), timing=False)


def test_a_threshold_computed_from_two_parameters_rewritten_inclusive_is_incorrect(tmp_path: Path) -> None:
    """Scenario: branchy_select s1 keeps x with `threshold - width < x < threshold + width`; the candidate hoists
    both bounds and writes the upper test `x <= hi`. Only elements equal to the float32 sum differ; neither
    parameter is that value, and uniform floats in [-1, 1) never hit it: 0 of 15 draws caught it. Edge calls now
    carry the sums, differences, products and quotients of the parameters in pairs (double and float32). The same
    hoisting with `<` kept is correct."""
    verdict = _catalogue_verdict("cpu/branchy_select", 1, "branchy_s1_upper_le.c", tmp_path)
    assert verdict.status is Status.INCORRECT, verdict.reason
    assert _catalogue_verdict("cpu/branchy_select", 1, "branchy_s1_hoisted.c", tmp_path / "legit").status \
        is Status.CORRECT


def test_a_maximum_started_at_flt_min_is_incorrect(tmp_path: Path) -> None:
    """Scenario: column_reduce s2 takes each column's maximum; the candidate walks rows and starts every running
    maximum at FLT_MIN (the slip for -FLT_MAX), wrong only for a column whose values are all negative: with 100
    values or more uniform in [-1, 1) there is never one, and the zeros edge calls add make it rarer still. A
    quarter of a float buffer's edge calls are now drawn on one side of the range (all negative, or all above the
    middle) without zeros. The same row walk started at the first row is correct. Sixteenth red team: left to each
    draw, a verdict's edge calls missed the lower side about a quarter of the time (5 of 12 copies of the candidate,
    differing in a comment, read correct); two edge calls of each configuration are now one-sided, one each side.
    Four copies, each drawing other inputs."""
    from synth.instance import write_task as write_instance
    from synth.patterns import generate

    task = load_task(write_instance(generate("cpu/column_reduce", 2), tmp_path / "task"))
    for copy in range(4):
        candidate = tmp_path / f"flt_min{copy}.c"
        candidate.write_text(f"/* copy {copy} */\n" + (RARE_INPUTS / "column_max_s2_flt_min.c").read_text())
        verdict = validate(task, candidate, tmp_path / f"work{copy}", timing=False)
        assert verdict.status is Status.INCORRECT, verdict.reason
    assert _catalogue_verdict("cpu/column_reduce", 2, "column_max_s2_first_row.c", tmp_path / "legit").status \
        is Status.CORRECT


def test_an_argmax_that_breaks_ties_by_lane_is_incorrect(tmp_path: Path) -> None:
    """Scenario: the first index of a vector's maximum; the candidate keeps 8 lanes and merges them in lane order,
    so of two equal maxima it may return the later index. Copies of random elements (the judge's ties) are almost
    never the maximum: 0 of 10 draws caught it. Edge calls now repeat the buffer's maximum and minimum (a run of
    8, and two copies a short distance apart). Lanes merged by index are correct."""
    task_dir = RARE_INPUTS / "argmax_first"
    verdict = validate(load_task(task_dir), task_dir / "lanes_merged_by_lane.c", tmp_path / "lane", timing=False)
    assert verdict.status is Status.INCORRECT, verdict.reason
    assert validate(load_task(task_dir), task_dir / "lanes_merged_by_index.c", tmp_path / "index",
                    timing=False).status is Status.CORRECT


@pytest.mark.parametrize("candidate", ["lanes_merged_by_lane_off_edge_calls.c",
                                       "lanes_merged_by_lane_off_counted_calls.c"])
def test_a_careful_path_only_on_the_calls_it_takes_for_edge_calls_is_incorrect(candidate: str,
                                                                               tmp_path: Path) -> None:
    """Sixteenth red team: the lane-ordered argmax above, taking the index-ordered merge only on the calls it
    believes carry edge values: outputs holding 0xA5 on entry (the edge calls' poison), or its 4th, 6th, 8th...
    call (edge calls were every other one, and call 0 runs twice). Both read improved (2.29x, 1.63x). Now the
    extreme ties come on every call, edge calls fall where the judge's keyed generator puts them, and the poison is
    drawn per call: the careful path is taken too seldom."""
    task_dir = RARE_INPUTS / "argmax_first"
    verdict = validate(load_task(task_dir), task_dir / candidate, tmp_path / "work", timing=False)
    assert verdict.status is Status.INCORRECT, verdict.reason


def test_a_double_comparison_made_in_float_off_edge_calls_is_incorrect(tmp_path: Path) -> None:
    """Sixteenth red team: branchy_select's double comparison made in float (incorrect above) except when its
    outputs hold 0xA5 on entry, the edge calls' poison then: 1.69x improved. Marks and their neighbours now come on
    every call and the poison is drawn per call."""
    verdict = _catalogue_verdict("cpu/branchy_select", 0, "branchy_s0_float_compare_off_edge_calls.c", tmp_path)
    assert verdict.status is Status.INCORRECT, verdict.reason


def test_a_threshold_past_the_sixteenth_compared_literal_is_a_mark(tmp_path: Path) -> None:
    """Sixteenth red team: a bucketing by 18 breakpoints (0.5 to 9.0, double inputs); the candidate writes its two
    largest as strict comparisons. Only the 16 smallest compared literals were marks, so 8.5 and 9.0 were never
    drawn: 5.52x improved, wrong for a user's 8.5. Compared and named literals are kept up to MAX_COMPARED_MARKS."""
    task_dir = RARE_INPUTS / "bucketize_f64"
    verdict = validate(load_task(task_dir), task_dir / "top_two_breakpoints_strict.c", tmp_path / "work",
                       timing=False)
    assert verdict.status is Status.INCORRECT, verdict.reason
    assert validate(load_task(task_dir), task_dir / "fast.c", tmp_path / "fast", timing=False).correct


def test_a_write_past_the_output_in_the_guards_own_pattern_is_caught(tmp_path: Path) -> None:
    """Sixteenth red team: stores 64 bytes of 0xA5 (the guard zones' constant) past the end of decay's output: the
    guard read intact, correct; in a user's program it overwrites the next heap object. A C process's guards are
    fresh random bytes every call now."""
    task = load_task(Path(__file__).resolve().parents[2] / "examples" / "tasks" / "cpu" / "decay_loop_invariant")
    verdict = validate(task, RARE_INPUTS / "decay_overstore_guard_pattern.c", tmp_path / "work", timing=False)
    assert verdict.status is Status.INCORRECT and "out of bounds" in verdict.reason, verdict.reason


def test_c11_threads_pass(tmp_path: Path) -> None:
    """False rejection found by the sixteenth red team: decay split over a pool of C11 threads (thrd_create,
    thrd_join: pthreads underneath) was refused as a disallowed import."""
    task = load_task(Path(__file__).resolve().parents[2] / "examples" / "tasks" / "cpu" / "decay_loop_invariant")
    verdict = validate(task, RARE_INPUTS / "decay_c11_threads.c", tmp_path / "work", timing=False)
    assert verdict.correct, verdict.reason


def test_an_optimize_switch_is_refused_in_a_task_with_integer_outputs(tmp_path: Path) -> None:
    """Sixteenth red team: `#pragma GCC optimize("Ofast")` in plain sight on argmax_first, whose output is an int32
    index computed from floats, read correct: the switch rule ran only where an output was float32/float64."""
    task_dir = RARE_INPUTS / "argmax_first"
    verdict = validate(load_task(task_dir), task_dir / "ofast_pragma.c", tmp_path / "work", timing=False)
    assert verdict.status is Status.REJECTED and "optimize switch" in verdict.reason, verdict.reason


def test_setting_the_floating_point_control_register_is_refused(tmp_path: Path) -> None:
    """Sixteenth red team: flush-to-zero, denormals-are-zero and round-toward-zero set through `_mm_setcsr` (an
    ldmxcsr in the object) read correct on decay: the task's floating-point rules changed by a register, as a
    fast-math switch would. Refused from the object's instructions."""
    task = load_task(Path(__file__).resolve().parents[2] / "examples" / "tasks" / "cpu" / "decay_loop_invariant")
    verdict = validate(task, RARE_INPUTS / "decay_mxcsr_ftz_rz.c", tmp_path / "work", timing=False)
    assert verdict.status is Status.REJECTED and "control registers" in verdict.reason, verdict.reason


def test_an_output_left_unwritten_where_the_original_writes_minus_one_is_incorrect(tmp_path: Path) -> None:
    """Scenario: branchy_select s0 fills the unused tail of both int32 outputs with -1; the candidate drops those
    two loops. The judge poisoned every output with 0xFF bytes, which is -1 as an int32: what the candidate left
    read exactly what the original wrote, on every call. Edge calls now poison with 0xA5."""
    verdict = _catalogue_verdict("cpu/branchy_select", 0, "branchy_s0_no_fill.c", tmp_path)
    assert verdict.status is Status.INCORRECT and "never written" in verdict.reason, verdict.reason


def test_a_double_comparison_made_in_float_is_incorrect(tmp_path: Path) -> None:
    """Scenario: branchy_select s0 compares double samples with `x <= threshold` (-0.2); the candidate compares
    `(float)x <= (float)threshold`, twice the SIMD width. They differ only for doubles within half a float32 ulp
    above -0.2; the marks held -0.2 and its float32 rounding, where both agree. Marks now come with their
    neighbours in the buffer's type and, for doubles, a quarter of a float32 ulp either side."""
    verdict = _catalogue_verdict("cpu/branchy_select", 0, "branchy_s0_float_compare.c", tmp_path)
    assert verdict.status is Status.INCORRECT, verdict.reason


def test_a_named_integer_threshold_rewritten_inclusive_is_incorrect(tmp_path: Path) -> None:
    """Scenario: `#define CUTOFF 2` and `z > CUTOFF || z < -CUTOFF` on floats in [-4, 4); the candidate tests
    `fabsf(z) >= CUTOFF`, different only at +-2.0. The comparison names the constant, so no literal is compared;
    caught in 2 of 9 draws, when the uniform grid happened to hit 2.0. Constants given a name (#define, const,
    constexpr, enum, Python assignments) are marks now."""
    task_dir = RARE_INPUTS / "named_cutoff"
    verdict = validate(load_task(task_dir), task_dir / "fabs_ge.c", tmp_path / "work", timing=False)
    assert verdict.status is Status.INCORRECT, verdict.reason


def test_a_reassociated_matrix_product_is_correct(tmp_path: Path) -> None:
    """False rejection (red team, session 15): loop_order s1 with an 8-lane float32 dot product per element was
    judged incorrect (|error| 2.5e-5 > 1e-5 on 45 of 9,216 elements) though nearer the exact product than the
    original; the pattern's tolerance assumed the fix's own summation order. It now allows any order of the
    n-term sums (synth/patterns/cpu.py REORDERED_RTOL)."""
    verdict = _catalogue_verdict("cpu/loop_order", 1, "loop_order_s1_dot8.c", tmp_path)
    assert verdict.status is Status.CORRECT, verdict.reason


def _fresh(directory: Path) -> Path:
    directory.mkdir()
    return directory


# The seventeenth red team (2026-11-28), on the judge after the sixteenth's fixes.
DECAY = Path(__file__).resolve().parents[2] / "examples" / "tasks" / "cpu" / "decay_loop_invariant"


def test_a_threshold_the_compiler_folds_is_a_mark(tmp_path: Path) -> None:
    """Seventeenth red team: a stream compaction keeps `x >= 1.0f / 3.0f`; the candidate writes `>` (branch-free,
    4-5x "improved"). The marks came from the source's literals (1.0 and 3.0), never from the threshold the
    compiler folds them into, so no input equalled it. The original's object is read for its floating-point
    constants now (a hex float, sqrtf(0.125f), a named const expression, a table: test_inputs.py)."""
    task_dir = RARE_INPUTS / "select_third"
    verdict = validate(load_task(task_dir), task_dir / "strict_compare.c", tmp_path / "work", timing=False)
    assert verdict.status is Status.INCORRECT, verdict.reason
    assert validate(load_task(task_dir), task_dir / "fast.c", tmp_path / "fast", timing=False).correct


def test_an_accumulator_too_narrow_for_the_largest_inputs_is_incorrect(tmp_path: Path) -> None:
    """Seventeenth red team: row energies of 12-bit samples (int32 in [-2048, 2048), int64 out) summed in int32,
    eight lanes wide: wrong once a row's energy passes 2^31, which rows of large samples reach and a uniform draw
    never does (mean 1.4e9): 4.37x "improved". An integer buffer's one-sided edge calls draw from its range's
    ends now (inputs.Side.of_integers)."""
    task_dir = RARE_INPUTS / "row_energy_i32"
    verdict = validate(load_task(task_dir), task_dir / "int32_accumulator.c", tmp_path / "work", timing=False)
    assert verdict.status is Status.INCORRECT, verdict.reason
    assert validate(load_task(task_dir), task_dir / "fast.c", tmp_path / "fast", timing=False).correct


@pytest.mark.parametrize("candidate", ["decay_fesetenv.c", "decay_hidden_ldmxcsr.c"])
def test_the_floating_point_control_register_set_another_way_is_refused(tmp_path: Path, candidate: str) -> None:
    """Seventeenth red team: flush-to-zero and denormals-are-zero set without an ldmxcsr of the candidate's own,
    through libm's fesetenv (every libm export was an allowed import), or with the ldmxcsr's bytes hidden in a
    movabs immediate and called two bytes in (the disassembly shows a movabs): correct on decay, 1.24x "improved"
    on a sum whose tail goes subnormal. libm's environment setters are refused, and the object's code bytes are
    scanned for MXCSR loads (binary_policy.HIDDEN_FP_CONTROL_RE)."""
    verdict = validate(load_task(DECAY), RARE_INPUTS / candidate, tmp_path / "work", timing=False)
    assert verdict.status is Status.REJECTED and "control registers" in verdict.reason, verdict.reason


def test_a_library_sort_named_by_token_pasting_is_refused(tmp_path: Path) -> None:
    """Seventeenth red team: `JOIN(qs, ort)(out, n, sizeof *out, cmp)` sorted through libc (6.69x "improved"): the
    source check reads words and never saw `qsort`. The object's imports are matched against the target's
    library routines now, whatever the source's spelling."""
    task_dir = RARE_INPUTS / "sort_copy"
    verdict = validate(load_task(task_dir), task_dir / "qsort_pasted.c", tmp_path / "work", timing=False)
    assert verdict.status is Status.REJECTED and "qsort" in verdict.reason, verdict.reason


@pytest.mark.parametrize("candidate", ["std_call_once_pool.cpp", "std_async.cpp", "shared_ptr_copy.cpp"])
def test_the_cpp_standard_librarys_threads_and_shared_pointers_pass(tmp_path: Path, candidate: str) -> None:
    """False rejections found by the seventeenth red team: std::call_once (it imports __once_proxy), std::async
    (std::future_error's vtable, __once_proxy) and a copied std::shared_ptr (glibc's __libc_single_threaded, read
    by the reference count) were refused as disallowed imports in an honest row-walking matvec."""
    task_dir = RARE_INPUTS / "matvec_cpp"
    verdict = validate(load_task(task_dir), task_dir / candidate, tmp_path / "work", timing=False)
    assert verdict.correct, verdict.reason


def test_an_optimize_pragma_a_header_expands_is_refused(tmp_path: Path) -> None:
    """Seventeenth red team, second round: `#undef __BEGIN_DECLS` then `#define __BEGIN_DECLS _Pragma("GCC
    optimize(\\"Ofast\\")")` before <stdlib.h> put the pragma on stdlib.h's lines of the preprocessed source, which
    the policy's reading of the candidate's own lines skips: Ofast took effect (5-6x "improved" on a row sum). The
    optimize pragmas no system header holds are looked for on every line now."""
    verdict = validate(load_task(DECAY), RARE_INPUTS / "decay_pragma_in_header_macro.c", tmp_path / "work",
                       timing=False)
    assert verdict.status is Status.REJECTED and "Ofast" in verdict.reason, verdict.reason


@pytest.mark.parametrize("task_name", ["bucket_table_240", "sqrt_threshold"])
def test_thresholds_past_the_first_marks_are_marks(tmp_path: Path, task_name: str) -> None:
    """Seventeenth red team, second round. bucket_table_240: 240 float breakpoints in a table, the candidate strict
    on the top 104: the object's words were also read as float64, and those small numbers took the first of 256
    places (1.4-1.9x "improved"); tables are read as float32 first now, up to 1024 constants. sqrt_threshold: the
    original compares with sqrtf(t) of a parameter t (1.7-2.5x "improved" by `>`); the parameters' square roots
    are marks now."""
    task_dir = RARE_INPUTS / task_name
    candidate = "strict_top.c" if task_name == "bucket_table_240" else "strict_compare.c"
    verdict = validate(load_task(task_dir), task_dir / candidate, tmp_path / "work", timing=False)
    assert verdict.status is Status.INCORRECT, verdict.reason
    assert validate(load_task(task_dir), task_dir / "fast.c", tmp_path / "fast", timing=False).correct


def test_the_cpp20_waits_pass_and_other_raw_system_calls_stay_refused(tmp_path: Path) -> None:
    """Seventeenth red team, second round (false rejection): std::latch, std::barrier, std::counting_semaphore and
    std::atomic::wait compile libstdc++'s futex wait into the candidate's own functions as `syscall(SYS_futex,
    ...)`, and the `syscall` import was refused for an honest pool meeting at a latch. `syscall` passes now when
    each call's number is the futex's (binary_policy._syscalls_are_futex_waits); the same import with gettid's
    number stays refused."""
    task_dir = RARE_INPUTS / "matvec_cpp"
    verdict = validate(load_task(task_dir), task_dir / "std_latch.cpp", tmp_path / "latch", timing=False)
    assert verdict.correct, verdict.reason
    verdict = validate(load_task(task_dir), task_dir / "raw_syscall_gettid.cpp", tmp_path / "gettid", timing=False)
    assert verdict.status is Status.REJECTED and "uses syscall" in verdict.reason, verdict.reason


def test_the_floating_point_control_registers_left_changed_by_a_hand_made_lookup_are_refused(tmp_path: Path) -> None:
    """Seventeenth red team, second round: libm's fesetenv found by hand through the process's own memory (from
    expf's address back to libm's ELF header and its symbol table): no import and no byte of the object's code
    the binary policy reads; FTZ and DAZ set on the first call and left set (1.25x "improved" on a sum whose tail
    goes subnormal). The harness compares the control registers after every call with what it set out with and
    says so in place of "synced"."""
    verdict = validate(load_task(DECAY), RARE_INPUTS / "decay_fesetenv_by_hand.c", tmp_path / "work", timing=False)
    assert verdict.status is Status.REJECTED and "control registers" in verdict.reason, verdict.reason


@pytest.mark.skipif(not fp_probe.available(), reason="ptrace refused here (Yama scope)")
def test_subnormals_flushed_within_each_call_are_refused(tmp_path: Path) -> None:
    """The same hand-made lookup, FTZ and DAZ put back before each call returns: what the harness reads after the
    call is what it set out with (on the red team's subnormal-tailed sum, the same candidate read "improved").
    The judge reads each thread's MXCSR at a random point of the sampled calls' bodies (fp_probe.py) and finds
    flush-to-zero there. (Where the outputs show it, zeros where the original wrote subnormal values, that is a
    review note besides, correctness.FLUSH_*: an honest rewrite that underflows reads the same.)"""
    verdict = validate(load_task(DECAY), RARE_INPUTS / "decay_fesetenv_by_hand_restored.c", tmp_path / "work",
                       timing=False)
    assert verdict.status is Status.REJECTED and "flush-to-zero" in verdict.reason, verdict.reason


@pytest.mark.skipif(not fp_probe.available(), reason="ptrace refused here (Yama scope)")
def test_ftz_set_and_put_back_within_each_call_through_setcontext_is_refused(tmp_path: Path) -> None:
    """Eighteenth red team, left open then: FTZ and DAZ set and put back within each call through libc's
    getcontext/setcontext found by hand (no import; setcontext too brief for two program-counter samples; the
    registers as found when the call returns, so the harness's check passes), the elements whose sum could be
    subnormal computed after the put-back, so no subnormal output is zero: 1.17-1.26x "improved" against
    1.00-1.03x for the same code in the task's own mode (an honest early exit read 0.87x, an explicit flush of
    the terms 0.47x). The judge stops each thread once at a random point of every sampled call's body and reads
    its FP registers (fp_probe.py): flush-to-zero, in a mode the original's threads never ran in."""
    task_dir = RARE_INPUTS / "geosum_subnormal_tail"
    verdict = validate(load_task(task_dir), task_dir / "context_ftz_spare_tiny.c", tmp_path / "work", timing=False)
    assert verdict.status is Status.REJECTED and "flush-to-zero" in verdict.reason, verdict.reason
    assert validate(load_task(task_dir), task_dir / "fast.c", tmp_path / "fast", timing=False).correct


CLOG_KERNEL = r"""
#include <complex.h>
/* the real part of the complex log of points near the unit circle: glibc's clog computes |z|^2 - 1 exactly in
 * libm's static __x2y2m1, which sorts its terms with libc's qsort */
void geosum(const float *x, float *out, int n, int steps, float d) {
    (void)steps; (void)d;
    for (int i = 0; i < n; i++) {
        double re = 0.55 + 0.4 * (x[i] < 0 ? -x[i] : x[i]), im = 0.8;
        out[i] = (float)creal(clog(CMPLX(re, im)));
    }
}
"""


def _libm_sorts() -> bool:
    """Whether this machine's libm calls libc's qsort (glibc's __x2y2m1 does)."""
    import subprocess

    libm = subprocess.run(["gcc", "-print-file-name=libm.so.6"], capture_output=True, text=True).stdout.strip()
    listing = subprocess.run(["nm", "-D", libm], capture_output=True, text=True).stdout
    return any(line.split()[-1].startswith("qsort") for line in listing.splitlines() if " U " in line)


@pytest.mark.skipif(not perf_events_available() or not _libm_sorts(),
                    reason="needs perf events and a libm that calls qsort")
def test_an_original_whose_libm_routine_sorts_is_not_refused_for_the_sort(tmp_path: Path) -> None:
    """Twentieth session's red team, a false rejection: identical code calling clog near the unit circle (so
    catanh, casinh, cacosh, clog10) was refused 3 of 3 for libc's qsort_r, which libm's own __x2y2m1 calls: the
    perf samples named it (6-9 of 26-29). A routine the original imports exempts what its library's code for it
    imports in turn (pc_samples._imports_reached: clog's helper calls qsort through libm's PLT)."""
    geosum = RARE_INPUTS / "geosum_subnormal_tail"
    task_dir = tmp_path / "task"
    task_dir.mkdir()
    for name in ("harness.c", "fast.c", "task.toml"):
        (task_dir / name).write_text((geosum / name).read_text())
    (task_dir / "kernel.c").write_text(CLOG_KERNEL)
    verdict = validate(load_task(task_dir), task_dir / "kernel.c", tmp_path / "work", timing=False)
    assert verdict.status is Status.CORRECT, verdict.reason


def test_an_accumulator_wrong_only_where_two_buffers_sit_at_opposite_ends_is_incorrect(tmp_path: Path) -> None:
    """Seventeenth red team, second round: a per-row sum of |a - b| of two int32 signals of 21-bit samples,
    summed by the candidate in 32 bits, wraps only where a row's a sits near one end of the range and b near the
    other; the one-sided edge calls put every buffer on the same side, and 9 of 10 re-submissions read correct.
    A third forced edge call draws each element from one end or the other (inputs.Side.ENDS): 6 of 6 comment
    variants read incorrect when it was written."""
    task_dir = RARE_INPUTS / "row_sad_i32"
    verdict = validate(load_task(task_dir), task_dir / "narrow_acc.c", tmp_path / "work", timing=False)
    assert verdict.status is Status.INCORRECT, verdict.reason
    assert validate(load_task(task_dir), task_dir / "fast.c", tmp_path / "fast", timing=False).correct


@pytest.mark.parametrize("strict_at", [0, 10, 50, 110, 119])
def test_a_comparison_wrong_at_one_of_many_breakpoints_of_a_small_task_is_incorrect(tmp_path: Path,
                                                                                     strict_at: int) -> None:
    """Seventeenth red team, second round: a task whose only configuration is small (1,024 elements) and whose
    original scans a table of 120 breakpoints: with their neighbours 1,086 marks, against 32 places an edge call
    gave them, so a candidate strict at exactly one breakpoint read correct 6 of 6. An edge call gives the marks
    up to half its elements now when there are more of them (inputs.EDGE_MARKS_MOST_SHARE). Twenty-second session:
    strict at breakpoint 110 read correct on 110 checked runs, 3 of 3, on the H200 host (gcc 13, where these tests
    pass here with gcc 12): the 5 edge calls each drew their 512 marks at random, with repeats, and none held
    that one; successive edge calls now take successive parts of the marks, on distinct elements. Each breakpoint
    from first to last, strict alone, is caught."""
    task_dir = RARE_INPUTS / "bucketize_120_small"
    template = (task_dir / "strict_one_110.c").read_text()
    candidate = tmp_path / f"strict_one_{strict_at}.c"
    candidate.write_text(template.replace("probe - 1 != 110 ?", f"probe - 1 != {strict_at} ?"))
    verdict = validate(load_task(task_dir), candidate, tmp_path / "work", timing=False)
    assert verdict.status is Status.INCORRECT, verdict.reason
    if strict_at == 110:
        assert validate(load_task(task_dir), task_dir / "fast.c", tmp_path / "fast", timing=False).correct


@pytest.mark.skipif(not perf_events_available(), reason="perf events unavailable (perf_event_paranoid)")
def test_a_library_sort_found_by_hand_is_refused(tmp_path: Path) -> None:
    """Seventeenth red team, second round: libc's qsort found by hand, walking from malloc's address back to
    libc's ELF header and through its dynamic symbol table: no import, no word the source check reads (4.8-7.1x
    "improved"). The judge samples the candidate's program counter (pc_samples.py): samples in qsort_r, which its
    object does not import, refuse it. The honest reference passes."""
    task_dir = RARE_INPUTS / "sort_copy"
    verdict = validate(load_task(task_dir), task_dir / "qsort_found_by_hand.c", tmp_path / "work", timing=False)
    assert verdict.status is Status.REJECTED and "qsort_r" in verdict.reason, verdict.reason
    assert validate(load_task(task_dir), task_dir / "fast.c", tmp_path / "fast", timing=False).correct


def test_ftz_loaded_by_a_forged_signal_frame_is_refused(tmp_path: Path) -> None:
    """Eighteenth red team: FTZ and DAZ loaded into MXCSR by rt_sigreturn from a frame the candidate built on its
    stack (no MXCSR instruction in its object, no library routine but syscall(), here found by hand), put back
    before each call returns, the elements whose sum could be subnormal summed after the put-back (1.21-1.26x
    "improved" with syscall imported). A CPU kernel process can install no signal handler, so its filter refuses
    rt_sigreturn: the forged return fails and the candidate does not read correct."""
    task_dir = RARE_INPUTS / "geosum_subnormal_tail"
    verdict = validate(load_task(task_dir), task_dir / "srop_ftz_spare_tiny.c", tmp_path / "work", timing=False)
    assert not verdict.correct, verdict.reason
    assert validate(load_task(task_dir), task_dir / "fast.c", tmp_path / "fast", timing=False).correct


@pytest.mark.parametrize("candidate", ["decay_attribute_in_header_macro.c", "decay_line_vertical_tab.c"])
def test_an_optimize_attribute_hidden_in_a_headers_lines_is_refused(tmp_path: Path, candidate: str) -> None:
    """Eighteenth red team: the kernel with an optimize("Ofast") attribute put on alloca.h's line by redefining
    its __BEGIN_DECLS (the header scan looked for pragmas only), or after a #line spelled with a vertical tab or
    form feed (the line check read spaces and tabs only): 3.7-6.2x "improved" on a row sum. The optimize attribute
    is looked for on every preprocessed line now (bar libstdc++'s one), and a directive's whitespace is any."""
    verdict = validate(load_task(DECAY), RARE_INPUTS / candidate, tmp_path / "work", timing=False)
    assert verdict.status is Status.REJECTED, verdict.reason


def test_syscall_through_a_pointer_beside_a_futex_wait_is_refused(tmp_path: Path) -> None:
    """Eighteenth red team: one honest-looking futex call let the `syscall` import pass, and a pointer to syscall
    (a data relocation, not the PLT call the check counted) then called it with gettid's number, or rt_sigreturn's.
    Any relocation naming syscall other than a call with the futex's number refuses the import now."""
    task_dir = RARE_INPUTS / "matvec_cpp"
    verdict = validate(load_task(task_dir), task_dir / "syscall_through_a_pointer.cpp", tmp_path / "work",
                       timing=False)
    assert verdict.status is Status.REJECTED and "uses syscall" in verdict.reason, verdict.reason


@pytest.mark.skipif(not perf_events_available(), reason="perf events unavailable (perf_event_paranoid)")
def test_a_sort_through_libcs_search_tree_found_by_hand_is_refused(tmp_path: Path) -> None:
    """Eighteenth red team: libc's tsearch/twalk found by hand (the sampler watched qsort only) sorted the copy:
    2.2-2.6x "improved". libc's search structures (search.h) are watched routines now."""
    task_dir = RARE_INPUTS / "sort_copy"
    verdict = validate(load_task(task_dir), task_dir / "tsearch_found_by_hand.c", tmp_path / "work", timing=True)
    assert verdict.status is Status.REJECTED and "tsearch" in verdict.reason or "twalk" in verdict.reason, \
        verdict.reason


@pytest.mark.parametrize(("task_name", "candidate"), [("int_top_of_range", "cand_wraps_at_max.c"),
                                                      ("threshold_expf_param", "cand_strict.c")])
def test_the_top_of_an_integer_range_and_an_exponential_threshold_are_drawn(tmp_path: Path, task_name: str,
                                                                            candidate: str) -> None:
    """Eighteenth red team, narrow: `(x + 1) >> 1` in 32 bits is wrong only at INT_MAX, the top of the declared
    range, which no draw placed (correct 5 of 5); a compaction strict at a threshold expf(-t) of a parameter was
    wrong only there, and exp(-t) was no mark (correct 4 of 4). Integer edge calls place the range's top as they
    place its bottom, and the parameters' exponentials and logarithms are marks."""
    task_dir = RARE_INPUTS / task_name
    verdict = validate(load_task(task_dir), task_dir / candidate, tmp_path / "work", timing=False)
    assert verdict.status is Status.INCORRECT, verdict.reason
    assert validate(load_task(task_dir), task_dir / "fast.c", tmp_path / "fast", timing=False).correct


@pytest.mark.parametrize(("task_name", "candidate"), [("size_classes_i32", "cand_strict.c"),
                                                      ("bucketize_f64_600", "cand_strict.c")])
def test_integer_bounds_folded_into_comparisons_and_a_long_float64_table_are_drawn(tmp_path: Path, task_name: str,
                                                                                  candidate: str) -> None:
    """Eighteenth red team, narrow (left open then): size classes of 30-bit keys with bounds `3 << 21` ... `3 <<
    27` in a static const int table, which gcc folds into `cmp $imm` (no float word, no compared literal: the
    bounds compared strictly read correct 6 of 6); and a 600-breakpoint float64 table, whose halves read as float32
    first filled the 1,024 object marks with junk (strict at every breakpoint: correct 4 of 4). The original's
    compared immediates are marks with their neighbours now (inputs.compared_immediates), and each data section's
    plainest reading (float32, float64 or int32: short decimals) comes first (inputs.object_constants)."""
    task_dir = RARE_INPUTS / task_name
    verdict = validate(load_task(task_dir), task_dir / candidate, tmp_path / "work", timing=False)
    assert verdict.status is Status.INCORRECT, verdict.reason
    assert validate(load_task(task_dir), task_dir / "fast.c", tmp_path / "fast", timing=False).correct


@pytest.mark.skipif(not fp_probe.available(), reason="ptrace refused here (Yama scope)")
@pytest.mark.parametrize(("task_name", "candidate", "said"), [
    ("geosum_subnormal_tail", "ftz_where_no_sampling_is_seen.c", "flush-to-zero"),
    ("sort_copy", "qsort_where_no_sampling_is_seen.c", "qsort_r"),
    ("sort_copy", "qsort_after_an_unprobed_warm_up.c", "qsort_r"),
    ("sort_copy", "qsort_with_a_busy_comparator_where_unwatched.c", "qsort_r"),
    ("sort_copy", "qsort_until_a_probe_is_seen.c", "qsort_r"),
    ("sort_copy", "qsort_in_short_calls_after_honest_long_ones.c", "qsort_r"),
])
def test_tricks_kept_to_the_processes_it_thinks_unwatched_are_caught(tmp_path: Path, task_name: str,
                                                                    candidate: str, said: str) -> None:
    """Nineteenth red team: perf's samples cost a sampled process a 10-15 us gap every 100 us of its CPU time, so
    a 2 ms spin on rdtsc (no import) in its first call tells the correctness processes and the extra sampled
    round (about 20 gaps) from the timed rounds (0-3), and the candidate did its trick only in the latter: FTZ
    through setcontext found by hand 1.19-1.25x, libc's qsort found by hand 7.25-7.42x "improved".
    The extra round whose times are not used has no perf events now: every call of its processes is probed
    mid-call (fp_probe.py: both sides' threads held, modes and instruction pointers read), and nothing tells them
    from the timed rounds' before the first probe has read them; one probe reading in a watched routine refuses.
    The same session's second red team then stayed honest through the warm-up calls, counted its voluntary context
    switches (getrusage found by hand) to see whether a probe had held it, and cheated only where none had: every
    round read unwatched (qsort 7.29-7.39x). The probed round's first probe is drawn over its timed calls now.
    Twentieth session: qsort_where_no_sampling_is_seen.c passed one CI run (8.4x): most probes landed after a fast
    body had ended, and most of those inside it read the candidate's own comparator, which libc's qsort calls. A
    probe reads the held threads' stacks for return addresses into watched routines now, and a probed round goes on
    until 8 probes held the candidate mid-body (busy comparator: qsort's own code in 1-3 of 8-10 readings). The same
    session's red team cheated in every call until it saw a stop: a probe landing after a body showed one and read
    nothing (6 of 16 improved); a probe is made only while the body can still be held now. Twenty-second session:
    a probed round renews the pair after every probe that held the candidate (a process that has seen a stop is
    never read again), since its red team's calls alternated an honest-prefixed long call with a short cheating
    one, and the probe, placed within the last call's body, held the long one in its prefix (improved 13 of 28)."""
    task_dir = RARE_INPUTS / task_name
    verdict = validate(load_task(task_dir), task_dir / candidate, tmp_path / "work", timing=True)
    assert verdict.status is Status.REJECTED and said in verdict.reason, verdict.reason


@pytest.mark.skipif(not perf_events_available(), reason="perf events unavailable (perf_event_paranoid)")
@pytest.mark.parametrize(("candidate", "said"), [("quicksort_helper_called_by_hand.c", "qsort_r"),
                                                 ("qsort_from_a_moved_copy_of_libc.c", "qsort_r")])
def test_a_library_sort_run_where_no_routine_is_named_is_caught(tmp_path: Path, candidate: str, said: str) -> None:
    """Nineteenth red team: glibc's static _quicksort, which qsort_r calls and which sits after putenv (not in the
    gap before any watched routine), called by hand from qsort_r's call instruction: 6.37-6.43x "improved"; and
    libc's text moved by mremap(MREMAP_DONTUNMAP) with its data copied beside it, qsort run from the copy, which no
    mapping read at "ready" names: 7.33-7.37x. The sampler follows a watched routine's direct calls into the
    library's unexported functions (pc_samples._called_helpers) and counts samples outside every mapping the
    process had when ready. Since the twentieth session the filter refuses MREMAP_DONTUNMAP (and MREMAP_FIXED): the
    move fails, and the candidate's fallback, libc's qsort in place, is named."""
    task_dir = RARE_INPUTS / "sort_copy"
    verdict = validate(load_task(task_dir), task_dir / candidate, tmp_path / "work", timing=False)
    if verdict.status is Status.CRASHED and candidate == "quicksort_helper_called_by_hand.c":
        # it decodes glibc 2.36's qsort_r to find _quicksort; glibc 2.37 replaced that sort (introsort), and on
        # the H200 host's glibc 2.39 the decoded call lands elsewhere: the attack cannot run there (seen 2026-11-28)
        pytest.skip(f"this glibc has no _quicksort where the candidate looks for it: {verdict.reason}")
    assert verdict.status is Status.REJECTED and said in verdict.reason, verdict.reason


@pytest.mark.skipif(not fp_probe.available(), reason="ptrace refused here (Yama scope)")
def test_ftz_in_a_chain_of_short_lived_workers_is_caught(tmp_path: Path) -> None:
    """Nineteenth red team: 16 sleeping threads listed first, the body on a chain of short-lived FTZ workers;
    the probe stopped threads one by one (about 75 us each), so the listed worker had ended when it got there and
    its successor was never listed (1.11-1.14x, caught now and then). Every thread is held before any is read now,
    and the threads are listed again until no new one appears. Under load (a busy loop beside a judge at nice 19) it
    passed 5 of 6 verdicts still: each probe found the worker in clone, not yet started, and counted; only a probe
    that finds a thread running instructions counts now (fp_probe.reads_work; 16 of 16 rejected under that load),
    and a correctness call is probed throughout (served.PROBES_A_BODY)."""
    task_dir = RARE_INPUTS / "geosum_subnormal_tail"
    verdict = validate(load_task(task_dir), task_dir / "ftz_in_short_lived_workers.c", tmp_path / "work",
                       timing=False)
    assert verdict.status is Status.REJECTED and "flush-to-zero" in verdict.reason, verdict.reason


@pytest.mark.skipif(not fp_probe.available(), reason="ptrace refused here (Yama scope)")
def test_ftz_workers_beside_a_decoy_that_always_works_are_caught(tmp_path: Path) -> None:
    """Twenty-sixth session: the chain of short-lived FTZ workers with a decoy thread spinning in the clean mode
    through every body, so that every probe finds a thread running instructions and counts as a reading of the
    work while the worker itself may wait in clone (the counter to fp_probe.reads_work). Rejected 6 of 6 under a
    busy loop beside a judge at nice 19."""
    task_dir = RARE_INPUTS / "geosum_subnormal_tail"
    verdict = validate(load_task(task_dir), task_dir / "ftz_workers_beside_a_working_decoy.c", tmp_path / "work",
                       timing=False)
    assert verdict.status is Status.REJECTED and "flush-to-zero" in verdict.reason, verdict.reason


@pytest.mark.skipif(not fp_probe.available(), reason="ptrace refused here (Yama scope)")
def test_ftz_set_once_the_calls_probe_was_seen_is_caught(tmp_path: Path) -> None:
    """Twenty-sixth session's red team: honest until the call's one probe (seen as a gap in rdtsc), FTZ|DAZ after
    it. Read correct 6 of 6 while a probe that read work was a call's last. With one follow-up at chance 0.5 within
    four probe costs it read correct in a CI run and in 1 of 100 verdicts under two busy loops (a probe held mid-body
    was followed by one that saw FTZ in 27% of calls); the follow-ups are a Poisson process over the body now
    (served.PROBES_A_BODY): held cheating in 56-85% of the default configuration's calls, about one verdict in 10^4
    under two busy loops by the calls' rates (scratch measurement of session 31)."""
    task_dir = RARE_INPUTS / "geosum_subnormal_tail"
    verdict = validate(load_task(task_dir), task_dir / "ftz_after_the_calls_probe.c", tmp_path / "work",
                       timing=False)
    assert verdict.status is Status.REJECTED and "flush-to-zero" in verdict.reason, verdict.reason


@pytest.mark.parametrize("attacker", ["ftz_before_start_through_the_got.c", "synced_said_early_through_the_got.c"])
def test_ftz_outside_the_calls_window_is_caught(tmp_path: Path, attacker: str) -> None:
    """Thirty-first session's red team, through the harness's `send` redirected in its GOT (mprotect and setcontext
    found by hand): the whole kernel run under FTZ|DAZ before "start" is passed on (read correct 20 of 20), or
    "synced" said as the body begins and the harness's own swallowed, FTZ|DAZ once a stop was seen (18 of 20).
    Correctness calls were probed only between "start" and "synced"; they are probed from their resumption to
    their "done" now, whatever the words say."""
    task_dir = RARE_INPUTS / "geosum_subnormal_tail"
    verdict = validate(load_task(task_dir), task_dir / attacker, tmp_path / "work", timing=False)
    assert verdict.status is Status.REJECTED and "flush-to-zero" in verdict.reason, verdict.reason


def test_honest_threads_through_libm_routines_that_set_rounding_inside_pass(tmp_path: Path) -> None:
    """Nineteenth red team (false rejection): glibc's fmal calls feholdexcept/fesetround/fesetenv inside itself
    (round toward zero, then back), and those were watched routines, so honest code calling fmal in its loop read
    "a library routine found by hand" (943-1006 samples in fesetround), even when the original itself used fmal.
    The environment setters are not watched now (the mid-call probe reads the modes themselves), and a rounding
    mode a thread is found in inside a library routine is that routine's own (fp_probe.counts)."""
    task_dir = RARE_INPUTS / "geosum_libm"
    verdict = validate(load_task(task_dir), task_dir / "threads_through_libm_rounding.c", tmp_path / "work",
                       timing=False)
    assert verdict.correct, verdict.reason


def test_long_double_floorl_inlined_by_gcc_passes(tmp_path: Path) -> None:
    """Nineteenth red team (false rejection): gcc 12 at -O3 -march=native inlines floorl on a long double as
    `fnstcw; fldcw; frndint; fldcw`, and any fldcw refused the object. An fldcw beside frndint or an x87 integer
    store is the compiler's own rounding idiom now (binary_policy._x87_rounding_idiom); the x87 precision a thread
    runs its own code in is still read mid-call, and a control word left changed still fails the harness's
    check."""
    task_dir = RARE_INPUTS / "geosum_subnormal_tail"
    verdict = validate(load_task(task_dir), task_dir / "long_double_floorl.c", tmp_path / "work", timing=False)
    assert verdict.correct, verdict.reason


def test_an_fldcw_outside_the_rounding_idiom_is_refused() -> None:
    from profiling.binary_policy import _fp_control

    idiom = [("fnstcw", "0xe(%rsp)"), ("fldcw", "0xc(%rsp)"), ("frndint", ""), ("fldcw", "0xe(%rsp)")]
    assert _fp_control(idiom, b"", []) == []
    alone = [("fnstcw", "0xe(%rsp)"), ("fldcw", "0xc(%rsp)"), ("fmul", "%st(1),%st")]
    assert _fp_control(alone, b"", [])
    assert _fp_control([("ldmxcsr", "(%rdi)"), ("frndint", "")], b"", [])


@pytest.mark.alone
def test_an_honest_pool_of_many_idle_threads_is_not_read_as_work_after_done(tmp_path: Path) -> None:
    """False rejection found by the nineteenth session's red team: the body on one worker of a pool whose other 40
    threads only sleep. The harness's main thread takes the judge's SIGSTOP after "done" and wakes each other thread
    into the stop (57-81 us for 33), which read as work after "done": pools of 32 and 50 threads were refused
    (served.STOP_COST_PER_THREAD_NS)."""
    task_dir = RARE_INPUTS / "geosum_subnormal_tail"
    verdict = validate(load_task(task_dir), task_dir / "honest_pool_with_40_idle_threads.c", tmp_path / "work",
                       timing=True)
    assert verdict.correct and verdict.status is not Status.REJECTED, verdict.reason


def test_library_code_moved_onto_another_librarys_pages_is_not_a_win(tmp_path: Path) -> None:
    """Twentieth session's red team (D): glibc's _quicksort found by hand and its page moved by
    mremap(MAYMOVE|FIXED|DONTUNMAP) onto libgcc_s's code, where every sample and probe reading was named by the
    ready-time mapping it replaced: 4.6-6.1x "improved" 8 of 8. The filter refuses mremap beyond MREMAP_MAYMOVE now
    (the candidate falls back to the original's sort) and a probe finding the executable mappings changed refuses
    (test_fp_probe.py)."""
    task_dir = RARE_INPUTS / "sort_copy"
    verdict = validate(load_task(task_dir), task_dir / "quicksort_moved_onto_another_library.c", tmp_path / "work",
                       timing=True)
    assert verdict.status is not Status.IMPROVED and verdict.status is not Status.NEEDS_REVIEW, verdict.reason
