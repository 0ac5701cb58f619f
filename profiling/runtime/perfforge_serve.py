"""perfforge_serve.py: the kernel-process side of the judge's protocol for Python harnesses (serve mode).

The twin of the serve half of perfforge_harness.h, used by perfforge_harness.Run in `serve` mode: the channel to
the judge (profiling/served.py), the buffers the judge shares (one sealed memfd each: [guard | data | guard]), and
the system-call filter, installed before the candidate's module is imported (perfforge_launch.py) and completed
after a warm-up call on a GPU (Triton compiles its kernels on their first launch, which needs the compiler's
processes and executable mappings that the complete filter refuses).

Everything here runs in the candidate's interpreter, which the candidate can change at will: nothing this module
says is evidence to the judge. The judge reads the filter from /proc, the buffers from its own mapping while the
process is stopped, and times calls with its own clock (profiling/validate.py says what it trusts of which side).
"""

from __future__ import annotations

import ctypes
import mmap
import os
import platform
import socket
import struct
from collections.abc import Callable

EXIT_CHANNEL = 6  # the judge's channel failed: the header's exit status for it
MESSAGE_BYTES = 512

# ---------------------------------------------------------------------------------------------------- the channel


class Channel:
    """The judge's socket (SOCK_SEQPACKET: one message per send)."""

    def __init__(self, fd: int) -> None:
        self._socket = socket.socket(fileno=fd)

    def send(self, text: str) -> None:
        try:
            self._socket.send(text.encode("ascii"))
        except OSError:
            os._exit(EXIT_CHANNEL)

    def receive(self) -> str:
        """The next message ("" when the judge closed the channel)."""
        try:
            return self._socket.recv(MESSAGE_BYTES).decode("ascii", errors="replace")
        except OSError:
            return ""

    def map_buffer(self, name: str, dtype_code: int, role_code: int, count: int, lo: float, hi: float) -> mmap.mmap:
        """Declare a buffer as pf_serve_map does and map the memfd the judge answers with."""
        self.send(f"buf {name} {dtype_code} {role_code} {count} {lo:.17g} {hi:.17g}")
        try:
            reply, fds, _, _ = socket.recv_fds(self._socket, 64, 1)
        except OSError:
            os._exit(EXIT_CHANNEL)
        if not fds or not reply.startswith(b"ok "):
            os._exit(EXIT_CHANNEL)
        try:
            return mmap.mmap(fds[0], int(reply[3:]))
        finally:
            os.close(fds[0])


# ---------------------------------------------------------------------------------------------------- the filter

# What a Python kernel process may no longer do once it serves. The C harness allows a short list of system calls;
# an interpreter with torch and a GPU driver makes too many kinds to list, so this filter refuses by name what would
# let code escape the judge's stop between calls or its reading of the buffers: new processes (a child is not
# stopped with its parent and could work on the judge's inputs while the judge writes them), leaving the process
# group, new executable code, other processes' memory, asynchronous kernel-side I/O (io_uring works while the
# process is stopped), page-fault handlers in user space, and signals to other processes (kill and tgkill to
# itself only; pidfds and queued signals not at all: the red team signalled its parent and took one of its
# descriptors through pidfd_send_signal and pidfd_getfd), and setting the system's clocks (the process may run as
# root with CAP_SYS_TIME; the judge times each call by the socket's send stamps, which are CLOCK_REALTIME and cannot
# be taken from another clock, so a step of that clock mid-call would misread the call: the seventeenth red team).
#
# Two stages. The harness installs the first before any of the candidate's code runs (perfforge_launch.py): on a
# CPU the whole filter, on a GPU all of it but what Triton's compiler needs on the first launch (new processes for
# ptxas and the C compiler, executable mappings for the launcher it builds). After the warm-up call it adds the
# rest (filters stack: a later one only refuses more). Each stage's program is computed before the candidate is
# imported, so rebinding this module's functions at import (the red team's allow-all filter_program) changes
# nothing that is installed.
_SYSCALLS = {  # (x86_64, aarch64); None: the architecture has no such call
    "fork": (57, None), "vfork": (58, None), "execve": (59, 221), "execveat": (322, 281),
    "clone": (56, 220), "clone3": (435, 435),
    "mmap": (9, 222), "mprotect": (10, 226), "pkey_mprotect": (329, 288),
    "setsid": (112, 157), "setpgid": (109, 154), "ptrace": (101, 117),
    "process_vm_readv": (310, 270), "process_vm_writev": (311, 271),
    "io_uring_setup": (425, 425), "io_uring_enter": (426, 426), "io_uring_register": (427, 427),
    "userfaultfd": (323, 282), "bpf": (321, 280),
    "kill": (62, 129), "tkill": (200, 130), "tgkill": (234, 131),
    "seccomp": (317, 277),
    "pidfd_open": (434, 434), "pidfd_send_signal": (424, 424), "pidfd_getfd": (438, 438),
    "rt_sigqueueinfo": (129, 138), "rt_tgsigqueueinfo": (297, 240),
    "clock_settime": (227, 112), "settimeofday": (164, 170), "clock_adjtime": (305, 266), "adjtimex": (159, 171),
}
_ARCHES = {"x86_64": (0, 0xC000003E), "aarch64": (1, 0xC00000B7)}  # AUDIT_ARCH_*
_REFUSED = ("fork", "vfork", "execve", "execveat", "setsid", "setpgid", "ptrace", "process_vm_readv",
            "process_vm_writev", "io_uring_setup", "io_uring_enter", "io_uring_register", "userfaultfd", "bpf",
            "tkill", "pidfd_open", "pidfd_send_signal", "pidfd_getfd", "rt_sigqueueinfo", "rt_tgsigqueueinfo",
            "clock_settime", "settimeofday", "clock_adjtime", "adjtimex")
# what the first launch of a Triton kernel needs on a GPU (its compiler's processes, the launcher it loads): refused
# only by the second stage, after the warm-up call
_COMPILING = ("fork", "vfork", "execve", "execveat")

# classic BPF and seccomp constants (linux/filter.h, linux/seccomp.h)
_LD_W_ABS, _JMP_JEQ_K, _JMP_JSET_K, _RET_K = 0x20, 0x15, 0x45, 0x06
_RET_ALLOW, _RET_KILL_PROCESS, _RET_ERRNO = 0x7FFF0000, 0x80000000, 0x00050000
_EPERM, _ENOSYS = 1, 38
_CLONE_THREAD, _PROT_EXEC = 0x00010000, 0x4
_NR_OFFSET, _ARCH_OFFSET, _ARG_OFFSET = 0, 4, 16  # struct seccomp_data: nr, arch, args[6] (8 bytes each)
_PR_SET_NO_NEW_PRIVS, _SECCOMP_SET_MODE_FILTER, _SECCOMP_FILTER_FLAG_TSYNC = 38, 1, 1


def filter_program(pid: int, machine: str | None = None, *,
                   compiling: bool = False) -> list[tuple[int, int, int, int]] | None:
    """The filter as (code, jt, jf, k) instructions for this architecture (None where it is not known). compiling:
    the first stage on a GPU, which still lets Triton's compiler start processes and map executable code."""
    arch = _ARCHES.get(machine or platform.machine())
    if arch is None:
        return None
    column, audit_arch = arch

    def nr(name: str) -> int | None:
        return _SYSCALLS[name][column]

    program = [(_LD_W_ABS, 0, 0, _ARCH_OFFSET), (_JMP_JEQ_K, 1, 0, audit_arch), (_RET_K, 0, 0, _RET_KILL_PROCESS)]

    def when(name: str, block: list[tuple[int, int, int, int]]) -> None:
        number = nr(name)
        if number is not None:  # the block always returns: a call that is not `name` jumps over it
            program.extend([(_LD_W_ABS, 0, 0, _NR_OFFSET), (_JMP_JEQ_K, 0, len(block), number), *block])

    def arg(index: int) -> tuple[int, int, int, int]:
        return (_LD_W_ABS, 0, 0, _ARG_OFFSET + 8 * index)  # the low 32 bits (little-endian)

    for name in _REFUSED:
        if not (compiling and name in _COMPILING):
            when(name, [(_RET_K, 0, 0, _RET_ERRNO | _EPERM)])
    if not compiling:
        # threads yes (torch and the driver start them), processes no
        when("clone", [arg(0), (_JMP_JSET_K, 0, 1, _CLONE_THREAD), (_RET_K, 0, 0, _RET_ALLOW),
                       (_RET_K, 0, 0, _RET_ERRNO | _EPERM)])
        when("clone3", [(_RET_K, 0, 0, _RET_ERRNO | _ENOSYS)])  # its flags sit in memory the filter cannot read;
        # libc then falls back to clone, which the filter can judge
        for name, prot_arg in (("mmap", 2), ("mprotect", 2), ("pkey_mprotect", 2)):
            when(name, [arg(prot_arg), (_JMP_JSET_K, 0, 1, _PROT_EXEC), (_RET_K, 0, 0, _RET_ERRNO | _EPERM),
                        (_RET_K, 0, 0, _RET_ALLOW)])
    for name in ("kill", "tgkill"):  # only to itself
        when(name, [arg(0), (_JMP_JEQ_K, 0, 1, pid), (_RET_K, 0, 0, _RET_ALLOW),
                    (_RET_K, 0, 0, _RET_ERRNO | _EPERM)])
    program.append((_RET_K, 0, 0, _RET_ALLOW))
    return program


def prepared_filter(*, compiling: bool = False) -> Callable[[], bool]:
    """A function that installs the filter on every thread of this process (TSYNC) and says whether the kernel took
    it. The program, libc and the system call's number are all taken now: call this before any of the candidate's
    code runs, and nothing the candidate rebinds later (this module's functions, ctypes') changes what goes in."""
    program = filter_program(os.getpid(), compiling=compiling)
    seccomp_nr = _SYSCALLS["seccomp"][_ARCHES[platform.machine()][0]] if program else None
    if program is None or seccomp_nr is None:
        return lambda: False
    raw = b"".join(struct.pack("=HBBI", *instruction) for instruction in program)
    instructions = ctypes.create_string_buffer(raw, len(raw))

    class SockFprog(ctypes.Structure):
        _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]

    fprog = SockFprog(len(program), ctypes.addressof(instructions))
    libc = ctypes.CDLL(None, use_errno=True)
    prctl, syscall, reference = libc.prctl, libc.syscall, ctypes.byref(fprog)

    def install() -> bool:
        # (naming `instructions` keeps the program's memory alive as long as this function)
        if instructions is None or prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
            return False
        return syscall(seccomp_nr, _SECCOMP_SET_MODE_FILTER, _SECCOMP_FILTER_FLAG_TSYNC, reference) == 0

    return install


def install_filter() -> bool:
    """Install the whole filter now (prepared_filter's, for callers that run no candidate code before it)."""
    return prepared_filter()()
