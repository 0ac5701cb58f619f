"""Kernel processes that serve calls to the judge: the untrusted half of a verdict (VALIDATION.md rules 20-25).

The candidate's code is linked into its harness, so everything in that process is untrusted: its clock, its memory,
its files, its exit status. It only runs the kernel on buffers the judge made and says when it is done. The judge
(this process) draws the inputs, times each call with its own clock, stops the process and reads what it wrote
from its own mapping of the shared memory:

    judge (trusted)                                      kernel process (harness + candidate, untrusted)
    sandbox.spawn(bin serve --channel FD k=v ...)  ->    pf_init
                          <-  "buf NAME DTYPE ROLE COUNT LO HI"   pf_input/pf_output/... (the harness's set-up)
    a sealed memfd per buffer, "ok BYTES"  ->            mapped: [guard | data | guard]
                          <-  "ready seccomp windowed"   the system-call filter is in (first pf_begin)
    per call, while it is stopped (SIGSTOP): inputs written, outputs poisoned, guards armed, caches flushed
    "call", SIGCONT; the clock starts  ->
                          <-  "start"                    the loop body: the kernel
                          <-  "synced", "done"           pf_end
    SIGSTOP; outputs, inputs and guards read from the judge's mapping while every thread of it is stopped

Every time is read from the kernel's stamp of when a word was sent (SO_TIMESTAMPNS on the judge's end), not from
when the judge woke to read it: a call's time is its body's, from "start" to "synced", and the whole call runs
from the judge's SIGCONT to "done"'s stamp (work moved outside the body shows in the difference).

Between calls the process is stopped, so no thread of it can work ahead on inputs being written or finish its
outputs after saying "done". A CUDA kernel process is "staged": its buffers also live on the device. On "call" the
harness copies the inputs up, poisons the outputs on the device and says "start"; after the body and a whole-device
synchronisation it says "synced", then "done": the same two times (profiling/validate.py compares both sides).
Only the calls the judge checks are copied back, on "fetch", after the call: its filter refuses new threads and
executable mappings, so nothing of the candidate's runs between a call and its fetch. Any deviation (an early
exit, a signal, a message out of turn, a hang) is a ProtocolError with its reason: a failing verdict, never a
crash of the validator.
"""

from __future__ import annotations

import contextlib
import fcntl
import math
import mmap
import os
import random
import select
import signal
import socket
import statistics
import struct
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from enum import IntEnum
from pathlib import Path

import numpy as np

from perfforge.task import TaskConfig
from profiling import fp_probe, pc_samples, proc_maps, sandbox
from profiling.build import Build
from profiling.correctness import NUMPY_DTYPE, POISON_BYTE

# The harness's pf_dtype and pf_role, in their C order (perfforge_harness.h).
DTYPES = ("float32", "float64", "float16", "bfloat16", "int32", "int64", "uint8")


class Role(IntEnum):
    INPUT = 0  # drawn by the judge before every call, must come back bit for bit
    OUTPUT = 1  # poisoned before every call, compared after it
    INOUT = 2  # drawn like an input, compared like an output
    FIXED = 3  # filled once by the harness's set-up (structure, indices), must never change


def _poisoning(word: bytes, poison_byte: int) -> bytes:
    """The judge's word for a call ("call", "stage") naming the poison of its outputs: plain for 0xFF (the
    harness's own), else the byte in two hex digits ("call a5")."""
    if not 0 <= poison_byte <= 0xFF:
        raise ValueError(f"a poison is one byte, not {poison_byte:#x}")
    return word if poison_byte == POISON_BYTE else word + b" %02x" % poison_byte


GUARD_BYTES = 256  # before and after each buffer, as the harness lays them out (PF_GUARD_BYTES)
GUARD_BYTE = 0xA5
GUARD = bytes([GUARD_BYTE]) * GUARD_BYTES
HANDSHAKE_TIMEOUT_S = 60.0  # starting the process and the harness's set-up (a large fixed buffer filled on the CPU)
STOP_TIMEOUT_S = 5.0  # every thread of a stopped process reports stopped long before this
# How long the judge polls for a probed correctness call's "start" before it sleeps on it: the harness says it
# within 10-50 us of being resumed on the 2-core VM; a process slower than this is waited for as usual.
START_SPIN_S = 0.002
# A correctness call's probes come as a Poisson process over the whole call, from its resumption to its "done": in
# its body the first at a uniform point of the body expected, and every wait an exponential one after the last
# probe let go, until the harness's next word (or the call's deadline). No
# stop says anything of the next: a body that cheats once it has seen a stop, or once none has come for a while, is
# held cheating with a chance that grows with how long it cheats (1 - exp(-cheating / mean wait)), in every call.
# With one follow-up at chance 0.5 within 4 probe costs (sessions 26-30), the twenty-sixth red team's body (FTZ
# from the first stop on) was read in 27% of the calls a probe held mid-body; it read correct in 1 of 100 verdicts
# under two busy loops and in one CI run (scratch/ftz31, session 31). PROBES_A_BODY: the mean wait is the body
# expected over this many (more probes per call cost correctness calls a stop of about 0.1-0.3 ms each), never
# below one probe's hold (the threads run at least half the time on average while probed)
PROBES_A_BODY = 8
# The least mean wait, whatever the body and the holds known: a process's first probed call has neither (body_ms 0,
# no hold measured yet), and a wait of 0 would hold it back to back from resumption to "synced" (session 31's review)
MIN_PROBE_WAIT_NS = 100_000
MAX_BUFFER_BYTES = 16 << 30  # all buffers of one process: more is a harness bug, not a task
MESSAGE_BYTES = 512
# Kernel receive timestamps on the judge's end of the channel (Linux's SO_TIMESTAMPNS and its SCM message, which
# Python's socket module does not name): a struct timespec of when the sender queued each message (CLOCK_REALTIME)
SO_TIMESTAMPNS = 35
STAMP_BYTES = 16
# OpenMP's threads sleep as soon as they wait: threads that spin (libgomp's default for a while, ACTIVE for good)
# fight the judge and each other for the cores every time the process is resumed. Measured on the H100 host's 16
# cores, modes_missing_openmp's fast version per call: ACTIVE 7.6 ms (spread 0.3-14 ms), PASSIVE 0.36 ms, against
# the serial original's 2.1 ms (scratch run of profiling/paired.py, 20 calls per side).
SERVED_ENV = {"OMP_WAIT_POLICY": "PASSIVE"}
# CPU time a thread of a stopped CPU harness may show between the judge's waking at "done" and its stop without
# having worked on: a sleeping thread is woken to take the SIGSTOP. Measured on the 2-core VM: at most 0.006 ms for
# the harness alone, an OpenMP pool or two pthreads (scratch/after_done_probe.py, 200 calls each)
AFTER_DONE_SLACK_NS = 50_000
# CPU time the main thread may show beyond that per other thread of its process: the thread that takes the SIGSTOP
# (the main thread, asleep in its wait) wakes each of the others into the stop. Measured on the 2-core VM: a pool of
# 33 sleeping threads cost the main thread 57-81 us per stop (1.7-2.5 us a thread), which read as work after "done"
# and refused honest pools of 32 and 50 threads (nineteenth session's red team, scratch afterdone_log.py). A
# worker's own slack does not grow with the pool: only the main thread's does, up to STOP_COST_THREADS others (a
# main thread that works on after "done" gains at most that much: 0.3 ms a call behind 64 idle threads).
STOP_COST_PER_THREAD_NS = 5_000
STOP_COST_THREADS = 64
# How long the judge waits, once it woke to "done", for the harness's main thread to leave the CPU before it reads
# the threads' CPU times (KernelProcess._settle_main): the harness needs a few microseconds from sending "done" to
# its wait for the next word, and a running thread's time reads stale.
MAIN_SETTLE_NS = 100_000
LIFETIME_S = 3600.0  # CPU seconds a kernel process may use in all (twice this, by sandbox.Limits' rule)


@dataclass(frozen=True)
class CallTime:
    """One call by the judge's clock. duration_ms: the kernel's time (a staged process: from its "start" to its
    "synced"; otherwise the whole call). outer_ms: from resuming the process to its "done", all it did included
    (the same as duration_ms when not staged)."""

    duration_ms: float
    outer_ms: float
    # an interpreted staged process: the judge-timed round trips around the call that copy its buffers, inputs up
    # on "stage" and outputs back on "fetch", where work moved out of the call would show. Kept apart: a fetch of
    # a few kilobytes varies by microseconds, a stage of 64 MB by a millisecond, and work hidden in the fetch must
    # not hide in the stage's noise
    staging_ms: float = 0.0
    fetch_ms: float = 0.0
    # the judge's own L2 flush right after the call's outputs were fetched (interpreted GPU processes; 0 where none
    # ran): it waits while the call left work running on the device
    settle_ms: float = 0.0
    # a CPU harness's threads once it said "done" (0 when none worked on): from "done" to when the judge woke, and
    # the busiest thread's CPU time from then until it stopped; nothing of a call may run after "done"
    after_done_ms: float = 0.0


@dataclass
class Probed:
    """What one stretch of a call's probes found: when the last held its threads, the same where that last probe
    read its work (fp_probe.reads_work; None: it did not), how long its threads were held in all."""

    held_ns: int | None = None
    read_ns: int | None = None
    holding_ns: int = 0


class ProtocolError(Exception):
    """The kernel process left the protocol. kind: crashed (died or exited), timeout, or deviation (out of turn)."""

    def __init__(self, reason: str, kind: str = "crashed") -> None:
        super().__init__(reason)
        self.reason, self.kind = reason, kind


@dataclass
class SharedBuffer:
    """One buffer the judge made and the kernel process mapped; the judge's own mapping of it."""

    name: str
    dtype: str
    role: Role
    count: int
    lo: float
    hi: float
    memory: mmap.mmap = field(repr=False)
    guard: bytes = field(default=GUARD, repr=False)  # what both guard zones hold since arm_guards

    @property
    def nbytes(self) -> int:
        return self.count * np.dtype(NUMPY_DTYPE[self.dtype]).itemsize

    def data(self) -> np.ndarray:
        """The buffer's elements, a writable view of the shared memory (no copy)."""
        return np.frombuffer(self.memory, dtype=NUMPY_DTYPE[self.dtype], count=self.count, offset=GUARD_BYTES)

    def arm_guards(self, guard: bytes = GUARD) -> None:
        """Both guard zones set to `guard` (GUARD_BYTES bytes): the harness's own pattern, or one the judge drew."""
        self.guard = guard
        self.memory[:GUARD_BYTES] = guard
        self.memory[GUARD_BYTES + self.nbytes:2 * GUARD_BYTES + self.nbytes] = guard

    def overrun(self) -> str:
        """Where the kernel wrote outside the buffer ('' when both guards are intact)."""
        if self.memory[:GUARD_BYTES] != self.guard:
            return "before its start"
        if self.memory[GUARD_BYTES + self.nbytes:2 * GUARD_BYTES + self.nbytes] != self.guard:
            return "past its end"
        return ""

    def signature(self) -> tuple[str, str, int, int, float, float]:
        return self.name, self.dtype, int(self.role), self.count, self.lo, self.hi


class KernelProcess:
    """One built version serving calls at one input configuration, in the sandbox."""

    def __init__(self, built: Build, config: TaskConfig, scratch: Path, *, who: str,
                 memory_bytes: int | None, interpreted: bool = False, sample_pcs: bool = False,
                 probe_fp: bool = False, probe_calls: bool = False, body_ms: float = 0.0) -> None:
        """memory_bytes: the address-space limit (the target's; None for GPU targets, whose drivers map more).
        interpreted: a Python harness (the task's language, never the process's word), whose interpreter the
        candidate's code can change: its "start" and "synced" are not evidence, it copies its buffers back within
        every call (no "fetch"), and it must be alone in its process group once ready. sample_pcs: its program
        counter is sampled from the moment it is ready (profiling/pc_samples.py; where perf events allow).
        probe_fp: its calls may be probed, its threads' floating-point modes and instruction pointers read once
        mid-call (profiling/fp_probe.py; a compiled CPU kernel's, where ptrace allows); probe_calls: every call is,
        unless the judge says otherwise. body_ms: how long a call's body is
        expected to take (a process it replaces measured it), where the first probe's place is drawn."""
        self.built, self.config, self.scratch, self.who = built, config, scratch, who
        self.interpreted = interpreted
        self.sample_pcs = sample_pcs
        self.sampler: pc_samples.Sampler | None = None
        self.mappings: list[proc_maps.Region] = []  # its code mappings once ready
        # the modes its threads were found in mid-call, where they were (instruction pointers), how many probes
        self.fp_modes: Counter[fp_probe.FpMode] = Counter()
        # the probes' thread readings not yet taken (the candidate's only: the original's are never read)
        self.probe_readings: list[fp_probe.Reading] = []
        self.fp_probes = 0
        self.holds = 0  # probes that held its threads (a stop it may have seen, whatever they read)
        # calls of it held before their body ended ("synced") by a probe that could read its work's modes (its lone
        # thread, or one running instructions: fp_probe.reads_work)
        self.probes_in_body = 0
        self.code_moved = 0  # probes that found its executable mappings not as they were when it was ready
        self._probe_cost_ns = 0  # the last probe's own time, from its start to every thread held
        self._probe_hold_ns = 0  # and from every thread held to this side of the probe's letting them go
        self.probe_fp = probe_fp
        self._probing = probe_fp and fp_probe.available()
        self._probe_at = random.Random(os.urandom(16))  # where in the body each probe lands: nothing it can predict
        self.probe_calls = probe_calls
        self.body_ms = body_ms  # the last call's body: the next probe's place is drawn within it (or a hint, shorter)
        self._own_code: list[tuple[int, int]] | None = None  # its executable's code ranges, read at the first probe
        self._fetched = -1  # the call count at the last fetch: one fetch per call
        self._trip_began: float | None = None  # when the round trip under way resumed the process (monotonic)
        # no wall-clock limit of its own: the judge times every call out; CPU time for the whole verdict
        self.limits = sandbox.Limits(timeout_s=LIFETIME_S, memory_bytes=memory_bytes)
        self.buffers: list[SharedBuffer] = []
        self.filtered = False  # the system-call filter is in
        # its buffers are copied to and from a device around each call, and it says "start" and "synced" around
        # the body: the kernel's time is between them (CUDA)
        self.staged = False
        self.windowed = False  # says "start" and "synced" around the body (the judge times that window)
        self._stamp_ns = 0  # when the last message read was sent, by the kernel's clock (SO_TIMESTAMPNS)
        self.calls = 0
        self._channel: socket.socket | None = None
        self._process: sandbox.Spawned | None = None

    # ---- lifetime

    def start(self) -> None:
        """Spawn the process and take its buffer declarations; it is stopped when this returns."""
        self.spawn()
        self.handshake()

    def spawn(self) -> None:
        """Start the process (its set-up runs while the judge starts the other side: handshake() waits for it)."""
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self._channel = ours
        ours.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)  # each message stamped when it is sent
        argv = [*self.built.argv, "serve", "--channel", str(theirs.fileno()), *self.config.args()]
        try:
            # reads only its build (binary and libraries' directories are the system's) and its scratch directory
            self._process = sandbox.spawn(argv, cwd=self.scratch, env={**dict(self.built.env), **SERVED_ENV},
                                          limits=self.limits, writable=self.built.cache_dirs,
                                          readable=self.built.readable_dirs, pass_fds=(theirs.fileno(),))
        finally:
            theirs.close()

    def handshake(self) -> None:
        """Take the buffer declarations of a spawned process and stop it once it is ready."""
        deadline = time.monotonic() + HANDSHAKE_TIMEOUT_S
        while True:
            message = self._receive(deadline, "starting")
            if message.startswith("ready "):
                self.staged = message.split()[-1] == "staged"
                # a C harness says "start" and "synced" around the body: CUDA's (staged) and the CPU's
                self.windowed = message.split()[-1] in ("staged", "windowed")
                break
            if not message.startswith("buf "):
                raise ProtocolError(f"the {self.who} sent {message[:80]!r} while declaring its buffers", "deviation")
            self._declare(message)
        self._stop()
        if self.sample_pcs:  # before its first call: every thread it starts from now on is sampled too
            self.sampler = pc_samples.Sampler.attach(self._process.pid)
            self.mappings = pc_samples.executable_mappings(self._process.pid) if self.sampler else []
        if self._probing and not self.mappings:  # what a probe's instruction pointers are read against
            self.mappings = pc_samples.executable_mappings(self._process.pid)
        # its word is not evidence: the filter is read from /proc, and a machine with seccomp gets no process without
        self.filtered = self._process.filtered()
        if not self.filtered and sandbox.seccomp_available():
            raise ProtocolError(f"the {self.who}'s process runs without the system-call filter on a machine that has "
                                "seccomp", "deviation")

    def close(self) -> None:
        """Kill the process and everything it started; release the shared memory."""
        if self._process is not None:
            self._process.close()
        if self._channel is not None:
            self._channel.close()
        if self.sampler is not None:
            self.sampler.close()
        for buffer in self.buffers:
            with contextlib.suppress(BufferError):  # a view still held elsewhere: freed with it
                buffer.memory.close()

    @property
    def probing(self) -> bool:
        """Whether its calls can be probed (fp_probe.py: asked for, and ptrace allowed here)."""
        return self._probing

    @property
    def pid(self) -> int | None:
        """Its process id (None before spawn())."""
        return self._process.pid if self._process is not None else None

    def __enter__(self) -> KernelProcess:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ---- one call

    def call(self, timeout_s: float, *, fetch: bool = False, settle: Callable[[], float] | None = None,
             poison_byte: int = POISON_BYTE, probe: bool | None = None, body_hint_ms: float = 0.0) -> CallTime:
        """Run the loop body once on what the buffers hold now, timed by the judge's clock. The process is stopped
        again when this returns; a staged process's buffers can be read after fetch(), any other's at once.

        With `fetch` (a staged process), its outputs are fetched the moment it says "done", before it is stopped
        and checked: stopping it and reading /proc takes the judge a millisecond or more, and work it left running
        on a stream the copy does not wait for (the Triton red team's side stream, measured on an H100) would
        finish in that untimed gap and its outputs read right. `settle` (the judge's timed flush) runs right after
        the fetch, before the stop too. `poison_byte`: what a staged C process poisons this call's outputs with on
        the device (the judge poisons everyone else's in its own memory). `probe` (default: probe_calls): its threads
        are held mid-call (a correctness process's: as often as PROBES_A_BODY says), their modes and instruction
        pointers read (fp_probe.py): such a call's time is not one to use. `body_hint_ms`: how long another process
        took on these same inputs (the original's, just before): the body a correctness call's probes are spread
        over is the shorter of that and this process's last, so a candidate that makes one call long cannot thin
        the next one's probes."""
        fetch = fetch and self.staged
        probe = self._probing and (self.probe_calls if probe is None else probe)
        timed = self._round_trip(_poisoning(b"call", poison_byte), timeout_s, f"call {self.calls}", fetch=fetch,
                                 settle=settle, probe=probe, body_hint_ms=body_hint_ms)
        self.body_ms = timed.duration_ms
        self.calls += 1
        if fetch:
            self._fetched = self.calls
        return timed

    def fetch(self, timeout_s: float) -> float:
        """A staged process copies its buffers back into the judge's memory (the judge's choice, after the call: no
        code of the candidate's runs between a call's 'done' and this; an interpreted one copies its outputs, and
        is fetched after every call). Returns the round trip's milliseconds by the judge's clock (0 when nothing was
        asked: not staged, or this call's buffers already fetched)."""
        if not self.staged or self._fetched == self.calls:
            return 0.0
        self._fetched = self.calls
        return self._simple_trip(b"fetch", "fetched", timeout_s, f"fetching call {self.calls - 1}")

    def stage(self, timeout_s: float, poison_byte: int = POISON_BYTE) -> float:
        """An interpreted staged process copies the judge's inputs up and poisons its outputs on the device (with
        `poison_byte`), as a round trip of its own before the call: the call is then only the kernel. Returns its
        milliseconds."""
        return self._simple_trip(_poisoning(b"stage", poison_byte), "staged", timeout_s, f"staging call {self.calls}")

    def _simple_trip(self, word: bytes, answer: str, timeout_s: float, during: str) -> float:
        assert self._process is not None and self._channel is not None
        self._refuse_pending()
        self._channel.send(word)
        resumed = _realtime_ns()
        self._trip_began = time.monotonic()
        self._process.signal(signal.SIGCONT)
        self._expect(answer, time.monotonic() + timeout_s, during)
        self._trip_began = None
        elapsed_ms = (self._stamp_ns - resumed) / 1e6  # to when it answered
        self._stop()
        return elapsed_ms

    def _round_trip(self, word: bytes, timeout_s: float, during: str, *, fetch: bool = False,
                    settle: Callable[[], float] | None = None, probe: bool = False,
                    body_hint_ms: float = 0.0) -> CallTime:
        assert self._process is not None and self._channel is not None
        self._refuse_pending()
        self._channel.send(word)
        # a CPU harness's threads must rest once it says "done" (a worker it only signalled, or the main thread
        # itself, would finish the outputs while the judge wakes and stops it): the main thread's exact CPU time
        # now, stopped, bounds what it can have done by "done"
        watch = self.windowed and not self.staged
        main = self._process.pid
        main_before = self._process.thread_cpu_ns(only=main).get(main) if watch else None
        # every time here by the clock the kernel stamps messages with: from resuming the process to when it sent
        # each word, however late the judge wakes to read it
        resumed = _realtime_ns()
        self._trip_began = time.monotonic()
        self._process.signal(signal.SIGCONT)
        deadline = self._trip_began + timeout_s
        started = resumed
        # a correctness process's probed call is probed from its resumption to its "done", whatever its words say:
        # work before "start" or after "synced" is no less the kernel's (the thirty-first red team redirected the
        # harness's send through its GOT and ran the whole kernel under FTZ before passing "start" on, or said
        # "synced" itself as the body began: read correct in 20 of 20 and 18 of 20 verdicts while only the window
        # was probed). An honest harness is there for microseconds, where a probe seldom lands.
        whole = probe and self._probed_throughout
        body_ms = self._probe_span_ms(body_hint_ms) if probe else 0.0
        # each stretch's probes, in order; the deadline grows by their holds (the judge's stops are not the call's)
        stretches: list[Probed] = []
        if whole:
            stretches.append(self._probes(resumed, deadline, body_ms))
            deadline += stretches[-1].holding_ns / 1e9
        if self.windowed:
            # a correctness process's probed call: "start" polled for, not slept on (waking took about 40 us on the
            # 2-core VM, and its bodies can be over in 20). Not in a timing round: its calls must not differ from an
            # unprobed round's before a probe has read them (a spinning judge takes a core the candidate could miss)
            self._expect("start", deadline, during, spin_s=START_SPIN_S if probe and self.probe_calls else 0.0)
            started = self._stamp_ns
        # before the judge waits for "done": nothing of its protocol signals the process meanwhile
        inside = self._probe_call(started, deadline, body_ms) if probe else Probed()
        stretches.append(inside)
        deadline += inside.holding_ns / 1e9
        if self.windowed:
            self._expect("synced", deadline, during)
            finished = self._stamp_ns
            if whole:
                stretches.append(self._probes(started, deadline, body_ms))
                deadline += stretches[-1].holding_ns / 1e9
        self._expect("done", deadline, during)
        done = self._stamp_ns
        if watch:  # every thread's CPU time now and once stopped; the process's clock after its threads' (a
            # thread's tick landing between the reads lowers the sum)
            woke = _realtime_ns()
            self._settle_main(woke)
            awake = self._process.thread_cpu_ns()
            awake_total_ns = self._process.process_cpu_ns()
        fetch_ms = settle_ms = 0.0
        if fetch:  # at once: nothing of the judge's between "done" and the copy back
            self._channel.send(b"fetch")
            self._expect("fetched", deadline, f"fetching call {self.calls}")
            # from "done", not from the judge's asking: device work left running through the judge's wake-up
            # (the copy back waits for it in stream order) must show in this round trip
            fetch_ms = (self._stamp_ns - done) / 1e6
        self._trip_began = None
        if settle is not None:
            settle_ms = settle()
        self._stop()
        if watch:
            stopped_ns = _realtime_ns()
            after_done_ms = work_after_done_ms(
                awake, self._process.thread_cpu_ns(), main=main, waking_ns=woke - done, stopping_ns=stopped_ns - woke,
                process_ns=(awake_total_ns, self._process.process_cpu_ns()), main_call_ns=(main_before, done - resumed))
        else:
            after_done_ms = 0.0
        if not self.windowed:
            finished = done
        self.holds += any(stretch.held_ns is not None for stretch in stretches)
        # the body's probes only: one outside it reads the harness (a lone thread always "reads work")
        self.probes_in_body += inside.read_ns is not None and inside.read_ns < finished
        return CallTime(duration_ms=(finished - started) / 1e6, outer_ms=(done - resumed) / 1e6, fetch_ms=fetch_ms,
                        settle_ms=settle_ms, after_done_ms=after_done_ms)

    def _probe_call(self, started_ns: int, deadline: float, body_ms: float) -> Probed:
        """Probe this call while its body runs: the first probe at a uniform point of `body_ms` from its start; a
        correctness process's call then until its body is over (PROBES_A_BODY), any other's once."""
        return self._probes(started_ns, deadline, body_ms,
                            at_ns=started_ns + int(self._probe_at.random() * body_ms * 1e6),
                            once=not self._probed_throughout)

    def _probes(self, started_ns: int, deadline: float, body_ms: float, *, at_ns: int | None = None,
                once: bool = False) -> Probed:
        """Probes from now until a word of the harness waits on the channel (or the deadline passes): the first at
        `at_ns` (default: an exponential wait from now, and none when a word waits already), each next one an
        exponential wait after the last let go. A probe that found every one of several threads in a system call
        read nothing of their work: on a loaded host a chain of short-lived FTZ workers ran its worker's
        instructions in about 1% of a 9.5-ms body (2 of 6 verdicts read correct when one probe followed such a
        one)."""
        probed = Probed()
        if at_ns is None:
            if self._word_waiting():
                return probed
            at_ns = _realtime_ns() + int(self._probe_at.expovariate(1.0) * self._mean_wait_ns(body_ms))
        held = self._probe_fp(started_ns, at_ns, deadline)
        while held is not None:  # a probe that held nothing read nothing; the stops before it were seen
            probed.held_ns = held.held_ns
            probed.holding_ns += self._probe_hold_ns
            # the last probe's, as the count of calls probed mid-body takes it: one that counted where any probe
            # of the call read work read the FTZ chain correct in 1 of 10 verdicts under load (session 26)
            probed.read_ns = held.held_ns if fp_probe.reads_work(held) else None
            if once or time.monotonic() >= deadline + probed.holding_ns / 1e9 or self._word_waiting():
                break
            released = _realtime_ns()
            held = self._probe_fp(started_ns, released + int(self._probe_at.expovariate(1.0)
                                                             * self._mean_wait_ns(body_ms)),
                                  deadline + probed.holding_ns / 1e9)
        return probed

    def _probe_span_ms(self, body_hint_ms: float) -> float:
        """The body a call's probes are spread over: its last body, or for a correctness process the shorter of
        that and `body_hint_ms` (another process's on the same inputs)."""
        if self._probed_throughout and body_hint_ms > 0:
            return min(self.body_ms, body_hint_ms) if self.body_ms > 0 else body_hint_ms
        return self.body_ms

    @property
    def _probed_throughout(self) -> bool:
        """A correctness process (every call probed, its body between "start" and "synced"): each of its probed
        calls is probed from its resumption to its "done" (PROBES_A_BODY); any other process's once."""
        return self.probe_calls and self.windowed

    def _mean_wait_ns(self, body_ms: float) -> float:
        """The mean wait between a correctness call's probes: the body expected over PROBES_A_BODY, never below one
        probe's hold (nor MIN_PROBE_WAIT_NS)."""
        return max(MIN_PROBE_WAIT_NS, self._probe_hold_ns, body_ms * 1e6 / PROBES_A_BODY)

    def _word_waiting(self, wait_s: float = 0.0) -> bool:
        """Whether the harness has sent a word the judge has not read yet (waiting up to `wait_s` for one)."""
        return bool(select.select([self._channel], [], [], wait_s)[0])

    def _probe_fp(self, started_ns: int, at_ns: int, deadline: float | None = None) -> fp_probe.Held | None:
        """Read every thread's floating-point modes as near `at_ns` as the judge can hold them (begun the probe's own
        time early), while this call (whose body began at `started_ns`, or which was resumed then) runs; a
        correctness process's wait ends with no probe at its harness's next word or at `deadline` (monotonic). A
        process found gone is left to the protocol's next read, with its exit status where the probe reaped it.
        Returns what it held (None: nothing was read)."""
        assert self._process is not None
        # over the whole body (nineteenth red team: a cap at 50 ms let FTZ from 65 ms into 180 ms calls go unseen),
        # begun the probe's own time early (listing, seizing and stopping the threads: about 80 us on the 2-core VM).
        # Without it decay_fesetenv_by_hand_restored's FTZ (bodies of 16-500 us, holds 80-450 us after "start") was
        # read in 10 of 20 correctness-only verdicts, against 19 of 20 with it (twenty-first session, 20 runs each)
        at_ns -= self._probe_cost_ns
        # a correctness process's wait ends early with no probe at its harness's next word ("start", "synced",
        # "done": the stretch being probed is over) or at the deadline; polled, not slept, for START_SPIN_S after
        # the resumption, as "start" is (a sleeping judge wakes about 40 us late)
        while (now_ns := _realtime_ns()) < at_ns:
            wait_s = max(0.0, (at_ns - now_ns) / 1e9 - 50e-6)  # then yield the last 50 us away
            if self._probed_throughout:
                now = time.monotonic()
                left_s = math.inf if deadline is None else deadline - now
                spinning = self._trip_began is not None and now < self._trip_began + START_SPIN_S
                if left_s <= 0 or self._word_waiting(0.0 if spinning else min(wait_s, left_s)):
                    return None
            else:
                time.sleep(wait_s)
            os.sched_yield()
        if self._own_code is None:
            self._own_code = fp_probe.own_code(self._process.pid)
        # a process of a probed timing round (correctness processes, probe_calls, are probed on every call: their
        # calls' bodies vary with the edge inputs, and skipping let FTZ set within each call go unread in a CI run)
        timing_round = not self.probe_calls
        # there, the body over already ("synced" waiting): no probe. One landing after the body reads nothing of it,
        # and its stop shows (a voluntary context switch) before the next call: the twentieth session's red team
        # cheated in every call until it saw one and passed 6 of 16 verdicts (5.1-7.3x) when the first landed late.
        # Nor when the judge is too late to hold the threads before the body is expected to end (by the last call's).
        if timing_round and self.windowed and (
                select.select([self._channel], [], [], 0)[0]
                or (self.body_ms and _realtime_ns() + self._probe_cost_ns > started_ns + self.body_ms * 1e6)):
            return None
        candidate = self.who == "candidate"
        begun_ns = _realtime_ns()
        try:
            # the candidate's stacks and map are read in the probed timing rounds only: correctness calls are
            # perf-sampled too, and reading them while held, on every call of a candidate whose threads are made
            # within its calls, came with a "died of SIGTRAP" in 2 CI runs (cause not found)
            held = fp_probe.probe(self._process.pid, memory=timing_round and candidate)
        except fp_probe.ProcessGone as gone:
            self._process.reaped(gone.status)
            return None
        if held is None:  # tracing refused here: no probe from now on
            self._probing = False
            return None
        self.fp_probes += 1
        self.fp_modes.update(r.mode if fp_probe.counts(r, self._own_code) else fp_probe.DEFAULT
                             for r in held.readings)
        if not held.readings:
            return None
        if candidate:
            self.probe_readings.extend(held.readings)
            if self.mappings and held.regions and pc_samples.moved(self.mappings, held.regions):
                self.code_moved += 1
        self._probe_cost_ns = max(0, held.held_ns - begun_ns)
        self._probe_hold_ns = max(0, _realtime_ns() - held.held_ns)
        return held

    def _settle_main(self, woke_ns: int) -> None:
        """Wait (yielding the judge's core) until the harness's main thread is off a CPU, at most MAIN_SETTLE_NS
        after the judge woke to "done": an honest harness is asleep in its wait for the next word by then, and a
        running thread's CPU time reads up to a scheduler tick stale. On the 2-core VM, 4 of 127 honest calls
        found it still runnable after 0.1 ms, waiting for a CPU: its reading then is exact (being taken off a CPU
        accounts it) and showed 5-8 us to the stop."""
        assert self._process is not None
        while self._process.thread_running(self._process.pid) and _realtime_ns() - woke_ns <= MAIN_SETTLE_NS:
            os.sched_yield()

    def last_cpu(self) -> int | None:
        """The CPU its main thread last ran on (field 39 of /proc/PID/stat), where a stopped process resumes; None
        when it cannot be read."""
        if self._process is None:
            return None
        try:
            fields = Path(f"/proc/{self._process.pid}/stat").read_text().rpartition(")")[2].split()
            return int(fields[36])  # field 39 counted from 1, the first two (pid, comm) cut off
        except (OSError, IndexError, ValueError):
            return None

    def overhead_ms(self, pings: int, timeout_s: float, *, whole_call: bool = False) -> float:
        """The median of `pings` null calls: the protocol's own round trip, which every call's duration includes
        (whole_call: as the whole call from resuming to "done" measures it)."""
        trips = (self._round_trip(b"ping", timeout_s, "a null call") for _ in range(pings))
        return statistics.median(t.outer_ms if whole_call else t.duration_ms for t in trips)

    def _expect(self, word: str, deadline: float, during: str, *, spin_s: float = 0.0) -> None:
        message = self._receive(deadline, during, spin_s=spin_s)
        if message.startswith("fpcontrol ") and word == "synced":
            before, _, after = message.removeprefix("fpcontrol ").partition(" ")
            raise ProtocolError(f"the {self.who} returned from {during} with the floating-point control registers "
                                f"changed (x87 control word and MXCSR {before} -> {after}: flush-to-zero, "
                                "denormals-are-zero or rounding): a kernel keeps the task's floating-point rules",
                                "deviation")
        if message != word:
            raise ProtocolError(f"the {self.who} answered {message[:80]!r} in {during}, not {word!r}", "deviation")

    # ---- the protocol's pieces

    def _declare(self, message: str) -> None:
        try:
            _, name, dtype, role, count, lo, hi = message.split(" ")
            spec = (name, DTYPES[int(dtype)], Role(int(role)), int(count), float(lo), float(hi))
        except (ValueError, IndexError):
            raise ProtocolError(f"the {self.who} declared a buffer as {message[:80]!r}", "deviation") from None
        nbytes = spec[3] * np.dtype(NUMPY_DTYPE[spec[1]]).itemsize
        if spec[3] < 0 or sum(b.nbytes for b in self.buffers) + nbytes > MAX_BUFFER_BYTES:
            raise ProtocolError(f"the {self.who} declared buffer {name!r} of {nbytes} bytes: too large", "deviation")
        size = -(-(nbytes + 2 * GUARD_BYTES) // mmap.PAGESIZE) * mmap.PAGESIZE
        fd = os.memfd_create(f"pf-{name}", os.MFD_CLOEXEC | os.MFD_ALLOW_SEALING)
        try:
            os.ftruncate(fd, size)
            # its size can never change again: a shrunk memfd would fault the judge's reads (SIGBUS)
            fcntl.fcntl(fd, fcntl.F_ADD_SEALS, fcntl.F_SEAL_SHRINK | fcntl.F_SEAL_GROW | fcntl.F_SEAL_SEAL)
            memory = mmap.mmap(fd, size)
            socket.send_fds(self._channel, [f"ok {size}".encode()], [fd])
        finally:
            os.close(fd)
        buffer = SharedBuffer(*spec, memory=memory)
        buffer.arm_guards()
        self.buffers.append(buffer)

    def _receive(self, deadline: float, during: str, *, spin_s: float = 0.0) -> str:
        """The next message; self._stamp_ns is when it was sent (the kernel stamps each message on the judge's
        socket as the sender's call queues it: SO_TIMESTAMPNS), so a window between two messages is the sender's,
        not when the judge woke to read them (a sleeping judge saw "start" and "synced" at once). For its first
        `spin_s` the judge polls instead of sleeping."""
        assert self._channel is not None and self._process is not None
        # how long the process had when it timed out: from the round trip's start (a call's deadline grows by the
        # judge's own holds, and each word is waited for with what is left)
        began = self._trip_began if self._trip_began is not None else time.monotonic()
        spin_until = time.monotonic() + spin_s
        while True:
            now = time.monotonic()
            left = deadline - now
            if left <= 0 and not select.select([self._channel], [], [], 0.0)[0]:  # a word in time is read
                raise ProtocolError(f"the {self.who} timed out after {now - began:.1f} s in {during} (hung or far too "
                                    "slow)", "timeout")
            ready, _, _ = select.select([self._channel], [], [], 0.0 if now < spin_until else max(0.0, min(left, 0.5)))
            if ready:
                data, ancillary, _, _ = self._channel.recvmsg(MESSAGE_BYTES, socket.CMSG_SPACE(STAMP_BYTES))
                if data:
                    self._stamp_ns = _sent_at_ns(ancillary)
                    return data.decode("ascii", errors="replace")
                raise ProtocolError(self._death(during))
            if self._process.poll() is not None:
                raise ProtocolError(self._death(during))

    def _refuse_pending(self) -> None:
        """A message waiting before the call was asked for is out of turn (a 'done' sent ahead, by a thread)."""
        assert self._channel is not None
        ready, _, _ = select.select([self._channel], [], [], 0)
        if ready:
            data = self._channel.recv(MESSAGE_BYTES)
            what = repr(data.decode("ascii", errors="replace")[:80]) if data else "the channel's end"
            raise ProtocolError(f"the {self.who} sent {what} between calls, outside the protocol", "deviation")

    def _death(self, during: str) -> str:
        assert self._process is not None
        code = self._process.wait(timeout_s=2.0)
        tail = self._process.stderr_tail()
        hint = f": {tail}" if tail else ""
        if code is None:
            return f"the {self.who} closed the judge's channel during {during}{hint}"
        if code < 0:
            return f"the {self.who} died of {sandbox.signal_reason(-code)} during {during}{hint}"
        return f"the {self.who} exited with status {code} during {during}, before the judge let it{hint}"

    def _stop(self) -> None:
        """SIGSTOP, then wait until every thread is stopped (or the process is gone)."""
        assert self._process is not None
        self._process.signal(signal.SIGSTOP)
        deadline = time.monotonic() + STOP_TIMEOUT_S
        while not self._process.all_stopped():
            if self._process.poll() is not None:
                raise ProtocolError(self._death(f"call {self.calls}"))
            if time.monotonic() > deadline:
                raise ProtocolError(f"the {self.who} did not stop when told to", "timeout")
            time.sleep(0)
        if self.interpreted:
            self._refuse_others()

    def _refuse_others(self) -> None:
        """An interpreted process must be alone at every stop: its set-up and warm-up ran before its filter, and
        the candidate's code can replace the filter it installs (the red team swapped in an allow-all program and
        forked a helper after "ready"). A process of its own, even a descendant that left the group, is not
        stopped between calls and could work on the judge's inputs while the judge writes them."""
        assert self._process is not None
        others = self._process.others()
        if others:
            raise ProtocolError(f"the {self.who} has {len(others)} other process(es) running (pids "
                                f"{', '.join(map(str, sorted(others)[:5]))}): a kernel process must be alone, since a "
                                "process of its own is not stopped between calls", "deviation")


def work_after_done_ms(awake: dict[int, int], stopped: dict[int, int], *, main: int, waking_ns: int,
                       stopping_ns: int, process_ns: tuple[int | None, int | None] = (None, None),
                       main_call_ns: tuple[int | None, int] = (None, 0)) -> float:
    """What a CPU harness's threads did after its "done" (ms; 0 when none worked on), from each thread's CPU time
    (ns) when the judge woke to "done" (`awake`, `waking_ns` after it) and once the process stopped (`stopping_ns`
    after the waking), and the whole process's CPU time at both (`process_ns`: the process clock counts threads
    that ended in between, which neither reading lists). When a thread gained more than AFTER_DONE_SLACK_NS between
    (a thread born after the waking: all its time; threads that ended before the stop: what the process gained
    beyond the listed threads' gains), the whole stretch from "done" to the stop counts: whatever it finished there
    is in the outputs the judge reads. A gain is bounded by the stretch's length: a thread running at the waking
    reads up to a scheduler tick stale (a spinning pool's worker read up to 4 ms on the H100 host for 0.1 ms of
    wall time).

    The main thread (the harness's: it sends "done" after the body and sleeps in its wait for the next word)
    counts too, read once it settled (KernelProcess._settle_main): asleep, its reading is exact; preempted, too
    (being taken off a CPU accounts it); only a main thread that works on reads stale, and it worked. And
    `main_call_ns`: its exact CPU time at the stop before the call and the call's length from the resumption to
    "done": it cannot have run longer than that by "done", so CPU time beyond it was spent after "done", even
    where it was asleep again when the judge looked (the ninth red team redirected the harness's `send` through the
    GOT so that "done" went out early and the main thread finished the rows after it: 5.1x against the honest
    4.7x). What a worker, or a main thread idle for part of its call, does within the judge's wake-up and the
    settling (tens of microseconds, at most MAIN_SETTLE_NS more) stays open. On 2 cores the judge's waking thread
    often takes the core such a thread runs on, which then shows no time: it is caught half done, or its work is
    timed in the next call it shares a core with."""
    gains = {tid: cpu - awake.get(tid, 0) for tid, cpu in stopped.items()}
    # the thread that takes the SIGSTOP (the main thread, asleep in its wait) wakes every other one into the stop
    stopping_others_ns = STOP_COST_PER_THREAD_NS * min(max(len(stopped) - 1, 0), STOP_COST_THREADS)
    busiest_ns = max((gain - stopping_others_ns if tid == main else gain for tid, gain in gains.items()), default=0)
    before, after = process_ns
    if before is not None and after is not None:
        # read after the threads at the waking, so a tick between the reads makes this smaller, never larger
        busiest_ns = max(busiest_ns, (after - before) - sum(gains.values()))
    busiest_ns = min(busiest_ns, max(stopping_ns, 0))  # a stale reading's gain, bounded by the stretch
    main_before_ns, call_ns = main_call_ns
    if main_before_ns is not None and main in stopped:  # exact at both ends: not bounded
        busiest_ns = max(busiest_ns, stopped[main] - main_before_ns - call_ns - stopping_others_ns)
    if busiest_ns <= AFTER_DONE_SLACK_NS:
        return 0.0
    return (max(waking_ns, 0) + max(stopping_ns, 0)) / 1e6


def _realtime_ns() -> int:
    """The clock of the kernel's message stamps (CLOCK_REALTIME: a step of the system's clock mid-call would
    misread that call; NTP slews it gradually)."""
    return time.clock_gettime_ns(time.CLOCK_REALTIME)


def _sent_at_ns(ancillary: list[tuple[int, int, bytes]]) -> int:
    """The kernel's stamp of when a message was sent (ns, CLOCK_REALTIME); the same clock now where a kernel gives
    none (then a time is as late as the judge's reading)."""
    for level, kind, data in ancillary:
        if level == socket.SOL_SOCKET and kind == SO_TIMESTAMPNS and len(data) >= STAMP_BYTES:
            seconds, nanoseconds = struct.unpack("qq", data[:STAMP_BYTES])
            return seconds * 1_000_000_000 + nanoseconds
    return _realtime_ns()
