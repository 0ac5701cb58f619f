"""Static checks: each names the hack it stops; comments never trip them; what the original does is allowed."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from perfforge.task import Task, load_task
from profiling.static_checks import STATIC_CHECKS, run_static_checks
from tests.profiling.conftest import SLOW_C, write_task

CUDA_TOML = """\
name = "scale"
target = "cuda"
source = "kernel.cu"
kernel = "scale"
harness = "harness.cu"
reference = "fast.cu"
[[outputs]]
name = "y"
dtype = "float32"
"""
CUDA_KERNEL = """\
__global__ void scale(const float *x, float *y, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = 2.0f * x[i]; }
void launch_scale(const float *x, float *y, int n) { scale<<<(n + 255) / 256, 256>>>(x, y, n); }
"""
TRITON_TOML = CUDA_TOML.replace('target = "cuda"', 'target = "triton"').replace("kernel.cu", "kernel.py").replace(
    "harness.cu", "harness.py").replace("fast.cu", "fast.py")
TRITON_KERNEL = """\
import triton
import triton.language as tl

@triton.jit
def scale(x, y, n, BLOCK: tl.constexpr):
    i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(y + i, 2.0 * tl.load(x + i, mask=i < n), mask=i < n)

def launch(x, y, n):
    scale[(triton.cdiv(n, 256),)](x, y, n, BLOCK=256)
"""


def _task(tmp_path: Path, toml: str, kernel: str, names: tuple[str, str, str]):
    root = tmp_path / "t"
    root.mkdir()
    (root / "task.toml").write_text(toml)
    for name, text in zip(names, (kernel, "", kernel), strict=True):
        (root / name).write_text(text)
    return load_task(root)


def _checks(findings) -> set[str]:
    return {f.check for f in findings}


def test_every_check_names_the_hack_it_stops() -> None:
    assert STATIC_CHECKS and all(check.stops and check.targets for check in STATIC_CHECKS.values())


def test_comments_do_not_trip_checks(tmp_path: Path) -> None:
    task = load_task(write_task(tmp_path / "task"))
    code = "// faster than cblas_sgemv(...), no fopen( here\n/* _Float16 would be wrong */\n" + SLOW_C
    assert run_static_checks(code, task) == []


def test_a_library_routine_is_found_however_it_is_called(tmp_path: Path) -> None:
    """Sixteenth red team: `(qsort)(y, n, sizeof *y, cmp)` sorted a sort task's data through libc, 4.62x improved;
    the pattern wanted `qsort(`. Any use of the name counts now (a call behind parentheses, its address)."""
    task = load_task(write_task(tmp_path / "task"))
    for use in ("(qsort)(x, 4, sizeof *x, cmp);", "void (*sorter)(void) = (void (*)(void))&qsort;",
                "qsort (x, 4, sizeof *x, cmp);"):
        code = SLOW_C + "static int cmp(const void *a, const void *b) { return 0; }\n" \
            "void g(float *x) { " + use + " }\n"
        assert "library_fallback" in _checks(run_static_checks(code, task)), use
    assert run_static_checks(SLOW_C + "static int qsort_calls;  /* not qsort: a name of its own */\n", task) == []


def test_a_line_directive_is_refused(tmp_path: Path) -> None:
    """Sixteenth red team: `#line 1 "/usr/include/fastmath_helpers.h"` before `#pragma GCC optimize("Ofast")` made
    the binary policy, which reads the candidate's own lines by the preprocessor's markers, skip the pragma, and it
    took effect (decay_loop_invariant read correct). A line directive or a GNU line marker is refused."""
    task = load_task(write_task(tmp_path / "task"))
    for directive in ('#line 1 "/usr/include/x.h"', "  # line 40", '# 1 "/usr/include/stdio.h" 3',
                      # seventeenth red team: the `#` as the digraph `%:`, or the directive split by a
                      # backslash-newline (with blanks before the newline too), hid Ofast again: 6.1x improved on a
                      # row sum whose same code without it read 1.02x; the trigraph `??=` (-std=c11 reads it)
                      '%:line 1 "/usr/include/stdio.h"', '#\\\nline 1 "/usr/include/stdio.h"',
                      '%\\  \n: 1 "/usr/include/stdio.h"', "#li\\\nne 3", '??=line 1 "/usr/include/x.h"'):
        assert _checks(run_static_checks(directive + "\n" + SLOW_C, task)) == {"line_directive"}, directive
    # a splice elsewhere, a digraph in code, a `%:` in a format string: no directive
    assert run_static_checks("#define TWICE(x) \\\n    ((x) + (x))\nstatic const char *f = \"%d\";\n" + SLOW_C,
                             task) == []
    assert run_static_checks("#include <math.h>\n#if 1\n#define N 4\n#endif\n" + SLOW_C, task) == []


def word_checked(task: Task) -> Task:
    """The C task as a target without a binary policy (hip, triton), where the source word checks still run; a cpu
    or cuda candidate's object is read instead (test_judge_adversary.py, test_cuda_binary_policy.py)."""
    return dataclasses.replace(task, target="hip")


def test_what_the_original_does_is_allowed(tmp_path: Path) -> None:
    original = '#include <stdlib.h>\nstatic int verbose(void) { return getenv("V") != 0; }\n' + SLOW_C
    task = word_checked(load_task(write_task(tmp_path / "task", kernel=original)))
    assert run_static_checks(original, task) == []
    assert _checks(run_static_checks(original + "void f(void) { system(\"ls\"); }\n", task)) == {"escapes_sandbox"}


def test_cuda_candidate_must_launch_a_kernel(tmp_path: Path) -> None:
    task = _task(tmp_path, CUDA_TOML, CUDA_KERNEL, ("kernel.cu", "harness.cu", "fast.cu"))
    assert run_static_checks(CUDA_KERNEL, task) == []
    host_only = "void launch_scale(const float *x, float *y, int n) { for (int i = 0; i < n; i++) y[i] = 2 * x[i]; }"
    assert _checks(run_static_checks(host_only, task)) == {"no_device_kernel"}
    cublas = CUDA_KERNEL + "void g(void) { cublasSscal(0, 0, 0, 0, 0); }\n"
    assert "library_fallback" in _checks(run_static_checks(cublas, task))
    half = CUDA_KERNEL.replace("2.0f * x[i]", "__half2float(__float2half(2.0f * x[i]))")
    assert "precision_downgrade" not in _checks(run_static_checks(half, task))  # read from the SASS instead
    assert "precision_downgrade" in _checks(run_static_checks(half, dataclasses.replace(task, target="hip")))
    streams = CUDA_KERNEL + "void h(void) { cudaStream_t s; cudaStreamCreate(&s); }\n"
    findings = run_static_checks(streams, task)
    assert _checks(findings) == {"extra_streams"} and not findings[0].strict  # a warning: the harness syncs all


def test_triton_checks(tmp_path: Path) -> None:
    task = _task(tmp_path, TRITON_TOML, TRITON_KERNEL, ("kernel.py", "harness.py", "fast.py"))
    assert run_static_checks(TRITON_KERNEL, task) == []
    wrapped = TRITON_KERNEL.replace("def launch(x, y, n):\n", "def launch(x, y, n):\n  try:\n").replace(
        "    scale[", "    scale[") + "  except Exception:\n    y.copy_(2 * x)\n"
    assert "swallows_errors" in _checks(run_static_checks(wrapped, task))
    torch_fallback = TRITON_KERNEL + "\nimport torch\ndef other(a, b):\n    return torch.matmul(a, b)\n"
    assert "library_fallback" in _checks(run_static_checks(torch_fallback, task))
    tf32 = TRITON_KERNEL.replace("2.0 * tl.load(x + i, mask=i < n)", "tl.dot(a, b)")
    assert "precision_downgrade" in _checks(run_static_checks(tf32, task))
    escape = TRITON_KERNEL + "\nimport os\n"
    assert "escapes_sandbox" in _checks(run_static_checks(escape, task))


def test_triton_candidate_may_not_touch_the_harness_or_read_files(tmp_path: Path) -> None:
    """The harness module shares the candidate's process: rewriting its clock would fake any speedup."""
    task = _task(tmp_path, TRITON_TOML, TRITON_KERNEL, ("kernel.py", "harness.py", "fast.py"))
    for escape in ("import perfforge_harness as _h\n_h.Run._stop_clock = lambda self: 0.0\n",
                   "import numpy as np, gc\n", "import __main__\n", "y = np.load('../oracle/out.0.npy')\n",
                   "z = vars(triton)\n", "w = triton.__dict__\n"):
        assert "escapes_sandbox" in _checks(run_static_checks(TRITON_KERNEL + escape, task)), escape


def test_c_candidate_may_not_read_files_by_any_name(tmp_path: Path) -> None:
    task = word_checked(load_task(write_task(tmp_path / "task")))
    for escape in ('FILE *f = fopen64("../oracle/out.0.npy", "rb");', "getcwd(buf, sizeof buf);",
                   'std::ifstream in("answers");', "DIR *d = opendir(\"..\");", "void *(*f)(void) = (void *)fopen;",
                   "int t = 1;\n#define F(a) fo##pen(a)\n", 'posix_spawn(0, "/bin/sh", 0, 0, 0, 0);',
                   '__asm__ volatile ("syscall");'):
        code = SLOW_C + "void steal(char *buf) { " + escape + " }\n"
        assert _checks(run_static_checks(code, task)) == {"escapes_sandbox"}, escape


def test_c_candidate_may_not_rename_a_function_to_the_harness_clock(tmp_path: Path) -> None:
    """An asm label gives a function of any name the symbol clock_gettime: it would replace the harness's timer."""
    task = word_checked(load_task(write_task(tmp_path / "task")))
    code = SLOW_C + 'int my_clock(int c, void *t) __asm__("clock_gettime");\n'
    assert _checks(run_static_checks(code, task)) == {"escapes_sandbox"}


def test_python_checks_leave_method_calls_named_like_builtins_alone(tmp_path: Path) -> None:
    task = _task(tmp_path, TRITON_TOML, TRITON_KERNEL, ("kernel.py", "harness.py", "fast.py"))
    for fine in ("import re\nPATTERN = re.compile('x')\n", "fast_scale = torch.compile(scale)\n"):
        assert "escapes_sandbox" not in _checks(run_static_checks(TRITON_KERNEL + fine, task)), fine
    for clock in ("torch.cuda.Event.elapsed_time = lambda self, other: 0.1\n", "import time\n",
                  "torch.sys.modules['perfforge_harness']._clock_ns = lambda c: 0\n", "argv = torch.sys.argv\n",
                  "torch.os.open('out.3.npy', 0)\n"):
        assert "escapes_sandbox" in _checks(run_static_checks(TRITON_KERNEL + clock, task)), clock
