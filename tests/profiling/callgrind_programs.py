"""Small C programs profiled as a user's application is (`perfforge profile --application`, callgrind), for the
tests of the CPU diagnoses that read facts a synthetic Profile cannot carry (dependence chains, indexed updates,
structure layouts)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from perfforge.records import Profile
from profiling.application import profile_application

needs_tools = pytest.mark.skipif(shutil.which("valgrind") is None or shutil.which("gcc") is None,
                                 reason="needs gcc and valgrind")


def profile_function(tmp_path: Path, code: str, function: str, *, cpp: bool = False) -> Profile:
    """`code` (C, or C++ with `cpp`) built with -O2 -g and profiled; the Profile of `function` (a C++ method by its
    last name) among the two costliest."""
    source = "prog.cpp" if cpp else "prog.c"
    (tmp_path / source).write_text(code)
    subprocess.run(["g++" if cpp else "gcc", "-O2", "-g", source, "-o", "prog"], cwd=tmp_path, check=True)
    profiles = profile_application("./prog", tmp_path, target="cpu", top=2, work_dir=tmp_path / "work")
    return next(p for p in profiles if p.kernel.split("(")[0].split("::")[-1] == function)


def diagnosis_names(profile: Profile) -> list[str]:
    return [d.name for d in profile.diagnoses]
