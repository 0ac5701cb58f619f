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


ESCAPE = """\
void escape(const double *cx, const double *cy, short *out, int n, int limit) {
    for (int p = 0; p < n; p++) {
        double x = 0.0, y = 0.0;
        int it = 0;
        for (; it < limit; ++it) {
            double xx = x * x, yy = y * y;
            if (xx + yy > 4.0)
                break;
            y = 2.0 * x * y + cy[p];
            x = xx - yy + cx[p];
        }
        out[p] = (short)it;
    }
}
"""


def test_a_loop_gcc_reports_at_its_first_statement_gets_the_verdict(tmp_path: Path) -> None:
    """Scenario (perf-ninja's compiler_intrinsics_4, a Mandelbrot escape loop): `for (; it < limit; ++it)` has no
    initialiser and gcc gives the loop the location of its body's first statement (line 6, not 5). Keyed by the
    header alone the hot lines of the loop carried no gcc verdict, and missed_vectorization could not fire on the
    kernel whose fix is vectorising across points."""
    from perfforge.records import HotLine
    from profiling.cpu import loops
    from profiling.cpu.profile import static_metrics

    report = _report(tmp_path, ESCAPE)
    assert 5 not in report and not report[6].vectorized
    hot = [HotLine(line=line, code="", share=0.4, dominant_stall="", metrics=[]) for line in (6, 9)]
    static_metrics(hot, loops.analyze_loops(ESCAPE, "escape", "c"), report)
    assert all(line.metric("gcc.vectorized") == 0.0 for line in hot)


DOT = "double dot(const double *a, const double *b, int n) {\n    double s = 0;\n    for (int i = 0; i < n; i++)\n"
DOT += "        s += a[i] * b[i];\n    return s;\n}\n"


def test_a_floating_point_sum_kept_in_order_is_a_fold_left_reduction(tmp_path: Path) -> None:
    """Scenario (Codee's PWR054, INAF's multiply_arrays v0): gcc -O3 says "loop vectorized" for a double dot
    product, but keeps the sum in source order (it may not reassociate it): the adds stay scalar. An integer sum
    and the same sum under -ffast-math are vectorised whole."""
    loop = _report(tmp_path, DOT)[3]
    assert loop.vectorized and loop.fold_left
    assert not _report(tmp_path, DOT.replace("double", "long"))[3].fold_left
    (tmp_path / "kernel.c").write_text(DOT)
    fast = vectorize.vectorization_report(tmp_path / "kernel.c", "gcc", [*FLAGS, "-ffast-math"], tmp_path / "fast")
    assert fast is not None and fast[3].vectorized and not fast[3].fold_left
