"""The original and the candidate served side by side at one configuration: every call on inputs nobody has seen.

A `Pair` holds one kernel process per side (profiling/served.py). For each call the judge draws fresh inputs
(profiling/inputs.py) and hands the same ones to both sides, in turn: the original's outputs are the oracle, the
candidate's must match them. After every call of either side the judge checks, from its own mapping, that the
inputs came back bit for bit (against its private copy), that fixed buffers are unchanged, that nothing was
written past a buffer's ends, and returns copies of the outputs. Timed calls are the same calls with a cache
flush before them; which of them the judge compares (all, or for large outputs a share picked after the call:
profiling/validate.py) is decided after both sides have made them, so there is nothing to learn about it.
"""

from __future__ import annotations

import contextlib
import os
import random
import re
from collections import Counter
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np

from perfforge.targets import target_spec
from perfforge.task import Task, TaskConfig
from profiling import binary_policy, fp_probe, pc_samples
from profiling.build import Build
from profiling.correctness import (
    JUDGE_POISON_BYTES,
    POISON_BYTE,
    compare_output,
    copy_into,
    first_difference,
    same_bytes,
)
from profiling.device_flush import DeviceFlusher
from profiling.fp_probe import FpMode
from profiling.host_flush import HostFlusher
from profiling.inputs import Side, draw, object_constants, task_marks, verdict_generator
from profiling.served import GUARD, GUARD_BYTES, CallTime, KernelProcess, ProtocolError, Role


@contextlib.contextmanager
def _judge_thread(cpu: int | None, *, on: bool) -> Iterator[None]:
    """This thread of the judge's on `cpu` alone (on) or on every allowed CPU but it (off), restored after; nothing
    where there is no CPU to go by or only one to run on.

    On: the judge writes a CPU call's inputs, poisons its outputs and flushes the caches on the core the kernel
    process last ran on (a stopped process resumes there): a kernel that reads pages another core wrote pays the
    transfers between cores in its call. Measured on the 2-core VM: filter_branchy's fast version took 0.43 ms on
    inputs another process wrote and flushed from the other core, 0.21 ms from the same core, as when its own
    harness wrote them (the old path's 0.22 ms). Off: while the kernel runs, the judge's waiting thread (woken by
    each message) keeps off its core."""
    allowed = os.sched_getaffinity(0)
    if cpu is None or cpu not in allowed or len(allowed) < 2:
        yield
        return
    os.sched_setaffinity(0, {cpu} if on else allowed - {cpu})
    try:
        yield
    finally:
        os.sched_setaffinity(0, allowed)


@contextlib.contextmanager
def _failures_of(side: str) -> Iterator[None]:
    """A protocol failure of the original's process means the task cannot judge (OriginalFailed); the candidate's
    stays a ProtocolError (validate.py maps its kind to a status)."""
    try:
        yield
    except ProtocolError as error:
        if side == "original":
            raise OriginalFailed(error.reason) from None
        raise


class Mismatch(Exception):
    """The candidate's call went against the task: wrong or missing outputs, changed inputs, an overrun."""


class OriginalFailed(Exception):
    """The task's own original failed a call: the task cannot judge."""


Inputs = dict[str, np.ndarray]
Outputs = dict[str, np.ndarray]


@dataclass(frozen=True)
class Draw:
    """What one call's inputs are asked to be: edge values or not, an edge call's side of the range, and its part
    of the task's marks where one edge call cannot hold them all (inputs.draw's `mark_part`)."""

    edges: bool
    side: Side | None = None
    mark_part: int | None = None


PLAIN = Draw(edges=False)  # a call drawn from the task's distribution alone (a few marks, no edge values)


NVIDIA_CONTROL = "/dev/nvidiactl"  # present where an NVIDIA driver is: a flusher is worth starting
OutputSample = dict[str, tuple[np.ndarray, np.ndarray]]  # output name -> (element indices, their values)
# Elements of each output read the moment an interpreted process says 'done': if a tenth of an output were still
# being written then, all of 4,096 random elements would miss it with probability 0.9^4096 (nothing).
SAMPLE_ELEMENTS = 4096


@dataclass
class SideResult:
    """One call of one side. outputs: views of the judge's mapping, valid until that side's next call (copy what
    must outlive it); None when the call was not fetched (Pair.fetch reads them later)."""

    outputs: Outputs | None
    time: CallTime

    @property
    def duration_ms(self) -> float:
        return self.time.duration_ms


@dataclass
class Pair:
    """Both sides at one configuration, started and stopped, with the judge's generator and flush buffer."""

    task: Task
    config: TaskConfig
    original: KernelProcess
    candidate: KernelProcess
    rng: np.random.Generator
    # the verdict's choices besides the values, from a generator of their own under the same secret key (the
    # values' is shared with the thread drawing ahead): which calls carry edge values (validate), each call's
    # poison. Nothing a candidate can predict, and the same for the same candidate judged again.
    plan: np.random.Generator
    fixed: dict[str, np.ndarray] = field(default_factory=dict)  # the original's fixed buffers after its set-up
    marks: tuple[float, ...] = ()  # the task's numbers, on every call's inputs (inputs.task_marks)
    # the judge's host cache flush (CPU pairs): made with the pair, before any thread of the judge is pinned to a
    # kernel's core (it reads the CPUs the judge may use); its buffer at the first flush
    host_flusher: HostFlusher = field(default_factory=HostFlusher)
    _drawer: ThreadPoolExecutor | None = None  # draws the next call's inputs ahead (staged pairs: draw())
    _ahead: tuple[Draw, Future[Inputs]] | None = None  # (what was asked, the draw under way)
    flusher: DeviceFlusher | None = None  # interpreted GPU pairs: the judge's own L2 flush (device_flush.py)
    # the byte the judge poisons outputs with for this call (both sides), drawn per call from JUDGE_POISON_BYTES
    # (plan), checked and timed calls alike (correctness.JUDGE_POISON_BYTES says why)
    poison_byte: int = POISON_BYTE
    # compiled CPU pairs: the library routines the candidate may not run (pc_samples.Watch), and what its
    # processes' program-counter samples found in them so far (each process's taken before it is closed)
    watch: pc_samples.Watch | None = None
    routines: Counter[str] = field(default_factory=Counter)
    # what the mid-call probes found in them (fp_probe.py): an instruction pointer read with the thread held, no
    # sampling skid, of a process that could not see the probe coming
    probed_routines: Counter[str] = field(default_factory=Counter)
    sampled: int = 0  # the candidate's samples read so far
    was_sampled: bool = False  # whether any of the candidate's processes had a sampler (perf events available)
    # the floating-point modes each side's threads were found in mid-call (fp_probe.py), and the probes per side
    fp_modes: dict[str, Counter[FpMode]] = field(
        default_factory=lambda: {"original": Counter(), "candidate": Counter()})
    fp_probes: Counter[str] = field(default_factory=Counter)

    @classmethod
    def start(cls, task: Task, config: TaskConfig, original: Build, candidate: Build, work_dir: Path) -> Pair:
        """Both sides spawned and ready (spawn() then ready())."""
        pair = cls.spawn(task, config, original, candidate, work_dir)
        pair.ready()
        return pair

    @classmethod
    def spawn(cls, task: Task, config: TaskConfig, original: Build, candidate: Build, work_dir: Path) -> Pair:
        """Both sides' processes started, their set-ups running (ready() waits for them): a verdict spawns every
        configuration's pair at once, so their set-ups (a CUDA context each, torch's import for Python) overlap."""
        sides = []
        for who, built in (("original", original), ("candidate", candidate)):
            scratch = work_dir / f"serve-{who}-{config.name}"
            scratch.mkdir(parents=True, exist_ok=True)
            sides.append(KernelProcess(built, config, scratch, who=who, interpreted=task.language == "python",
                                       memory_bytes=target_spec(task.target).memory_limit_bytes,
                                       sample_pcs=_samples_pcs(task), probe_fp=_samples_pcs(task),
                                       probe_calls=_samples_pcs(task)))
        # keyed by the sources, not the binaries: a build's path (in its debug information) must not change the draw
        sources = [(built.directory / task.source).read_bytes() for built in (original, candidate)]
        rng = verdict_generator(task.name.encode(), config.name.encode(), *sources)
        plan = verdict_generator(b"plan", task.name.encode(), config.name.encode(), *sources)
        # the original's, never the candidate's: its source's numbers and its object's folded constants
        constants = object_constants(original.directory / original.object_name) if original.object_name else ()
        marks = task_marks(config.params, sources[0].decode(errors="replace"), constants)
        pair = cls(task, config, *sides, rng=rng, plan=plan, marks=marks,
                   watch=_watch(task, original) if _samples_pcs(task) else None)
        try:
            if task.language == "python" and target_spec(task.target).gpu and Path(NVIDIA_CONTROL).exists():
                pair.flusher = DeviceFlusher().start()  # its context starts beside the kernel processes'
            pair.original.spawn()
            pair.candidate.spawn()
        except BaseException:
            pair.close()
            raise
        return pair

    def ready(self, *, swap: bool = False) -> None:
        """Wait for both set-ups and compare what they declared. The original's failure is the task's, whichever
        declares first; `swap`: the candidate's buffers are made first (their pages come before the original's)."""
        try:
            for process in (self.candidate, self.original) if swap else (self.original, self.candidate):
                try:
                    process.handshake()
                except ProtocolError as error:
                    if process is self.original:
                        raise OriginalFailed(error.reason) from None
                    raise
            self._agree()
            if self.flusher is not None and not (self.candidate.staged and self.flusher.wait_ready()):
                self.flusher.close()
                self.flusher = None
        except BaseException:
            self.close()
            raise

    def renew(self, *, swap: bool = False, sample_pcs: bool | None = None, probe_calls: bool | None = None) -> None:
        """Both processes replaced by fresh ones of the same builds, ready (`swap`: the candidate's spawned and
        declared first): new shared memory, new pages. A process's pages stay where they were placed for its life,
        and their placement in the caches favours one side by a few percent for a whole verdict (identical CPU code
        read 0.95x-1.09x with 95% intervals clear of 1 on the 2-core VM): timing rounds on fresh pairs put that
        spread into the noise floor and average it."""
        self._take_samples()  # before close() ends the candidate's sampler
        for side in ("original", "candidate"):
            old: KernelProcess = getattr(self, side)
            old.close()
            setattr(self, side, KernelProcess(old.built, old.config, old.scratch, who=old.who,
                                              memory_bytes=old.limits.memory_bytes, interpreted=old.interpreted,
                                              sample_pcs=old.sample_pcs if sample_pcs is None else sample_pcs,
                                              probe_fp=old.probe_fp, body_ms=old.body_ms,
                                              probe_calls=old.probe_calls if probe_calls is None else probe_calls))
        for process in (self.candidate, self.original) if swap else (self.original, self.candidate):
            process.spawn()
        self.ready(swap=swap)

    def close(self) -> None:
        self.host_flusher.close()
        if self.flusher is not None:
            self.flusher.close()
            self.flusher = None
        if self._drawer is not None:
            self._drawer.shutdown(wait=True, cancel_futures=True)
            self._drawer, self._ahead = None, None
        self._take_samples()
        self.original.close()
        self.candidate.close()

    def hand_found_routines(self) -> Counter[str]:
        """The watched library routines the candidate's processes ran so far, with their samples (empty where
        nothing was sampled: see `sampled`)."""
        self._take_samples()
        return self.routines

    def foreign_fp_modes(self) -> Counter[FpMode]:
        """The floating-point modes the candidate's threads were found in mid-call that are neither the default
        nor one the original's were found in (the task's own), with how many thread readings found each."""
        self._take_samples()
        allowed = {fp_probe.DEFAULT, *self.fp_modes["original"]}
        return Counter({mode: n for mode, n in self.fp_modes["candidate"].items() if mode not in allowed})

    def _take_samples(self) -> None:
        for side in ("original", "candidate"):  # the modes probed so far, moved here once
            probed: KernelProcess = getattr(self, side)
            self.fp_modes[side] += probed.fp_modes
            self.fp_probes[side] += probed.fp_probes
            probed.fp_modes, probed.fp_probes = Counter(), 0
        process = self.candidate
        if self.watch is not None and process.probe_readings:  # a probe's stop is a sample nothing can see coming
            self.was_sampled = True
            self.sampled += len(process.probe_readings)
            self.probed_routines += self.watch.probed(process.probe_readings, process.mappings)
        if self.watch is not None and process.code_moved:
            self.probed_routines[pc_samples.MOVED_MAPPINGS] += process.code_moved
            process.code_moved = 0
        process.probe_readings = []
        if self.watch is not None and process.sampler is not None:
            self.was_sampled = True
            ips = process.sampler.drain()
            self.sampled += len(ips)
            if ips:
                self.routines += self.watch.routines(ips, process.mappings)
        if self.original.sampler is not None:  # sampled only so both sides bear the same interrupts
            self.original.sampler.drain()

    def __enter__(self) -> Pair:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def output_bytes(self) -> int:
        return sum(b.nbytes for b in self.original.buffers if b.role in (Role.OUTPUT, Role.INOUT))

    @property
    def filtered(self) -> bool:
        return self.candidate.filtered

    def _agree(self) -> None:
        """Both sides declared the same buffers (same harness, same configuration); the fixed ones are recorded."""
        ours = [b.signature() for b in self.original.buffers]
        theirs = [b.signature() for b in self.candidate.buffers]
        if ours != theirs:
            raise ProtocolError(f"the candidate's process declared buffers {theirs}, the original's {ours}",
                                "deviation")
        listed = {spec.name for spec in self.task.outputs}
        unlisted = [b.name for b in self.original.buffers if b.role in (Role.OUTPUT, Role.INOUT)
                    and b.name not in listed]
        if unlisted:  # fail closed: an output nobody compares would let any value through
            raise OriginalFailed(f"the harness declares output(s) {', '.join(unlisted)} that task.toml's [[outputs]] "
                                 "does not list, so they would never be compared: list them")
        self.fixed = {b.name: b.data().copy() for b in self.original.buffers if b.role is Role.FIXED}
        for buffer in self.candidate.buffers:
            if buffer.role is Role.FIXED and not same_bytes(buffer.data(), self.fixed[buffer.name]):
                raise Mismatch(f"fixed buffer '{buffer.name}' differs from the original's after the harness's set-up")

    # ---- one call

    def draw(self, asked: Draw = PLAIN, following: Draw | None = None) -> Inputs:
        """Fresh values for every drawn buffer (inputs and in-out ones), as `asked` (Draw). With `following` (the
        next call's Draw), a staged (device) pair starts drawing the next call's set on a background thread: the
        host is idle while the device runs, and a draw of 256 MB took a third of a large CUDA verdict
        (bench/bench_verdict.py). A CPU pair never draws ahead (the draw would compete with the timed kernel for the
        host). The generator is used in the same order either way, so the same verdict draws the same inputs."""
        self.poison_byte = JUDGE_POISON_BYTES[int(self.plan.integers(len(JUDGE_POISON_BYTES)))]
        ahead, self._ahead = self._ahead, None
        drawn = ahead[1].result() if ahead is not None else None  # waited for even when unused: one rng user
        inputs = drawn if ahead is not None and ahead[0] == asked else None
        if inputs is None:
            inputs = self._draw_now(asked)
        if following is not None and self.candidate.staged:
            if self._drawer is None:
                self._drawer = ThreadPoolExecutor(max_workers=1, thread_name_prefix="pf-draw-ahead")
            self._ahead = (following, self._drawer.submit(self._draw_now, following))
        return inputs

    def _draw_now(self, asked: Draw) -> Inputs:
        return {b.name: draw(b.dtype, b.count, b.lo, b.hi, self.rng, edges=asked.edges, side=asked.side,
                             distribution=self.task.validate.distribution, marks=self.marks,
                             mark_part=asked.mark_part)
                for b in self.original.buffers if b.role in (Role.INPUT, Role.INOUT)}

    def run(self, side: str, inputs: Inputs, *, timeout_s: float, flush: bool = False,
            fetch: bool = True, probe: bool | None = None) -> SideResult:
        """One call of `side` on `inputs`; with fetch, its outputs after every check of the buffers passed (without,
        the judge may still fetch() this call's before the side's next call)."""
        process = self._process(side)
        on_host = not process.staged  # its kernel reads the judge's pages from the host's caches
        cpu = process.last_cpu() if on_host else None
        with _judge_thread(cpu, on=True):
            # the call's own buffers, evicted before it is timed; not the fixed ones (set up once, the same every
            # call, like the tables a process keeps for itself): evicting them while a private copy of them stayed
            # cached read the red team's copy 1.49x faster than identical code
            per_call: list[np.ndarray] = []
            for buffer in process.buffers:
                data = buffer.data()
                if buffer.role is not Role.FIXED:
                    per_call.append(data)
                if buffer.role in (Role.INPUT, Role.INOUT):
                    # on this thread where it is pinned: the judge's pool threads would write from other cores
                    # (and one started now would stay pinned for good)
                    copy_into(data, inputs[buffer.name], threads=not on_host)
                elif buffer.role is Role.OUTPUT and (process.interpreted or not process.staged):
                    # a staged C process poisons on the device; an interpreted one copies back what it computed, and
                    # what it did not write by its "done" must read as poison here
                    data.view(np.uint8)[:] = self.poison_byte
                # a C process's guards are the judge's alone: fresh random bytes every call, so a write past an
                # output that stores the guard's own pattern shows (the red team stored 64 bytes of 0xA5 past one:
                # correct); a staged or interpreted harness arms its own with GUARD
                buffer.arm_guards(os.urandom(GUARD_BYTES) if not (process.staged or process.interpreted) else GUARD)
            if process.interpreted and process.staged:  # its harness is not trusted with the copies or the flush
                return self._run_interpreted(side, process, inputs, timeout_s=timeout_s, flush=flush, fetch=fetch)
            if flush and on_host:  # a staged (CUDA) process flushes the device's L2 itself
                self.host_flusher.flush(cpu, tuple(per_call))
        # the original's last body (on these inputs, in a checked call) bounds where the candidate's probes land
        hint_ms = self.original.body_ms if side == "candidate" else 0.0
        with _failures_of(side), _judge_thread(cpu, on=False):
            timed = process.call(timeout_s, poison_byte=self.poison_byte, probe=probe, body_hint_ms=hint_ms)
        if side == "candidate":
            self._take_samples()  # between calls, the process stopped: its ring buffer never fills
        return SideResult(self.fetch(side, inputs, timeout_s=timeout_s) if fetch else None, timed)

    def _run_interpreted(self, side: str, process: KernelProcess, inputs: Inputs, *, timeout_s: float,
                         flush: bool, fetch: bool) -> SideResult:
        """Stage, flush (the judge's own process), call, fetch, flush again: three round trips of the kernel
        process, each timed by the judge's clock; the call is only the kernel; the second flush, timed, shows work
        the call left running on the device (validate._device_busy_after). Its outputs are copied back at once,
        every call, so work that outlived the call shows in the fetch's time or in outputs not yet there; with
        `fetch` they are also checked and returned now, else the judge's later fetch() checks them once (no second
        round trip)."""
        with _failures_of(side):
            staging_ms = process.stage(timeout_s, self.poison_byte)
            if flush and self.flusher is not None:
                self.flusher.flush()
            # the outputs fetched at "done", then the judge's flush, timed: it waits while the call left work
            # running on the device
            timed = process.call(timeout_s, fetch=True,
                                 settle=self.flusher.flush if flush and self.flusher is not None else None)
        outputs = self.fetch(side, inputs, timeout_s=timeout_s) if fetch else None
        return SideResult(outputs, replace(timed, staging_ms=staging_ms))

    def fetch(self, side: str, inputs: Inputs, *, timeout_s: float) -> Outputs:
        """The last call's outputs of `side` (views of the judge's mapping), once its buffers passed every check;
        `inputs` are what that call was given."""
        process = self._process(side)
        with _failures_of(side):
            process.fetch(timeout_s)
        problem = self._check_buffers(process, inputs, process.calls - 1)
        if problem:
            raise (OriginalFailed(problem) if side == "original" else Mismatch(problem))
        return {b.name: b.data() for b in process.buffers if b.role in (Role.OUTPUT, Role.INOUT)}

    def sample_outputs(self, side: str, picker: random.Random) -> OutputSample:
        """Copies of SAMPLE_ELEMENTS elements of each output of `side` (and its first and last), at positions picked
        now: read the moment an interpreted process said 'done', while it is stopped."""
        sample: OutputSample = {}
        # positions from a generator seeded now by the judge's unpredictable picker (its own randrange per element
        # took 3.8 s of a 34 s Triton verdict: cProfile on the H100 host)
        positions = np.random.default_rng(picker.getrandbits(128))
        for buffer in self._process(side).buffers:
            if buffer.role in (Role.OUTPUT, Role.INOUT) and buffer.count:
                picked = positions.integers(0, buffer.count, size=min(SAMPLE_ELEMENTS, buffer.count), dtype=np.int64)
                at = np.unique(np.concatenate([np.array([0, buffer.count - 1], dtype=np.int64), picked]))
                sample[buffer.name] = (at, buffer.data()[at].copy())
        return sample

    def sample_problem(self, sample: OutputSample, want: Outputs, final: Outputs | None) -> str:
        """What is wrong with a sample read at 'done' ("" if nothing): its elements against the original's outputs
        of the same call (the task's tolerances), and, when the whole outputs were read later (`final`), whether
        they changed after 'done'."""
        specs = {spec.name: spec for spec in self.task.outputs}
        for name, (at, values) in sample.items():
            if final is not None and not same_bytes(final[name][at], values):
                return (f"output '{name}' changed after the candidate said 'done' (it was still being written: "
                        "work that outlives the call)")
            if name in specs:
                result = compare_output(specs[name], values, want[name][at])
                if not result.ok:
                    return (f"output '{name}' as read the moment the candidate said 'done' (a sample of "
                            f"{at.size} elements): {result.problem}")
        return ""

    def _process(self, side: str) -> KernelProcess:
        return self.original if side == "original" else self.candidate

    def _check_buffers(self, process: KernelProcess, inputs: Inputs, call: int) -> str:
        for buffer in process.buffers:
            where = buffer.overrun()
            if where:
                return f"buffer '{buffer.name}' was written out of bounds, {where} (call {call})"
            data = buffer.data()
            given = inputs[buffer.name] if buffer.role is Role.INPUT else None
            if given is not None and not same_bytes(data, given):
                index = first_difference(data, given)
                return (f"input '{buffer.name}' was modified by call {call} (first changed byte at {index}); a kernel "
                        "must leave its inputs as it found them")
            if buffer.role is Role.FIXED and not same_bytes(data, self.fixed[buffer.name]):
                return f"fixed buffer '{buffer.name}' was modified by call {call}"
        return ""


# libc's search structures, each of which does a sort's or a lookup's whole job (search.h)
LIBC_SEARCH_ROUTINES = r"t(search|find|delete|walk|walk_r|destroy)|l(search|find)|h(search|create|destroy)(_r)?"


def _samples_pcs(task: Task) -> bool:
    """Compiled CPU kernels: their processes' program counters are sampled (pc_samples.py). Not GPU ones (the
    driver's own threads), nor interpreters (the interpreter runs every library routine)."""
    spec = target_spec(task.target)
    return spec.binary_policy and not spec.gpu


def _watch(task: Task, original: Build) -> pc_samples.Watch:
    """The target's library routines (and glibc's qsort_r beside qsort) and libc's search trees and tables (the
    eighteenth red team sorted through tsearch/twalk found by hand: 2.2-2.6x); what the original imports itself is
    exempt (binary_policy._library_fallback's rule at run time). libm's floating-point environment setters and
    libc's context switches were watched too until the mid-call probe of the modes themselves (fp_probe.py) made
    them needless: glibc's fmal calls fesetround inside itself, and honest code calling fmal read "a library routine
    found by hand" (nineteenth red team)."""
    pattern = f"(?:{target_spec(task.target).library_pattern})|qsort_r|{LIBC_SEARCH_ROUTINES}"
    obj = original.directory / original.object_name
    exempt = frozenset(binary_policy.imported_names(obj)) if original.object_name and obj.is_file() else frozenset()
    return pc_samples.Watch(re.compile(pattern), exempt)
