"""Whole-application mode on the CPU: callgrind ranks the functions of a real program, the top ones are profiled."""

from __future__ import annotations

import subprocess
from pathlib import Path

from perfforge.cli import main
from profiling.application import profile_application, rank_functions

APP_C = """\
#include <stdio.h>
#include <stdlib.h>
static float strided(const float *a, int n) {
    float s = 0;
    for (int r = 0; r < 200; r++)
        for (int i = 0; i < n; i += 16)
            s += a[i] * r;
    return s;
}
static float once(const float *a, int n) {
    float s = 0;
    for (int i = 0; i < n; i++) s += a[i];
    return s;
}
int main(void) {
    int n = 1 << 19;
    float *a = malloc(n * sizeof(float));
    for (int i = 0; i < n; i++) a[i] = (float)(i % 7);
    printf("%f %f\\n", strided(a, n), once(a, n));
    return 0;
}
"""


def _app(tmp_path: Path) -> Path:
    (tmp_path / "app.c").write_text(APP_C)
    subprocess.run(["gcc", "-O1", "-g", "-fno-inline", "app.c", "-o", "app"], cwd=tmp_path, check=True)
    return tmp_path


def test_ranks_functions_and_profiles_the_costliest(tmp_path: Path) -> None:
    app = _app(tmp_path)
    profiles = profile_application("./app", app, target="cpu", top=2, work_dir=tmp_path / "work")
    assert [p.kernel for p in profiles][0] == "strided"
    strided = profiles[0]
    assert strided.counter("Ir") > 0 and strided.hot_lines and strided.hot_lines[0].line == 7
    assert "ranked by instructions" in strided.timing.method
    assert any(d.name == "cache_miss_bound" for d in strided.diagnoses)  # a 64-byte stride misses on every load


def test_ranking_skips_inclusive_call_costs() -> None:
    text = "events: Ir\nfl=a.c\nfn=main\n1 10\ncfn=f\ncalls=1 2\n2 1000\nfn=f\n2 1000\n"
    ranked = rank_functions(text)
    assert [(f.name, f.self_instructions) for f in ranked] == [("f", 1000.0), ("main", 10.0)]


def test_cli_profiles_an_application(tmp_path: Path, capsys) -> None:
    app = _app(tmp_path)
    assert main(["profile", "--command", "./app", "--workdir", str(app), "--target", "cpu", "--top", "1",
                 "--out", str(tmp_path / "out")]) == 0
    out = capsys.readouterr().out
    assert "strided (cpu)" in out and "profile-0-strided.json" in out


def test_cli_refuses_task_and_command_together(tmp_path: Path, capsys) -> None:
    assert main(["profile", str(tmp_path), "--command", "./app"]) == 2
    assert "either a task directory or --command" in capsys.readouterr().err
