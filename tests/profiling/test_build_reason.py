"""A failed build's reason leads with the line that names the cause, never the driver's closing summary."""

from __future__ import annotations

from pathlib import Path

from profiling.build import Build


def failed(log: str) -> str:
    return Build(ok=False, argv=(), directory=Path("."), log=log, duration_s=0.0).reason().splitlines()[0]


def test_a_link_failure_names_the_undefined_symbol() -> None:
    log = ("/usr/bin/ld: /tmp/ccX.o: in function `main':\nharness.c:(.text+0x1e1): undefined reference to `decay'\n"
           "collect2: error: ld returned 1 exit status")
    assert failed(log) == "build failed: harness.c:(.text+0x1e1): undefined reference to `decay'"


def test_a_compile_error_comes_first() -> None:
    log = ("kernel.c: In function 'decay':\nkernel.c:3:5: error: 'y' undeclared (first use in this function)\n"
           "kernel.c:9:1: error: expected ';' before '}' token\n")
    assert failed(log) == "build failed: kernel.c:3:5: error: 'y' undeclared (first use in this function)"


def test_a_missing_include_is_named() -> None:
    log = "kernel.c:1:10: fatal error: /task/fast.c: Permission denied\ncompilation terminated."
    assert "Permission denied" in failed(log)
