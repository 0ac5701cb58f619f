"""The floating-point control registers of a running kernel process's threads, read from outside it mid-call.

The harness compares the x87 control word and MXCSR before and after every served call ("fpcontrol"), but a
candidate can set flush-to-zero or denormals-are-zero for the body of each call and put the registers back before
it returns: the eighteenth red team did it through libc's getcontext/setcontext found by hand (no import, too brief
for two program-counter samples, nothing in the outputs), 1.17-1.26x "improved" against 1.00-1.03x for the same code
in the task's own mode; libm alone holds fifteen `ldmxcsr` instructions a hand-made jump can end on. Whatever the
route, the mode is in the thread's registers while the body runs. So during the calls the judge samples (its
correctness calls, the extra sampled timing round, and a share of every round's timed calls whose times it drops:
profiling/validate.py), it holds every thread of the process at once at a random point of the body, reads each
one's FP registers and instruction pointer, and lets them go on:

    SIGSTOP to the process, every thread stopped  ->  per thread: PTRACE_SEIZE  ->  PTRACE_INTERRUPT  ->
    waitpid(__WALL)  (listed again until no new thread appears)  ->  PTRACE_GETFPREGS, PTRACE_GETREGS, its stack
    from its stack pointer up (/proc/PID/mem)  ->  PTRACE_DETACH  ->  SIGCONT

The SIGSTOP stops every thread at once (the kernel's group stop: each running thread is interrupted within
microseconds of the others), before any is seized: held one after another, a worker that watched the leader's
heartbeat put its modes back in the tens of microseconds between the leader's stop and its own (twenty-first
session's red team, 30 idle threads made first so the worker was asked last: correct 4 of 4).

The threads are held for tens to hundreds of microseconds, by the kernel, between two instructions; the process
cannot refuse it or see it coming (its filter is in, it never traces itself), and a probed call is not told from
another before it is read. The judge's own protocol never signals a process while a probe holds it (the probe runs
on the thread that drives the call, before it waits for "done"). A mode the original also runs in is the task's
own; any other that a candidate thread was found in refuses it (profiling/validate.py), and the instruction
pointers are program-counter samples for the library-routine watch (pc_samples.Watch), and so are the return
addresses on the thread's stack: a comparator of the kernel's own called by a library's sort is its code, with the
sort's return address a frame above it (pc_samples.Watch.probed). Where ptrace is not
permitted (a Yama scope of 2 or more, a container without it), `probe` returns None and nothing is read; the
verdict's rule-22 line says so.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import os
import platform
import signal
import struct
import time
from dataclasses import dataclass
from pathlib import Path

from profiling import proc_maps

_PTRACE_GETREGS, _PTRACE_GETFPREGS, _PTRACE_DETACH = 12, 14, 17
_PTRACE_SEIZE, _PTRACE_INTERRUPT = 0x4206, 0x4207
_WALL = 0x40000000
_EVENT_STOP = 128  # PTRACE_EVENT_STOP: a seized thread's stop by PTRACE_INTERRUPT, in the status's high bits
# struct user_fpregs_struct (x86-64, the FXSAVE layout): cwd at 0, mxcsr at 24; 512 bytes in all
_FPREGS_BYTES = 512
_CWD, _MXCSR = struct.Struct("<H"), struct.Struct("<I")
# struct user_regs_struct (x86-64): 27 eight-byte registers, orig_rax the 16th, rip the 17th, rsp the 20th.
# orig_rax is the system call a thread was stopped in (or had just returned from: a new thread's clone3, 435, before
# its first instruction) and -1 where it was stopped running its own instructions (the kernel's entry code sets it
# so for interrupts and exceptions: "no syscall to restart")
_REGS_BYTES, _WORD, _SIGNED = 27 * 8, struct.Struct("<Q"), struct.Struct("<q")
_ORIG_RAX_OFFSET, _RIP_OFFSET, _RSP_OFFSET = 15 * 8, 16 * 8, 19 * 8
# How much of a held thread's stack is read, from its stack pointer up to the end of the mapping holding it: the
# live frames of the calls it is inside. A comparator of the kernel's own, called by libc's qsort found by hand,
# holds its thread most of the time (the sort's own code took 1 reading in 2 to 3 on the 2-core VM: a candidate
# cheating in a few probed calls passed 1 verdict in about 10), with qsort's return address one frame up. A frame
# larger than this between the thread's stack pointer and that return address hides it.
STACK_READ_BYTES = 1 << 20
# The control bits a kernel could gain speed or change results by: MXCSR's flush-to-zero (15), rounding (13-14)
# and denormals-are-zero (6); the x87 word's precision (8-9: a shorter x87 division or square root is faster).
# Exception masks and sticky flags are left out: unmasking traps only crashes, and flags are set by ordinary
# arithmetic. So is the x87 rounding (10-11): gcc's own floorl and long double casts set it for one instruction in
# the kernel's code (binary_policy._x87_rounding_idiom), and it buys no speed.
MXCSR_MODE_BITS = 0x8000 | 0x6000 | 0x0040
X87_MODE_BITS = 0x0300

_libc = ctypes.CDLL(None, use_errno=True)
_libc.ptrace.argtypes = (ctypes.c_long, ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p)
_libc.ptrace.restype = ctypes.c_long


@dataclass(frozen=True)
class FpMode:
    """One thread's floating-point modes: the mode bits of MXCSR and of the x87 control word."""

    mxcsr: int
    x87: int

    @property
    def flushes(self) -> bool:
        """Flush-to-zero or denormals-are-zero: no library routine sets either of its own accord."""
        return bool(self.mxcsr & 0x8040)

    def describe(self) -> str:
        parts = []
        if self.mxcsr & 0x8000:
            parts.append("flush-to-zero")
        if self.mxcsr & 0x0040:
            parts.append("denormals-are-zero")
        if self.mxcsr & 0x6000:
            parts.append(f"SSE rounding {('nearest', 'down', 'up', 'toward zero')[(self.mxcsr >> 13) & 3]}")
        if self.x87 & 0x0C00:
            parts.append(f"x87 rounding {('nearest', 'down', 'up', 'toward zero')[(self.x87 >> 10) & 3]}")
        if (self.x87 & 0x0300) != 0x0300:
            parts.append(f"x87 precision {('single', 'reserved', 'double', 'extended')[(self.x87 >> 8) & 3]}")
        return ", ".join(parts) or "the default modes"


# What every thread starts in after exec: MXCSR 0x1f80 (round to nearest, no FTZ/DAZ), x87 0x037f (extended
# precision, round to nearest).
DEFAULT = FpMode(0x1F80 & MXCSR_MODE_BITS, 0x037F & X87_MODE_BITS)


def own_code(pid: int) -> list[tuple[int, int]]:
    """The address ranges of the process's own executable's code (its harness and kernel), from /proc/PID/maps;
    empty when it is gone."""
    try:
        executable = os.readlink(f"/proc/{pid}/exe")
    except OSError:
        return []
    return [(r.start, r.end) for r in proc_maps.read(pid) if r.executable and r.path == executable]


def available() -> bool:
    """Whether this machine lets a process trace its children (x86-64 only: the register layout)."""
    if platform.machine() != "x86_64":
        return False
    try:
        return int(Path("/proc/sys/kernel/yama/ptrace_scope").read_text()) < 2
    except (OSError, ValueError):
        return True  # no Yama: same-user tracing is the kernel's default


class ProcessGone(Exception):
    """The probed process ended while a thread of it was held; status: its wait status (already reaped)."""

    def __init__(self, status: int) -> None:
        super().__init__(f"wait status {status}")
        self.status = status


@dataclass(frozen=True)
class Reading:
    """One thread's modes, where it was stopped (its instruction pointer) and its stack from its stack pointer up
    (its frames' return addresses among the words; empty where it was not read); in_system_call: it was stopped in a
    system call (waiting in a futex, joining, a new thread not yet past its creation), not running instructions."""

    mode: FpMode
    ip: int
    stack: bytes = b""
    in_system_call: bool = False


@dataclass(frozen=True)
class Held:
    """One probe: each thread's reading, when every thread was held (CLOCK_REALTIME, the clock the judge's messages
    are stamped by), and the process's memory map then (empty where memory was not read); threads: how many it
    listed, those ending as it held them included (their readings are missing)."""

    readings: list[Reading]
    held_ns: int
    regions: tuple[proc_maps.Region, ...] = ()
    threads: int = 0


def counts(reading: Reading, own_code: list[tuple[int, int]]) -> bool:
    """Whether a reading says something about the kernel's code: flush-to-zero or denormals-are-zero wherever it
    was stopped; another rounding or precision only inside the process's own executable (`own_code`: its address
    ranges), since libm's routines set and restore rounding within themselves (glibc's fma without FMA hardware
    rounds toward zero, sin's slow path sets the x87 precision) for an original and a candidate alike."""
    return reading.mode.flushes or any(start <= reading.ip < end for start, end in own_code)


def probe(pid: int, *, memory: bool = True) -> Held | None:
    """Each live thread's modes and instruction pointer, read with every thread held at once (none is left
    stopped). The process is group-stopped first (_stop_all: every thread at once); where that does not complete
    in time, each listing's threads are asked to stop before the judge waits for any, as they are in any case (a
    few microseconds each), and the threads are listed again until a listing finds none new (a thread not yet held
    can start another; a held one cannot), so a chain of short-lived threads cannot end one and start the next
    between the listing and the read (nineteenth red team: 1.11-1.14x). None when tracing is refused (the
    machine's policy); no readings when no thread could be read. Raises ProcessGone when the process's leader ended
    during the probe and its status was reaped here (the caller's record of its exit must take it). `memory`: each
    thread's stack and the process's map are read too (Reading.stack, Held.regions)."""
    held: dict[int, int] = {}  # each held thread, with the signal to hand back on its detach
    listed: set[int] = set()  # every thread any listing named
    asked: list[int] = []  # seized and asked to stop, not yet waited for
    gone = False
    stopped_ns = _stop_all(pid)
    try:
        for _ in range(MAX_LISTINGS):
            try:
                listing = {int(name) for name in os.listdir(f"/proc/{pid}/task")}
            except OSError:
                return Held([], 0)
            listed |= listing
            new = sorted(listing - held.keys() - set(asked))
            if not new and not asked:
                break
            for tid in new:
                if _libc.ptrace(_PTRACE_SEIZE, tid, None, None) != 0:
                    if ctypes.get_errno() != errno.ESRCH and not held and not asked:
                        return None  # the first thread refused: the machine's policy
                    # gone, or ending: ptrace refuses a thread past its exit with EPERM. (Taking that as "refused"
                    # and returning left the threads already asked to stop un-waited and traced: threaded
                    # candidates died of SIGTRAP now and then, twentieth session)
                    continue
                asked.append(tid)
                _libc.ptrace(_PTRACE_INTERRUPT, tid, None, None)
            while asked:
                tid = asked.pop()
                signal_back = _stopped(tid, leader=pid)
                held[tid] = signal_back  # a thread that ended is detached harmlessly (ESRCH)
        # when every thread was held: the group stop's start (each thread asked, a running one interrupted), or
        # where it did not start in time, once every thread is seized and stopped. Not when a thread was only asked
        # one by one: stamped at the first listing's interrupts, the probed rounds' skip of probes too late for the
        # body let `qsort_until_a_probe_is_seen.c` (cheats until it sees a stop) read improved 5.1x in a CI run
        held_ns = stopped_ns if stopped_ns is not None else time.clock_gettime_ns(time.CLOCK_REALTIME)
        regions = tuple(proc_maps.read(pid)) if memory else ()
        stacks = _Stacks(pid if memory else None, regions)
        try:
            return Held([reading for tid in held if (reading := _read(tid, stacks)) is not None], held_ns, regions,
                        threads=len(listed))
        finally:
            stacks.close()
    except ProcessGone:
        gone = True
        raise
    finally:
        for tid, signal_back in held.items():
            _libc.ptrace(_PTRACE_DETACH, tid, None, ctypes.c_void_p(signal_back or None))
        for tid in asked:  # left by an exception (the leader ended): waited for, then let go (a thread asked to
            # stop and detached before its stop stays traced, and stops later with no one to let it go)
            with contextlib.suppress(ProcessGone):
                _libc.ptrace(_PTRACE_DETACH, tid, None, ctypes.c_void_p(_stopped(tid, leader=pid) or None))
        if not gone:  # the group stop ended (a detached thread stays in it until then; its pid is ours to signal
            # until reaped: where the probe reaped it, the caller records the exit and signals nothing more)
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGCONT)


# How long a probe waits for the process to take its SIGSTOP (one of its threads dequeues it and asks every other
# to stop: a running one is interrupted at once, a sleeping one stops when it next wakes): microseconds when a
# thread is running, longer when all sleep on a busy machine. Past it the probe holds the threads one by one, as
# it always did.
GROUP_STOP_WAIT_NS = 5_000_000
_SIGSTOP_BIT = 1 << (signal.SIGSTOP - 1)  # in /proc/PID/status's ShdPnd mask: a SIGSTOP not yet taken


def _stop_all(pid: int) -> int | None:
    """SIGSTOP to the process, then wait (yielding the judge's core: a thread must run to take it) until the
    process took it: from then on every thread is asked to stop, a running one interrupted at once, and none runs
    its own code again before it stops. Waiting matters: a thread seized before the signal was taken would take it
    as a ptrace signal stop, and no group stop would begin. Returns when it was seen taken (CLOCK_REALTIME ns: the
    threads are held from then on, give or take an interrupt's microseconds), or None when the process is gone or
    did not take it within GROUP_STOP_WAIT_NS. The caller's SIGCONT ends the stop either way."""
    try:
        os.kill(pid, signal.SIGSTOP)
    except ProcessLookupError:
        return None
    deadline = time.monotonic_ns() + GROUP_STOP_WAIT_NS
    while time.monotonic_ns() < deadline:
        pending = _shared_pending(pid)
        if pending is None:
            return None
        if not pending & _SIGSTOP_BIT:
            return time.clock_gettime_ns(time.CLOCK_REALTIME)
        os.sched_yield()
    return None


def _shared_pending(pid: int) -> int | None:
    """The process's shared pending signals (ShdPnd of /proc/PID/status); None when it is gone."""
    try:
        with open(f"/proc/{pid}/status", "rb") as status:
            for line in status:
                if line.startswith(b"ShdPnd:"):
                    return int(line.split()[1], 16)
    except (OSError, ValueError, IndexError):
        return None
    return None


# Listings of a process's threads one probe makes at most: a process that starts threads faster than the probe
# holds them is read as far as it got.
MAX_LISTINGS = 64


def _stopped(tid: int, *, leader: int) -> int:
    """Wait for a seized thread asked to stop: the signal to hand back when it is let go (0: none; also for a
    thread that ended first)."""
    while True:
        try:
            _, status = os.waitpid(tid, _WALL)
        except ChildProcessError:
            return 0
        if os.WIFEXITED(status) or os.WIFSIGNALED(status):
            if tid == leader:  # the whole process, reaped here
                raise ProcessGone(status)
            return 0  # one thread of it ended (its status is not the process's)
        if os.WIFSTOPPED(status):
            # the interrupt's own stop, or a signal arriving first: that signal is handed back on detach
            return os.WSTOPSIG(status) if status >> 16 != _EVENT_STOP else 0


def _read(tid: int, stacks: _Stacks) -> Reading | None:
    fpregs, regs = ctypes.create_string_buffer(_FPREGS_BYTES), ctypes.create_string_buffer(_REGS_BYTES)
    if (_libc.ptrace(_PTRACE_GETFPREGS, tid, None, fpregs) != 0
            or _libc.ptrace(_PTRACE_GETREGS, tid, None, regs) != 0):
        return None
    fp = fpregs.raw
    mode = FpMode(_MXCSR.unpack_from(fp, 24)[0] & MXCSR_MODE_BITS, _CWD.unpack_from(fp, 0)[0] & X87_MODE_BITS)
    return Reading(mode, _WORD.unpack_from(regs.raw, _RIP_OFFSET)[0],
                   stacks.read(_WORD.unpack_from(regs.raw, _RSP_OFFSET)[0]),
                   in_system_call=_SIGNED.unpack_from(regs.raw, _ORIG_RAX_OFFSET)[0] >= 0)


def reads_work(held: Held) -> bool:
    """Whether a probe read the modes of the kernel's work: its only thread, wherever it was (the harness's thread
    is a process's only one unless the kernel starts more), or, of several, one stopped running instructions. A
    probe that finds every thread in a system call (waiting, joining, a new thread before its first instruction)
    read nothing of any work: on a loaded host a chain of short-lived FTZ workers was held about 50 times mid-body
    and never past its mode switch, each worker found in clone3 or rt_sigprocmask with its creator's clean mode
    beside its creator in pthread_join (5 of 6 verdicts read correct when every mid-body hold counted, session 25).
    Not "a thread in the kernel's own executable": honest single-threaded kernels whose bodies run in libc or libm
    would be probed up to 100 calls more each (the suite's parallel part 9:49 -> 12:25). A lone reading of a
    process that had more threads (one ending as it was held: a short-lived worker's last moment) is not its only
    thread's."""
    lone = len(held.readings) == 1 and max(held.threads, 1) == 1
    return lone or any(not r.in_system_call for r in held.readings)


class _Stacks:
    """The held process's memory (/proc/PID/mem: readable by its tracer; not opened for pid None): each thread's
    stack is read from its stack pointer to the end of the writable region holding it (STACK_READ_BYTES at most),
    never into whatever is mapped beyond it."""

    def __init__(self, pid: int | None, regions: tuple[proc_maps.Region, ...]) -> None:
        self._mem: int | None = None
        self._writable = [(r.start, r.end) for r in regions if r.writable]
        if pid is not None:
            with contextlib.suppress(OSError):
                self._mem = os.open(f"/proc/{pid}/mem", os.O_RDONLY | os.O_CLOEXEC)

    def read(self, sp: int) -> bytes:
        if self._mem is None:
            return b""
        end = next((end for start, end in self._writable if start <= sp < end), sp)
        try:
            return os.pread(self._mem, min(end - sp, STACK_READ_BYTES), sp)
        except OSError:
            return b""

    def close(self) -> None:
        if self._mem is not None:
            os.close(self._mem)
            self._mem = None
