"""Isolated subprocesses for everything that builds or runs task code (VALIDATION.md rules 17-18).

Generated code is untrusted. Every build and run goes through `run()`: its own process group, killed whole on
timeout; a scratch working directory that is also HOME and TMPDIR; a scrubbed environment (a short allow-list);
CPU-time, file-size and (for CPU targets) address-space limits; writes only beneath its working directory and
the directories the caller names, where the kernel has Landlock (profiling.landlock); no network where the
machine lets us make a network namespace (`unshare --net`); and nothing it starts outlives it (orphans are
adopted and killed). The result says what happened in words a model can act on.
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import os
import re
import resource
import shutil
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from profiling import landlock

# Environment variables a build or run may see; everything else (tokens, proxies, LD_PRELOAD, PYTHONPATH of the
# caller) is dropped. CUDA_VISIBLE_DEVICES keeps the GPU choice; PATH finds compilers and valgrind.
ENV_ALLOWLIST = ("PATH", "LANG", "LC_ALL", "CUDA_VISIBLE_DEVICES", "CUDA_HOME", "LD_LIBRARY_PATH", "TRITON_INTERPRET",
                 "OMP_NUM_THREADS", "SYSTEMROOT")

OUTPUT_TAIL_CHARS = 4000  # what is kept of stdout and stderr: enough for a compiler's first errors
_PR_SET_CHILD_SUBREAPER = 36  # prctl option: orphaned descendants are re-parented to this process, not to init
# Processes run() has started and not yet waited for: builds may run in threads, and one run's clean-up must not
# kill another's process. Changed, and read by the clean-up, under the lock.
_running: set[int] = set()
_running_lock = threading.Lock()
_libc = ctypes.CDLL(None, use_errno=True)  # loaded in the parent: a child before exec only calls


@dataclass(frozen=True)
class Limits:
    """Resource limits of one subprocess. memory_bytes=None leaves the address space alone (CUDA maps far more
    virtual memory than it uses, so an address-space limit kills every CUDA program)."""

    timeout_s: float = 60.0
    cpu_s: int | None = None  # CPU seconds; default: twice the timeout, so OpenMP threads are not cut short
    memory_bytes: int | None = 4 << 30
    file_bytes: int = 1 << 30  # largest file it may write: outputs of big tasks fit, a disk-filling loop does not
    network: bool = False
    # May write anywhere it could without the sandbox: the user's own builds and applications, never generated code.
    filesystem: bool = False


@dataclass
class RunResult:
    argv: list[str]
    returncode: int
    stdout: str
    stderr: str
    duration_s: float
    timed_out: bool = False
    network_isolated: bool = False
    filesystem_isolated: bool = False
    notes: list[str] = field(default_factory=list)
    stdout_full: str = ""  # the whole stdout (stdout keeps only the tail)
    stderr_full: str = ""  # the whole stderr: a compiler's first errors come first

    @property
    def ok(self) -> bool:
        return self.returncode == 0 and not self.timed_out

    def reason(self) -> str:
        """Why the run failed, in one line (empty when it succeeded)."""
        if self.timed_out:
            return f"timed out after {self.duration_s:.1f} s (hung or far too slow)"
        if self.returncode == 0:
            return ""
        if self.returncode < 0:
            return f"crashed: {signal_reason(-self.returncode)}{self._stderr_hint()}"
        return f"exited with status {self.returncode}{self._stderr_hint()}"

    def _stderr_hint(self) -> str:
        last = [line for line in self.stderr.strip().splitlines() if line.strip()]
        return f": {last[-1].strip()[:300]}" if last else ""


_SIGNAL_MEANINGS = {
    signal.SIGSEGV: "segmentation fault: an invalid memory access",
    signal.SIGBUS: "bus error: a misaligned or invalid memory access",
    signal.SIGFPE: "arithmetic exception (integer division by zero?)",
    signal.SIGABRT: "aborted (an assertion, or the allocator found corrupted memory)",
    signal.SIGXCPU: "CPU time limit exceeded",
    signal.SIGXFSZ: "file size limit exceeded",
    signal.SIGKILL: "killed (out of memory?)",
    signal.SIGSYS: "a forbidden system call",
}


def signal_reason(number: int) -> str:
    """A signal that ended a process, named with what it usually means: 'SIGSEGV (segmentation fault: ...)'."""
    try:
        sig = signal.Signals(number)
    except ValueError:
        return f"signal {number} (killed by a signal)"
    return f"{sig.name} ({_SIGNAL_MEANINGS.get(sig, 'killed by a signal')})"


@functools.cache
def _unshare_prefix() -> tuple[str, ...] | None:
    """The command prefix that puts a process in new network and IPC namespaces here (as root, or through a user
    namespace; the network alone where IPC namespaces are refused), or None when none works. The IPC namespace
    gives each run System V shared memory, semaphores and message queues of its own: nothing a run leaves there
    reaches a later run."""
    unshare = shutil.which("unshare")
    if not unshare:
        return None
    for prefix in ((unshare, "--net", "--ipc"), (unshare, "--net", "--ipc", "--map-root-user"), (unshare, "--net"),
                   (unshare, "--net", "--map-root-user")):
        try:
            if subprocess.run([*prefix, "true"], capture_output=True, timeout=10).returncode == 0:
                return prefix
        except (OSError, subprocess.TimeoutExpired):
            continue
    return None


@functools.cache
def seccomp_available() -> bool:
    """Whether this kernel offers seccomp filters (a kernel process that says it has none is then lying)."""
    return Path("/proc/sys/kernel/seccomp/actions_avail").is_file()


# mount(2) and unshare(2) flags (linux/mount.h, linux/sched.h) for a private /dev/shm.
_CLONE_NEWNS = 0x00020000
_MS_NOSUID, _MS_NODEV, _MS_REC, _MS_PRIVATE = 0x2, 0x4, 0x4000, 0x40000
# The private /dev/shm's size: POSIX shared memory and semaphores of a run are small; a filling loop stops here.
PRIVATE_SHM_BYTES = 1 << 30
_SHM_MOUNT = (b"perfforge-shm", str(landlock.SHARED_MEMORY_DIR).encode(), b"tmpfs", _MS_NOSUID | _MS_NODEV,
              f"mode=1777,size={PRIVATE_SHM_BYTES}".encode())


def _private_shared_memory() -> None:
    """Runs in the child before exec (before Landlock, which forbids mounting): a mount namespace of its own
    whose /dev/shm is a fresh tmpfs. What the run and its descendants write there is theirs alone, and the kernel
    frees it when the last of them exits: nothing a run leaves in POSIX shared memory reaches another run or
    outlives it. Raises OSError where the kernel refuses (the probe decides before any real run)."""
    if _libc.unshare(_CLONE_NEWNS) != 0:
        raise OSError(ctypes.get_errno(), "unshare(CLONE_NEWNS)")
    # Private propagation first: the tmpfs must not appear in the parent's namespace through a shared mount.
    if _libc.mount(b"none", b"/", None, _MS_REC | _MS_PRIVATE, None) != 0:
        raise OSError(ctypes.get_errno(), "mount --make-rprivate /")
    if _libc.mount(*_SHM_MOUNT) != 0:
        raise OSError(ctypes.get_errno(), "mount tmpfs on /dev/shm")


@functools.cache
def private_shared_memory_available() -> bool:
    """Whether a run can have a /dev/shm of its own here (root, or a kernel that lets mount namespaces be made;
    not under every container runtime): tried once on `true`."""
    if not landlock.SHARED_MEMORY_DIR.is_dir():
        return False
    with contextlib.suppress(OSError, subprocess.SubprocessError):
        return subprocess.run(["true"], preexec_fn=_private_shared_memory, timeout=10).returncode == 0
    return False


def network_namespace_available() -> bool:
    return _unshare_prefix() is not None


def ipc_namespace_available() -> bool:
    return "--ipc" in (_unshare_prefix() or ())


@functools.cache
def filesystem_isolation_available() -> bool:
    """Whether a child can be restricted to its own directories here (Landlock in the kernel, not refused by a
    seccomp filter): tried once on `true`."""
    if landlock.abi_version() == 0:
        return False
    with contextlib.suppress(OSError, subprocess.SubprocessError):
        return subprocess.run(["true"], preexec_fn=lambda: landlock.restrict_writes([]), timeout=10).returncode == 0
    return False


def scrubbed_env(scratch: Path, extra: Mapping[str, str] | None = None) -> dict[str, str]:
    env = {key: os.environ[key] for key in ENV_ALLOWLIST if key in os.environ}
    env.setdefault("PATH", "/usr/local/bin:/usr/bin:/bin")
    env.update(HOME=str(scratch), TMPDIR=str(scratch), LC_ALL="C")
    env.update(extra or {})
    return env


def _set_limits(limits: Limits, writable: Sequence[Path] | None, readable: Sequence[Path] | None = None,
                private_shm: bool = False) -> None:
    """Runs in the child before exec: its own session (so a timeout kills the whole group), its limits, its own
    /dev/shm (private_shm), its writable directories (None: no filesystem restriction) and, given, the only
    directories besides the system's it may read."""
    os.setsid()
    if private_shm:
        _private_shared_memory()
    cpu = limits.cpu_s if limits.cpu_s is not None else int(limits.timeout_s * 2) + 1
    resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 1))
    resource.setrlimit(resource.RLIMIT_FSIZE, (limits.file_bytes, limits.file_bytes))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    if limits.memory_bytes is not None:
        resource.setrlimit(resource.RLIMIT_AS, (limits.memory_bytes, limits.memory_bytes))
    if writable is not None:
        landlock.restrict_writes(writable, readable=readable)


def run(argv: Sequence[str], *, cwd: Path, limits: Limits = Limits(), env: Mapping[str, str] | None = None,
        stdin: str | None = None, writable: Sequence[Path] = (), readable: Sequence[Path] | None = None) -> RunResult:
    """Run argv isolated in cwd (the scratch directory). env adds to the scrubbed environment. The process may
    write beneath cwd and the writable directories only (unless limits.filesystem); given `readable`, it may read
    only beneath those, what it may write and the system's directories (landlock.SYSTEM_READABLE)."""
    start = time.monotonic()
    proc, children_before, isolated, fenced = _start(
        argv, cwd, limits, env, writable, readable, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL, text=True, errors="replace")
    timed_out = False
    try:
        stdout, stderr = proc.communicate(stdin, timeout=limits.timeout_s)
    except subprocess.TimeoutExpired:  # hung, or a process it left behind holds its output pipes open
        timed_out = True
    finally:
        _end_run(proc, children_before)
    if timed_out:  # what is left in the pipes, now that everything that held them is dead
        stdout, stderr = proc.communicate(timeout=_DRAIN_TIMEOUT_S)
    notes = [] if isolated or limits.network else ["network not isolated: no network namespace on this machine"]
    if not fenced and not limits.filesystem:
        notes.append("filesystem not isolated: no Landlock on this kernel")
    return RunResult(argv=list(argv), returncode=proc.returncode, stdout=stdout[-OUTPUT_TAIL_CHARS:],
                     stderr=stderr[-OUTPUT_TAIL_CHARS:], duration_s=time.monotonic() - start, timed_out=timed_out,
                     network_isolated=isolated, filesystem_isolated=fenced, notes=notes, stdout_full=stdout,
                     stderr_full=stderr)


_TAIL_BYTES = 64 << 10  # what is read of a spawned process's standard error for its last line


class Spawned:
    """A long-lived isolated process (the judge's kernel processes): the fences of run(), without its wait."""

    def __init__(self, proc: subprocess.Popen, children_before: set[int], stderr_path: Path) -> None:
        self.proc, self._children_before, self._stderr_path = proc, children_before, stderr_path
        self.pid = proc.pid

    def signal(self, sig: int) -> None:
        """To its whole process group (its own: setsid before exec), so nothing it started escapes a SIGSTOP."""
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.pid, sig)

    def filtered(self) -> bool:
        """Whether every thread runs under a seccomp filter, read from /proc (mode 2), not from what it says."""
        return self._every_thread("status", lambda text: re.search(r"^Seccomp:\s*2\s*$", text, re.MULTILINE))

    def poll(self) -> int | None:
        return self.proc.poll()

    def reaped(self, status: int) -> None:
        """Its wait status, reaped by someone else (a ptrace probe's waitpid, profiling/fp_probe.py): Popen keeps it
        as its exit status (it would read 0 from the missing child)."""
        if self.proc.returncode is None:
            self.proc.returncode = os.waitstatus_to_exitcode(status)

    def wait(self, timeout_s: float) -> int | None:
        """Its exit status once it has ended (None if it is still running after timeout_s)."""
        with contextlib.suppress(subprocess.TimeoutExpired):
            return self.proc.wait(timeout=timeout_s)
        return None

    def all_stopped(self) -> bool:
        """Whether every thread is stopped by a signal (state T in /proc/PID/task/*/stat)."""
        return self._every_thread("stat", lambda text: text.rpartition(")")[2].split()[:1] in (["T"], ["t"]))

    def thread_cpu_ns(self, only: int | None = None) -> dict[int, int]:
        """Each live thread's time on a CPU so far (ns, the first field of /proc/PID/task/TID/schedstat; a thread
        running while this reads shows what the scheduler last accounted, up to a tick behind; a stopped or
        sleeping thread's is exact: going to sleep accounts it). Only thread `only` where given. Empty when the
        process (or that thread) is gone."""
        times = {}
        with contextlib.suppress(OSError):
            for tid in [str(only)] if only is not None else os.listdir(f"/proc/{self.pid}/task"):
                with contextlib.suppress(OSError, ValueError, IndexError):
                    times[int(tid)] = int(Path(f"/proc/{self.pid}/task/{tid}/schedstat").read_text().split()[0])
        return times

    def thread_running(self, tid: int) -> bool:
        """Whether thread `tid` is on a CPU or waiting for one (state R of /proc/PID/task/TID/stat); False when it
        sleeps, is stopped or is gone."""
        try:
            return Path(f"/proc/{self.pid}/task/{tid}/stat").read_text().rpartition(")")[2].split()[:1] == ["R"]
        except OSError:
            return False

    def process_cpu_ns(self) -> int | None:
        """The whole process's time on a CPU so far (ns, its process CPU clock: every thread's, those that already
        ended included; a running thread's share as last accounted, like thread_cpu_ns). None when the process is
        gone."""
        try:
            return time.clock_gettime_ns(_process_cpu_clock(self.pid))
        except OSError:
            return None

    def _every_thread(self, name: str, holds: Callable[[str], object]) -> bool:
        """Whether /proc/PID/task/*/NAME holds for every thread (a thread that just ended is passed over); False
        when the process is gone."""
        try:
            tasks = os.listdir(f"/proc/{self.pid}/task")
        except OSError:
            return False
        for tid in tasks:
            try:
                text = Path(f"/proc/{self.pid}/task/{tid}/{name}").read_text()
            except OSError:
                continue
            if not holds(text):
                return False
        return bool(tasks)

    def others(self) -> set[int]:
        """Processes it started that still live: its descendants, and orphans adopted here since it started (a
        daemon that left its session) that are not another run's."""
        found, frontier = set(), {self.pid}
        while frontier:
            parent = frontier.pop()
            for child in _children(parent) - found:
                found.add(child)
                frontier.add(child)
        with _running_lock:
            adopted = _strays(self._children_before)
        return found | adopted

    def stderr_tail(self) -> str:
        """Its last line of standard error, cut to 300 characters."""
        with contextlib.suppress(OSError), open(self._stderr_path, "rb") as log:
            log.seek(max(0, log.seek(0, os.SEEK_END) - _TAIL_BYTES))  # a flood of output is never read whole
            lines = [line for line in log.read().decode(errors="replace").splitlines() if line.strip()]
            return lines[-1].strip()[:300] if lines else ""
        return ""

    def close(self) -> None:
        """Kill it, its group and whatever it left elsewhere (a stopped process dies of SIGKILL too)."""
        if self.proc.returncode is None or self.pid in _running:
            _end_run(self.proc, self._children_before)


def spawn(argv: Sequence[str], *, cwd: Path, limits: Limits = Limits(timeout_s=3600.0),
          env: Mapping[str, str] | None = None, writable: Sequence[Path] = (), readable: Sequence[Path] | None = None,
          pass_fds: Sequence[int] = ()) -> Spawned:
    """Start argv isolated as run() does (readable as there), and return at once; the caller ends it with close().
    Standard output and error go to files in cwd (never pipes: a process that writes much would block on a full
    pipe)."""
    stderr_path = cwd / "stderr.log"
    with open(cwd / "stdout.log", "wb") as stdout, open(stderr_path, "wb") as stderr:
        proc, children_before, _, _ = _start(argv, cwd, limits, env, writable, readable, stdout=stdout,
                                             stderr=stderr, stdin=subprocess.DEVNULL, pass_fds=tuple(pass_fds))
    return Spawned(proc, children_before, stderr_path)


def _start(argv: Sequence[str], cwd: Path, limits: Limits, env: Mapping[str, str] | None, writable: Sequence[Path],
           readable: Sequence[Path] | None, **popen: Any) -> tuple[subprocess.Popen, set[int], bool, bool]:
    """Start argv behind every fence run() and spawn() share: (the process, this process's children before it,
    whether its network is isolated, whether its filesystem is)."""
    directories = landlock.prepare([cwd, *writable])  # made where missing, fenced or not
    isolated = not limits.network and network_namespace_available()
    fenced = not limits.filesystem and filesystem_isolation_available()
    # every run, the user's own too: ncu runs unfenced (filesystem=True) around the candidate it profiles, and both
    # share the run's tmpfs, which is all ncu needs of /dev/shm
    private_shm = private_shared_memory_available()
    write_dirs = directories if fenced else None
    _adopt_orphans()
    with _running_lock:
        children_before = _children()
        proc = subprocess.Popen([*(_unshare_prefix() if isolated else ()), *argv], cwd=cwd,
                                env=scrubbed_env(cwd, env),
                                preexec_fn=lambda: _set_limits(limits, write_dirs, readable, private_shm), **popen)
        _running.add(proc.pid)
    return proc, children_before, isolated, fenced


def _kill_group(proc: subprocess.Popen) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)


def _end_run(proc: subprocess.Popen, children_before: set[int]) -> None:
    """Kill what the run left in its process group, reap the run's process (before it leaves _running: the sweep
    would otherwise take its exit status), then kill whatever it left elsewhere."""
    _kill_group(proc)
    proc.wait()
    with _running_lock:
        _running.discard(proc.pid)
    _kill_leftovers(children_before)


# ---------------------------------------------------------------- nothing outlives its run

def track(pid: int) -> None:
    """A process this judge started itself outside the sandbox (its L2 flusher): never taken for an orphan a
    sandboxed process left behind. untrack() it once it is waited for."""
    with _running_lock:
        _running.add(pid)


def start_tracked(argv: Sequence[str], **popen: Any) -> subprocess.Popen:
    """Start one of the judge's own commands, tracked from its first instant: started under the lock that a run's
    clean-up sweeps under, so no sweep sees it untracked. untrack() it once it is waited for. It gets a process
    group of its own (unless it asks for a session): a Ctrl-C reaches the terminal's group, and the runs under way
    finish after it, so a tool killed by it would fail a fair candidate (nm could not read its object)."""
    if not popen.get("start_new_session"):
        popen.setdefault("process_group", 0)
    with _running_lock:
        proc = subprocess.Popen(list(argv), **popen)
        _running.add(proc.pid)
    return proc


def run_trusted(argv: Sequence[str], *, timeout_s: float, **popen: Any) -> subprocess.CompletedProcess:
    """subprocess.run(argv, capture_output=True) for the judge's own tools (binutils reading an object, a compiler
    building the judge's code, a --version): not sandboxed, and known to the sweeps. A run in another thread (iterate
    --jobs judges tasks in threads) ends by killing and reaping this process's new children that no run tracks; an
    untracked tool would be killed mid-read, or reaped before its own wait, which then reads returncode 0 with its
    output cut short (an nm listing missing the candidate's symbols)."""
    proc = start_tracked(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, **popen)
    try:
        stdout, stderr = proc.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        raise
    finally:
        untrack(proc.pid)  # reaped by now: its pid is no child of ours any more
    return subprocess.CompletedProcess(list(argv), proc.returncode, stdout, stderr)


def untrack(pid: int) -> None:
    with _running_lock:
        _running.discard(pid)


@functools.cache
def _adopt_orphans() -> None:
    """Make this process the subreaper of what it starts. A process that a run leaves behind in a session of its
    own (a daemon: fork, setsid, fork) is then re-parented here, not to init, and _kill_leftovers finds it. Left
    running, it could copy the original's outputs between the oracle run and their deletion, or slow the baseline."""
    _libc.prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)


def _children(parent: int | None = None) -> set[int]:
    """Pids of the children of `parent` (default: this process): from /proc/PID/task/*/children where the kernel
    has it (one small file per thread: a served verdict asks at every stop of an interpreted process), else by
    scanning /proc (field 4 of /proc/PID/stat, after the command in brackets)."""
    me = os.getpid() if parent is None else parent
    try:
        tasks = os.listdir(f"/proc/{me}/task")
        if Path(f"/proc/{me}/task/{tasks[0]}/children").exists():
            found: set[int] = set()
            for tid in tasks:
                with contextlib.suppress(OSError):  # a thread that just ended
                    found.update(int(pid) for pid in Path(f"/proc/{me}/task/{tid}/children").read_text().split())
            return found
    except (OSError, IndexError):
        return set()  # the process is gone
    return _children_by_scan(me)


def _strays(children_before: set[int]) -> set[int]:
    """This process's children that a run may have left: not there before it, not the judge's tracked own, not in
    this process's session. Read under _running_lock (a tracked start holds it until the pid is in _running)."""
    return {pid for pid in _children() - children_before - _running if not _in_our_session(pid)}


def _in_our_session(pid: int) -> bool:
    """Whether `pid` is in this process's session: then this process's own code started it (a model server eval
    starts in a worker thread, a compiler a library runs, a probe), never a run: every run starts a session of its
    own (setsid before exec), and no process can join a session it is not in. Another thread's sweep must neither
    kill and reap such a child (its owner would read a clean exit and output cut short) nor count it as a run's.
    This rests on the run's fences: without Landlock (filesystem_isolation_available) a run may open the
    /proc/PID/mem of a process of the judge's session and run code there, as it may write outside its directories."""
    try:
        return os.getsid(pid) == os.getsid(0)
    except OSError:  # gone meanwhile
        return False


def _children_by_scan(me: int) -> set[int]:
    found: set[int] = set()
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            try:
                stat = Path(entry.path, "stat").read_text()
            except OSError:  # gone meanwhile
                continue
            if int(stat.rpartition(")")[2].split()[1]) == me:
                found.add(int(entry.name))
    return found


def _kill_leftovers(children_before: set[int]) -> None:
    """Kill and reap the processes re-parented here since the run started: not those this process had before it,
    nor other runs' (threads). Each victim may leave orphans of its own, adopted in turn: the sweep goes on until
    _QUIET_SCANS scans in a row find nothing, for at most _SWEEP_BUDGET_S."""
    deadline, quiet = time.monotonic() + _SWEEP_BUDGET_S, 0
    while quiet < _QUIET_SCANS and time.monotonic() < deadline:
        with _running_lock:
            stray = _strays(children_before)
        quiet = 0 if stray else quiet + 1
        for pid in stray:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        for pid in stray:
            with contextlib.suppress(ChildProcessError):
                os.waitpid(pid, 0)


# A process that forks and lets its parent exit, over and over, is adopted anew each time: the sweep must see
# nothing several scans running. A fork race won for longer than the budget still outlives the run (README).
_QUIET_SCANS = 3
_SWEEP_BUDGET_S = 5.0
_DRAIN_TIMEOUT_S = 10.0  # reading what is left in the output pipes of a timed-out run


def _process_cpu_clock(pid: int) -> int:
    """clock_getcpuclockid(pid): Linux encodes a process's CPU clock as ((~pid) << 3) | CPUCLOCK_SCHED (2), the
    scheduler's exact runtime (Python's time module has no clock_getcpuclockid)."""
    return ((~pid) << 3) | 2
