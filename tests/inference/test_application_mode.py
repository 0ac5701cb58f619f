"""`perfforge optimize --command`: profile an application, rank its functions by cost, and optimise the first one
with a targeted bottleneck that has a task (as IntelliPerf picks its kernel), against a scripted endpoint."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.inference.conftest import ScriptedEndpoint, invoke, read_json, write_cpu_task
from tests.profiling.conftest import FAST_C, SLOW_C

pytestmark = pytest.mark.usefixtures("no_retry_wait")

# The application: matvec (the task's slow kernel, walking the matrix by column) dominates; a cheap helper that
# fills the inputs comes second and has no task.
APP_C = SLOW_C + """
#include <stdio.h>
#include <stdlib.h>
void fill(float *x, long count) { for (long i = 0; i < count; i++) x[i] = (float)(i % 7) - 3.0f; }
int main(void) {
    int n = 700;
    float *m = malloc(sizeof(float) * n * n), *w = malloc(sizeof(float) * n), *out = malloc(sizeof(float) * n);
    fill(m, (long)n * n);
    fill(w, n);
    for (int r = 0; r < 3; r++) matvec(n, m, w, out);
    printf("%f\\n", out[n / 2]);
    return 0;
}
"""

FAST_ANSWER = f"Hypothesis: read each row of m contiguously.\nEvidence: cache_miss_bound at line 5.\n```c\n{FAST_C}```"


@pytest.fixture
def application(tmp_path: Path) -> tuple[Path, Path]:
    """(the application's directory holding ./app built with -g, the directory of tasks)."""
    app_dir = tmp_path / "app"
    app_dir.mkdir()
    (app_dir / "app.c").write_text(APP_C)
    subprocess.run(["gcc", "-O1", "-g", "-o", "app", "app.c"], cwd=app_dir, check=True)
    tasks = tmp_path / "tasks"
    write_cpu_task(tasks / "matvec")
    return app_dir, tasks


def test_the_costliest_function_with_a_bottleneck_and_a_task_is_optimised(
        application: tuple[Path, Path], scripted_endpoint: ScriptedEndpoint, tmp_path: Path) -> None:
    app_dir, tasks = application
    scripted_endpoint.script([FAST_ANSWER])
    out = tmp_path / "out"
    code, stdout, stderr = invoke(["optimize", "--command", "./app", "--workdir", str(app_dir), "--target", "cpu",
                                   "--tasks", str(tasks), "--url", scripted_endpoint.base_url, "--model",
                                   scripted_endpoint.model, "--candidates", "1", "--rounds", "1", "--out", str(out),
                                   "--no-profile-candidates"])
    assert code == 0, stderr
    assert "kernel 1: matvec" in stderr and f"optimising matvec with task {tasks / 'matvec'}" in stderr
    report = read_json(out / "report.json")
    assert report["kernel"] == "matvec" and report["outcome"] == "improved", report["attempts"]


def test_a_formula_no_ranked_function_shows_is_an_error_line(
        application: tuple[Path, Path], scripted_endpoint: ScriptedEndpoint, tmp_path: Path) -> None:
    app_dir, tasks = application
    code, _, stderr = invoke(["optimize", "--command", "./app", "--workdir", str(app_dir), "--target", "cpu",
                              "--tasks", str(tasks), "--formula", "atomic_contention", "--url",
                              scripted_endpoint.base_url, "--model", scripted_endpoint.model, "--out",
                              str(tmp_path / "out"), "--top", "2"])
    assert code == 2
    assert "none of the 2 costliest kernels is diagnosed with atomic_contention" in stderr
    assert scripted_endpoint.completions == []
