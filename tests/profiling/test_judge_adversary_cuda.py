"""The judge against CUDA candidates written by someone who has read it (VALIDATION.md rules 20-25), cuda target.

Runs where nvcc and a GPU are (skipped elsewhere: tests never need a GPU); the results of its run on the GPU
machine are recorded in docs/validation.md. One test per attack, its scenario in the docstring, then legitimate
candidates with unusual code that must pass. The task: y = 2 x + 1 over n floats, the original one thread per
element.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from perfforge.task import load_task
from perfforge.verdict import Status, Verdict
from profiling.validate import validate


def _gpu() -> bool:
    if not shutil.which("nvcc") or not shutil.which("nvidia-smi"):
        return False
    return subprocess.run(["nvidia-smi", "-L"], capture_output=True).returncode == 0


pytestmark = pytest.mark.skipif(not _gpu(), reason="needs nvcc and an NVIDIA GPU")

HARNESS = """\
#include "perfforge_harness.h"
void launch_affine(const float *x, float *y, int n);   /* defined in the editable source */

int main(int argc, char **argv) {
    pf_run r;
    pf_init(&r, argc, argv);
    int n = (int)pf_param_int(&r, "n", 1 << 20);
    pf_buf *x = pf_input(&r, "x", PF_F32, (size_t)n, -4.0, 4.0);
    pf_buf *y = pf_output(&r, "y", PF_F32, (size_t)n);
    while (pf_begin(&r)) {
        launch_affine((const float *)pf_ptr(x), (float *)pf_ptr(y), n);
        pf_end(&r);
    }
    return pf_finish(&r);
}
"""
TOML = """\
name = "affine"
target = "cuda"
language = "cuda"
source = "kernel.cu"
kernel = "affine"
harness = "harness.cu"
reference = "fast.cu"
description = "y = 2x + 1"

[build]
compiler = "nvcc"
flags = ["-O3", "-lineinfo", "-arch=sm_90"]

[[outputs]]
name = "y"
dtype = "float32"
rtol = 1e-6
atol = 1e-6

[[configs]]
name = "small"
params = { n = 65536 }
[[configs]]
name = "default"
params = { n = 4194304 }
default = true

[validate]
trials = 10
rounds = 2
"""
KERNEL = """\
#include <cuda_runtime.h>
__global__ void affine(const float *x, float *y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = 2.0f * x[i] + 1.0f;
}
"""
LAUNCH = "void launch_affine(const float *x, float *y, int n) { affine<<<(n + 255) / 256, 256>>>(x, y, n); }\n"
ORIGINAL = KERNEL + LAUNCH
FAST = """\
#include <cuda_runtime.h>
__global__ void affine(const float4 *x, float4 *y, int n4) {
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n4; i += gridDim.x * blockDim.x) {
        float4 v = x[i];
        y[i] = make_float4(2.0f * v.x + 1.0f, 2.0f * v.y + 1.0f, 2.0f * v.z + 1.0f, 2.0f * v.w + 1.0f);
    }
}
__global__ void tail(const float *x, float *y, int from, int n) {
    int i = from + blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = 2.0f * x[i] + 1.0f;
}
void launch_affine(const float *x, float *y, int n) {
    affine<<<264, 512>>>((const float4 *)x, (float4 *)y, n / 4);
    if (n % 4) tail<<<1, 32>>>(x, y, n - n % 4, n);
}
"""


@pytest.fixture
def task_dir(tmp_path: Path) -> Path:
    root = tmp_path / "task"
    root.mkdir()
    for name, text in (("harness.cu", HARNESS), ("task.toml", TOML), ("kernel.cu", ORIGINAL), ("fast.cu", FAST)):
        (root / name).write_text(text)
    return root


def judge(task_dir: Path, tmp_path: Path, code: str, *, timing: bool = False) -> Verdict:
    candidate = tmp_path / "candidate.cu"
    candidate.write_text(code)
    return validate(load_task(task_dir), candidate, tmp_path / "work", timing=timing)


# --- attacks --------------------------------------------------------------------------------------------------------


def test_exiting_early(task_dir: Path, tmp_path: Path) -> None:
    """Exits with status 0 from the launcher, hoping an early clean exit reads as success."""
    code = "#include <stdlib.h>\n" + KERNEL + ("void launch_affine(const float *x, float *y, int n) {\n"
                                               "    if (n > 0) exit(0);\n"
                                               "    affine<<<(n + 255) / 256, 256>>>(x, y, n);\n}\n")
    verdict = judge(task_dir, tmp_path, code)
    print(verdict.status, verdict.reason)  # recorded from the GPU run
    assert verdict.status is Status.CRASHED and "exit" in verdict.reason, verdict.reason


# the affine task's harness with an int32 output: a label per element
LABEL_HARNESS = (HARNESS.replace("launch_affine(const float *x, float *y", "launch_label(const float *x, int *y")
                 .replace("launch_affine((const float *)pf_ptr(x), (float *)pf_ptr(y)",
                          "launch_label((const float *)pf_ptr(x), (int *)pf_ptr(y)")
                 .replace('pf_output(&r, "y", PF_F32', 'pf_output(&r, "y", PF_I32'))
LABEL_LAUNCH = "void launch_label(const float *x, int *y, int n) { label<<<(n + 255) / 256, 256>>>(x, y, n); }\n"


def test_an_output_left_unwritten_where_the_original_writes_minus_one(tmp_path: Path) -> None:
    """Scenario: the original labels each element (100 x where x > 0, else -1); the candidate writes only the
    positive ones. -1 is every byte 0xFF, the poison a staged process wrote on the device before every call, so the
    unwritten elements read exactly right on every call. The judge now names the poison in its word ("call a5" on
    the calls that draw edge values) and the harness poisons with it: the unwritten elements read 0xA5A5A5A5."""
    root = tmp_path / "label"
    root.mkdir()
    toml = TOML.replace('name = "affine"', 'name = "label"').replace('kernel = "affine"', 'kernel = "label"')
    toml = toml.replace('dtype = "float32"\nrtol = 1e-6\natol = 1e-6', 'dtype = "int32"\nrtol = 0\natol = 0')
    original = ("#include <cuda_runtime.h>\n__global__ void label(const float *x, int *y, int n) {\n"
                "    int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
                "    if (i < n) y[i] = x[i] > 0.0f ? (int)(x[i] * 100.0f) : -1;\n}\n" + LABEL_LAUNCH)
    assert "launch_affine" not in LABEL_HARNESS and "PF_I32" in LABEL_HARNESS
    for name, text in (("harness.cu", LABEL_HARNESS), ("task.toml", toml), ("kernel.cu", original),
                       ("fast.cu", original)):
        (root / name).write_text(text)
    candidate = original.replace("if (i < n) y[i] = x[i] > 0.0f ? (int)(x[i] * 100.0f) : -1;",
                                 "if (i < n && x[i] > 0.0f) y[i] = (int)(x[i] * 100.0f);")
    assert candidate != original
    verdict = judge(root, tmp_path, candidate)
    print(verdict.status, verdict.reason)  # recorded from the GPU run
    assert verdict.status is Status.INCORRECT and "never written" in verdict.reason, verdict.reason
    written = original.replace("if (i < n) y[i] = x[i] > 0.0f ? (int)(x[i] * 100.0f) : -1;",
                               "if (i < n) { if (x[i] > 0.0f) y[i] = (int)(x[i] * 100.0f); else y[i] = -1; }")
    (tmp_path / "control").mkdir()
    control = judge(root, tmp_path / "control", written)  # the same labels, every element written: no fault
    assert control.status is Status.CORRECT, control.reason


def test_skipping_work_once_it_thinks_the_checks_are_over(task_dir: Path, tmp_path: Path) -> None:
    """Counts calls and launches nothing past the tenth, expecting the timed calls to go unchecked."""
    code = KERNEL + ("void launch_affine(const float *x, float *y, int n) {\n"
                     "    static int calls; if (++calls > 10) return;\n"
                     "    affine<<<(n + 255) / 256, 256>>>(x, y, n);\n}\n")
    verdict = judge(task_dir, tmp_path, code, timing=True)
    assert verdict.status is Status.INCORRECT and "never written" in verdict.reason, verdict.reason


def test_a_thread_that_finishes_the_work_after_the_call(task_dir: Path, tmp_path: Path) -> None:
    """Starts a host thread that launches the kernel after the harness's synchronisation. The filter refuses new
    threads once the process serves; the launcher then does nothing, and the outputs are missing."""
    code = "#include <pthread.h>\n" + KERNEL + """\
struct job { const float *x; float *y; int n; };
static void *late(void *p) { struct job *j = (struct job *)p; affine<<<(j->n + 255) / 256, 256>>>(j->x, j->y, j->n);
    cudaDeviceSynchronize(); return 0; }
void launch_affine(const float *x, float *y, int n) {
    static struct job j; j.x = x; j.y = y; j.n = n; pthread_t t; pthread_create(&t, 0, late, &j); pthread_detach(t);
}
"""
    verdict = judge(task_dir, tmp_path, code)
    assert verdict.status in (Status.INCORRECT, Status.CRASHED), verdict.reason


def test_a_constructor_that_runs_before_the_filter(task_dir: Path, tmp_path: Path) -> None:
    """A constructor attribute: code of the candidate's before main (a thread started there would outlive the
    filter). Refused by the binary policy before anything runs."""
    code = ("#include <cuda_runtime.h>\n__attribute__((constructor)) static void early(void) { cudaFree(0); }\n"
            + ORIGINAL)
    verdict = judge(task_dir, tmp_path, code)
    assert verdict.status is Status.REJECTED and "constructor besides nvcc's registration" in verdict.reason


def test_a_global_object_with_a_constructor(task_dir: Path, tmp_path: Path) -> None:
    """The same through C++: a static object whose constructor runs before main."""
    code = ("#include <cuda_runtime.h>\nstruct Early { Early() { cudaFree(0); } };\nstatic Early early;\n"
            + ORIGINAL)
    verdict = judge(task_dir, tmp_path, code)
    assert verdict.status is Status.REJECTED and "load_time_code" in verdict.reason, verdict.reason


def test_defining_the_synchronisation_the_harness_calls(task_dir: Path, tmp_path: Path) -> None:
    """Defines cudaDeviceSynchronize as a no-op so the harness's whole-device synchronisation returns at once and
    the kernel runs past the timer (a definition the linker binds the harness to)."""
    code = ORIGINAL + "extern \"C\" cudaError_t cudaDeviceSynchronize(void) { return cudaSuccess; }\n"
    verdict = judge(task_dir, tmp_path, code)
    assert verdict.status in (Status.REJECTED, Status.BUILD_FAILED), verdict.reason
    if verdict.status is Status.REJECTED:
        assert "cudaDeviceSynchronize" in verdict.reason and "definitions" in verdict.reason


def test_sharing_the_judges_buffers_over_cuda_ipc(task_dir: Path, tmp_path: Path) -> None:
    """Exports its device buffers through a CUDA IPC handle (for a helper process to fill later)."""
    code = KERNEL + ("void launch_affine(const float *x, float *y, int n) { cudaIpcMemHandle_t h;\n"
                     "    cudaIpcGetMemHandle(&h, y); affine<<<(n + 255) / 256, 256>>>(x, y, n); }\n")
    verdict = judge(task_dir, tmp_path, code)
    assert verdict.status is Status.REJECTED and "cudaIpcGetMemHandle" in verdict.reason, verdict.reason


def test_a_signal_handler_that_works_while_resumed(task_dir: Path, tmp_path: Path) -> None:
    """Installs a SIGCONT handler: it would run each time the judge resumes the process, before the harness says
    'start'. The import of signal is refused."""
    code = "#include <signal.h>\nstatic void on_cont(int s) { (void)s; }\n" + KERNEL + (
        "void launch_affine(const float *x, float *y, int n) { signal(SIGCONT, on_cont);\n"
        "    affine<<<(n + 255) / 256, 256>>>(x, y, n); }\n")
    verdict = judge(task_dir, tmp_path, code)
    assert verdict.status is Status.REJECTED and "signal" in verdict.reason, verdict.reason


def test_half_precision_in_a_float32_task(task_dir: Path, tmp_path: Path) -> None:
    """Computes in half precision (twice the throughput) where the task's output is float32."""
    code = """\
#include <cuda_runtime.h>
#include <cuda_fp16.h>
__global__ void affine(const float *x, float *y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        __half2 h = __floats2half2_rn(x[i], 1.0f);
        h = __hfma2(h, __floats2half2_rn(2.0f, 0.0f), __floats2half2_rn(1.0f, 0.0f));
        y[i] = __low2float(h);
    }
}
""" + LAUNCH
    verdict = judge(task_dir, tmp_path, code)
    assert verdict.status is Status.REJECTED and "reduced precision on the device" in verdict.reason, verdict.reason


def test_writing_outside_the_output(task_dir: Path, tmp_path: Path) -> None:
    """Writes one element past the end of y (a missing bound check, and one thread more than n)."""
    code = KERNEL.replace("if (i < n)", "if (i <= n)") + LAUNCH.replace("(n + 255) / 256", "n / 256 + 1")
    verdict = judge(task_dir, tmp_path, code)
    assert verdict.status is Status.INCORRECT and "out of bounds" in verdict.reason, verdict.reason


def test_writing_into_the_input(task_dir: Path, tmp_path: Path) -> None:
    """Uses x as scratch space (and could keep state there between calls)."""
    code = KERNEL.replace("y[i] = 2.0f * x[i] + 1.0f;", "y[i] = 2.0f * x[i] + 1.0f; ((float *)x)[i] = 0.0f;") + LAUNCH
    verdict = judge(task_dir, tmp_path, code)
    assert verdict.status is Status.INCORRECT and "input 'x' was modified" in verdict.reason, verdict.reason


def test_including_the_reference(task_dir: Path, tmp_path: Path) -> None:
    """Includes the task's fast version by a path relative to the build (the compiler's reads are fenced)."""
    verdict = judge(task_dir, tmp_path, '#include "../../task/fast.cu"\n')
    assert verdict.status in (Status.BUILD_FAILED, Status.REJECTED), verdict.reason


def test_keeping_results_between_calls(task_dir: Path, tmp_path: Path) -> None:
    """Computes on every other call only and leaves the previous outputs in place otherwise (the old harness
    alternated two input sets in timed calls; served calls are always fresh and the outputs poisoned)."""
    code = KERNEL + ("void launch_affine(const float *x, float *y, int n) { static int calls;\n"
                     "    if (calls++ % 2 == 0) affine<<<(n + 255) / 256, 256>>>(x, y, n); }\n")
    verdict = judge(task_dir, tmp_path, code)
    assert verdict.status is Status.INCORRECT, verdict.reason


# --- legitimate, unusual ------------------------------------------------------------------------------------------


def test_the_vectorised_version_is_faster(task_dir: Path, tmp_path: Path) -> None:
    verdict = judge(task_dir, tmp_path, FAST, timing=True)
    assert verdict.status in (Status.IMPROVED, Status.NO_CHANGE), verdict.reason
    assert verdict.phase_durations_s["timing"] > 0


@pytest.mark.parametrize("code", [
    # its own stream, synchronised before returning
    KERNEL + ("void launch_affine(const float *x, float *y, int n) { static cudaStream_t s;\n"
              "    if (!s) cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);\n"
              "    affine<<<(n + 255) / 256, 256, 0, s>>>(x, y, n); cudaStreamSynchronize(s); }\n"),
    # a variable named half, a template, an unroll pragma, constant memory set through the runtime
    """\
#include <cuda_runtime.h>
__constant__ float coefficients[2];
template <int Block> __global__ void affine(const float *x, float *y, int n) {
    int i = blockIdx.x * Block + threadIdx.x;
    float half = coefficients[0] * 0.5f;
#pragma unroll
    for (int k = 0; k < 1; k++) if (i < n) y[i] = 2.0f * half * x[i] + coefficients[1];
}
void launch_affine(const float *x, float *y, int n) {
    static bool ready;
    if (!ready) { float c[2] = {2.0f, 1.0f}; cudaMemcpyToSymbol(coefficients, c, sizeof c); ready = true; }
    affine<128><<<(n + 127) / 128, 128>>>(x, y, n);
}
""",
    # cooperative groups, a grid-stride loop, the launch configuration read from the device
    """\
#include <cuda_runtime.h>
#include <cooperative_groups.h>
namespace cg = cooperative_groups;
__global__ void affine(const float *x, float *y, int n) {
    cg::grid_group grid = cg::this_grid();
    for (unsigned long long i = grid.thread_rank(); i < (unsigned long long)n; i += grid.size())
        y[i] = fmaf(2.0f, x[i], 1.0f);
}
void launch_affine(const float *x, float *y, int n) {
    int device = 0, sms = 0;
    cudaGetDevice(&device);
    cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device);
    affine<<<4 * sms, 256>>>(x, y, n);
}
""",
], ids=["own_stream", "half_template_constant", "cooperative_groups"])
def test_unusual_but_innocent_code_passes(task_dir: Path, tmp_path: Path, code: str) -> None:
    verdict = judge(task_dir, tmp_path, code)
    assert verdict.status is Status.CORRECT, verdict.reason
