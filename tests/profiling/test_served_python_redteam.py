"""Red team of the served judge for Python candidates (Triton and torch targets), on the CPU only.

Every candidate runs under Triton's interpreter, so only correctness is judged. Each attack's scenario is in its
docstring and the test asserts the verdict the judge SHOULD give; attacks the judge misses today are marked
xfail(strict=True) with what is missed. The legitimate-but-unusual candidates must pass as they are.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
import uuid
from pathlib import Path

import pytest

from perfforge.cli import main
from perfforge.task import load_task
from perfforge.verdict import Status
from profiling import sandbox
from profiling.static_checks import run_static_checks
from profiling.validate import validate
from tests.profiling.test_served_python import KERNEL
from tests.synth.test_kernelbench import LINEAR_RELU, RELU, TRITON_RELU
from tests.synth.test_kernelbench import judge as judge_kb

pytest.importorskip("triton")

REPO = Path(__file__).resolve().parents[2]
RUNTIME_DIR = REPO / "profiling" / "runtime"



@pytest.fixture
def kb_tasks(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Two KernelBench-format problems imported as torch tasks (as tests/synth/test_kernelbench.py does)."""
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    root = tmp_path / "KernelBench-checkout"
    for level, name, text in ((1, "19_ReLU.py", RELU), (2, "3_Linear_ReLU.py", LINEAR_RELU)):
        directory = root / "KernelBench" / f"level{level}"
        directory.mkdir(parents=True, exist_ok=True)
        (directory / name).write_text(text)
    out = tmp_path / "tasks"
    assert main(["import", "kernelbench", str(root), "--out", str(out), "--level", "1", "2"]) == 0
    return out


@pytest.fixture
def task_dir(small_row_sum: Path) -> Path:
    return small_row_sum


def judge(task_dir: Path, tmp_path: Path, source: str) -> tuple[Status, str]:
    candidate = tmp_path / "candidate.py"
    candidate.write_text(textwrap.dedent(source))
    verdict = validate(load_task(task_dir), candidate, tmp_path / "work", timing=False)
    return verdict.status, verdict.reason


def static_messages(task_dir: Path, source: str) -> list[str]:
    return [f.message for f in run_static_checks(textwrap.dedent(source), load_task(task_dir)) if f.strict]





# ------------------------------------------------------------------------------------------- legitimate candidates

def test_legit_two_pass_kernel_with_a_scratch_buffer_allocated_every_call(task_dir: Path, tmp_path: Path) -> None:
    """Legitimate: partial sums into a scratch tensor allocated inside every call (new non-executable memory after
    the filter), a second launch reduces them, and a module-level cache of block sizes. Must be CORRECT."""
    status, reason = judge(task_dir, tmp_path, KERNEL + '''

@triton.jit
def partial_kernel(x_ptr, part_ptr, n, CHUNK: tl.constexpr):
    row = tl.program_id(0)
    chunk = tl.program_id(1)
    cols = chunk * CHUNK + tl.arange(0, CHUNK)
    values = tl.load(x_ptr + row * n + cols, mask=cols < n, other=0.0)
    tl.store(part_ptr + row * tl.num_programs(1) + chunk, tl.sum(values, axis=0))


_blocks = {}


def row_sum(x, out, m, n):
    chunk = _blocks.setdefault(n, 128)
    chunks = triton.cdiv(n, chunk)
    parts = torch.empty((m, chunks), dtype=x.dtype, device=x.device)
    partial_kernel[(m, chunks)](x, parts, n, CHUNK=chunk)
    width = triton.next_power_of_2(chunks)
    row_sum_kernel[(m,)](parts, out, m, chunks, BLOCK_N=width)
''')
    assert status is Status.CORRECT, reason


def test_legit_torch_answer_with_its_own_buffer_and_a_triton_epilogue(kb_tasks: Path, tmp_path: Path) -> None:
    """Legitimate: ModelNew keeps the problem's nn.Linear (built in the same order: the same weights), registers a
    buffer of its own, and applies ReLU with a Triton kernel. Must be CORRECT."""
    status, reason = judge_kb(kb_tasks / "kb_l2_003_linear_re_lu", tmp_path, TRITON_RELU + '''

class ModelNew(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)
        self.register_buffer("calls", torch.zeros(1))

    def forward(self, x):
        self.calls += 1
        return relu(self.linear(x))
''')
    assert status is Status.CORRECT, reason


def test_legit_source_with_hash_inside_strings_and_names_like_flagged_modules(task_dir: Path) -> None:
    """Legitimate (static only): '#' inside strings, and names such as `osc`, `system_size`, `timeout` that only
    contain flagged words, raise no strict finding."""
    assert static_messages(task_dir, KERNEL + '''
LABEL = "# not a comment"
osc, system_size, timeout = 1, 2, 3


def row_sum(x, out, m, n):
    launch(x, out, m, n)
''') == []


def test_legit_names_like_low_precision_types_are_not_flagged(task_dir: Path) -> None:
    """Legitimate (static only): a variable `half`, a helper `half()`, an attribute `.half` of the candidate's own
    object, the word in a string, torch.float32 itself, a dtype test against half types, torch.finfo of one and
    TF32 switched off raise no precision finding: the tree knows what each name is bound to and that a comparison
    converts nothing, where a word check rejected them."""
    assert static_messages(task_dir, KERNEL + '''
LABEL = "half of the rows, float16 is not used"


class Split:
    half = 2


def half(n):
    return n // 2


def row_sum(x, out, m, n):
    rows = half(m) + Split().half
    assert x.dtype == torch.float32 and rows >= 0
    assert x.dtype not in (torch.float16, torch.bfloat16) and torch.finfo(torch.float16).max > 0
    with torch.backends.cudnn.flags(allow_tf32=False):
        launch(x, out, m, n)
''') == []


def test_an_import_after_a_semicolon_is_flagged(task_dir: Path) -> None:
    """Attack (static): `LABEL = "#"; import os`: a statement before `;` puts the import mid-line."""
    assert static_messages(task_dir, KERNEL + '\nLABEL = "#"; import os\n')


# ------------------------------------------------------------------------------------------- static-check evasions

EVASIONS = {
    # a flagged module taken from another module's namespace (the `from` pattern looks at the module, not the name)
    "from_other_module_import_os": "from torch.serialization import os\nos.listdir('/')\n",
    # pkgutil is not in the list and resolves any dotted name to an object
    "pkgutil_resolve_name": "import pkgutil\n_system = pkgutil.resolve_name('os:system')\n",
    # a backslash continuation puts the module name on the next line
    "backslash_continuation": "import \\\n    subprocess\n",
    # the harness's twin module is not flagged (perfforge_harness is), and rewriting it is not `torch.x = ...`
    "rewrite_perfforge_serve": "import perfforge_serve\nperfforge_serve.filter_program = lambda *a, **k: None\n",
    # ctypes reached through the twin's attribute (`.ctypes` is not among the flagged attributes)
    "ctypes_through_perfforge_serve": "from perfforge_serve import ctypes\nctypes.CDLL(None)\n",
    # precision downgrade by method: .half() is not `torch.float16`
    "half_method": "def cast(x):\n    return x.half().float()\n",
    # the dtype through an alias of its module, or imported by another name
    "dtype_through_module_alias": "import torch as t\ndef cast(x):\n    return x.to(t.float16).float()\n",
    "dtype_imported_under_another_name": "from torch import bfloat16 as b16\ndef cast(x):\n    return x.to(b16)\n",
    "triton_dtype_through_from_import": "from triton import language as lang\n\n@triton.jit\ndef k(p):\n"
                                        "    tl.store(p, tl.load(p).to(lang.float16).to(tl.float32))\n",
    # a dtype by its string name, and TF32 switched on for every matmul
    "dtype_as_a_string": "import numpy\ndef cast(a):\n    return a.astype('float16')\n",
    "tf32_for_every_matmul": "torch.set_float32_matmul_precision('high')\n",
    # the red team's review: a module or a dtype aliased by assignment, a truthy non-True switch, a precision word
    # held in a variable
    "module_aliased_by_assignment": "T = torch\ndef cast(x):\n    return x.to(T.float16).float()\n",
    "dtype_aliased_by_assignment": "h = torch.bfloat16\ndef cast(x):\n    return x.to(h).float()\n",
    "tf32_switched_on_by_one": "def lin(x):\n    with torch.backends.cudnn.flags(allow_tf32=1):\n        return x\n",
    "tf32_word_in_a_variable": "PRECISION = 'tf32'\n",
    # the eighth red team (2026-11-26): a '#' just before a string's closing quotes made the comment pattern blank
    # the real code after them on that line
    "hash_before_the_closing_quotes": 'def f(x):\n    note = """\n#"""; return torch.sum(x, 1)\n',
    "hash_in_a_one_line_triple_quoted_string": 'def f(x):\n    note = """a"#"""; return torch.sum(x, 1)\n',
    # docstrings are blanked as never running; these modules run them (or any string)
    "doctest_runs_a_docstring": 'import doctest\ndef _examples():\n    """\n    >>> _ = torch.sum(x, 1)\n    """\n',
    "code_module_runs_a_docstring": 'from code import InteractiveInterpreter\n',
    "docstring_read_through_doc": 'def _impl():\n    """out.copy_(torch.sum(x, 1))"""\nSOURCE = _impl.__doc__\n',
    # what the interpreter runs, whatever the spacing: an import after a compound statement's colon, a space
    # before the dot, the dot on the next line inside brackets
    "import_after_a_colon": "if True: import perfforge_serve, os\n",
    "space_before_the_dot": "def f(x):\n    return torch .sum(x, 1)\n",
    "dot_on_the_next_line_in_brackets": "def f(x):\n    return (torch\n            .sum)(x, 1)\n",
    # the ninth red team (2026-11-26): modules a deny-list did not name reach the process, files and attributes by
    # string; a match class pattern reads dunders as keywords; an alias hides a library routine's name. Refused
    # now by an import allow-list, a dunder check on the tree, and aliases written in full (profiling/python_policy)
    "pydoc_locate": "import pydoc\n_os = pydoc.locate('os')\n",
    "import_posix": "import posix\nposix.listdir('/')\n",
    "marshal_loads_code": "import marshal\n",
    "low_level_thread": "import _thread\n_thread.start_new_thread(print, ())\n",
    "operator_attrgetter": "from operator import attrgetter\n_get = attrgetter('__globals__')\n",
    "match_class_dunder": "def f(x):\n    match x:\n        case object(__class__=c):\n            return c\n",
    "mro_walk": "def f(x):\n    return x.__class__.__mro__[-1]\n",
    "library_routine_under_an_alias": "from torch import sum as s\ndef f(x):\n    return s(x, 1)\n",
    "library_routine_imported_bare": "from torch import sum\ndef f(x):\n    return sum(x, 1)\n",
    "functional_under_an_alias": "import torch.nn.functional as nnf\ndef f(x):\n    return nnf.softmax(x, 1)\n",
    # the tenth red team: reflective builtins read, not called; attributes walked by a run-time format string;
    # files and native code through the allowed packages; the library routine as a tensor method or an alias
    "getattr_by_another_name": "g = getattr\n_os = g(torch, 'o' + 's')\n",
    "getattr_through_map": "_os = list(map(getattr, [torch], ['o' + 's']))[0]\n",
    "attributes_walked_by_format": "SEP = ('{0.o' + 's.sep}').format(torch)\n",
    "file_read_by_torch_from_file": "T = torch.from_file('/etc/hostname', shared=False, size=4)\n",
    "pickle_through_torch_serialization": "W = torch.serialization.load('/tmp/x.pt')\n",
    "ctypes_through_numpy": "import numpy\nlib = numpy.ctypeslib.ctypes.CDLL(None)\n",
    "native_code_through_numpy_f2py": "from numpy import f2py\n",
    "numpy_testing_builds_extensions": "import numpy.testing\n",
    "torch_jit_load": "M = torch.jit.load('/tmp/model.pt')\n",
    "dynamo_internals": "import torch._dynamo\n",
    "row_sum_as_a_tensor_method": "def answer(x, out):\n    out.copy_(x.sum(1))\n",
    "row_sum_through_the_tensor_class": "def answer(x, out):\n    out.copy_(torch.Tensor.sum(x, 1))\n",
    "row_sum_aliased_by_assignment": "s = torch.sum\ndef answer(x, out):\n    out.copy_(s(x, 1))\n",
    "row_sum_as_a_product_with_ones": "def answer(x, out, n):\n    out.copy_(x @ torch.ones(n))\n",
    "row_sum_by_torch_mv": "def answer(x, out, n):\n    torch.mv(x, torch.ones(n), out=out)\n",
    # review: the host-code walk passed over any function whose decorator mentioned "jit"; TorchScript's runs
    # PyTorch on the host, under its own name or imported as `jit`
    "row_sum_in_torchscript": "@torch.jit.script\ndef answer(x):\n    return x.sum(1)\n",
    "row_sum_in_torchscript_named_jit": "from torch.jit import script as jit\n\n@jit\ndef answer(x):\n"
                                        "    return x.sum(1)\n",
}


@pytest.mark.parametrize("name", sorted(EVASIONS))
def test_static_check_evasion_is_flagged(task_dir: Path, name: str) -> None:
    """Attack (static, no run): each snippet reaches something the python patterns mean to refuse (os, processes,
    ctypes, the harness's own modules, half precision) by a spelling they miss."""
    assert static_messages(task_dir, KERNEL + "\n" + EVASIONS[name] + "\n\ndef row_sum(x, out, m, n):\n"
                           "    launch(x, out, m, n)\n")


@pytest.mark.parametrize(("cookie", "first_line"), [("utf-7", ""), ("unicode_escape", ""), ("latin-1", ""),
                                                    ("utf-7", "#\x0cx\n"), ("utf-7", "#x\r")])
def test_a_source_encoding_other_than_utf8_is_flagged(task_dir: Path, cookie: str, first_line: str) -> None:
    """Attack (static): the interpreter honours a coding line; the checks read UTF-8. Saved as utf-7, torch.sum is
    `torch.+AHM-um` to the checks; under unicode_escape, imports hide behind \\x escapes. The review found the
    coding line on line 2 missed behind a form feed in line 1 (str.splitlines breaks there, Python does not; import
    still read utf-7), and a lone carriage return ends line 1 for Python too."""
    assert static_messages(task_dir, first_line + f"# -*- coding: {cookie} -*-\n" + KERNEL
                           + "\n\ndef row_sum(x, out, m, n):\n    launch(x, out, m, n)\n")


def test_a_utf8_coding_line_and_a_hash_in_a_docstring_pass(task_dir: Path) -> None:
    """Innocent: a coding line that says UTF-8, and a docstring naming torch.sum whose last line holds a '#' (the
    comment pattern ate the closing quotes, the file stopped parsing and the docstring was read as a call)."""
    source = ("# -*- coding: utf-8 -*-\n" + KERNEL + '\n\ndef row_sum(x, out, m, n):\n    """As torch.sum(x, 1),\n'
              '    one program per row (issue #3)."""\n    launch(x, out, m, n)\n')
    assert not static_messages(task_dir, source)
    assert not static_messages(task_dir, "\ufeff" + source)  # saved with a byte-order mark (ninth red team)


TORCH_EVASIONS = {
    "import_problem_second_in_list": "import math, problem\n",
    "nn_functional_without_torch_prefix": "def lin(x, w):\n    return nn.functional.linear(x, w)\n",
    "matmul_operator": "def lin(x, w):\n    return x @ w.t()\n",
    "aten_op": "def lin(x, w):\n    return torch.ops.aten.mm(x, w.t())\n",
    "matmul_in_an_eval_string": "def lin(x, w):\n    return eval('x @ w.t()')\n",
    # a form feed inside a string: str.splitlines breaks there, the tokenizer does not, and line numbers computed
    # the first way would have blanked the matmul's line in place of the docstring's
    "form_feed_shifts_the_docstring_blanking": "S = 'a\x0cb'\ndef lin(x, w): return x @ w.t()\n"
                                               "\"\"\"a string statement long enough to cover the line above\"\"\"\n",
}


@pytest.mark.parametrize("name", sorted(TORCH_EVASIONS))
def test_torch_library_evasion_is_flagged(kb_tasks: Path, name: str) -> None:
    """Attack (static): the problem module imported or a GEMM called through a spelling the torch target's
    library pattern does not list."""
    source = TRITON_RELU + TORCH_EVASIONS[name] + "\n\nclass ModelNew(nn.Module):\n    def forward(self, x):\n" \
        "        return relu(x)\n"
    assert static_messages(kb_tasks / "kb_l2_003_linear_re_lu", source)


HONEST = {
    # the tenth red team's list of honest code the first python_policy refused
    "exports": "__all__ = ['row_sum']\n",
    "version_checks": "NEW = int(triton.__version__.split('.')[0]) >= 3 and torch.__version__ >= '2'\n",
    "a_warning": "import warnings\nwarnings.warn('a slow path for odd sizes')\n",
    "repr_with_the_class_name": "class C:\n    __slots__ = ('a',)\n\n    def __repr__(self):\n"
                                "        return self.__class__.__name__\n",
    "a_module_call_through_super": "import torch.nn as nn\nclass M(nn.Module):\n    def __call__(self, *a):\n"
                                   "        return super().__call__(*a)\n\n    def init(self):\n"
                                   "        for m in self.modules():\n            pass\n",
    "tf32_switched_off": "torch.backends.cuda.matmul.allow_tf32 = False\n",
    "copy_and_random": "import copy\nimport random\nCONFIGS = copy.deepcopy([64, 128])\n"
                       "random.Random(0).shuffle(CONFIGS)\n",
    "autotuned_kernel_with_reductions": "@triton.autotune(configs=[triton.Config({'B': 64})], key=['n'])\n"
                                        "@triton.jit\ndef k2(x_ptr, n, B: tl.constexpr):\n"
                                        "    v = tl.load(x_ptr + tl.arange(0, B))\n"
                                        "    tl.store(x_ptr, tl.sum(v, axis=0) + v.sum(axis=0))\n",
    "libdevice_and_do_bench": "from triton.language.extra import libdevice\nif __name__ == '__main__':\n"
                              "    import triton.testing\n",
    "a_literal_format": "LABEL = 'rows {}'.format(4)\n",
}


@pytest.mark.parametrize("name", sorted(HONEST))
def test_honest_python_passes(task_dir: Path, name: str) -> None:
    """Innocent: what honest Triton answers hold (the tenth red team's list of false rejections)."""
    assert not static_messages(task_dir, KERNEL + "\n" + HONEST[name] + "\n\ndef row_sum(x, out, m, n):\n"
                               "    launch(x, out, m, n)\n")


def test_what_an_honest_answer_imports_and_reaches_passes(task_dir: Path, kb_tasks: Path) -> None:
    """Innocent (python_policy): the modules a kernel needs under any spelling (triton.language as tl, math,
    functools' cache, typing), a module class calling super().__init__(), a function's __name__, and an imported
    name that is not a library routine (torch's Tensor, triton's cdiv)."""
    extra = ("import math\nimport functools\nfrom typing import Optional\nfrom triton import cdiv\n"
             "from torch import Tensor\n\n@functools.lru_cache(None)\ndef blocks(n: int) -> int:\n"
             "    return cdiv(n, 128) * int(math.log2(128))\n\nNAME = blocks.__name__\n")
    assert not static_messages(task_dir, KERNEL + "\n" + extra + "\n\ndef row_sum(x: Tensor, out: Tensor, m, n):\n"
                               "    launch(x, out, m, n)\n")
    module = (TRITON_RELU + "\n\nclass ModelNew(nn.Module):\n    def __init__(self, *args: Optional[int]) -> None:\n"
              "        super().__init__()\n\n    def forward(self, x):\n        return relu(x)\n")
    assert not static_messages(kb_tasks / "kb_l2_003_linear_re_lu", "from typing import Optional\n" + module)


def test_docstrings_that_name_library_operators_pass(kb_tasks: Path) -> None:
    """Innocent: docstrings that describe the math ("y = relu(x @ w.T + b)", torch.matmul in prose) never run. A
    Triton GEMM answer whose kernel's docstring said "x @ w.T" was refused as a matmul on the H100."""
    source = ('"""Replaces torch.matmul(x, w) and F.linear: y = relu(x @ w.T + b)."""\n' + TRITON_RELU
              + '\n\nclass ModelNew(nn.Module):\n    """x @ w.T, in Triton."""\n\n    def forward(self, x):\n'
              '        """Not torch.mm(x, w)."""\n        return relu(x)\n')
    assert not static_messages(kb_tasks / "kb_l2_003_linear_re_lu", source)


# ------------------------------------------------------------------------------------------------- the filter

PIDFD_PROBE = '''
import ctypes, os, sys
sys.path.insert(0, sys.argv[1])
import perfforge_serve
assert perfforge_serve.install_filter()
libc = ctypes.CDLL(None, use_errno=True)
fd = libc.syscall(434, os.getppid(), 0)  # pidfd_open
sent = libc.syscall(424, fd, 0, None, 0)  # pidfd_send_signal, signal 0, to the parent
stolen = libc.syscall(438, fd, 0, 0)  # pidfd_getfd: the parent's descriptor 0
print("signal", "allowed" if sent == 0 else "refused", "getfd", "allowed" if stolen >= 0 else "refused")
'''


@pytest.mark.skipif(not sandbox.seccomp_available(), reason="needs seccomp")
def test_the_filter_refuses_pidfd_signals_and_descriptor_theft() -> None:
    """Attack: after the filter, signal another process through a pidfd, and copy a descriptor out of another
    process with pidfd_getfd (outside the judge's Landlock fence, as a plain child of this test)."""
    result = subprocess.run([sys.executable, "-c", PIDFD_PROBE, str(RUNTIME_DIR)], capture_output=True, text=True,
                            timeout=60)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["signal", "refused", "getfd", "refused"]


# ------------------------------------------------------------------------------------------- served attacks

def test_a_filter_swapped_for_allow_all_and_a_helper_forked_after_ready(task_dir: Path, tmp_path: Path) -> None:
    """Attack: at import, replace perfforge_serve.filter_program (module not flagged) with a one-instruction
    allow-all program, so /proc still shows a seccomp filter. On the first call (after the process-alone check),
    fork a helper that leaves the process group (setsid), so the judge's SIGSTOP no longer reaches it: it could
    work on the judge's inputs while they are written and before the call. Here it computes the outputs and the
    call only waits for it. The judge should refuse the process (not alone, or not under the harness's filter).
    It read CORRECT on 20 checked runs when first written. Now the static check refuses the perfforge_serve and mmap
    imports, and at run time an interpreted process must be alone at every stop, not only after its set-up
    (served.KernelProcess._refuse_others)."""
    status, reason = judge(task_dir, tmp_path, KERNEL + '''
import mmap
import perfforge_serve
from perfforge_serve import os as _os

perfforge_serve.filter_program = lambda pid, machine=None: [(0x06, 0, 0, 0x7FFF0000)]
_flag = mmap.mmap(-1, 16)
_helper = []


def _serve(x, out, m, n):
    _os.setsid()
    for _ in range(20_000_000):  # gone by itself within a minute or so
        if _flag[0] == 1:
            launch(x, out, m, n)
            _flag[0] = 2
        _os.sched_yield()
    _os._exit(0)


def row_sum(x, out, m, n):
    if not _helper:
        pid = _os.fork()
        if pid == 0:
            _serve(x, out, m, n)
        _helper.append(pid)
    _flag[0] = 1
    while _flag[0] != 2:
        _os.sched_yield()
    _flag[0] = 0
''')
    assert status is not Status.CORRECT, reason


@pytest.mark.xfail(strict=True, reason="on the CPU nothing profiles which kernels ran: a Triton kernel defined and "
                   "launched only in dead code satisfies no_device_kernel, and torch.relu is not in the torch "
                   "target's library pattern. On a GPU the kernel coverage check refuses it (measured on the H200: "
                   "tests/profiling/test_kernel_coverage.py's real captures)")
def test_a_dead_triton_kernel_and_pytorch_operators_doing_the_work(kb_tasks: Path, tmp_path: Path) -> None:
    """Attack (torch target): define and 'launch' a Triton kernel in a function never called, and do all the work
    with torch.relu (PyTorch operators alone are not an answer)."""
    status, reason = judge_kb(kb_tasks / "kb_l1_019_re_lu", tmp_path, TRITON_RELU + '''

class ModelNew(nn.Module):
    def forward(self, x):
        return torch.relu(x)
''')
    assert status is Status.REJECTED, reason


def test_different_weights_are_incorrect(kb_tasks: Path, tmp_path: Path) -> None:
    """Attack (torch target): build ModelNew's nn.Linear after drawing from torch's generator once more, so its
    weights differ from the reference's (a 'cheaper' model). Caught: INCORRECT."""
    status, reason = judge_kb(kb_tasks / "kb_l2_003_linear_re_lu", tmp_path, TRITON_RELU + '''

class ModelNew(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        torch.randn(1)
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x):
        return relu(self.linear(x))
''')
    assert status is Status.INCORRECT, reason


def test_the_reference_model_reached_indirectly(kb_tasks: Path, tmp_path: Path) -> None:
    """Attack (torch target): take problem.Model through pkgutil.resolve_name (no `import problem` line) and let
    its forward do the GEMM; a Triton ReLU on an already-ReLU'd result keeps no_device_kernel satisfied."""
    status, reason = judge_kb(kb_tasks / "kb_l2_003_linear_re_lu", tmp_path, TRITON_RELU + '''
import pkgutil


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.inner = pkgutil.resolve_name("problem:Model")(in_features, out_features)

    def forward(self, x):
        return relu(self.inner(x))
''')
    assert status is Status.REJECTED, reason


def test_nothing_written_outside_the_scratch_directory_outlives_the_verdict(
        task_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Attack: at import, make a directory in /dev/shm (os through perfforge_serve, no open() call), a cache that
    would outlive the verdict and reach later ones. The static check refuses this spelling; it is switched off
    here to stand for a spelling it misses, so the run's fence is what is tested: the run has a /dev/shm of its
    own (a tmpfs in its own mount namespace), gone with it."""
    if not sandbox.private_shared_memory_available():
        pytest.skip("no mount namespace on this machine: /dev/shm is shared (docs/validation.md)")
    monkeypatch.setattr("profiling.validate.run_static_checks", lambda source, task: [])
    marker = Path("/dev/shm") / f"pf-redteam-{uuid.uuid4().hex}"
    try:
        status, reason = judge(task_dir, tmp_path, KERNEL + f'''
import contextlib
from perfforge_serve import os as _os

with contextlib.suppress(OSError):
    _os.mkdir("{marker}")


def row_sum(x, out, m, n):
    launch(x, out, m, n)
''')
        assert status is Status.CORRECT, reason
        assert not marker.exists()
    finally:
        if marker.exists():
            marker.rmdir()
