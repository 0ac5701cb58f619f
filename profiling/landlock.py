"""Filesystem isolation of a child process through Linux Landlock: it may read and run anything, and write only
beneath the directories it is given.

Landlock (Linux 5.13+) lets an unprivileged process restrict itself and every process it starts, for good: no
root, no namespace, no helper binary. The sandbox calls `restrict_writes` in the child between fork and exec, so
code under test cannot rewrite another build's binary, the original's cached build, a sibling candidate's outputs
or the project's own files. Only the write rights are handled: reads, directory listings and execution stay
allowed everywhere (compilers, drivers and libraries live all over the filesystem). ioctl on device files is not
handled either: the CUDA driver speaks to /dev/nvidia* through ioctl. Landlock does not cover metadata (chmod,
chown, utimes), and truncate(2) only from ABI 3; links and renames out of a fenced directory are refused from
ABI 1. A fenced process cannot ptrace, nor write the memory of (/proc/PID/mem), a process outside its fence.

The calls and structures are those of the kernel's uapi (include/uapi/linux/landlock.h); the syscall numbers are
the same on every architecture.
"""

from __future__ import annotations

import ctypes
import functools
import os
from collections.abc import Sequence
from pathlib import Path

_SYS_CREATE_RULESET, _SYS_ADD_RULE, _SYS_RESTRICT_SELF = 444, 445, 446
_CREATE_RULESET_VERSION = 1  # flag of landlock_create_ruleset: return the ABI version instead of a ruleset
_RULE_PATH_BENEATH = 1
_PR_SET_NO_NEW_PRIVS = 38  # required before landlock_restrict_self by an unprivileged process

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

# Device files a program opens for writing without creating anything: /dev/null, /dev/nvidia*, /dev/tty.
DEVICE_DIR = Path("/dev")
# POSIX shared memory and semaphores (Python's multiprocessing, some OpenMP and MPI runtimes) are files here.
SHARED_MEMORY_DIR = Path("/dev/shm")
# The process's own /proc entry, whose files it writes: `unshare --map-root-user` its uid_map, for one. Its
# children get entries of their own, which cannot be named in advance (profiling.cuda.ncu opens all of /proc for
# the program ncu starts, which needs it).
OWN_PROC_DIR = Path("/proc/self")


class _RulesetAttr(ctypes.Structure):
    _fields_ = [("handled_access_fs", ctypes.c_uint64)]  # the later fields (network, scopes) stay unhandled


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


def restrict_writes(writable: Sequence[Path]) -> None:
    """Restrict this process and its future children: writes only beneath the writable directories (and to
    existing device files, shared memory, its own /proc entry). OSError when the kernel refuses.

    Meant for a child between fork and exec (subprocess's preexec_fn): it allocates nothing but a few structs."""
    abi = abi_version()
    if abi == 0:
        raise OSError("Landlock is not available on this kernel")
    handled = handled_writes(abi)
    attr = _RulesetAttr(handled_access_fs=handled)
    ruleset = _check(_libc.syscall(_SYS_CREATE_RULESET, ctypes.byref(attr), ctypes.c_size_t(ctypes.sizeof(attr)),
                                   ctypes.c_uint32(0)), "landlock_create_ruleset")
    try:
        for directory in writable:
            _allow(ruleset, directory, handled)
        for directory in (DEVICE_DIR, OWN_PROC_DIR):
            _allow(ruleset, directory, _FILE_WRITES & handled)
        if SHARED_MEMORY_DIR.is_dir():
            _allow(ruleset, SHARED_MEMORY_DIR, handled)
        _check(_libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "prctl(PR_SET_NO_NEW_PRIVS)")
        _check(_libc.syscall(_SYS_RESTRICT_SELF, ctypes.c_int(ruleset), ctypes.c_uint32(0)), "landlock_restrict_self")
    finally:
        os.close(ruleset)


def _allow(ruleset: int, path: Path, rights: int) -> None:
    """Let the process use `rights` beneath path (a directory), or on it (a file: file rights only)."""
    fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
    try:
        if not path.is_dir():
            rights &= _FILE_WRITES
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
