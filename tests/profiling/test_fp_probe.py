"""fp_probe: a running process's threads' floating-point modes read from outside, and the process left running."""

from __future__ import annotations

import shutil
import subprocess
import time
from collections import Counter
from pathlib import Path

import pytest

from profiling import fp_probe
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


def _cpu_ticks(pid: int) -> int:
    fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    return int(fields[11]) + int(fields[12])  # utime + stime (fields 14 and 15)


@needs_ptrace
def test_each_thread_is_read_in_its_own_mode_and_runs_on(spinner: Path) -> None:
    process = subprocess.Popen([str(spinner), "8040", "0"])  # main: FTZ|DAZ; the worker: the default
    try:
        time.sleep(0.2)
        readings = fp_probe.probe(process.pid)
        assert readings is not None
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
    assert fp_probe.probe(process.pid) == []


def test_a_mode_the_original_runs_in_is_the_tasks_own() -> None:
    """A candidate is refused for the modes its threads were found in that neither the default nor the original's
    threads show: a task whose original rounds toward zero lets its candidate do so too, never flush to zero."""
    from types import SimpleNamespace

    from profiling.paired import Pair

    toward_zero, ftz = FpMode(0x6000, DEFAULT.x87), FpMode(0x8040, DEFAULT.x87)
    original = SimpleNamespace(fp_modes=Counter({toward_zero: 3, DEFAULT: 1}), fp_probes=4, sampler=None,
                               probe_ips=[])
    candidate = SimpleNamespace(fp_modes=Counter({toward_zero: 2, ftz: 1, DEFAULT: 1}), fp_probes=4, sampler=None,
                                probe_ips=[])
    pair = Pair(task=None, config=None, original=original, candidate=candidate,  # type: ignore[arg-type]
                rng=None, plan=None)  # type: ignore[arg-type]
    assert pair.foreign_fp_modes() == Counter({ftz: 1})
    assert pair.fp_probes == Counter({"original": 4, "candidate": 4})
    assert not original.fp_modes and not candidate.fp_modes  # moved into the pair once
    assert pair.foreign_fp_modes() == Counter({ftz: 1})
