"""gcc's vectorisation report on small sources the tests write: what was vectorised and why not."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from profiling.cpu import vectorize

pytestmark = pytest.mark.skipif(shutil.which("gcc") is None, reason="gcc is not installed")
FLAGS = ["-O3", "-march=x86-64-v3", "-g"]

PUSH = """\
void push(float *x, float *y, float *z, float *vx, float *vy, float *vz, const float *q, int n, float dt) {
    for (int i = 0; i < n; i++) {
        vx[i] += dt * q[i];
        vy[i] -= dt * q[i];
        vz[i] += dt * q[i] * 0.5f;
        x[i] += dt * vx[i];
        y[i] += dt * vy[i];
        z[i] += dt * vz[i];
    }
}
"""


def _report(tmp_path: Path, code: str) -> dict[int, vectorize.LoopReport]:
    source = tmp_path / "kernel.c"
    source.write_text(code)
    report = vectorize.vectorization_report(source, "gcc", FLAGS, tmp_path / "scratch")
    assert report is not None
    return report


def test_too_many_alias_checks_is_reported_as_aliasing(tmp_path: Path) -> None:
    """Seven pointers, six written: more run-time overlap checks than gcc's limit of 10; its closing reason names
    something else, the section says aliasing."""
    loop = _report(tmp_path, PUSH)[2]
    assert not loop.vectorized
    assert loop.reason == "possible_aliasing"


def test_restrict_lets_it_vectorise(tmp_path: Path) -> None:
    loop = _report(tmp_path, PUSH.replace("float *", "float *restrict "))[2]
    assert loop.vectorized and loop.vector_bytes == 32 and loop.reasons == []


def test_call_in_loop(tmp_path: Path) -> None:
    code = "#include <math.h>\nvoid f(const float *a, float *b, int n) {\n    for (int i = 0; i < n; i++)\n"
    code += "        b[i] = expf(a[i]);\n}\n"
    loop = _report(tmp_path, code)[3]
    assert not loop.vectorized and loop.reason == "function_call"


def test_conditional_counter(tmp_path: Path) -> None:
    code = ("void f(const float *x, float *out, int *count, int n) {\n    int k = 0;\n"
            "    for (int i = 0; i < n; i++)\n        if (x[i] > 0) out[k++] = x[i];\n    *count = k;\n}\n")
    loop = _report(tmp_path, code)[3]
    assert not loop.vectorized and loop.reason in ("loop_carried_scalar", "control_flow")


def test_other_files_and_repeated_reports_are_ignored(tmp_path: Path) -> None:
    first = _report(tmp_path, PUSH)
    assert _report(tmp_path, PUSH) == first  # gcc appends to an existing report file; ours is replaced
    text = "Analyzing loop at other.c:2\nother.c:2:5: optimized: loop vectorized using 32 byte vectors\n"
    assert vectorize.parse_vectorization_report(text, "kernel.c") == {}


def test_a_source_that_does_not_compile_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(vectorize.VectorizeError, match="kernel.c"):
        _report(tmp_path, "void f( {\n")


def test_other_compilers_get_none(tmp_path: Path) -> None:
    assert vectorize.vectorization_report(tmp_path / "k.c", "clang", FLAGS, tmp_path) is None
