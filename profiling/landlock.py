"""Filesystem isolation of a child process through Linux Landlock: it may read and run anything, and write only
beneath the directories it is given.

Landlock (Linux 5.13+) lets an unprivileged process restrict itself and every process it starts, for good: no
root, no namespace, no helper binary. The sandbox calls `restrict_writes` in the child between fork and exec, so
code under test cannot rewrite another build's binary, the original's cached build, a sibling candidate's outputs
or the project's own files. A program that another program starts (ncu's target) is fenced by running it through
this file as a script (`fenced_command`).

By default only the write rights are handled: reads, directory listings and execution stay allowed everywhere
(compilers, drivers and libraries live all over the filesystem). Given `readable` directories, reads and execution
are fenced too: allowed beneath those, the writable ones and the system's own directories (SYSTEM_READABLE), so a
compiler told to `#include` the task's reference, or a sibling candidate's source, finds nothing. ioctl on device
files is not handled either: the CUDA driver speaks to /dev/nvidia* through ioctl. Device files are writable only
where a kernel needs them (/dev/null, /dev/nvidia*, ...), and no device node can be made. From ABI 6 the process
also cannot signal, nor reach through an abstract unix socket, any process outside its fence (a daemon left behind
cannot stop the baseline's timing). Landlock does not cover metadata (chmod, chown, utimes: build digests cover the
mode), nor truncate(2) before ABI 3; links and renames out of a fenced directory are refused from ABI 1. A fenced
process cannot ptrace, nor write the memory of (/proc/PID/mem), a process outside its fence.

The calls and structures are those of the kernel's uapi (include/uapi/linux/landlock.h); the syscall numbers are
the same on every architecture. The module imports nothing outside the standard library: it also runs as a script.
"""

from __future__ import annotations

import ctypes
import functools
import glob
import os
import sys
from collections.abc import Sequence
from pathlib import Path

_SYS_CREATE_RULESET, _SYS_ADD_RULE, _SYS_RESTRICT_SELF = 444, 445, 446
_CREATE_RULESET_VERSION = 1  # flag of landlock_create_ruleset: return the ABI version instead of a ruleset
_RULE_PATH_BENEATH = 1
_PR_SET_NO_NEW_PRIVS = 38  # required before landlock_restrict_self by an unprivileged process

# LANDLOCK_ACCESS_FS_* bits that read or run.
EXECUTE = 1 << 0
READ_FILE = 1 << 2
READ_DIR = 1 << 3
_READS = EXECUTE | READ_FILE | READ_DIR
# Where compilers, their headers and libraries, and the system's configuration live: readable by every fenced
# build. The task's directory, the work directory and the home directories are not among them.
SYSTEM_READABLE = ("/usr", "/lib", "/lib64", "/lib32", "/libx32", "/bin", "/sbin", "/etc", "/opt", "/proc", "/sys",
                   "/dev")
# LANDLOCK_ACCESS_FS_* bits that write: to a file, or to a directory's entries.
WRITE_FILE = 1 << 1
REMOVE_DIR = 1 << 4
REMOVE_FILE = 1 << 5
MAKE_CHAR = 1 << 6
MAKE_DIR = 1 << 7
MAKE_REG = 1 << 8
MAKE_SOCK = 1 << 9
MAKE_FIFO = 1 << 10
MAKE_BLOCK = 1 << 11
MAKE_SYM = 1 << 12
REFER = 1 << 13  # ABI 2: link or rename a file into another directory
TRUNCATE = 1 << 14  # ABI 3: truncate(2) and open(O_TRUNC)
_FILE_WRITES = WRITE_FILE | TRUNCATE  # the write rights a rule on a single file (not a directory) may carry
_DEVICE_NODES = MAKE_CHAR | MAKE_BLOCK  # handled, and never granted: a node of its own would open any disk
# LANDLOCK_SCOPE_* (ABI 6): no abstract unix socket nor signal to a process outside the fence.
SCOPE_ABSTRACT_UNIX_SOCKET = 1 << 0
SCOPE_SIGNAL = 1 << 1

# Device files a program opens for writing (patterns): the null and random devices, the terminal, the NVIDIA and
# AMD GPU drivers. Nothing else under /dev: /dev/vda, /dev/loop*, /dev/kmsg stay read-only.
DEVICE_FILES = ("/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom", "/dev/tty", "/dev/nvidia*",
                "/dev/kfd", "/dev/dri")
# POSIX shared memory and semaphores (Python's multiprocessing, some OpenMP and MPI runtimes) are files here.
SHARED_MEMORY_DIR = Path("/dev/shm")
# The process's own /proc entry, whose files it writes: `unshare --map-root-user` its uid_map, CUDA (under ncu)
# something of its own. Only this process's entry: /proc/sys/kernel/core_pattern would run a program as root.
OWN_PROC_DIR = Path("/proc/self")


class _RulesetAttr(ctypes.Structure):
    _fields_ = [("handled_access_fs", ctypes.c_uint64), ("handled_access_net", ctypes.c_uint64),
                ("scoped", ctypes.c_uint64)]


# How much of _RulesetAttr each ABI version reads: the network rights came in ABI 4, the scopes in ABI 6.
def _ruleset_attr_size(abi: int) -> int:
    return 24 if abi >= 6 else 16 if abi >= 4 else 8


class _PathBeneathAttr(ctypes.Structure):
    _pack_ = 1  # packed in the uapi header
    _fields_ = [("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]


_libc = ctypes.CDLL(None, use_errno=True)  # loaded in the parent: the child only calls


@functools.cache
def abi_version() -> int:
    """The kernel's Landlock ABI version, 0 where Landlock is missing or disabled."""
    version = _libc.syscall(_SYS_CREATE_RULESET, None, ctypes.c_size_t(0), ctypes.c_uint32(_CREATE_RULESET_VERSION))
    return max(version, 0)


def handled_writes(abi: int) -> int:
    """Every write right this ABI version knows."""
    rights = WRITE_FILE | REMOVE_DIR | REMOVE_FILE | MAKE_CHAR | MAKE_DIR | MAKE_REG | MAKE_SOCK | MAKE_FIFO
    rights |= MAKE_BLOCK | MAKE_SYM
    if abi >= 2:
        rights |= REFER
    if abi >= 3:
        rights |= TRUNCATE
    return rights


def prepare(writable: Sequence[Path]) -> list[Path]:
    """The writable directories as rules name them: resolved, and made where missing (a rule opens its directory).
    Called in the parent, before the fork."""
    directories = [Path(d).resolve() for d in writable]
    for directory in directories:
        directory.mkdir(parents=True, exist_ok=True)
    return directories


def restrict_writes(writable: Sequence[Path], *, scoped: bool = True, readable: Sequence[Path] | None = None) -> None:
    """Restrict this process and its future children: writes only beneath the writable directories (no device
    nodes), to the DEVICE_FILES, in shared memory and in its own /proc entry; with `scoped` (ABI 6), no signal nor
    abstract socket out of the fence; with `readable`, reads and execution only beneath those, the writable
    directories and SYSTEM_READABLE. OSError when the kernel refuses.

    Meant for a child between fork and exec (subprocess's preexec_fn): it allocates nothing but a few structs."""
    abi = abi_version()
    if abi == 0:
        raise OSError("Landlock is not available on this kernel")
    reads = _READS if readable is not None else 0
    handled = handled_writes(abi) | reads
    attr = _RulesetAttr(handled_access_fs=handled,
                        scoped=SCOPE_ABSTRACT_UNIX_SOCKET | SCOPE_SIGNAL if scoped and abi >= 6 else 0)
    ruleset = _check(_libc.syscall(_SYS_CREATE_RULESET, ctypes.byref(attr), ctypes.c_size_t(_ruleset_attr_size(abi)),
                                   ctypes.c_uint32(0)), "landlock_create_ruleset")
    try:
        for directory in writable:
            _allow(ruleset, directory, handled & ~_DEVICE_NODES)
        for directory in [*(readable or ()), *(Path(p) for p in SYSTEM_READABLE if reads and Path(p).is_dir())]:
            _allow(ruleset, directory, reads)
        for device in sorted({path for pattern in DEVICE_FILES for path in glob.glob(pattern)}):
            _allow(ruleset, Path(device), _FILE_WRITES & handled)
        if SHARED_MEMORY_DIR.is_dir():
            _allow(ruleset, SHARED_MEMORY_DIR, handled & ~_DEVICE_NODES)
        _allow(ruleset, OWN_PROC_DIR, _FILE_WRITES & handled)
        _check(_libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "prctl(PR_SET_NO_NEW_PRIVS)")
        _check(_libc.syscall(_SYS_RESTRICT_SELF, ctypes.c_int(ruleset), ctypes.c_uint32(0)), "landlock_restrict_self")
    finally:
        os.close(ruleset)


def _allow(ruleset: int, path: Path, rights: int) -> None:
    """Let the process use `rights` beneath path (a directory), or on it (a file: file rights only)."""
    fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
    try:
        if not path.is_dir():
            rights &= _FILE_WRITES | EXECUTE | READ_FILE
        rule = _PathBeneathAttr(allowed_access=rights, parent_fd=fd)
        _check(_libc.syscall(_SYS_ADD_RULE, ctypes.c_int(ruleset), ctypes.c_int(_RULE_PATH_BENEATH),
                             ctypes.byref(rule), ctypes.c_uint32(0)), f"landlock_add_rule({path})")
    finally:
        os.close(fd)


def _check(result: int, call: str) -> int:
    if result < 0:
        errno = ctypes.get_errno()
        raise OSError(errno, f"{call} failed: {os.strerror(errno)}")
    return result


# ---------------------------------------------------------------- as a script: fence a program, then run it

_WRITABLE_FLAG = "--writable="
_UNSCOPED_FLAG = "--unscoped"


def fenced_command(argv: Sequence[str], writable: Sequence[Path], *, scoped: bool = True) -> list[str]:
    """argv run under restrict_writes(writable): for a program that another, unfenced program starts (ncu runs
    its target this way). The wrapper execs argv in the same process, so its /proc entry is the program's; the
    program's HOME and TMPDIR are the first writable directory (the starting program's own may be ones it must not
    write: ncu's HOME holds the section files ncu runs)."""
    flags = [f"{_WRITABLE_FLAG}{d}" for d in prepare(writable)] + ([] if scoped else [_UNSCOPED_FLAG])
    # -I: no PYTHONPATH, user site or startup file: nothing from the caller's environment runs before the fence.
    return [sys.executable, "-I", str(Path(__file__).resolve()), *flags, "--", *argv]


def _main(args: list[str]) -> None:
    split = args.index("--")
    options, argv = args[:split], args[split + 1:]
    writable = [Path(o.removeprefix(_WRITABLE_FLAG)) for o in options if o.startswith(_WRITABLE_FLAG)]
    restrict_writes(writable, scoped=_UNSCOPED_FLAG not in options)
    if writable:
        os.environ["HOME"] = os.environ["TMPDIR"] = str(writable[0])
    os.execvp(argv[0], argv)


if __name__ == "__main__":
    _main(sys.argv[1:])
