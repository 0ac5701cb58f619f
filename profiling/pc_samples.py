"""Program-counter samples of a served kernel process, taken by the operating system's perf events: which library
routines its calls ran, whatever its object imports (VALIDATION.md rule 22 at run time).

The binary policy reads what a candidate's object imports; a candidate that reads its own process's memory finds
any loaded library's routine without importing it (the seventeenth red team walked from `expf`'s address back to
libm's ELF header and its symbol table: libc's `qsort` sorted for it, 4.8-7.1x "improved"). The judge samples the
process's program counter every SAMPLE_PERIOD_NS of its CPU time, in every thread (per-CPU software events with
inheritance; the kernel takes them in its timer interrupt: no signal, nothing the process can block or install),
and names the library routine each sample lands in. A sample inside a watched routine (`Watch`: the target's
library routines and libm's floating-point environment setters) that the original does not import is a routine
found by hand.

Where perf events are unavailable (perf_event_paranoid above 2, a container without them), `Sampler.attach`
returns None and the check is not made; the verdict says so (profiling/validate.py).
"""

from __future__ import annotations

import bisect
import ctypes
import functools
import mmap
import os
import platform
import re
import struct
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from profiling import sandbox
from profiling.proc_maps import KERNEL_CODE, Region
from profiling.proc_maps import read as read_regions

if TYPE_CHECKING:
    from profiling.fp_probe import Reading

# One sample per 100 us of a thread's CPU time: the red team's hand-found qsort gave 9 of 21 samples of its
# correctness calls at 200 us. Not free: the interrupts and the events' switching cost each call a few
# microseconds, more of a faster side's call, so the judge samples its correctness calls and one extra timing round
# whose times it does not use (profiling/validate.py _served_timing; bench/bench_pc_sampling.py).
SAMPLE_PERIOD_NS = 100_000
# The ring buffer of each CPU's event: 32 pages of 24-byte samples hold 5,400 of them (0.5 s of one thread's CPU
# time) between drains; the judge drains after every call (a longer call loses its later samples, counted by the
# kernel as lost). Small: each page is locked memory, charged per user beyond perf_event_mlock_kb.
RING_PAGES = 32
# A watched routine's helpers sit in the gap before its exported symbol (glibc's qsort_r is preceded by
# msort_with_tmp, 810 bytes, static and unnamed in the stripped library): a sample there counts as the routine's,
# up to this many bytes back (the function before it ends earlier).
HELPER_GAP_BYTES = 16 << 10

OUTSIDE_MAPPINGS = "code outside every mapping it had when ready"
MOVED_MAPPINGS = "code mapped, moved or unmapped since it was ready"

_PERF_EVENT_OPEN = {"x86_64": 298, "aarch64": 241}.get(platform.machine())
_ATTR = struct.Struct("<IIQQQQQ")  # type, size, config, sample_period, sample_type, read_format, flags
_ATTR_SIZE = 112  # PERF_ATTR_SIZE_VER5; the fields past the packed ones stay zero
_TYPE_SOFTWARE, _CPU_CLOCK = 1, 0
_SAMPLE_IP, _SAMPLE_TID = 1, 2
_FLAG_INHERIT, _FLAG_EXCLUDE_KERNEL, _FLAG_EXCLUDE_HV = 1 << 1, 1 << 5, 1 << 6
_FD_CLOEXEC = 8
_RECORD_SAMPLE = 9
_HEAD, _TAIL, _DATA_OFFSET, _DATA_SIZE = 1024, 1032, 1040, 1048  # struct perf_event_mmap_page
_libc = ctypes.CDLL(None, use_errno=True)


class Sampler:
    """Per-CPU perf events on one process and its later threads, each with its ring buffer."""

    def __init__(self, events: list[tuple[int, mmap.mmap]]) -> None:
        self._events = events

    @classmethod
    def attach(cls, pid: int) -> Sampler | None:
        """Start sampling `pid` (and every thread it starts from now on); None where perf events are unavailable."""
        if _PERF_EVENT_OPEN is None:
            return None
        attr = bytearray(_ATTR_SIZE)
        _ATTR.pack_into(attr, 0, _TYPE_SOFTWARE, _ATTR_SIZE, _CPU_CLOCK, SAMPLE_PERIOD_NS, _SAMPLE_IP | _SAMPLE_TID,
                        0, _FLAG_INHERIT | _FLAG_EXCLUDE_KERNEL | _FLAG_EXCLUDE_HV)
        buffer = (ctypes.c_char * _ATTR_SIZE).from_buffer(attr)
        events: list[tuple[int, mmap.mmap]] = []
        try:
            for cpu in range(os.cpu_count() or 1):
                fd = _libc.syscall(_PERF_EVENT_OPEN, buffer, pid, cpu, -1, _FD_CLOEXEC)
                if fd < 0:
                    if ctypes.get_errno() == 19:  # ENODEV: an offline CPU
                        continue
                    raise OSError(ctypes.get_errno(), "perf_event_open")
                try:
                    ring = mmap.mmap(fd, (1 + RING_PAGES) * mmap.PAGESIZE, mmap.MAP_SHARED,
                                     mmap.PROT_READ | mmap.PROT_WRITE)
                except OSError:
                    os.close(fd)
                    raise
                events.append((fd, ring))
        except OSError:
            for fd, ring in events:
                ring.close()
                os.close(fd)
            return None
        return cls(events) if events else None

    def drain(self) -> list[int]:
        """The program counters sampled since the last drain (the judge drains after every call of the side:
        cheap when nothing came)."""
        found: list[int] = []
        for _, ring in self._events:
            head, tail = struct.unpack_from("<QQ", ring, _HEAD)
            if head == tail:
                continue
            offset, size = struct.unpack_from("<QQ", ring, _DATA_OFFSET)
            start, end = offset + tail % size, offset + (head - 1) % size + 1
            # the records written since the last drain, in order (they may wrap around the buffer's end)
            data = ring[start:end] if head - tail <= size and start < end else ring[start:offset + size] + \
                ring[offset:end]
            at = 0
            while at + 8 <= len(data):
                kind, _, length = struct.unpack_from("<IHH", data, at)
                if length < 8:
                    break
                if kind == _RECORD_SAMPLE and at + 16 <= len(data):
                    found.append(struct.unpack_from("<Q", data, at + 8)[0])
                at += length
            struct.pack_into("<Q", ring, _TAIL, head)
        return found

    def close(self) -> None:
        for fd, ring in self._events:
            ring.close()
            os.close(fd)
        self._events = []


def executable_mappings(pid: int) -> list[Region]:
    """The process's code mappings (proc_maps.Region.code), read once it is ready (its filter refuses executable
    mappings from then on): its files', and the kernel's [vdso] and [vsyscall] (named so, never read as a library)."""
    return [region for region in read_regions(pid) if region.code]


def moved(ready: list[Region], now: tuple[Region, ...]) -> bool:
    """Whether a process's code mappings (`now`: its map as a probe read it with its threads held) differ from those
    it had when it was ready. Nothing an honest kernel does moves, maps or unmaps code once it serves; a page of
    libc moved onto another library's code (mremap, or munmap and a move the kernel places in the hole) is named by
    the mapping it replaced (the twentieth session's red team: libc's _quicksort read as libgcc_s, 4.6-6.1x)."""
    return {region for region in now if region.code} != set(ready)


@dataclass(frozen=True)
class Watch:
    """The library routines a candidate may not run unless the original imports them: `pattern` fullmatches an
    exported symbol's unversioned name; `exempt`: the original's imports."""

    pattern: re.Pattern[str]
    exempt: frozenset[str]

    def routines(self, ips: list[int], mappings: list[Region]) -> Counter[str]:
        """How many of `ips` landed in each watched routine (library file name and routine), and outside every
        mapping the process had when it was ready (OUTSIDE_MAPPINGS: code moved or copied since, such as a
        library's text remapped by mremap, where no routine is named: the nineteenth red team sorted with a copy
        of libc's qsort so, 7.33-7.37x)."""
        hits: Counter[str] = Counter()
        exempt = self._exempt(mappings)
        for ip in ips:
            for mapping in mappings:
                if mapping.start <= ip < mapping.end:
                    name = "" if mapping.path in KERNEL_CODE else \
                        self._routine_at(mapping.path, ip - mapping.start + mapping.offset, exempt)
                    if name:
                        hits[f"{Path(mapping.path).name}'s {name}"] += 1
                    break
            else:
                if mappings:
                    hits[OUTSIDE_MAPPINGS] += 1
        return hits

    def probed(self, readings: list[Reading], mappings: list[Region]) -> Counter[str]:
        """How many of a probe's thread readings (fp_probe.py) were inside each watched routine: stopped in it, or
        called from it (a return address into it on the thread's stack: the kernel's own comparator called by
        libc's qsort found by hand is the candidate's code; counted once per reading)."""
        hits: Counter[str] = Counter()
        for reading in readings:
            hits.update(set(self.routines([reading.ip], mappings)) | self.called_from(reading.stack, mappings))
        return hits

    def called_from(self, stack: bytes, mappings: list[Region]) -> set[str]:
        """The watched routines a stack's words return into: a word in a library's mapping, inside a watched
        routine, right after a call instruction there (a stale word or a data pointer rarely is one; a function's
        own address never follows a call)."""
        words = np.frombuffer(stack, dtype="<u8", count=len(stack) // 8)
        found = set()
        exempt = self._exempt(mappings)
        for mapping in mappings:
            if mapping.path in KERNEL_CODE:
                continue
            for word in set(words[(words >= mapping.start) & (words < mapping.end)].tolist()):
                file_offset = word - mapping.start + mapping.offset
                name = self._routine_at(mapping.path, file_offset, exempt)
                if name and _follows_call(mapping.path, file_offset):
                    found.add(f"{Path(mapping.path).name}'s {name}")
        return found

    def _exempt(self, mappings: list[Region]) -> frozenset[str]:
        """The original's imports and the routines of other libraries their code calls (_imports_reached), over the
        process's mapped libraries."""
        return _exempt_everywhere(self.exempt, frozenset(m.path for m in mappings if m.path.startswith("/")))

    def _routine_at(self, path: str, file_offset: int, exempt: frozenset[str]) -> str:
        address = _address_of(path, file_offset)
        if address is None:
            return ""
        # a few dozen ranges, which may overlap (a helper inside the gap before its routine)
        exempt = _exempt_in(path, self.pattern.pattern, exempt)
        for start, end, name in _watched_ranges(path, self.pattern.pattern):
            if start <= address < end and name not in exempt:
                return name
        return ""


def _follows_call(path: str, file_offset: int) -> bool:
    """Whether the bytes before `file_offset` in the library end with a call: `call rel32` (E8 and 4 bytes) or an
    indirect `call` (FF with ModRM reg field 2) through a register or memory, 2 to 7 bytes long."""
    try:
        with open(path, "rb") as library:
            library.seek(max(0, file_offset - 7))
            before = library.read(min(7, file_offset)).rjust(7, b"\0")
    except OSError:
        return False

    def back(n: int) -> int:  # the byte n before the offset
        return before[7 - n]

    return back(5) == 0xE8 or any(back(n) == 0xFF and (back(n - 1) >> 3) & 7 == 2 for n in (2, 3, 4, 6, 7))


@functools.cache
def _segments(path: str) -> tuple[tuple[int, int, int], ...]:
    """A library's loadable segments: (file offset, size in the file, virtual address)."""
    found = []
    for line in _tool(["readelf", "-lW", path]).splitlines():
        parts = line.split()
        if parts and parts[0] == "LOAD" and len(parts) >= 5:
            found.append((int(parts[1], 16), int(parts[4], 16), int(parts[2], 16)))
    return tuple(found)


def _address_of(path: str, file_offset: int) -> int | None:
    for offset, size, address in _segments(path):
        if offset <= file_offset < offset + size:
            return file_offset - offset + address
    return None


@functools.cache
def _watched_ranges(path: str, pattern: str) -> list[tuple[int, int, str]]:
    """(start, end, name) of each exported function of the library whose name fullmatches `pattern`, its start
    moved back over the gap after the previous function (HELPER_GAP_BYTES at most), and of the unexported helpers
    it calls (_called_helpers, under its name), sorted by start."""
    functions = _functions(path)
    watched = re.compile(pattern)
    ranges, before, ends = [], 0, 0  # the end of the functions that start before this one (aliases share a start)
    for index, (start, size, name) in enumerate(functions):
        if index and start != functions[index - 1][0]:
            before = ends
        if watched.fullmatch(name):
            ranges.append((max(before, start - HELPER_GAP_BYTES), start + size, name))
        ends = max(ends, start + size)
    ranges += _called_helpers(path, ranges)
    return sorted(ranges)


@functools.cache
def _functions(path: str) -> tuple[tuple[int, int, str], ...]:
    """The library's exported functions, (start, size, unversioned name), sorted by start."""
    functions = []
    for line in _tool(["nm", "-D", "--defined-only", "-S", path]).splitlines():
        parts = line.split()
        if len(parts) == 4 and parts[2] in "TtWwi":
            functions.append((int(parts[0], 16), int(parts[1], 16), parts[3].split("@")[0]))
    return tuple(sorted(functions))


def _direct_targets(path: str, start: int, end: int, *, jumps: bool = False) -> list[tuple[int, str]]:
    """(target, objdump's symbol for it) of each direct call in the library's code [start, end), and of each direct
    jump with `jumps`."""
    listing = _tool(["objdump", "-d", "--no-show-raw-insn", f"--start-address={start:#x}",
                     f"--stop-address={end:#x}", path])
    found = _DIRECT_CALL.findall(listing) + (_DIRECT_JUMP.findall(listing) if jumps else [])
    return [(int(target, 16), symbol) for target, symbol in found]


# A direct call's or jump's target in objdump's listing: `call   40230 <putenv@@GLIBC_2.2.5+0x100>`
_DIRECT_CALL = re.compile(r"\bcall\s+([0-9a-f]+) <([^>]*)>")
_DIRECT_JUMP = re.compile(r"\bjmp\s+([0-9a-f]+) <([^>]*)>")


@functools.cache
def _exempt_in(path: str, pattern: str, exempt: frozenset[str]) -> frozenset[str]:
    """The exempt routines and the watched ones their own code reaches by a direct call or jump in this library:
    glibc's qsort is `jmp qsort_r`, so an original that imports qsort has its code run in qsort_r (the twentieth
    session's red team: identical code on such a task refused 5 of 5)."""
    ranges = _watched_ranges(path, pattern)
    reached = set(exempt)
    for start, size, routine in _functions(path):
        if routine in exempt:
            for target, _ in _direct_targets(path, start, start + size, jumps=True):
                reached.update(name for first, last, name in ranges if first <= target < last)
    return frozenset(reached)


@functools.cache
def _exempt_everywhere(exempt: frozenset[str], paths: frozenset[str]) -> frozenset[str]:
    return exempt.union(*(_imports_reached(path, exempt) for path in paths))


@functools.cache
def _imports_reached(path: str, exempt: frozenset[str]) -> frozenset[str]:
    """The routines this library imports (calls through its PLT) from the code of its exempt routines, and from the
    unexported helpers they call directly: glibc's clog near the unit circle computes |z|^2 - 1 in libm's static
    __x2y2m1, which sorts its terms with libc's qsort; an original that imports clog has its calls run in qsort_r
    (the twentieth session's red team: identical code refused 3 of 3). Empty for a file that is not a library."""
    if ".so" not in Path(path).name:  # a shared library (libm.so.6), never the kernel's own executable
        return frozenset()
    reached: set[str] = set()
    for start, size, routine in _functions(path):
        if routine in exempt:
            targets = _direct_targets(path, start, start + size, jumps=True)
            for helper, helper_end in {(t, e) for t, symbol in targets if (e := _helper_end(path, t, symbol))}:
                targets += _direct_targets(path, helper, helper_end, jumps=True)
            # an ifunc's slot reads `*ABS*+0x2ff50@plt`: a name no routine has
            reached.update(symbol.split("@plt")[0] for _, symbol in targets if "@plt" in symbol)
    return frozenset(reached)


def _called_helpers(path: str, watched: list[tuple[int, int, str]]) -> list[tuple[int, int, str]]:
    """The library's unexported functions a watched routine calls directly (_helper_end): glibc's qsort_r calls its
    static `_quicksort`, which sits after putenv, far from qsort_r (nineteenth red team: called by hand there,
    6.37-6.43x with no sample named)."""
    helpers = []
    for start, end, name in watched:
        for target, symbol in _direct_targets(path, start, end):
            if stop := _helper_end(path, target, symbol):
                helpers.append((target, stop, name))  # named as the routine: its exemption is the routine's
    return sorted(set(helpers))


def _helper_end(path: str, target: int, symbol: str) -> int | None:
    """Where the unexported function a direct call or jump reaches at `target` ends: at the next exported function
    (HELPER_GAP_BYTES at most). None for a call through the library's PLT or into an exported function."""
    functions = _functions(path)
    if "@plt" in symbol or any(start <= target < start + size for start, size, _ in functions):
        return None
    following = bisect.bisect_right(functions, (target, float("inf")))
    return min(functions[following][0] if following < len(functions) else target + HELPER_GAP_BYTES,
               target + HELPER_GAP_BYTES)


def _tool(argv: list[str]) -> str:
    """A binutils command's output on a system library ("" where it cannot be read: nothing is watched there)."""
    result = sandbox.run_trusted(argv, timeout_s=60, text=True, errors="replace")
    return result.stdout if result.returncode == 0 else ""
