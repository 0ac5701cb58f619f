"""Small real CPU tasks written by the tests: a matrix-vector product whose original walks the matrix by column
(cache-unfriendly) and whose fast version walks it by row."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

HARNESS_C = """\
#include "perfforge_harness.h"
void matvec(int n, const float *m, const float *w, float *out);

int main(int argc, char **argv) {
    pf_run r;
    pf_init(&r, argc, argv);
    int n = (int)pf_param_int(&r, "n", 64);
    pf_buf *m = pf_input(&r, "m", PF_F32, (size_t)n * n, -1.0, 1.0);
    pf_buf *w = pf_input(&r, "w", PF_F32, (size_t)n, -1.0, 1.0);
    pf_buf *out = pf_output(&r, "out", PF_F32, (size_t)n);
    while (pf_begin(&r)) {
        matvec(n, (const float *)pf_ptr(m), (const float *)pf_ptr(w), (float *)pf_ptr(out));
        pf_end(&r);
    }
    return pf_finish(&r);
}
"""

SLOW_C = """\
void matvec(int n, const float *m, const float *w, float *out) {
    for (int i = 0; i < n; i++) out[i] = 0.0f;
    for (int j = 0; j < n; j++)
        for (int i = 0; i < n; i++)
            out[i] += m[(long)i * n + j] * w[j];
}
"""

FAST_C = """\
void matvec(int n, const float *m, const float *w, float *out) {
    for (int i = 0; i < n; i++) {
        float acc = 0.0f;
        const float *row = m + (long)i * n;
        for (int j = 0; j < n; j++) acc += row[j] * w[j];
        out[i] = acc;
    }
}
"""

TASK_TOML = """\
name = "matvec_colwalk"
target = "cpu"
source = "kernel.c"
kernel = "matvec"
harness = "harness.c"
reference = "fast.c"
bottleneck = "cache_miss_bound"
description = "matrix-vector product walking the matrix by column"

[build]
compiler = "gcc"
flags = ["-O2", "-g"]

[[outputs]]
name = "out"
dtype = "float32"

[[configs]]
name = "small"
params = { n = 48 }

[[configs]]
name = "default"
params = { n = 1536 }
default = true

[work]
flops = "2 * n * n"
bytes = "4 * n * n + 8 * n"

[validate]
seeds = 5
calls = 2
warmup = 1
trials = 7
rounds = 4
timeout_s = 30
"""


def rows_harness(function: str, default_n: int) -> str:
    """A harness for `void FUNCTION(const float *a, float *out, int n)`: an n x n input, n outputs."""
    return f"""\
#include "perfforge_harness.h"
void {function}(const float *a, float *out, int n);
int main(int argc, char **argv) {{
    pf_run r;
    pf_init(&r, argc, argv);
    int n = (int)pf_param_int(&r, "n", {default_n});
    pf_buf *a = pf_input(&r, "a", PF_F32, (size_t)n * n, -1.0, 1.0);
    pf_buf *out = pf_output(&r, "out", PF_F32, (size_t)n);
    while (pf_begin(&r)) {{
        {function}((const float *)pf_ptr(a), (float *)pf_ptr(out), n);
        pf_end(&r);
    }}
    return pf_finish(&r);
}}
"""


def write_task(root: Path, *, kernel: str = SLOW_C, harness: str = HARNESS_C, toml: str = TASK_TOML,
               fast: str = FAST_C) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / "kernel.c").write_text(kernel)
    (root / "harness.c").write_text(harness)
    (root / "fast.c").write_text(fast)
    (root / "task.toml").write_text(toml)
    return root


@pytest.fixture
def cpu_task_dir(tmp_path: Path) -> Path:
    return write_task(tmp_path / "task")


ROW_SUM_TRITON = Path(__file__).resolve().parents[2] / "examples" / "tasks" / "triton" / "row_sum_strided"


@pytest.fixture
def small_row_sum(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The Triton example row_sum_strided with small configurations only, run by Triton's interpreter on the CPU
    (the served Python judge's tests and its red team)."""
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    directory = tmp_path / "row_sum_small"
    shutil.copytree(ROW_SUM_TRITON, directory)
    toml = (directory / "task.toml").read_text()
    toml = toml.replace("params = { m = 8192, n = 8192 }", "params = { m = 48, n = 160 }")
    (directory / "task.toml").write_text(toml.replace('name = "row_sum_strided"', 'name = "row_sum_small"'))
    return directory
