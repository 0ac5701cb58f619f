"""How a function of a user's CPU binary was compiled, as far as the binary's debug information records it: the
compile command application mode asks gcc's vectoriser report of (task mode knows it from task.toml).

gcc writes its code-generation switches into each compile unit's DW_AT_producer (-grecord-gcc-switches, on by
default since gcc 4.8): `GNU C++17 12.2.0 -march=x86-64-v3 -g -O3 -std=c++17`. It leaves out include paths (-I),
macros (-D, -U) and file names, so the compile unit is compiled again with the switches it records, its own and
its compile directory as include paths, then the project's directories the binary's line tables name (every
compile unit's directory table, less system directories under /usr: a CMake target's include directories hold
headers some unit read code from, such as a main's own header), and no macros: a file that needs a -D, or a
header no line table names, to compile alone gets no vectoriser report (VectorizeError, as in task mode), the
rest of the static facts stand. clang records no switches unless
built with -grecord-command-line; vectorize.py reads only gcc's report, so a clang unit gets none either way.

When no compile unit of the binary is one of the function's source files (the binary has no DWARF for it: split
or stripped debug information), the file holding the function is compiled with ASSUMED_FLAGS, and the profile
says so (CompileCommand.describe lands in the profile's tool_versions).
"""

from __future__ import annotations

import re
import shutil
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from profiling import sandbox

READELF_TIMEOUT_S = 60.0
# Assumed when the binary does not record its build: -O2 is the level of most release builds (autotools' and
# Debian's default CFLAGS; gcc 12 vectorises at -O2 with its very-cheap cost model), with no -march (baseline x86-64).
ASSUMED_FLAGS = ("-O2",)
C_SUFFIXES = (".c",)
CPP_SUFFIXES = (".cc", ".cpp", ".cxx", ".c++", ".C")
CPP_HEADER_SUFFIXES = (".hpp", ".hh", ".hxx", ".h++")

_DIRECTORY_ENTRY_RE = re.compile(r"^\s*\d+\s+(?:\([^)]*\):\s*)?(\S.*?)\s*$")
SYSTEM_PREFIXES = ("/usr/", "/lib/", "/lib64/", "/opt/rh/")
_ATTRIBUTE_RE = re.compile(r"^\s*<[0-9a-f]+>\s+DW_AT_(producer|name|comp_dir)\s*:\s*(?:\([^)]*\):\s*)?(.*?)\s*$")
_UNIT_START = "(DW_TAG_compile_unit)"
# "GNU C17 12.2.0 -mtune=generic -O2": language and its standard, the compiler's version, its switches
_PRODUCER_RE = re.compile(r"^GNU (?P<language>C\+\+|C)(?P<standard>\w*) (?P<version>\d[\w.]*)(?P<switches>(?: .*)?)$")
_NOT_REPLAYED_RE = re.compile(r"^-g|^-f(no-)?(record-gcc-switches|debug-prefix-map|file-prefix-map|macro-prefix-map)")


@dataclass(frozen=True)
class CompileUnit:
    """One compile unit of a binary's DWARF: its source (absolute), compile directory and producer string."""

    source: Path
    comp_dir: Path
    producer: str


@dataclass(frozen=True)
class CompileCommand:
    """A compiler, its flags and the translation unit to compile for the vectoriser report."""

    compiler: str
    flags: tuple[str, ...]
    unit: Path
    recorded: bool  # the flags are the build's (DW_AT_producer); False: ASSUMED_FLAGS

    def describe(self) -> str:
        origin = "the build's, from DW_AT_producer" if self.recorded else "assumed: the binary records no build"
        return f"vectoriser report: {self.compiler} {' '.join(self.flags)} -c {self.unit.name} ({origin})"


def compile_units(binary: Path) -> list[CompileUnit]:
    """The compile units readelf finds in binary's .debug_info; [] without readelf or debug information."""
    readelf = shutil.which("readelf")
    if readelf is None or not binary.is_file():
        return []
    try:
        proc = sandbox.run_trusted([readelf, "--debug-dump=info", "--dwarf-depth=1", str(binary)],
                                   timeout_s=READELF_TIMEOUT_S, text=True, errors="replace")
    except subprocess.TimeoutExpired:
        return []
    return _parse_units(proc.stdout) if proc.returncode == 0 else []


def _parse_units(text: str) -> list[CompileUnit]:
    units, current = [], None
    for line in text.splitlines():
        if _UNIT_START in line:
            if current is not None:
                units.append(current)
            current = {}
            continue
        match = _ATTRIBUTE_RE.match(line)
        if current is not None and match:
            current.setdefault(match.group(1), match.group(2))
    if current is not None:
        units.append(current)
    return [CompileUnit(source=Path(u.get("comp_dir", "/"), u["name"]), comp_dir=Path(u.get("comp_dir", "/")),
                        producer=u.get("producer", "")) for u in units if "name" in u]


def line_table_directories(binary: Path) -> list[Path]:
    """The absolute directories in the directory tables of binary's line programs (readelf --debug-dump=line), in
    order of first appearance, less system directories and directories that no longer exist; [] without readelf."""
    listing = _line_programs(binary)
    return _parse_directories(listing) if listing else []


def _parse_directories(text: str) -> list[Path]:
    """A relative entry (a build run with relative paths) is taken from the table's first absolute one (DWARF 5's
    entry 0, the compile directory)."""
    found: dict[str, None] = {}
    in_table, base = False, None
    for line in text.splitlines():
        if "The Directory Table" in line:
            in_table, base = True, None
            continue
        if in_table and ("The File Name Table" in line or not line.strip()):
            in_table = False
            continue
        match = _DIRECTORY_ENTRY_RE.match(line) if in_table else None
        if match is None or match.group(1) == "Name":
            continue
        name = match.group(1)
        if not name.startswith("/"):
            if base is None:
                continue
            name = str(Path(base, name))
        base = base or name
        if not name.startswith(SYSTEM_PREFIXES):
            found.setdefault(name)
    return [Path(d) for d in found if Path(d).is_dir()]


_FILE_ENTRY_RE = re.compile(r"^\s*\d+\s+(\d+)\s+(?:\d+\s+\d+\s+)?(?:\([^)]*\):\s*)?(\S.*?)\s*$")


def line_program_files(binary: Path) -> list[set[Path]]:
    """The files each line program of binary names (one program per compile unit: its own source and every file
    it includes that holds code), absolute; [] without readelf."""
    listing = _line_programs(binary)
    return _parse_program_files(listing) if listing else []


def _line_programs(binary: Path) -> str:
    """readelf's dump of binary's line programs ("" without readelf, a binary, or a dump in time)."""
    readelf = shutil.which("readelf")
    if readelf is None or not binary.is_file():
        return ""
    try:
        proc = sandbox.run_trusted([readelf, "--debug-dump=line", str(binary)],
                                   timeout_s=READELF_TIMEOUT_S, text=True, errors="replace")
    except subprocess.TimeoutExpired:
        return ""
    return proc.stdout if proc.returncode == 0 else ""


def _parse_program_files(text: str) -> list[set[Path]]:
    """Each program's file table, its entries joined to their directory-table entry (DWARF 5 numbers both from 0,
    entry 0 the compile directory; a DWARF 4 entry of directory 0, the unstated compile directory, or of a relative
    directory, is kept only when the joined name is absolute)."""
    programs: list[set[Path]] = []
    directories: dict[int, str] = {}
    table = ""
    for line in text.splitlines():
        if "The Directory Table" in line:
            programs.append(set())
            directories, table = {}, "directories"
            continue
        if "The File Name Table" in line:
            table = "files"
            continue
        if table and not line.strip() or "Line Number Statements" in line:
            table = ""
            continue
        if table == "directories" and (match := _DIRECTORY_ENTRY_RE.match(line)) and match.group(1) != "Name":
            name = match.group(1)  # a relative one (a build with -Ilib) is under entry 0, the compile directory
            directories[int(line.split()[0])] = str(Path(directories.get(0, ""), name))
        elif table == "files" and (match := _FILE_ENTRY_RE.match(line)):
            name = match.group(2)
            base = directories.get(int(match.group(1)), "")
            if name.startswith("/") or base.startswith("/"):
                programs[-1].add(Path(base, name))
    return programs


def including_unit(binary: Path, source: Path) -> CompileUnit | None:
    """The gcc compile unit of binary whose line program names source without compiling it as its own (a file a
    unit includes: ufidon/ca's loops.c under its driver, a header's inline functions); None when none does."""
    wanted = source.resolve()
    units = [unit for unit in compile_units(binary) if producer_command(unit.producer) is not None]
    for files in line_program_files(binary):
        if wanted not in {path.resolve() for path in files}:
            continue
        named = {path.resolve() for path in files}
        for unit in units:
            if unit.source.resolve() in named and unit.source.resolve() != wanted:
                return unit
    return None


def producer_command(producer: str) -> tuple[str, tuple[str, ...]] | None:
    """(compiler, flags) from a gcc DW_AT_producer string; None for another producer (clang, LTO's GNU GIMPLE).
    Debug switches are dropped; the language standard is made explicit (gcc names it in the producer even when
    it was the compiler's default), and a compiler of the recorded major version is preferred when installed."""
    match = _PRODUCER_RE.match(producer.strip())
    if match is None:
        return None
    cpp = match["language"] == "C++"
    flags = [flag for flag in match["switches"].split() if flag.startswith("-") and not _NOT_REPLAYED_RE.match(flag)]
    if match["standard"] and not any(flag.startswith("-std=") for flag in flags):
        flags.insert(0, f"-std=gnu{'++' if cpp else ''}{match['standard'].lower()}")
    base = "g++" if cpp else "gcc"
    versioned = f"{base}-{match['version'].split('.')[0]}"
    return (versioned if shutil.which(versioned) else base), tuple(flags)


def compile_command(binary: Path, files: Sequence[str]) -> CompileCommand | None:
    """How to compile the function whose own instructions lie in `files` (costliest first), from the compile unit
    of `binary` that is one of those files, else from the unit that includes one of them (its line program names
    the file: ufidon/ca's loops.c, a fragment compiled only inside its driver). Without either: the first
    compilable file with ASSUMED_FLAGS; None when the function's files are all headers of no known unit."""
    units = {unit.source.resolve(): unit for unit in compile_units(binary)}
    for name in files:
        unit = units.get(Path(name).resolve())
        if unit is None:
            continue
        return _unit_command(binary, unit)
    for name in files:  # a file no unit compiles as its own but one includes
        if (unit := including_unit(binary, Path(name))) is not None:
            return _unit_command(binary, unit)
    for name in files:
        path = Path(name)
        if path.suffix in C_SUFFIXES + CPP_SUFFIXES and path.is_file():
            compiler = "g++" if path.suffix in CPP_SUFFIXES else "gcc"
            return CompileCommand(compiler, ASSUMED_FLAGS, path, recorded=False)
    return None


def _unit_command(binary: Path, unit: CompileUnit) -> CompileCommand | None:
    command = producer_command(unit.producer)
    if command is None:
        return None  # not gcc: vectorize.py has no report to ask for
    compiler, flags = command
    directories = (unit.source.parent, unit.comp_dir, *line_table_directories(binary))
    includes = tuple(dict.fromkeys(f"-I{d}" for d in directories))
    return CompileCommand(compiler, flags + includes, unit.source, recorded=True)


def language_of(source: Path, command: CompileCommand | None) -> str:
    """tree-sitter's language for a source file: cpp or c (a .h file takes its compile unit's language)."""
    if source.suffix in CPP_SUFFIXES + CPP_HEADER_SUFFIXES:
        return "cpp"
    if source.suffix in C_SUFFIXES:
        return "c"
    return "cpp" if command is not None and Path(command.compiler).name.startswith("g++") else "c"
