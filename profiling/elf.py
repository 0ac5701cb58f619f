"""The sections of an ELF64 object, read with the standard library (no binutils): what the binary policy scans for
hidden instructions and where the judge finds the constants an original compares with.

Only little-endian ELF64 (x86-64, AArch64: what gcc and nvcc write here) is read; anything else has no sections.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

SHF_EXECINSTR = 0x4  # section flag: holds instructions
SHT_NOBITS = 8  # section type: occupies no bytes in the file (.bss)


@dataclass(frozen=True)
class Section:
    name: str
    flags: int
    data: bytes

    @property
    def executable(self) -> bool:
        return bool(self.flags & SHF_EXECINSTR)


def sections(path: Path) -> list[Section]:
    """Every section with bytes in the file, in header order; [] for what is not a little-endian ELF64 file."""
    data = path.read_bytes()
    if data[:5] != b"\x7fELF\x02" or data[5] != 1:
        return []

    def field(at: int, size: int) -> int:
        return int.from_bytes(data[at:at + size], "little")

    shoff, shentsize, shnum, shstrndx = field(0x28, 8), field(0x3A, 2), field(0x3C, 2), field(0x3E, 2)
    headers = [shoff + i * shentsize for i in range(shnum)]
    if not headers or shoff + shnum * shentsize > len(data) or shstrndx >= shnum:
        return []
    names_at = field(headers[shstrndx] + 24, 8)
    found = []
    for header in headers:
        kind, flags = field(header + 4, 4), field(header + 8, 8)
        if kind == SHT_NOBITS:
            continue
        offset, size = field(header + 24, 8), field(header + 32, 8)
        name_at = names_at + field(header, 4)
        name = data[name_at:data.index(b"\0", name_at)].decode(errors="replace") if name_at < len(data) else ""
        found.append(Section(name, flags, data[offset:offset + size]))
    return found
