"""The compile command of a function of a user's binary, read back from the flags gcc records in its debug
information (application mode asks gcc's vectoriser report with them)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from profiling.cpu.compile_command import ASSUMED_FLAGS, compile_command, language_of, producer_command

pytestmark = pytest.mark.skipif(shutil.which("gcc") is None or shutil.which("readelf") is None,
                                reason="needs gcc and readelf")
KERNEL_C = "float scale(float *x, int n) { float s = 0; for (int i = 0; i < n; i++) s += x[i]; return s; }\n"


def _object(tmp_path: Path, *flags: str) -> Path:
    (tmp_path / "k.c").write_text(KERNEL_C)
    subprocess.run(["gcc", *flags, "-c", "k.c", "-o", "k.o"], cwd=tmp_path, check=True)
    return tmp_path / "k.o"


def test_the_flags_the_binary_records_are_replayed(tmp_path: Path) -> None:
    """gcc records code-generation switches, not -D or -I: the unit's directory and compile directory are added as
    include paths, debug switches dropped, the standard made explicit."""
    binary = _object(tmp_path, "-O3", "-march=x86-64-v3", "-ffast-math", "-g", "-DUNUSED=1")
    command = compile_command(binary, [str(tmp_path / "k.c")])
    assert command is not None and command.recorded and command.unit == tmp_path / "k.c"
    assert Path(command.compiler).name.startswith("gcc")
    assert {"-O3", "-march=x86-64-v3", "-ffast-math", "-std=gnu17", f"-I{tmp_path}"} <= set(command.flags)
    assert not any(flag.startswith(("-g", "-D")) for flag in command.flags)
    assert "DW_AT_producer" in command.describe()


def test_a_binary_without_debug_information_gets_the_assumed_flags(tmp_path: Path) -> None:
    binary = _object(tmp_path, "-O3")
    command = compile_command(binary, [str(tmp_path / "k.c")])
    assert command is not None and not command.recorded and command.flags == ASSUMED_FLAGS
    assert "assumed" in command.describe()
    (tmp_path / "k.h").write_text("static inline int f(int x) { return x; }\n")
    assert compile_command(binary, [str(tmp_path / "k.h")]) is None  # a header of no known unit: no report


@pytest.mark.parametrize(("producer", "expected"), [
    ("GNU C++17 12.2.0 -march=x86-64-v3 -g -O3 -std=c++17 -ffast-math", ("g++", ("-march=x86-64-v3", "-O3",
                                                                               "-std=c++17", "-ffast-math"))),
    ("GNU C11 7.5.0 -mtune=generic -O2 -gdwarf-4 -fopenmp", ("gcc", ("-std=gnu11", "-mtune=generic", "-O2",
                                                                     "-fopenmp"))),
    ("clang version 15.0.7", None),
    ("GNU GIMPLE 12.2.0 -O3 -flto", None),
])
def test_producer_strings(producer: str, expected: tuple[str, tuple[str, ...]] | None) -> None:
    found = producer_command(producer)
    if expected is None:
        assert found is None
    else:
        assert found is not None and (Path(found[0]).name.split("-")[0], found[1]) == expected


def test_a_header_takes_its_units_language() -> None:
    assert language_of(Path("life.hpp"), None) == "cpp" and language_of(Path("k.c"), None) == "c"
    assert language_of(Path("solution.h"), None) == "c"
