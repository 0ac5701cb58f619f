"""mining/launches.py: which kernel a launch starts, its configuration, and what that configuration depends on.

Every source is a small snippet written for the rule it checks.
"""

from __future__ import annotations

import pytest

from mining.launches import Launch, calls, launch_shapes, launches, short_name

KERNELS = {"kern": "ns::kern", "other": "other"}  # what a launch writes -> the kernel's name in the file


def configs(code: str, language: str = "cuda") -> list[tuple[str, str]]:
    return [(launch.kernel, launch.config) for launch in launches(code, language, KERNELS)]


@pytest.mark.parametrize(("code", "found"), [
    ("kern<<<grid, block>>>(x);", [("ns::kern", "grid, block")]),
    ("ns::kern<float, Vec<4>><<<g, b, smem, stream>>>(x);", [("ns::kern", "g, b, smem, stream")]),
    ("kern <<< dim3(n / 32, 1), 32 >>> (x);", [("ns::kern", " dim3(n / 32, 1), 32 ")]),
    # HIP's macro and the runtime calls: grid, block, shared memory and stream, not the kernel's arguments
    ("hipLaunchKernelGGL(HIP_KERNEL_NAME(kern<float>), dim3(g), dim3(b), 0, stream, x, n);",
     [("ns::kern", "dim3(g), dim3(b), 0, stream")]),
    ("cudaLaunchKernel((void*)kern, grid, block, args, smem, stream);", [("ns::kern", "grid, block, smem, stream")]),
    # in order, several launches
    ("other<<<1, 1>>>(y);\nkern<<<2, 2>>>(x);", [("other", "1, 1"), ("ns::kern", "2, 2")]),
])
def test_cuda_and_hip_launches(code: str, found: list[tuple[str, str]]) -> None:
    assert configs(code) == found


@pytest.mark.parametrize("code", [
    "// kern<<<grid, block>>>(x);",  # commented out
    "/* old: kern<<<grid, block>>>(x); */",
    "elsewhere<<<grid, block>>>(x);",  # a kernel this file does not define
    "hipLaunchKernelGGL(elsewhere, dim3(g), dim3(b), 0, 0, x);",
])
def test_what_is_no_launch_of_the_files_kernels(code: str) -> None:
    assert configs(code) == []


def test_triton_launch_keeps_the_grid_and_the_launch_options() -> None:
    """num_warps and the upper-case constexpr BLOCK configure the launch; x, n and eviction feed the kernel."""
    code = 'kern[grid](x, n, BLOCK=128, num_warps=4, eviction="evict_last")\n'
    assert configs(code, "python") == [("ns::kern", "grid, BLOCK=128, num_warps=4")]


@pytest.mark.parametrize("code", [
    "table[i](x)",  # not a Triton kernel of the file
    "compiled = kern[grid]",  # indexed, not called
    "# kern[grid](x)",
])
def test_what_is_no_triton_launch(code: str) -> None:
    assert configs(code, "python") == []


LAUNCHER = """void launch(float* x, int n) {
    int threads = 256;
    int blocks = (n + threads - 1) / threads;
    int unused = 7;
    kern<<<blocks, threads>>>(x, n);
}"""


def shape(code: str, language: str = "cuda") -> str:
    [found] = launches(code, language, KERNELS)
    [result] = launch_shapes(code, language, [found])
    return result


def test_shape_follows_the_values_the_configuration_reads() -> None:
    """threads is read through blocks too; `unused` is read by nothing the launch reads."""
    assert shape(LAUNCHER) != shape(LAUNCHER.replace("threads = 256", "threads = 512"))
    assert shape(LAUNCHER) == shape(LAUNCHER.replace("unused = 7", "unused = 8"))
    assert shape(LAUNCHER) == shape(LAUNCHER.replace("(n + threads - 1)", "( n + threads - 1 )"))


def test_shape_reads_c_constructor_declarations_and_python_assignments() -> None:
    dim3 = "dim3 grid(n / TILE);\nkern<<<grid, TILE>>>(x);"
    assert shape(dim3) != shape(dim3.replace("n / TILE", "n / TILE / 2"))
    triton = "block = 1024\nkern[(n // block,)](x, n, BLOCK=block)\n"
    assert shape(triton, "python") != shape(triton.replace("1024", "4096"), "python")


def test_calls_name_the_files_functions_but_not_the_callers_own_name() -> None:
    """`launch` in its own header is no call; helper is one, twice; printf is not a function of the file."""
    code = "void launch(int n) {\n    helper(n);\n    printf(\"%d\", n);\n    helper(n + 1);\n}"
    functions = {"launch": ["launch"], "helper": ["ns::helper"]}
    assert [name for _, name in calls(code, "cuda", functions, "launch")] == ["ns::helper", "ns::helper"]


@pytest.mark.parametrize(("name", "short"), [("ns::Class::f", "f"), ("Class.f", "f"), ("f", "f")])
def test_short_name(name: str, short: str) -> None:
    assert short_name(name) == short


def test_launch_offsets_are_in_the_code() -> None:
    code = "int a;\nkern<<<1, 1>>>(x);"
    assert launches(code, "cuda", KERNELS) == [Launch("ns::kern", code.index("kern"), "1, 1")]
