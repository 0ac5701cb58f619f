"""The vectoriser report of a compile unit that includes a project header from another directory (a CMake target's
include directories: gcc records no -I in DW_AT_producer): the directories the binary's line tables name are added
as include paths, so the unit compiles alone and its loops get gcc's verdicts (shortcut-comparison's step.cpp,
which includes step.hpp from src/main, got none before)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from profiling.cpu.compile_command import _parse_directories, compile_command, line_table_directories

pytestmark = pytest.mark.skipif(shutil.which("g++") is None or shutil.which("readelf") is None,
                                reason="needs g++ and readelf")

HEADER = "#pragma once\nextern \"C\" void step(float *r, const float *d, int n);\n" \
         "inline float twice(float x) { return 2 * x; }\n"
KERNEL = ("#include \"step.hpp\"\n"
          "void step(float *r, const float *d, int n) {\n"
          "    for (int i = 0; i < n; ++i) { float v = 1e30f; for (int k = 0; k < n; ++k) "
          "{ float z = d[n*i + k] + d[k]; v = v < z ? v : z; } r[i] = v; }\n}\n")
MAIN = ("#include \"step.hpp\"\n#include <vector>\n"
        "int main() { std::vector<float> d(64, 1.0f), r(8); step(r.data(), d.data(), 8); "
        "return twice(r[0]) > 100; }\n")


def _project(tmp_path: Path) -> tuple[Path, Path]:
    (tmp_path / "main").mkdir()
    (tmp_path / "kernel").mkdir()
    (tmp_path / "main" / "step.hpp").write_text(HEADER)
    (tmp_path / "main" / "main.cpp").write_text(MAIN)
    (tmp_path / "kernel" / "step.cpp").write_text(KERNEL)
    binary = tmp_path / "prog"
    subprocess.run(["g++", "-O3", "-g", "-I", str(tmp_path / "main"), "kernel/step.cpp", "main/main.cpp",
                    "-o", str(binary)], cwd=tmp_path, check=True)
    return binary, tmp_path / "kernel" / "step.cpp"


def test_a_header_of_another_directory_is_found_through_the_line_tables(tmp_path: Path) -> None:
    binary, unit = _project(tmp_path)
    directories = line_table_directories(binary)
    assert tmp_path / "main" in directories  # main.cpp's unit read code from step.hpp (twice)
    assert not any(str(d).startswith("/usr/") for d in directories)
    command = compile_command(binary, [str(unit)])
    assert command is not None and command.recorded
    assert f"-I{tmp_path / 'main'}" in command.flags
    alone = subprocess.run([command.compiler, *command.flags, "-fsyntax-only", str(command.unit)],
                           capture_output=True, text=True)
    assert alone.returncode == 0, alone.stderr
    without = [flag for flag in command.flags if flag != f"-I{tmp_path / 'main'}"]
    assert subprocess.run([command.compiler, *without, "-fsyntax-only", str(command.unit)],
                          capture_output=True).returncode != 0  # the twin: without it, no report


def test_directory_tables_of_dwarf_4_and_5(tmp_path: Path) -> None:
    (tmp_path / "inc").mkdir()
    text = ("\n The Directory Table (offset 0x22, lines 3, columns 1):\n  Entry\tName\n"
            f"  0\t(indirect line string, offset: 0x6e): {tmp_path}\n"
            "  1\t(indirect line string, offset: 0xd3): /usr/include/c++/12/bits\n"
            f"  2\t(indirect line string, offset: 0xd9): {tmp_path / 'inc'}\n\n"
            " The File Name Table (offset 0x30, lines 2, columns 2):\n"
            f"  1\t(indirect line string, offset: 0x1): {tmp_path / 'elsewhere'}\n"
            "\n The Directory Table (offset 0x1b):\n"
            f"  1\t{tmp_path / 'inc'}\n  2\t/usr/include\n  3\t{tmp_path / 'gone'}\n\n")
    assert _parse_directories(text) == [tmp_path, tmp_path / "inc"]


def test_relative_entries_are_taken_from_the_compile_directory(tmp_path: Path) -> None:
    (tmp_path / "main").mkdir()
    text = ("\n The Directory Table (offset 0x22, lines 2, columns 1):\n  Entry\tName\n"
            f"  0\t(indirect line string, offset: 0x6e): {tmp_path}\n"
            "  1\t(indirect line string, offset: 0x70): main\n\n")
    assert _parse_directories(text) == [tmp_path, tmp_path / "main"]
