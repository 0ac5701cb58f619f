"""fp_probe: a running process's threads' floating-point modes read from outside, and the process left running."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import time
from collections import Counter
from pathlib import Path

import pytest

from profiling import fp_probe, pc_samples
from profiling.fp_probe import DEFAULT, FpMode

needs_ptrace = pytest.mark.skipif(not fp_probe.available() or shutil.which("gcc") is None,
                                  reason="needs ptrace (Yama scope below 2) on x86-64 and gcc")

# A main thread spinning in the mode argv[1] asks for (hex MXCSR bits ORed in), and a second thread in another
# (argv[2]): a probe must read each thread's own registers.
SPINNER = r"""
#include <pthread.h>
#include <stdlib.h>
#include <xmmintrin.h>
static volatile float sink;
static void spin(unsigned bits) {
    _mm_setcsr(_mm_getcsr() | bits);
    float x = 1.0f;
    for (;;) { x = x * 0.999f + 1e-3f; sink = x; }
}
static void *worker(void *arg) { spin((unsigned)(size_t)arg); return 0; }
int main(int argc, char **argv) {
    pthread_t t;
    pthread_create(&t, 0, worker, (void *)(size_t)strtoul(argv[2], 0, 16));
    spin((unsigned)strtoul(argv[1], 0, 16));
}
"""


@pytest.fixture(scope="module")
def spinner(tmp_path_factory: pytest.TempPathFactory) -> Path:
    directory = tmp_path_factory.mktemp("spinner")
    (directory / "spin.c").write_text(SPINNER)
    subprocess.run(["gcc", "-O1", "-pthread", "spin.c", "-o", "spin"], cwd=directory, check=True)
    return directory / "spin"


# The twenty-first session's red team: a worker that watches the leader and puts its modes back when the leader is
# held. Here the watcher polls the leader's state (/proc/self/task/PID/stat) and writes "S" each time two reads in a
# row find it stopped (one read can be stale: begun before a group stop held the watcher itself). 30 idle threads
# are made first, so held one after another in thread-id order the watcher would be asked last, tens of
# microseconds after the leader.
WATCHER = r"""
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
static char path[64];
static char leader_state(void) {
    char buf[512];
    int fd = open(path, O_RDONLY);
    if (fd < 0) return '?';
    int n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0) return '?';
    buf[n] = 0;
    char *end = strrchr(buf, ')');
    return end && end[1] ? end[2] : '?';
}
static int stopped(char s) { return s == 't' || s == 'T'; }
static void *idle(void *arg) { for (;;) pause(); return arg; }
static void *watcher(void *arg) {
    for (;;)
        if (stopped(leader_state()) && stopped(leader_state())) write(1, "S", 1);
    return arg;
}
int main(void) {
    snprintf(path, sizeof path, "/proc/self/task/%d/stat", getpid());
    pthread_t t;
    for (int i = 0; i < 30; i++) pthread_create(&t, 0, idle, 0);
    pthread_create(&t, 0, watcher, 0);
    write(1, "R", 1);
    for (;;) pause();
}
"""


@needs_ptrace
def test_a_thread_watching_the_leader_is_held_before_it_sees_the_leader_held(tmp_path: Path) -> None:
    """Every thread is held at once (a group stop, then the reads): held one after another, a watcher listed last
    saw the leader held for tens of microseconds before its own turn (and could put its modes back meanwhile:
    correct 4 of 4 on the H200 host's 16 cores before, rejected 2 of 4 correctness-only and 2 of 2 timed after)."""
    (tmp_path / "watch.c").write_text(WATCHER)
    subprocess.run(["gcc", "-O1", "-pthread", "watch.c", "-o", "watch"], cwd=tmp_path, check=True)
    process = subprocess.Popen([str(tmp_path / "watch")], stdout=subprocess.PIPE)
    try:
        assert process.stdout is not None and process.stdout.read(1) == b"R"
        time.sleep(0.05)
        os.set_blocking(process.stdout.fileno(), False)
        for _ in range(20):
            held = fp_probe.probe(process.pid, memory=False)
            assert held is not None and len(held.readings) == 32
            time.sleep(0.002)
        time.sleep(0.05)
        seen = process.stdout.read() or b""
        assert seen.count(b"S") == 0, f"the watcher saw the leader held before its own stop {seen.count(b'S')} times"
        assert process.poll() is None
    finally:
        process.kill()
        process.wait()


def _cpu_ticks(pid: int) -> int:
    fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    return int(fields[11]) + int(fields[12])  # utime + stime (fields 14 and 15)


@needs_ptrace
def test_each_thread_is_read_in_its_own_mode_and_runs_on(spinner: Path) -> None:
    process = subprocess.Popen([str(spinner), "8040", "0"])  # main: FTZ|DAZ; the worker: the default
    try:
        time.sleep(0.2)
        held = fp_probe.probe(process.pid)
        assert held is not None and held.held_ns
        readings = held.readings
        own = fp_probe.own_code(process.pid)
        assert own and all(fp_probe.counts(r, own) for r in readings)  # both spin in its own code
        assert Counter(r.mode for r in readings) == Counter({FpMode(0x8040, DEFAULT.x87): 1, DEFAULT: 1})
        ticks = _cpu_ticks(process.pid)
        time.sleep(0.3)
        # none of its threads left stopped: still running, and using CPU
        assert process.poll() is None and _cpu_ticks(process.pid) > ticks
        states = {Path(f"/proc/{process.pid}/task/{t.name}/stat").read_text().rpartition(")")[2].split()[0]
                  for t in Path(f"/proc/{process.pid}/task").iterdir()}
        assert not states & {"t", "T"}, states
    finally:
        process.kill()
        process.wait()


# A thread that only waits (a condition variable), the main thread joining a chain of short-lived threads that
# each compute a moment, and, with argv[1] "spin", a thread that computes for good.
WAITERS = r"""
#include <pthread.h>
#include <string.h>
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t never = PTHREAD_COND_INITIALIZER;
static volatile double sink;
static void *wait_for_good(void *p) { pthread_mutex_lock(&mu); for (;;) pthread_cond_wait(&never, &mu); return p; }
static void *spin(void *p) { double a = 1; for (;;) { a = a * 1.0000001 + 1e-9; sink = a; } return p; }
static void *brief(void *p) { double a = 1; for (int i = 0; i < 2000; i++) a = a * 1.0000001; sink = a; return p; }
int main(int argc, char **argv) {
    pthread_t t;
    pthread_create(&t, 0, wait_for_good, 0);
    if (argc > 1 && strcmp(argv[1], "spin") == 0) pthread_create(&t, 0, spin, 0);
    for (;;) { pthread_create(&t, 0, brief, 0); pthread_join(t, 0); }
}
"""


@needs_ptrace
@pytest.mark.parametrize("spins", [True, False])
def test_a_probe_reads_work_only_where_a_thread_runs_instructions(tmp_path: Path, spins: bool) -> None:
    """A thread stopped in a system call (waiting, joining, a new thread not past its clone) reads as one; a probe
    of several threads reads the kernel's work only where one was running instructions (the twenty-sixth session:
    a chain of short-lived FTZ workers was found waiting to start in every probe on a loaded host)."""
    (tmp_path / "waiters.c").write_text(WAITERS)
    subprocess.run(["gcc", "-O1", "-pthread", "waiters.c", "-o", "waiters"], cwd=tmp_path, check=True)
    process = subprocess.Popen([str(tmp_path / "waiters"), *(["spin"] if spins else [])])
    try:
        time.sleep(0.2)
        held = [fp_probe.probe(process.pid, memory=False) for _ in range(20)]
        assert all(h is not None and len(h.readings) >= 2 for h in held)
        in_call = Counter(r.in_system_call for h in held for r in h.readings)
        assert in_call[True] >= 20, in_call  # the waiter, in every probe
        reads = [fp_probe.reads_work(h) for h in held]
        if spins:
            assert all(reads)
        else:  # the main thread and the brief threads run instructions now and then, the waiter never
            assert reads.count(False) >= 5, reads
    finally:
        process.kill()
        process.wait()
    assert all(h.threads >= len(h.readings) for h in held)
    # a lone thread is the harness's: its modes are its work's wherever it waits; not a lone reading of a process
    # whose other thread was ending as the probe held it
    waiting = fp_probe.Reading(DEFAULT, 0, in_system_call=True)
    assert fp_probe.reads_work(fp_probe.Held([waiting], 1, threads=1))
    assert not fp_probe.reads_work(fp_probe.Held([waiting], 1, threads=2))


def test_rounding_inside_a_library_routine_is_the_routines_own() -> None:
    """libm sets and restores rounding within some routines (glibc's fma fallback): only the kernel's own code's
    rounding counts; flush-to-zero counts wherever the thread was stopped."""
    own = [(0x1000, 0x2000)]
    toward_zero, ftz = FpMode(0x6000, DEFAULT.x87), FpMode(0x8000, DEFAULT.x87)
    assert fp_probe.counts(fp_probe.Reading(toward_zero, 0x1800), own)
    assert not fp_probe.counts(fp_probe.Reading(toward_zero, 0x7F0000001000), own)
    assert fp_probe.counts(fp_probe.Reading(ftz, 0x7F0000001000), own)


def test_a_rounding_mode_is_named() -> None:
    assert "flush-to-zero" in FpMode(0x8000, DEFAULT.x87).describe()
    assert FpMode(0x6000, DEFAULT.x87).describe() == "SSE rounding toward zero"
    assert "x87 precision double" in FpMode(DEFAULT.mxcsr, 0x0200).describe()
    assert fp_probe.X87_MODE_BITS & 0x0C00 == 0  # the x87 rounding is never read: gcc's floorl sets it in place
    assert DEFAULT.describe() == "the default modes"


@needs_ptrace
def test_a_process_gone_reads_nothing() -> None:
    process = subprocess.Popen(["true"])
    process.wait()
    held = fp_probe.probe(process.pid)
    assert held is not None and held.readings == []


def test_a_mode_the_original_runs_in_is_the_tasks_own() -> None:
    """A candidate is refused for the modes its threads were found in that neither the default nor the original's
    threads show: a task whose original rounds toward zero lets its candidate do so too, never flush to zero."""
    from types import SimpleNamespace

    from profiling.paired import Pair

    toward_zero, ftz = FpMode(0x6000, DEFAULT.x87), FpMode(0x8040, DEFAULT.x87)
    original = SimpleNamespace(fp_modes=Counter({toward_zero: 3, DEFAULT: 1}), fp_probes=4, sampler=None)
    candidate = SimpleNamespace(fp_modes=Counter({toward_zero: 2, ftz: 1, DEFAULT: 1}), fp_probes=4, sampler=None,
                                probe_readings=[])
    pair = Pair(task=None, config=None, original=original, candidate=candidate,  # type: ignore[arg-type]
                rng=None, plan=None)  # type: ignore[arg-type]
    assert pair.foreign_fp_modes() == Counter({ftz: 1})
    assert pair.fp_probes == Counter({"original": 4, "candidate": 4})
    assert not original.fp_modes and not candidate.fp_modes  # moved into the pair once
    assert pair.foreign_fp_modes() == Counter({ftz: 1})


# qsort with a comparator that never returns (the thread is held in the program's own code, inside qsort's call);
# with an argument, qsort's address kept in a local of a frame that never calls it
SORTER = r"""
#include <stdlib.h>
static volatile int go = 1;
static int held_compare(const void *a, const void *b) {
    while (go) {}
    return *(const int *)a - *(const int *)b;
}
int main(int argc, char **argv) {
    int v[8] = {5, 3, 1, 4, 2, 8, 7, 6};
    if (argc > 1) {
        void (*volatile kept)(void *, size_t, size_t, int (*)(const void *, const void *)) = qsort;
        while (go) {}
        kept(v, 8, sizeof v[0], held_compare);
    }
    qsort(v, 8, sizeof v[0], held_compare);
    return v[0];
}
"""


@pytest.fixture(scope="module")
def sorter(tmp_path_factory: pytest.TempPathFactory) -> Path:
    directory = tmp_path_factory.mktemp("sorter")
    (directory / "sort.c").write_text(SORTER)
    subprocess.run(["gcc", "-O1", "sort.c", "-o", "sort"], cwd=directory, check=True)
    return directory / "sort"


@needs_ptrace
@pytest.mark.parametrize("kept_only", [False, True])
def test_a_comparator_called_by_a_library_sort_is_read_inside_the_sort(sorter: Path, kept_only: bool) -> None:
    """Twentieth session: a candidate's own comparator, called by libc's qsort found by hand, holds its thread for
    most of each sort, so a probe's instruction pointer is mostly the candidate's own code (a busy comparator's
    candidate: 1 to 3 of 8 to 10 in-body readings in qsort_r). The return address into qsort on the held thread's
    stack names it. A frame that only keeps qsort's address in a local (never a return address: no call before
    it) names nothing."""
    process = subprocess.Popen([str(sorter)] + (["kept"] if kept_only else []))
    try:
        time.sleep(0.2)
        held = fp_probe.probe(process.pid)
        assert held is not None and held.readings and all(r.stack for r in held.readings)
        readings = held.readings
        mappings = pc_samples.executable_mappings(process.pid)
        own = fp_probe.own_code(process.pid)
        assert all(any(start <= r.ip < end for start, end in own) for r in readings)  # in its own code
        watch = pc_samples.Watch(re.compile("qsort|qsort_r"), frozenset())
        assert not watch.routines([r.ip for r in readings], mappings)  # its instruction pointer alone says nothing
        found = watch.probed(readings, mappings)
        if kept_only:
            assert not found
        else:
            assert found and all(name.startswith("libc.so") and name.endswith(("qsort", "qsort_r"))
                                 for name in found), found
            # the original importing qsort exempts it, and qsort_r, which glibc's qsort jumps to (twentieth
            # session's red team: identical code on a task whose original calls qsort was refused 5 of 5)
            exempt = pc_samples.Watch(re.compile("qsort|qsort_r"), frozenset({"qsort"}))
            assert not exempt.probed(readings, mappings)
    finally:
        process.kill()
        process.wait()


# spins in its own code; with an argument, first unmaps the page of libc's qsort (code the process had when ready)
UNMAPPER = r"""
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>
static volatile int go = 1;
int main(int argc, char **argv) {
    usleep(200000);
    if (argc > 1) munmap((void *)((uintptr_t)(void *)qsort & ~(uintptr_t)4095), 4096);
    while (go) {}
}
"""


@needs_ptrace
@pytest.mark.parametrize("unmaps", [False, True])
def test_code_mapped_differently_from_ready_is_seen(tmp_path: Path, unmaps: bool) -> None:
    """Twentieth session's red team: a page of libc moved onto another library's code was named by the mapping it
    replaced. A probe reads the executable mappings with the threads held, and any change from those the process
    had when ready is seen (pc_samples.moved): here a page of libc's code unmapped."""
    (tmp_path / "unmap.c").write_text(UNMAPPER)
    subprocess.run(["gcc", "-O1", "unmap.c", "-o", "unmap"], cwd=tmp_path, check=True)
    process = subprocess.Popen([str(tmp_path / "unmap")] + (["unmap"] if unmaps else []))
    try:
        time.sleep(0.05)
        ready = pc_samples.executable_mappings(process.pid)
        time.sleep(0.4)
        held = fp_probe.probe(process.pid)
        assert held is not None and held.regions
        assert pc_samples.moved(ready, held.regions) is unmaps
        assert not fp_probe.probe(process.pid, memory=False).regions  # not read unless asked
    finally:
        process.kill()
        process.wait()
