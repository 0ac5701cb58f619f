"""Whose kernels did the work (profiling/kernel_coverage.py): the answer's kernels read from its source, ncu's kernel
names matched to them, and the three ways an answer fails (none of its kernels ran, PyTorch took most of the time,
its served calls were faster than its profiled kernels can be)."""

from __future__ import annotations

from pathlib import Path

import pytest

from perfforge.io import read_json
from perfforge.records import CounterValue
from profiling.cuda.launches import read_application_page
from profiling.cuda.metrics import DURATION
from profiling.cuda.raw_csv import KernelLaunch, function_name
from profiling.kernel_coverage import (
    MAX_PROFILED_OVER_SERVED,
    MIN_OWN_SHARE,
    DefinedKernels,
    coverage_of,
    defined_kernels,
    reference_kernel_forms,
)

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "ncu"

TRITON_ANSWER = '''
import torch, triton
import triton.language as tl

@triton.autotune(configs=[triton.Config({"B": 1024})], key=["n"])
@triton.jit
def relu_kernel(x, y, n, B: tl.constexpr):
    i = tl.program_id(0) * B + tl.arange(0, B)
    tl.store(y + i, tl.maximum(tl.load(x + i, mask=i < n), 0), mask=i < n)

@triton.jit
def _helper(x):
    return x

def launch(x):
    y = torch.empty_like(x)
    relu_kernel[(triton.cdiv(x.numel(), 1024),)](x, y, x.numel())
    return y
'''

CUDA_ANSWER = r'''
from torch.utils.cpp_extension import load_inline
source = """
template <int B>
__global__ void __launch_bounds__(256) scale_kernel(const float* x, float* y, int n) { }
extern "C" __global__ void plain(float* y) { }
__global__ static void tiled_softmax<128>(float* y);
"""
module = load_inline("m", cpp_sources="", cuda_sources=source)
'''


def _launch(kernel: str, duration_ns: float, launch_id: int = 0) -> KernelLaunch:
    return KernelLaunch(launch_id=launch_id, kernel=kernel, block_size="(256, 1, 1)", grid_size="(64, 1, 1)",
                        device="0", compute_capability="9.0",
                        counters={DURATION: CounterValue(DURATION, duration_ns, "ns")})


def test_the_kernels_an_answer_defines_are_read_from_triton_and_inline_cuda() -> None:
    assert defined_kernels(TRITON_ANSWER) == DefinedKernels(triton=("relu_kernel", "_helper"))
    assert defined_kernels(CUDA_ANSWER) == DefinedKernels(cuda=("scale_kernel", "plain", "tiled_softmax"))
    assert defined_kernels("import torch\nclass ModelNew:\n    pass\n").names == ()


def test_ncu_kernel_names_reduce_to_their_function_names() -> None:
    assert function_name("relu_kernel") == "relu_kernel"
    assert function_name("void scale_kernel<128>(const float *, float *, int)") == "scale_kernel"
    assert function_name("void at::native::vectorized_elementwise_kernel<4, at::native::(anonymous namespace)::"
                         "launch_clamp_scalar(...)>(int, T2, T3)") == "vectorized_elementwise_kernel"
    assert function_name("ampere_sgemm_128x64_nn") == "ampere_sgemm_128x64_nn"


def test_an_answer_whose_kernels_did_all_the_work_passes() -> None:
    """A real application page (ncu on an H100: two kernels of a CUDA row norm, five calls)."""
    launches = read_application_page(FIXTURES / "rownorm_launches.slow.launches.csv")
    coverage = coverage_of(launches, DefinedKernels(cuda=("rownorm_sum_squares", "rownorm_scale")), calls=5)
    assert coverage.own_share == 1.0 and coverage.other_ms == 0.0
    assert coverage.own_kernels == ("rownorm_sum_squares", "rownorm_scale") or set(coverage.own_kernels) == {
        "rownorm_sum_squares", "rownorm_scale"}
    assert coverage.problem(served_call_ms=coverage.own_ms * 2) == ""


def test_a_dead_kernel_beside_a_pytorch_forward_is_named() -> None:
    """Scenario: the red team's answer defines and 'launches' a Triton kernel in a branch that never runs, and its
    forward calls torch.relu: every launch in the profiled call is PyTorch's."""
    launches = [_launch("void at::native::vectorized_elementwise_kernel<4, clamp_min>(int, T2, T3)", 40_000)]
    coverage = coverage_of(launches, defined_kernels(TRITON_ANSWER))
    problem = coverage.problem(served_call_ms=0.05)
    assert "none of its kernels (relu_kernel, _helper) ran" in problem
    assert "vectorized_elementwise_kernel" in problem


def test_pytorch_doing_most_of_the_work_beside_a_small_own_kernel_is_refused() -> None:
    """Scenario: the answer's own kernel adds the bias (a few microseconds) and torch's GEMM, reached through a
    module called in forward (self.linear(x), which no static check sees), does the matrix product."""
    launches = [_launch("sm90_xmma_gemm_f32f32_tf32f32_f32_tn_n_tilesize128x128x32", 900_000, 0),
                _launch("bias_relu", 30_000, 1)]
    coverage = coverage_of(launches, DefinedKernels(triton=("bias_relu",)))
    assert coverage.own_share < MIN_OWN_SHARE
    assert "PyTorch's operators did the work" in coverage.problem(served_call_ms=1.0)


def test_layout_copies_beside_the_answers_kernel_are_allowed() -> None:
    """Legitimate and unusual: an answer that makes its input contiguous with PyTorch (a copy kernel) before its
    own kernel, which takes most of the time."""
    launches = [_launch("void at::native::elementwise_kernel<128, 2>(int, T3)", 20_000, 0),
                _launch("void softmax_rows<256>(const float *, float *, int)", 80_000, 1)]
    coverage = coverage_of(launches, DefinedKernels(cuda=("softmax_rows",)))
    assert abs(coverage.own_share - 0.8) < 1e-9
    assert coverage.problem(served_call_ms=0.12) == ""
    assert "softmax_rows took 80%" in coverage.summary()


def test_served_calls_faster_than_the_profiled_kernels_show_a_different_path_when_timed() -> None:
    """Scenario: the answer checks whether it runs under the profiler (its arguments say 'profile', ncu's
    injection library is in its environment) and launches its kernel only then; served, it answers with a faster
    PyTorch path. Its served median cannot hold the kernel time its profile shows."""
    coverage = coverage_of([_launch("relu_kernel", 1_000_000)], DefinedKernels(triton=("relu_kernel",)))
    assert coverage.problem(served_call_ms=1.0) == ""
    assert coverage.problem(served_call_ms=None) == ""  # not timed: nothing to hold it against
    slow = coverage.problem(served_call_ms=1.0 / (MAX_PROFILED_OVER_SERVED + 0.5))
    assert "does not run the profiled kernels when it is timed" in slow


def test_no_launch_at_all_is_a_problem() -> None:
    coverage = coverage_of([], DefinedKernels(triton=("relu_kernel",)))
    assert "no kernel at all" in coverage.problem(served_call_ms=0.01)


def test_real_captures_of_three_kernelbench_answers_read_as_their_verdicts_did() -> None:
    """ncu application pages from the H200 (tests/fixtures/ncu/README.md): a fused Triton GELU and a load_inline
    CUDA GELU did all the work; the dead-kernel answer ran only PyTorch's elementwise kernels."""
    triton = coverage_of(read_application_page(FIXTURES / "kb088_gelu_triton.launches.csv"),
                         DefinedKernels(triton=("gelu_kernel",)))
    assert triton.own_kernels == ("gelu_kernel",) and triton.own_share == 1.0
    assert triton.problem(served_call_ms=0.4726) == ""
    inline = coverage_of(read_application_page(FIXTURES / "kb088_gelu_inline.launches.csv"),
                         DefinedKernels(cuda=("gelu_cuda_kernel",)))
    assert inline.own_kernels == ("gelu_cuda_kernel",) and inline.problem(served_call_ms=0.5587) == ""
    dead = coverage_of(read_application_page(FIXTURES / "kb088_gelu_dead.launches.csv"),
                       DefinedKernels(triton=("gelu_kernel",)))
    assert dead.own_kernels == () and dead.other_kernels == ("vectorized_elementwise_kernel",)
    assert dead.other_ms > 1.0  # eight elementwise launches, 1.12 ms
    assert "none of its kernels (gelu_kernel) ran" in dead.problem(served_call_ms=1.4)


def test_a_triton_kernel_named_after_pytorchs_does_not_make_pytorchs_launches_its_own() -> None:
    """Attack: the dead Triton kernel is named vectorized_elementwise_kernel, the family PyTorch's elementwise
    operators launch, so that matching by function name alone would count PyTorch's work (the real capture of the
    dead-kernel answer) as the answer's. A Triton launch prints bare; PyTorch's prints with its template."""
    launches = read_application_page(FIXTURES / "kb088_gelu_dead.launches.csv")
    coverage = coverage_of(launches, DefinedKernels(triton=("vectorized_elementwise_kernel",)))
    assert coverage.own_kernels == ()
    assert "none of its kernels (vectorized_elementwise_kernel) ran" in coverage.problem(served_call_ms=1.4)


def _reference_forms() -> frozenset[str]:
    """KernelBench 88's PyTorch reference as ncu printed its launches on an H100 (the judge's cache file,
    captured): the same six forms as the dead-kernel answer's, whose forward is the reference's expression."""
    return frozenset(read_json(FIXTURES / "kb088_reference.forms.json")[""])


def test_the_reference_is_profiled_once_per_key_and_read_from_the_cache_after(tmp_path: Path,
                                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    """The reference's forms come from one ncu run per (build, GPU kind, arguments), then from the cache file."""
    import profiling.kernel_coverage as coverage_module

    runs = []

    def profile(*args: object, **kwargs: object) -> list[KernelLaunch]:
        runs.append(args)
        return read_application_page(FIXTURES / "kb088_gelu_dead.launches.csv")

    monkeypatch.setattr(coverage_module, "profiled_launches", profile)
    cache = tmp_path / "cache" / "digest.json"
    options = {"work_dir": tmp_path / "work", "writable": (), "timeout_s": 1.0}
    first = reference_kernel_forms(["harness"], {}, [], cache, "sm 9.0: ", **options)
    again = reference_kernel_forms(["harness"], {}, [], cache, "sm 9.0: ", **options)
    assert first == again == _reference_forms() and len(runs) == 1
    reference_kernel_forms(["harness"], {}, ["--n", "2"], cache, "sm 9.0: --n 2", **options)
    assert len(runs) == 2 and set(read_json(cache)) == {"sm 9.0: ", "sm 9.0: --n 2"}
    cache.write_text("{ not json")  # a file the judge cannot read is profiled again, never a crash
    assert reference_kernel_forms(["harness"], {}, [], cache, "sm 9.0: ", **options) == _reference_forms()
    assert len(runs) == 3 and set(read_json(cache)) == {"sm 9.0: "}


def test_a_cuda_template_named_after_pytorchs_kernels_is_not_counted_as_the_answers() -> None:
    """Attack: load_inline source holds `template <int N, typename F, typename A> __global__ void
    vectorized_elementwise_kernel(int, F, A) {}`, never launched; PyTorch's operators do the work. ncu prints that
    template exactly as PyTorch's, so by name it owns PyTorch's launches (7.1% of nothing: 100% of the call).
    Caught: those forms are the reference's own launches, so whose they are cannot be told."""
    launches = read_application_page(FIXTURES / "kb088_gelu_dead.launches.csv")
    defined = DefinedKernels(cuda=("vectorized_elementwise_kernel",))
    assert coverage_of(launches, defined).problem(served_call_ms=1.4) == ""  # the hole, by names alone
    coverage = coverage_of(launches, defined, reference_kernels=_reference_forms())
    assert coverage.own_kernels == () and coverage.ambiguous_kernels == ("vectorized_elementwise_kernel",)
    assert "print as kernels the PyTorch reference itself launches" in coverage.problem(served_call_ms=1.4)


def test_a_triton_kernel_named_after_a_library_kernel_is_not_counted_as_the_answers() -> None:
    """Attack: a @triton.jit kernel, never launched, named exactly as a kernel the reference launches bare (ncu
    prints Triton's and a library's extern "C" kernels alike, bare), with torch.matmul doing the work. Caught by
    the reference's forms as above."""
    bare = _launch("sm90_xmma_gemm_f32f32_tf32f32_f32_tn_n_tilesize128x128x32_cublas", 120_000.0)
    coverage = coverage_of([bare], DefinedKernels(triton=(bare.kernel,)), reference_kernels=frozenset({bare.kernel}))
    assert coverage.own_kernels == () and "rename its kernels" in coverage.problem(served_call_ms=0.2)


def test_answers_with_kernels_of_their_own_are_unaffected_by_the_reference() -> None:
    """Legitimate: the Triton and load_inline GELU answers (real captures) own their kernels beside the
    reference's forms, PyTorch's launches they also make (none here) staying the rest."""
    reference = _reference_forms()
    triton = coverage_of(read_application_page(FIXTURES / "kb088_gelu_triton.launches.csv"),
                         DefinedKernels(triton=("gelu_kernel",)), reference_kernels=reference)
    inline = coverage_of(read_application_page(FIXTURES / "kb088_gelu_inline.launches.csv"),
                         DefinedKernels(cuda=("gelu_cuda_kernel",)), reference_kernels=reference)
    assert triton.own_kernels == ("gelu_kernel",) and triton.ambiguous_kernels == ()
    assert inline.own_kernels == ("gelu_cuda_kernel",) and inline.ambiguous_kernels == ()
    assert triton.problem(served_call_ms=0.4726) == "" and inline.problem(served_call_ms=0.5587) == ""
