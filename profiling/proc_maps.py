"""A process's memory map, as /proc/PID/maps lists it: one parser for the judge's readers of it (the library-routine
watch's code mappings at "ready", the probe's stacks and code mappings while the threads are held, the process's
own executable's code for the FP-mode rule). Standard library only: it runs wherever profiling/ runs.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

# The kernel's code mapped into every process (the vDSO: clock_gettime runs there, honestly)
KERNEL_CODE = ("[vdso]", "[vsyscall]")


@dataclass(frozen=True)
class Region:
    """One line of /proc/PID/maps: [start, end), its permissions (`r-xp`), the file offset it maps, and its path
    ("" for anonymous memory; `[stack]`, `[vdso]` and the like for the kernel's own)."""

    start: int
    end: int
    permissions: str
    offset: int
    path: str

    @property
    def executable(self) -> bool:
        return "x" in self.permissions

    @property
    def writable(self) -> bool:
        return "w" in self.permissions

    @property
    def code(self) -> bool:
        """Executable code of a file or of the kernel (the mappings the watch names routines in)."""
        return self.executable and (self.path.startswith("/") or self.path in KERNEL_CODE)


def read(pid: int) -> list[Region]:
    """The process's regions in address order; [] when it is gone."""
    try:
        lines = Path(f"/proc/{pid}/maps").read_text().splitlines()
    except OSError:
        return []
    regions = []
    for line in lines:
        parts = line.split(None, 5)
        if len(parts) < 5:
            continue
        start, end = (int(v, 16) for v in parts[0].split("-"))
        regions.append(Region(start, end, parts[1], int(parts[2], 16), parts[5].strip() if len(parts) == 6 else ""))
    return regions
