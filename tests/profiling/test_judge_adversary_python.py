"""The seventeenth red team's holes in the judge of Python (Triton) candidates, on the CPU (Triton's interpreter).

p3, code in strings: `typing.get_type_hints` evaluates string annotations with eval, where the static policy read
them as data. "torch.Tensor.sum" did the task on the host; "object.__getattribute__" with
"torch.serialization.load" reached os through a function's globals, and at import, before the harness installed
its system-call filter, the candidate swapped the filter for an allow-all one and forked on every call: correct,
rule 23 "enforced". Now the evaluators, private module members and string annotations that do not read as types
are refused (profiling/python_policy.py), the filter goes in before the candidate's module is imported
(profiling/runtime/perfforge_launch.py) from a program prepared before any of its code runs, and it refuses
setting the system's clocks.

p1, host code doing the work: a Triton candidate whose kernel does nothing and whose host code computed the task
with torch or numpy (torch.addmv, linalg.vecdot, var_mean, index_add_, functools.reduce(torch.add, ...),
np.add.reduce, a += over unbind(1), a TorchScript source string) read correct past a deny-list of library
routines. Now host code passes an allow-list (python_policy.triton_host_problems): allocation, shapes, launches.

Each attack's scenario is in its docstring; each innocent twin must still pass.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from perfforge.task import load_task
from perfforge.verdict import Status
from profiling import python_policy, sandbox
from profiling.static_checks import run_static_checks
from profiling.validate import validate

pytest.importorskip("triton")

RUNTIME_DIR = Path(__file__).resolve().parents[2] / "profiling" / "runtime"

HEAD = '''
import functools
import math
import typing

import numpy as np
import torch
import triton
import triton.language as tl


@triton.jit
def row_sum_kernel(x_ptr, out_ptr, m, n, BLOCK_N: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_N)
    acc = tl.zeros((BLOCK_N,), dtype=tl.float32)
    for start in range(0, n, BLOCK_N):
        acc += tl.load(x_ptr + row * n + start + cols, mask=start + cols < n, other=0.0)
    tl.store(out_ptr + row, tl.sum(acc, axis=0))


@triton.jit
def touch_kernel(out_ptr):
    pass


@triton.jit
def copy_kernel(src_ptr, dst_ptr, m, BLOCK: tl.constexpr):
    offsets = tl.arange(0, BLOCK)
    tl.store(dst_ptr + offsets, tl.load(src_ptr + offsets, mask=offsets < m), mask=offsets < m)
'''


@pytest.fixture
def task_dir(small_row_sum: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The small row sum under Triton's interpreter, on the CPU even where a GPU is (the interpreter's path; the
    GPU's two-stage filter is exercised by tests/profiling/test_judge_adversary_triton.py)."""
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")
    return small_row_sum


def judge(task_dir: Path, tmp_path: Path, source: str) -> tuple[Status, str]:
    candidate = tmp_path / "candidate.py"
    candidate.write_text(textwrap.dedent(source))
    verdict = validate(load_task(task_dir), candidate, tmp_path / "work", timing=False)
    return verdict.status, verdict.reason


def strict_findings(task_dir: Path, source: str) -> list[str]:
    return [f"{f.check}: {f.message}" for f in run_static_checks(textwrap.dedent(source), load_task(task_dir))
            if f.strict]


# ------------------------------------------------------------------------------------- p3: code in string annotations

STRING_EVALUATIONS = {
    # the task's work: typing evaluates the annotation to torch's method, which the host code calls
    "torch_method": '''
def _hint(a: "torch.Tensor.sum"):
    pass


ROW_SUM = typing.get_type_hints(_hint)["a"]


def row_sum(x, out, m, n):
    touch_kernel[(1,)](out)
    out.copy_(ROW_SUM(x.view(m, n), 1))
''',
    # os through a function's globals, names split so that no word of them is whole
    "globals_walk": '''
def _hint(a: "object.__getattribute__", b: "torch.serialization.load"):
    pass


_H = typing.get_type_hints(_hint)
_OS = _H["a"](_H["b"], "__glob" + "als__")["o" + "s"]


def row_sum(x, out, m, n):
    raise RuntimeError(_OS.getcwd())
''',
    # an import in the string itself
    "import_call": '''
def _hint(a: "__imp" "ort__('o" "s').getcwd"):
    pass


def row_sum(x, out, m, n):
    raise RuntimeError(typing.get_type_hints(_hint)["a"]())
''',
    # the evaluator under another name, the builtins reached by a computed key
    "aliased_evaluator": '''
from typing import get_type_hints as hints


def _hint(m: "__builtins__[chr(95) * 2 + 'import' + chr(95) * 2]"):
    pass


def row_sum(x, out, m, n):
    raise RuntimeError(hints(_hint)["m"]("os").getcwd())
''',
    # a forward reference evaluated by typing's private helper
    "forward_ref": '''
_REF = typing.ForwardRef("torch.Tensor.sum")


def row_sum(x, out, m, n):
    touch_kernel[(1,)](out)
    out.copy_(typing._eval_type(_REF, {"torch": torch}, None)(x.view(m, n), 1))
''',
}


@pytest.mark.parametrize("name", sorted(STRING_EVALUATIONS))
def test_code_in_a_string_annotation_is_refused(task_dir: Path, tmp_path: Path, name: str) -> None:
    """Attack (p3): a string annotation is code typing.get_type_hints runs with eval; the checks read it as data.
    "torch_method" read CORRECT (torch.Tensor.sum did the row sums on the host); "globals_walk" and the others
    reached os. Each is refused: the evaluators by name, the strings as code that does not read as a type or
    fails the policy."""
    status, reason = judge(task_dir, tmp_path, HEAD + STRING_EVALUATIONS[name])
    assert status is Status.REJECTED, reason


def test_honest_string_annotations_pass(task_dir: Path, tmp_path: Path) -> None:
    """Innocent twin: string annotations that name types ("torch.Tensor", "Optional[torch.Tensor]", "int", a
    Literal's words) are what typing would evaluate harmlessly, and pass."""
    source = HEAD + '''
from typing import Literal, Optional


MODE: Literal["rows are summed", "columns"] = "rows are summed"


def row_sum(x: "torch.Tensor", out: "Optional[torch.Tensor]", m: "int", n: int) -> "None":
    row_sum_kernel[(m,)](x, out, m, n, BLOCK_N=64)
'''
    assert strict_findings(task_dir, source) == []
    status, reason = judge(task_dir, tmp_path, source)
    assert status is Status.CORRECT, reason


def test_private_members_of_modules_are_refused() -> None:
    """Attack (p3's kin): typing._eval_type evaluates a forward reference, warnings._setoption imports a module
    named in a string. A private member of a module, read or imported, is refused; a candidate's own private
    names are its business."""
    assert python_policy.policy_problems("import warnings\nwarnings._setoption('ignore::os.X')\n")
    assert python_policy.policy_problems("from typing import _eval_type\n")
    own = "import torch\n_CACHE = {}\n\n\ndef _launch(x):\n    return _CACHE.get(x)\n"
    assert not python_policy.policy_problems(own)


# ----------------------------------------------------------------------- p3: the filter before the candidate's import

FILTER_SWAP = '''
import perfforge_serve

# at import: the harness's filter module made allow-all (one instruction: SECCOMP_RET_ALLOW), so /proc still
# reads "Seccomp: 2"; its installers too, whichever the harness calls
perfforge_serve.filter_program = lambda pid, machine=None, **kwargs: [(0x06, 0, 0, 0x7FFF0000)]
perfforge_serve.install_filter = lambda: True
perfforge_serve.prepared_filter = lambda **kwargs: lambda: True
_OS = perfforge_serve.os


def row_sum(x, out, m, n):
    child = _OS.fork()  # refused under the harness's real filter
    if child == 0:
        _OS._exit(0)
    _OS.waitpid(child, 0)
    row_sum_kernel[(m,)](x, out, m, n, BLOCK_N=64)
'''

FILTERED_AT_IMPORT = '''
import perfforge_serve

with open("/proc/self/status") as _status:
    _SECCOMP = [line.split()[1] for line in _status if line.startswith("Seccomp:")]


def row_sum(x, out, m, n):
    if _SECCOMP != ["2"]:
        raise RuntimeError(f"no system-call filter at import: Seccomp {_SECCOMP}")
    row_sum_kernel[(m,)](x, out, m, n, BLOCK_N=64)
'''


@pytest.mark.skipif(not sandbox.seccomp_available(), reason="needs seccomp")
def test_a_filter_swapped_at_import_is_not_the_filter_installed(task_dir: Path, tmp_path: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """Attack (p3, the run-time half): with the static checks out of the way (as a hole in them would leave it),
    rebind perfforge_serve's filter functions at import to an allow-all program, then fork on every call. It read
    CORRECT with rule 23 "enforced": the harness looked the filter up after the candidate's import. Now the filter
    is in before the candidate's module is imported, from a program prepared before any of its code ran: the
    fork is refused."""
    monkeypatch.setattr("profiling.validate.run_static_checks", lambda code, task: [])
    status, reason = judge(task_dir, tmp_path, HEAD + FILTER_SWAP)
    assert status is not Status.CORRECT, reason
    assert "Operation not permitted" in reason, reason


@pytest.mark.skipif(not sandbox.seccomp_available(), reason="needs seccomp")
def test_the_filter_is_in_before_the_candidate_is_imported(task_dir: Path, tmp_path: Path,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    """Order (p3): on a CPU, where Triton's interpreter compiles nothing, the whole filter is in before the
    candidate's module runs a line: a candidate that reads its own /proc status at import sees "Seccomp: 2". The
    innocent twin of the swap: the same kernel without the swap and the fork is correct."""
    monkeypatch.setattr("profiling.validate.run_static_checks", lambda code, task: [])
    status, reason = judge(task_dir, tmp_path, HEAD + FILTERED_AT_IMPORT)
    assert status is Status.CORRECT, reason


CLOCK_PROBE = r'''
import ctypes, os, sys
sys.path.insert(0, sys.argv[1])
import perfforge_serve

libc = ctypes.CDLL(None, use_errno=True)
NR = {"x86_64": {"clock_settime": 227, "settimeofday": 164, "clock_adjtime": 305, "adjtimex": 159},
      "aarch64": {"clock_settime": 112, "settimeofday": 170, "clock_adjtime": 266, "adjtimex": 171}}[os.uname().machine]
timex = ctypes.create_string_buffer(512)  # struct timex, modes 0: a read
timespec = ctypes.create_string_buffer(16)
# each call made harmless: an invalid clock (EINVAL unfiltered), no new time (a no-op), modes 0 (a read)
calls = {"clock_settime": (-1, timespec), "settimeofday": (None, None), "clock_adjtime": (-1, timex),
         "adjtimex": (timex,)}
assert perfforge_serve.install_filter()
for name, args in calls.items():
    result = libc.syscall(NR[name], *args)
    print(name, "refused" if result == -1 and ctypes.get_errno() == 1 else f"answered {result} {ctypes.get_errno()}")
'''


@pytest.mark.skipif(not sandbox.seccomp_available(), reason="needs seccomp")
def test_the_filter_refuses_setting_the_clocks() -> None:
    """Attack (p3's privilege probe): the kernel process runs as root with CAP_SYS_TIME, and the judge times each
    call by the socket's send stamps (CLOCK_REALTIME: the kernel stamps no other clock), so a step of the system
    clock mid-call would misread the call. The filter refuses clock_settime, settimeofday, clock_adjtime and
    adjtimex (each probed harmlessly: an invalid clock, no new time, a read)."""
    result = subprocess.run([sys.executable, "-c", CLOCK_PROBE, str(RUNTIME_DIR)], capture_output=True, text=True,
                            timeout=60)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["clock_settime", "refused", "settimeofday", "refused", "clock_adjtime",
                                     "refused", "adjtimex", "refused"], result.stdout


# ----------------------------------------------------------------------------------- p1: host code doing the work

HOST_WORK = {
    "addmv": "    touch_kernel[(1,)](out)\n    torch.addmv(out.zero_(), x.view(m, n), x.new_ones(n), out=out)\n",
    "vecdot": "    touch_kernel[(1,)](out)\n    out.copy_(torch.linalg.vecdot(x.view(m, n), x.new_ones(n)))\n",
    "var_mean": "    touch_kernel[(1,)](out)\n    var, mean = torch.var_mean(x.view(m, n), dim=1)\n"
                "    out.copy_(mean * n)\n",
    "index_add": "    touch_kernel[(1,)](out)\n"
                 "    out.zero_().index_add_(0, torch.arange(m).repeat_interleave(n), x.view(-1))\n",
    "trapezoid": "    touch_kernel[(1,)](out)\n    y = x.view(m, n)\n"
                 "    out.copy_(torch.cumulative_trapezoid(y, dim=1)[:, -1] + (y[:, 0] + y[:, -1]) / 2)\n",
    "reduce_add": "    touch_kernel[(1,)](out)\n    out.copy_(functools.reduce(torch.add, x.view(m, n).unbind(1)))\n",
    "numpy_reduce": "    touch_kernel[(1,)](out)\n"
                    "    out.copy_(torch.from_numpy(np.add.reduce(x.view(m, n).numpy(), 1)))\n",
    "unbind_loop": "    touch_kernel[(1,)](out)\n    acc = out.zero_()\n    for col in x.view(m, n).unbind(1):\n"
                   "        acc += col\n",
    "torchscript": "    touch_kernel[(1,)](out)\n"
                   "    out.copy_(torch.jit.CompilationUnit('def f(x):\\n  return x.s' 'um(1)\\n').f(x.view(m, n)))\n",
    # our own variants: columns by slicing into a scratch buffer a copy kernel hands on; a builtin sum over views;
    # the work in a helper of its own handed the views
    "slice_loop": "    acc = torch.zeros_like(out)\n    view = x.view(m, n)\n    for j in range(n):\n"
                  "        acc = acc + view[:, j]\n    copy_kernel[(1,)](acc, out, m, BLOCK=64)\n",
    "builtin_sum": "    acc = sum(x.view(m, n)[:, j] for j in range(n))\n"
                   "    copy_kernel[(1,)](acc, out, m, BLOCK=64)\n",
    "own_helper": "    view = x.view(m, n)\n    acc = view[:, 0]\n    for j in range(1, n):\n"
                  "        acc = _add(acc, view[:, j])\n    copy_kernel[(1,)](acc, out, m, BLOCK=64)\n",
    "store_into_argument": "    rows = x.view(m, n)\n    out[:] = rows[:, 0]\n    for j in range(1, n):\n"
                           "        out[:] = _add(out, rows[:, j])\n",
}
HELPER = "\n\ndef _add(a, b):\n    return a + b\n"


@pytest.mark.parametrize("name", sorted(HOST_WORK))
def test_host_code_doing_the_work_is_refused(task_dir: Path, name: str) -> None:
    """Attack (p1): the kernel does nothing (or copies), the host code computes the row sums with torch, numpy, a
    TorchScript string or plain operators on tensor views. The red team's nine read CORRECT past the deny-list of
    library routines; the host-code allow-list refuses each (static: library_fallback)."""
    source = HEAD + HELPER + "\n\ndef row_sum(x, out, m, n):\n" + HOST_WORK[name]
    findings = strict_findings(task_dir, source)
    assert any(f.startswith("library_fallback") for f in findings), findings


@pytest.mark.parametrize("name", ["addmv", "unbind_loop"])
def test_host_code_doing_the_work_is_not_correct(task_dir: Path, tmp_path: Path, name: str) -> None:
    """Attack (p1), whole verdicts: torch.addmv and a += over unbind(1) read CORRECT on 20 checked runs."""
    status, reason = judge(task_dir, tmp_path, HEAD + "\n\ndef row_sum(x, out, m, n):\n" + HOST_WORK[name])
    assert status is Status.REJECTED, reason


def test_honest_host_code_passes(task_dir: Path, tmp_path: Path) -> None:
    """Innocent twin (p1): what honest host code does around a launch: a cached launch configuration (math,
    functools, a dict's values), a scratch buffer from torch.empty_like, shapes, strides, a contiguity test, an
    element size, a dtype test, triton.cdiv and next_power_of_2 in a grid lambda, a config class of its own with
    a `half` field, torch.finfo of a dtype, and version and TF32 switches."""
    source = HEAD + '''
CONFIGS = {"small": 32, "large": 64}
NEW_TRITON = int(triton.__version__.split(".")[0]) >= 3
torch.backends.cuda.matmul.allow_tf32 = False


class Plan:
    half = 2

    def __init__(self, n: int) -> None:
        self.block = max(CONFIGS.values()) if n > 64 else min(CONFIGS.values())

    def grid(self, m: int):
        return lambda meta: (triton.cdiv(m, meta["ROWS"]) * meta["ROWS"],)


@functools.lru_cache(None)
def block_for(n: int) -> int:
    return min(triton.next_power_of_2(n), 2 ** int(math.log2(1024)))


def row_sum(x: torch.Tensor, out: torch.Tensor, m: int, n: int) -> None:
    assert x.is_contiguous() and x.stride(0) == n and x.shape[0] * x.shape[1] == x.numel() == m * n
    assert x.dtype == torch.float32 and x.element_size() == 4 and torch.finfo(x.dtype).max > 0
    plan = Plan(n)
    scratch = torch.empty_like(out)
    rows = x.view(m, n)
    row_sum_kernel[(m,)](rows, scratch, m, n, BLOCK_N=block_for(n))
    copy_kernel[(1,)](scratch, out, m, BLOCK=triton.next_power_of_2(m) * plan.half // Plan.half)
'''
    assert python_policy.triton_host_problems(textwrap.dedent(source)) == []
    assert strict_findings(task_dir, source) == []
    status, reason = judge(task_dir, tmp_path, source)
    assert status is Status.CORRECT, reason


@pytest.mark.xfail(strict=True, reason="a syntax-only reading does not know which of the harness's arguments are "
                   "tensors: `x * 1.0` on an argument never used as a tensor looks like `m * n`; closing it needs "
                   "the call site's types or a run-time record of the operators the call dispatched")
def test_arithmetic_on_an_argument_never_used_as_a_tensor(task_dir: Path) -> None:
    """Attack (open, p1's kin): the host code scales the input by an operator on the bare argument and a copy
    kernel hands the result on; on an element-wise task that is the whole job."""
    source = HEAD + "\n\ndef row_sum(x, out, m, n):\n    tmp = x * 1.0\n    copy_kernel[(1,)](tmp, out, m, BLOCK=64)\n"
    assert any(f.startswith("library_fallback") for f in strict_findings(task_dir, source))


# ------------------------------------------------- second round (red team 17b): h9, h5 and honest host code refused

ADDMV = ('torch.addmv(args["out_ptr"], args["x_ptr"].view(args["m"], args["n"]), '
         'args["x_ptr"].new_ones(args["n"]), beta=0, out=args["out_ptr"])')
KERNEL_SIGNATURE = "def echo_kernel(x_ptr, out_ptr, m, n, BLOCK: tl.constexpr{extra}):\n"
ECHO_BODY = ("    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)\n"
             "    tl.store(out_ptr + offs, tl.load(out_ptr + offs, mask=offs < m), mask=offs < m)\n")
KERNEL_HOST_PARTS = {
    "heuristics_lambda": ('@triton.heuristics({"BLOCK": lambda args: ' + ADDMV + '.shape[0] * 0 + 64})\n'
                          "@triton.jit\n" + KERNEL_SIGNATURE.format(extra="")),
    "config_pre_hook": ('@triton.autotune(configs=[triton.Config({"BLOCK": 64}, pre_hook=lambda args: ' + ADDMV
                        + ')], key=["m"])\n@triton.jit\n' + KERNEL_SIGNATURE.format(extra="")),
    "default_value": "@triton.jit\n" + KERNEL_SIGNATURE.format(extra=", HOST: tl.constexpr = torch.addmv"),
    "annotation": "@triton.jit\n" + KERNEL_SIGNATURE.format(extra=", HOST: torch.linalg.vecdot = None"),
}


def kernel_host_part_source(name: str) -> str:
    block = "" if name in ("heuristics_lambda", "config_pre_hook") else ", BLOCK=64"
    return (HEAD + "\n\n" + KERNEL_HOST_PARTS[name] + ECHO_BODY
            + f"\n\ndef row_sum(x, out, m, n):\n    echo_kernel[(triton.cdiv(m, 64),)](x, out, m, n{block})\n")


@pytest.mark.parametrize("name", sorted(KERNEL_HOST_PARTS))
def test_host_code_in_a_kernels_definition_is_read(task_dir: Path, name: str) -> None:
    """Attack (red team 17b, h9): the row sum in what the interpreter runs on the host when it defines a
    @triton.jit kernel: a triton.heuristics lambda, a triton.Config pre_hook (both read CORRECT: torch.addmv into
    out, the kernel copies out onto itself), a default value or an annotation of the kernel's arguments. The
    allow-list read none of a kernel's definition but its body; now only the body is Triton's."""
    findings = strict_findings(task_dir, kernel_host_part_source(name))
    assert any(f.startswith("library_fallback") and "torch." in f for f in findings), findings


def test_a_heuristics_lambda_doing_the_work_is_not_correct(task_dir: Path, tmp_path: Path) -> None:
    """Attack (h9), whole verdict: torch.addmv in a triton.heuristics lambda read CORRECT on 20 checked runs."""
    status, reason = judge(task_dir, tmp_path, kernel_host_part_source("heuristics_lambda"))
    assert status is Status.REJECTED, reason


BACKENDS_WORK = {
    "cudnn_addmv": "    torch.backends.cudnn.torch.addmv(out, x.view(m, n), x.new_ones(n), beta=0, out=out)\n",
    "mkl_vecdot": "    acc = torch.backends.mkl.torch.linalg.vecdot(x.view(m, n), x.new_ones(n))\n"
                  "    copy_kernel[(1,)](acc, out, m, BLOCK=64)\n",
}


@pytest.mark.parametrize("name", sorted(BACKENDS_WORK))
def test_torch_again_through_an_allowed_path_is_refused(task_dir: Path, name: str) -> None:
    """Attack (red team 17b, h5): `torch.backends` was an allowed prefix with nothing after it checked, and every
    torch.backends submodule holds `torch`: torch.backends.cudnn.torch.addmv and torch.backends.mkl.torch.linalg.vecdot
    did the row sum (CORRECT). Now an allowed path is allowed itself, not its members (torch.backends only its
    documented switches)."""
    source = HEAD + "\n\ndef row_sum(x, out, m, n):\n    touch_kernel[(1,)](out)\n" + BACKENDS_WORK[name]
    findings = strict_findings(task_dir, source)
    assert any(f.startswith("library_fallback") for f in findings), findings


def test_backend_switches_take_constants_only() -> None:
    """Attack (h5's kin): a torch.backends switch is set to a constant, not a way to reach a module: a switch set
    to torch.backends.cuda.matmul (a module) is refused; cudnn.flags, the documented context manager, passes."""
    source = HEAD + ("\ntorch.backends.cudnn.allow_tf32 = torch.backends.cuda.matmul\n"
                     "\n\ndef row_sum(x, out, m, n):\n    with torch.backends.cudnn.flags(enabled=False):\n"
                     "        touch_kernel[(1,)](out)\n")
    problems = python_policy.triton_host_problems(textwrap.dedent(source))
    assert any("constant" in message for _, message in problems), problems
    assert not any("cudnn.flags" in message for _, message in problems), problems


# what honest Triton host code does that the first allow-list refused (red team 17b's f1): views handed to a kernel,
# a device's fields, the tutorials' driver queries, Hopper's TMA descriptors and allocator, the current stream
HONEST_HOST = {
    "views": "def f(x, out, m, n):\n    y = x.view(m, n)\n"
             "    k[(1,)](y.t(), y.T, y.mT, y.permute(1, 0), y.transpose(0, 1), y.flatten(), y.unsqueeze(0),\n"
             "            y.unsqueeze(0).squeeze(0), y[:, :1].expand(m, n), y.view_as(y), y.expand_as(y),\n"
             "            x.as_strided((m, n), (n, 1)), out)\n",
    "device_fields": "def f(x, out):\n    assert x.device.type == 'cuda' and x.device.index == 0 and "
                     "x.dtype.is_floating_point\n    dev = x.device\n"
                     "    props = torch.cuda.get_device_properties(dev.index)\n    k[(1,)](x, out)\n",
    "tutorial_driver": "DEVICE = triton.runtime.driver.active.get_active_torch_device()\n"
                       "IS_CUDA = triton.runtime.driver.active.get_current_target().backend == 'cuda'\n"
                       "properties = triton.runtime.driver.active.utils.get_device_properties(DEVICE.index)\n"
                       "NUM_SM = properties['multiprocessor_count']\n"
                       "def f(x, out):\n    assert x.device == DEVICE\n    k[(NUM_SM,)](x, out)\n",
    "tma": "from triton.tools.tensor_descriptor import TensorDescriptor\n"
           "def alloc_fn(size: int, alignment: int, stream):\n"
           "    return torch.empty(size, device='cuda', dtype=torch.int8)\n"
           "triton.set_allocator(alloc_fn)\n"
           "def f(a, b, c):\n    a_desc = TensorDescriptor(a, a.shape, a.stride(), [64, 64])\n"
           "    b_desc = TensorDescriptor.from_tensor(b, [64, 64])\n"
           "    stream = torch.cuda.current_stream()\n    k[(1,)](a_desc, b_desc, c)\n",
    "containers": "def f(x, out, m):\n    meta = {'BLOCK': 64, 'num_warps': 4}\n    args = (x, out)\n"
                  "    grid = (triton.cdiv(m, meta['BLOCK']),)\n    for t in args:\n        assert t.is_contiguous()\n"
                  "    k[grid](*args, m, **meta)\n",
    "switches": "torch.backends.cuda.matmul.allow_tf32 = False\ntorch.backends.cudnn.allow_tf32 = False\n"
                "torch.backends.cudnn.benchmark = True\ntorch.backends.cudnn.deterministic = True\n"
                "def f(x, out):\n    if torch.backends.cudnn.benchmark:\n        k[(1,)](x, out)\n",
}


@pytest.mark.parametrize("taken_out", ['box["c"]', 'box.get("c")', 'next(iter(box.values()))', 'list(box.values())[0]'])
def test_a_tensor_hidden_in_a_dict_is_still_a_tensor(taken_out: str) -> None:
    """Eighteenth red team: `box = {"c": x.view(m, n).T}; sums = sum(box["c"])` summed the rows on the host (the
    kernel only copied) and read correct under the interpreter: the host-code reading followed lists and tuples,
    not dicts. A dict holding a tensor holds one now, and what comes out of it (a subscript, get, values, next/iter,
    list) is one too."""
    source = ("import torch\nimport triton\nimport triton.language as tl\n"
              f"def f(x, out, m, n):\n    box = {{'c': x.view(m, n).T}}\n    sums = sum({taken_out})\n"
              "    k[(1,)](sums, out)\n")
    problems = python_policy.triton_host_problems(source)
    assert any("sum" in message for _, message in problems), problems


@pytest.mark.parametrize("name", sorted(HONEST_HOST))
def test_honest_triton_host_idioms_pass(name: str) -> None:
    """Innocent twins (red team 17b, f1): zero-copy views (t, T, permute, transpose, flatten, unsqueeze, squeeze,
    expand, view_as, as_strided), `x.device.type` / `.index` (a device's fields, not the tensor methods .type and
    .index), the tutorials' get_active_torch_device / get_current_target, triton.set_allocator with TensorDescriptor
    for Hopper's TMA, torch.cuda.current_stream, the documented backend switches set to constants, and a launch's
    meta-parameters and arguments kept in a dict and a tuple. Casts
    (x.to(dtype), x.float()) stay refused: no example or synth Triton pattern casts on the host."""
    source = "import torch\nimport triton\nimport triton.language as tl\n" + HONEST_HOST[name]
    assert python_policy.triton_host_problems(source) == []


def test_honest_views_and_device_fields_are_correct(task_dir: Path, tmp_path: Path) -> None:
    """Innocent twin (f1), whole verdict: the row sum launched on views of the input (a transpose of the transpose,
    unsqueeze/squeeze, flatten) after a device check by its fields reads CORRECT."""
    source = HEAD + """

def row_sum(x: torch.Tensor, out: torch.Tensor, m: int, n: int) -> None:
    assert x.device.type in ("cpu", "cuda") and (x.device.index is None or x.device.index >= 0)
    rows = x.view(m, n).t().T.unsqueeze(0).squeeze(0)
    row_sum_kernel[(m,)](rows.flatten(), out.view(m, 1).squeeze(1), m, n, BLOCK_N=triton.next_power_of_2(n))
"""
    assert strict_findings(task_dir, source) == []
    status, reason = judge(task_dir, tmp_path, source)
    assert status is Status.CORRECT, reason
