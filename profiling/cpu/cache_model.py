"""The caches callgrind simulates: one documented model, so a task gets the same diagnosis on every machine of a kind.

cachegrind's simulation has three caches: I1 and D1 (first level) and LL (the last level, standing for everything
between D1 and DRAM). Left to itself valgrind reads them from cpuid, which virtual machines fill with whatever their
host has. Two machines of our own kind differ: one reports a 32 KiB D1, another a 48 KiB D1 and a 480 MiB L3. On the
second nothing misses: a 700x700 matvec walking columns touches 700 lines per column, which thrash a 512-line D1 and
fit a 768-line one, and the task got no diagnosis. Diagnoses are calibrated on one model, so by default every profile
simulates the fixed model below (DEFAULTS), whatever the host says.

PERFFORGE_CACHE_MODEL=host takes each level from the machine (sysfs) where its value is plausible for one core's view
of a cache (the ranges below, and a power-of-two number of sets, which valgrind needs), and the default where it is
not. Either way the model simulated, and where each level came from, is recorded in the profile (`Profile.machine`).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from perfforge.errors import ConfigError

SYSFS_CACHE_DIR = Path("/sys/devices/system/cpu/cpu0/cache")
CACHE_MODEL_ENV = "PERFFORGE_CACHE_MODEL"  # "fixed" (the default) or "host"

KIB = 1 << 10
MIB = 1 << 20


@dataclass(frozen=True)
class CacheLevel:
    """One simulated cache: its size, associativity and line size, and where they came from."""

    size_bytes: int
    ways: int
    line_bytes: int
    origin: str = "fixed"  # "fixed", "host" (read from sysfs) or "default: <why the host's value was refused>"

    def valgrind_value(self) -> str:
        return f"{self.size_bytes},{self.ways},{self.line_bytes}"

    def describe(self) -> str:
        return f"{self.shape()} ({self.origin})"

    def shape(self) -> str:
        return f"{_size(self.size_bytes)} {self.ways}-way {self.line_bytes} B lines"


# The fixed model: a current x86 server core. 32 KiB 8-way first-level caches are what Intel cores from Skylake to
# Ice Lake and AMD Zen 1-4 have (newer Intel D1s are 48 KiB 12-way); the CPU diagnoses' thresholds were calibrated
# on machines with this D1. An 8 MiB 16-way LL is on the small end of one core's share of a server L3 (a Zen CCX has
# 32 MiB for 8 cores): a kernel that streams tens of MiB misses in it, as on every real machine, whatever a VM
# reports. Also the default for any level the host does not report plausibly under PERFFORGE_CACHE_MODEL=host.
DEFAULTS: dict[str, CacheLevel] = {
    "I1": CacheLevel(32 * KIB, 8, 64),
    "D1": CacheLevel(32 * KIB, 8, 64),
    "LL": CacheLevel(8 * MIB, 16, 64),
}

# Plausible sizes of one core's view of each level, in bytes. First-level caches of shipping x86 and Arm server
# cores lie in 16-192 KiB (Apple's 128-192 KiB at the top). The LL range's top, 64 MiB, is the largest L3 one
# core shares with its neighbours on parts without stacked cache (AMD's 96 MiB V-Cache CCDs exceed it and fall
# back to the default, which under-states their LL: accepted, a diagnosis then errs towards "misses").
PLAUSIBLE_BYTES: dict[str, tuple[int, int]] = {
    "I1": (16 * KIB, 192 * KIB),
    "D1": (16 * KIB, 192 * KIB),
    "LL": (1 * MIB, 64 * MIB),
}
PLAUSIBLE_LINE_BYTES = (32, 128)


@dataclass(frozen=True)
class CacheModel:
    """The three caches callgrind simulates."""

    i1: CacheLevel
    d1: CacheLevel
    ll: CacheLevel

    def valgrind_options(self) -> list[str]:
        return [f"--I1={self.i1.valgrind_value()}", f"--D1={self.d1.valgrind_value()}",
                f"--LL={self.ll.valgrind_value()}"]

    def describe(self) -> str:
        """One line for the profile's machine description."""
        return f"simulated caches: I1 {self.i1.describe()}, D1 {self.d1.describe()}, LL {self.ll.describe()}"


def simulated_cache_model() -> CacheModel:
    """The model profiles simulate: the fixed one, or the host's where PERFFORGE_CACHE_MODEL=host."""
    choice = os.environ.get(CACHE_MODEL_ENV, "fixed")
    if choice == "host":
        return host_cache_model()
    if choice != "fixed":
        raise ConfigError(f"{CACHE_MODEL_ENV}={choice!r} is not a cache model: use 'fixed' (the default) or 'host'")
    return CacheModel(i1=DEFAULTS["I1"], d1=DEFAULTS["D1"], ll=DEFAULTS["LL"])


def host_cache_model(sysfs_dir: Path | None = None) -> CacheModel:
    """The model for this machine: each level from sysfs where plausible, else the documented default."""
    found = _read_sysfs(sysfs_dir or SYSFS_CACHE_DIR)
    return CacheModel(i1=_choose("I1", found.get("I1")), d1=_choose("D1", found.get("D1")),
                      ll=_choose("LL", found.get("LL")))


def reported_last_level_bytes(sysfs_dir: Path | None = None) -> int:
    """The size this machine reports for its last-level cache (0 when it reports none), unfiltered: what a flush
    must cover, not what the simulation models (a VM may report its host's whole L3; callers cap the flush)."""
    level = _read_sysfs(sysfs_dir or SYSFS_CACHE_DIR).get("LL")
    return level.size_bytes if level else 0


def _choose(name: str, host: CacheLevel | None) -> CacheLevel:
    default = DEFAULTS[name]
    if host is None:
        return CacheLevel(default.size_bytes, default.ways, default.line_bytes, "default: not reported")
    refusal = _implausible(name, host)
    if refusal:
        return CacheLevel(default.size_bytes, default.ways, default.line_bytes, f"default: host {refusal}")
    return host


def _implausible(name: str, level: CacheLevel) -> str:
    """Why the host's value is refused, or "" when it is plausible."""
    low, high = PLAUSIBLE_BYTES[name]
    if not low <= level.size_bytes <= high:
        return f"reports {level.shape()}, outside {_size(low)}-{_size(high)}"
    if not PLAUSIBLE_LINE_BYTES[0] <= level.line_bytes <= PLAUSIBLE_LINE_BYTES[1]:
        return f"reports {level.line_bytes} B lines"
    sets, rest = divmod(level.size_bytes, max(level.ways * level.line_bytes, 1))
    if level.ways <= 0 or sets <= 0 or rest or sets & (sets - 1):
        return f"reports {level.size_bytes} B {level.ways}-way, not a power-of-two number of sets"
    return ""


def _read_sysfs(sysfs_dir: Path) -> dict[str, CacheLevel]:
    """I1, D1 and the highest unified or data level (LL) as sysfs describes them; missing ones are left out."""
    found: dict[str, CacheLevel] = {}
    highest = 0
    for index in sorted(sysfs_dir.glob("index*")):
        try:
            level = int((index / "level").read_text())
            kind = (index / "type").read_text().strip()
            cache = CacheLevel(_sysfs_bytes((index / "size").read_text().strip()),
                               int((index / "ways_of_associativity").read_text()),
                               int((index / "coherency_line_size").read_text()), "host")
        except (OSError, ValueError):
            continue
        if level == 1 and kind == "Instruction":
            found["I1"] = cache
        elif level == 1 and kind == "Data":
            found["D1"] = cache
        if level > 1 and kind in ("Unified", "Data") and level > highest:
            highest, found["LL"] = level, cache
    return found


def _sysfs_bytes(text: str) -> int:
    units = {"K": KIB, "M": MIB, "G": 1 << 30}
    return int(text[:-1]) * units[text[-1]] if text and text[-1] in units else int(text)


def _size(size_bytes: int) -> str:
    return f"{size_bytes // MIB} MiB" if size_bytes >= MIB and size_bytes % MIB == 0 else f"{size_bytes // KIB} KiB"
