"""mining/functions.py: definitions, their kinds, names and lines, and changed-function matching.

Every source is a small snippet written for the rule it checks.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from mining import functions
from mining.functions import Function, changed_functions, extract_functions, language_of
from mining.gitlog import FileDiff, parse_patch
from perfforge.records import KernelKind


def by_name(source: str, language: str) -> dict[str, Function]:
    return {function.name: function for function in extract_functions(source, language)}


def kinds(source: str, language: str) -> dict[str, KernelKind]:
    return {name: function.kind for name, function in by_name(source, language).items()}


# ---- languages ---------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("path", "language"), [
    ("src/softmax.cu", "cuda"), ("include/common.cuh", "cuda"), ("hip/add.hip", "cuda"),
    ("ggml.c", "c"), ("ops.h", "cpp"), ("ops.cpp", "cpp"), ("ops.cc", "cpp"), ("impl.inl", "cpp"),
    ("Legacy.C", "cpp"), ("kernels/add.cl", "opencl"), ("ops/rms_norm.py", "python"),
    ("solver.f90", "fortran"), ("solver.F90", "fortran"), ("old.f", "fortran"), ("old.F", "fortran"),
    ("Kernel.CU", "cuda"), ("README.md", None), ("Makefile", None), ("shader.metal", None),
])
def test_language_of_reads_the_extension(path: str, language: str | None) -> None:
    assert language_of(path) == language


def test_unknown_language_is_refused_with_the_valid_names() -> None:
    with pytest.raises(ValueError, match="cuda"):
        extract_functions("int f() { return 0; }", "rust")


# ---- kinds -------------------------------------------------------------------------------------------------------

CUDA_SOURCE = """\
#include <cuda_runtime.h>

template <typename T, int BLOCK>
__global__ void __launch_bounds__(BLOCK, 2) scale_kernel(T* x, T factor) {
    x[threadIdx.x] *= factor;
}

static __global__ void zero_kernel(float* x) { x[threadIdx.x] = 0.0f; }

extern "C" __global__ void exported_kernel(float* x) {
    x[0] = 1.0f;
}

__device__ __forceinline__ float square(float v) { return v * v; }

__host__ __device__ int both_sides(int v) { return v + 1; }

void launch(float* x, int n) {
    zero_kernel<<<n / 256, 256>>>(x);
}
"""


def test_cuda_qualifiers_decide_kernel_device_and_host_kinds() -> None:
    assert kinds(CUDA_SOURCE, "cuda") == {
        "scale_kernel": KernelKind.CUDA_KERNEL,
        "zero_kernel": KernelKind.CUDA_KERNEL,
        "exported_kernel": KernelKind.CUDA_KERNEL,
        "square": KernelKind.DEVICE_FUNCTION,
        "both_sides": KernelKind.DEVICE_FUNCTION,
        "launch": KernelKind.HOST_FUNCTION,
    }


def test_template_header_and_extern_c_belong_to_the_definition() -> None:
    functions = by_name(CUDA_SOURCE, "cuda")
    assert (functions["scale_kernel"].start_line, functions["scale_kernel"].end_line) == (3, 6)
    assert functions["scale_kernel"].code.startswith("template <typename T, int BLOCK>\n__global__")
    assert (functions["exported_kernel"].start_line, functions["exported_kernel"].end_line) == (10, 12)


def test_hip_kernel_in_a_cpp_file_is_a_cuda_kernel() -> None:
    """The C++ grammar misreads __global__ as a type name; the kind still comes from the qualifier."""
    source = "__global__ void hip_add(float* a) { a[hipThreadIdx_x] += 1; }\nint host() { return 0; }\n"
    assert kinds(source, "cpp") == {"hip_add": KernelKind.CUDA_KERNEL, "host": KernelKind.HOST_FUNCTION}


@pytest.mark.parametrize("attributes", [
    # read as a function named __cluster_dims__ whose parameter list holds the kernel
    "__cluster_dims__(C::CLUSTER, 1, 1) __launch_bounds__(C::THREADS, 1)",
    # read as a template declaration missing its `;` that swallows __global__, then a host function
    "__launch_bounds__(C::THREADS, 1)\n__cluster_dims__(C::CLUSTER)",
])
def test_attribute_macros_before_a_kernel_keep_its_name_kind_and_lines(attributes: str) -> None:
    source = f"""\
template <typename C>
{attributes}
__global__ void attention(const __grid_constant__ Globals<C> g) {{
    run(g);
}}
"""
    functions = extract_functions(source, "cuda")
    end_line = source.count("\n")
    assert [(f.name, f.kind, f.start_line, f.end_line) for f in functions] == [
        ("attention", KernelKind.CUDA_KERNEL, 1, end_line),
    ]


SPLIT_CONDITION_KERNEL = """\
__global__ void reduce(const float* x, float* y, int n) {
    if ((n == 1) &&
#ifdef USE_GRAPHS
            (n > 4)) {
#else
            (n > 8)) {
#endif
        y[0] = x[0];
    }
}

"""


def test_body_with_a_brace_in_each_conditional_branch_ends_at_its_own_brace() -> None:
    """tree-sitter counts both branches' `{` and runs the kernel's body on over the next function."""
    functions = by_name(SPLIT_CONDITION_KERNEL + "static void after(float* y) { y[0] = 0; }\n", "cuda")
    assert functions["reduce"].kind == KernelKind.CUDA_KERNEL
    assert (functions["reduce"].start_line, functions["reduce"].end_line) == (1, 10)
    assert (functions["after"].start_line, functions["after"].end_line) == (12, 12)


def test_indented_conditional_directives_split_a_body_like_unindented_ones() -> None:
    source = SPLIT_CONDITION_KERNEL.replace("#ifdef", " \t#  ifdef").replace("#else", "  # else")
    functions = by_name(source.replace("#endif", "\t#endif") + "static void after(float* y) { y[0] = 0; }\n", "cuda")
    assert (functions["reduce"].start_line, functions["reduce"].end_line) == (1, 10)
    assert (functions["after"].start_line, functions["after"].end_line) == (12, 12)


def test_kernel_that_tree_sitter_gives_up_on_is_recovered_from_the_error_node() -> None:
    """Followed by this one-liner, the split condition makes the whole file a single ERROR node."""
    functions = by_name(SPLIT_CONDITION_KERNEL + "void after(void) { }\n", "cuda")
    assert functions["reduce"].kind == KernelKind.CUDA_KERNEL
    assert (functions["reduce"].start_line, functions["reduce"].end_line) == (1, 10)


def test_definitions_in_a_recovered_kernel_body_belong_to_the_kernel() -> None:
    """Error recovery leaves the helper and the method as definitions outside the ERROR node that the kernel is
    recovered from; they lie in the kernel's body, so they are part of it, not functions of their own."""
    local = "    float helper(float v) { return v; }\n    struct S { void m() { } };\n"
    source = SPLIT_CONDITION_KERNEL.replace("    }\n}\n", "    }\n" + local + "}\n") + "void after(void) { }\n"
    functions = extract_functions(source, "cuda")
    assert [(f.name, f.start_line, f.end_line) for f in functions][:1] == [("reduce", 1, 12)]
    assert not {"helper", "m", "S::m"} & {f.name for f in functions}


def test_opencl_kernel_qualifiers() -> None:
    source = """\
float helper(float v) { return v * 2.0f; }

__kernel void add(__global const float* a, __global float* b) {
    b[get_global_id(0)] += a[get_global_id(0)];
}

REQD_SUBGROUP_SIZE_64
kernel void scale(global float* a, float factor) {
    a[get_global_id(0)] *= factor;
}
"""
    functions = by_name(source, "opencl")
    assert {name: f.kind for name, f in functions.items()} == {
        "helper": KernelKind.HOST_FUNCTION, "add": KernelKind.OPENCL_KERNEL, "scale": KernelKind.OPENCL_KERNEL,
    }
    assert functions["scale"].start_line == 7  # the attribute macro line belongs to the kernel


def test_openmp_pragma_makes_an_openmp_region_but_not_when_commented_out() -> None:
    source = """\
void parallel_sum(float* x, int n) {
    #pragma omp parallel for
    for (int i = 0; i < n; i++) { x[i] += 1; }
}

void serial_sum(float* x, int n) {
    // #pragma omp parallel for
    for (int i = 0; i < n; i++) { x[i] += 1; }
}

void via_operator(float* x) {
    _Pragma("omp simd")
    for (int i = 0; i < 8; i++) { x[i] = 0; }
}
"""
    assert kinds(source, "c") == {
        "parallel_sum": KernelKind.OPENMP_REGION,
        "serial_sum": KernelKind.HOST_FUNCTION,
        "via_operator": KernelKind.OPENMP_REGION,
    }


def test_comment_marker_in_a_string_does_not_hide_the_pragma_after_it() -> None:
    source = """\
void run(float* x, int n) {
    const char* url = "http://a/*b";
#pragma omp parallel for
    for (int i = 0; i < n; i++) x[i] = 0;
}
"""
    assert kinds(source, "c") == {"run": KernelKind.OPENMP_REGION}


def test_openmp_in_a_cuda_file_is_an_openmp_region_unless_the_function_is_device_code() -> None:
    source = """\
void cpu_reference(float* x, int n) {
#pragma omp parallel for
    for (int i = 0; i < n; i++) { x[i] = 0; }
}
__device__ void odd(float* x) {
#pragma omp parallel for
    for (int i = 0; i < 4; i++) { x[i] = 0; }
}
"""
    assert kinds(source, "cuda") == {"cpu_reference": KernelKind.OPENMP_REGION, "odd": KernelKind.DEVICE_FUNCTION}


FORTRAN_SOURCE = """\
module solver
  interface
    subroutine external_routine(x)
      real :: x
    end subroutine external_routine
  end interface
contains
  subroutine saxpy(n, a, x, y)
    integer :: n, i
    real :: a, x(n), y(n)
    !$omp parallel do
    do i = 1, n
      y(i) = a * x(i) + y(i)
    end do
    !$omp end parallel do
  end subroutine saxpy

  pure real function square(v) result(r)
    real, intent(in) :: v
    ! $omp is no directive once a space follows the bang
    r = v * v
  end function square
end module solver
"""


def test_fortran_subroutines_and_functions_with_and_without_openmp() -> None:
    functions = by_name(FORTRAN_SOURCE, "fortran")
    assert {name: f.kind for name, f in functions.items()} == {
        "saxpy": KernelKind.OPENMP_REGION, "square": KernelKind.HOST_FUNCTION,
    }  # the interface body declares external_routine, it does not define it
    assert (functions["saxpy"].start_line, functions["saxpy"].end_line) == (8, 16)
    assert functions["square"].code.endswith("end function square")


TRITON_SOURCE = """\
import triton
import triton.language as tl
import triton as tr
from triton import jit as triton_jit
from numba import jit


@triton.jit
def plain_kernel(x_ptr, n, BLOCK: tl.constexpr):
    pass


@triton.autotune(configs=[triton.Config({"BLOCK": 128})], key=["n"])
@triton.heuristics({"EVEN": lambda args: args["n"] % 128 == 0})
@triton.jit(do_not_specialize=["n"])
def tuned_kernel(x_ptr, n, BLOCK: tl.constexpr, EVEN: tl.constexpr):
    pass


@tr.jit
def aliased_module_kernel(x_ptr):
    pass


@triton_jit
def imported_jit_kernel(x_ptr):
    pass


@jit(nopython=True)
def numba_function(x):
    return x


def launcher(x):
    plain_kernel[(1,)](x, 1, BLOCK=128)
"""


def test_triton_decorators_make_triton_kernels() -> None:
    assert kinds(TRITON_SOURCE, "python") == {
        "plain_kernel": KernelKind.TRITON_KERNEL,
        "tuned_kernel": KernelKind.TRITON_KERNEL,
        "aliased_module_kernel": KernelKind.TRITON_KERNEL,
        "imported_jit_kernel": KernelKind.TRITON_KERNEL,
        "numba_function": KernelKind.PYTHON_FUNCTION,  # a jit, but not triton's
        "launcher": KernelKind.PYTHON_FUNCTION,
    }


def test_decorators_belong_to_the_definition() -> None:
    tuned = by_name(TRITON_SOURCE, "python")["tuned_kernel"]
    assert tuned.start_line == 13
    assert tuned.code.startswith("@triton.autotune(")
    assert tuned.end_line == 17


# ---- names -------------------------------------------------------------------------------------------------------


def test_cpp_names_are_qualified_by_visible_namespaces_and_classes() -> None:
    source = """\
namespace flash {
struct Softmax {
    __device__ void rescale(float* o) { o[0] = 0; }
};
void Runner::launch() { }
namespace {
int hidden() { return 1; }
}
}
int free_function() { return 0; }
"""
    assert list(by_name(source, "cuda")) == [
        "flash::Softmax::rescale", "flash::Runner::launch", "flash::hidden", "free_function",
    ]


def test_python_methods_are_qualified_by_their_classes_and_nested_functions_are_found() -> None:
    source = """\
class Outer:
    class Inner:
        def method(self):
            def helper():
                return 1
            return helper()

    @staticmethod
    def forward(ctx, x):
        return x


async def fetch():
    pass
"""
    functions = extract_functions(source, "python")
    assert [(f.name, f.start_line, f.end_line) for f in functions] == [
        ("Outer.Inner.method", 3, 6), ("helper", 4, 5), ("Outer.forward", 8, 10), ("fetch", 13, 14),
    ]


# ---- lines and text ----------------------------------------------------------------------------------------------


def test_unicode_before_a_function_keeps_line_numbers_and_code_exact() -> None:
    """Multi-byte characters shift byte offsets; a line separator inside a string is no line break for git."""
    source = (
        '# durée: 😀 ≥ 3 µs\n'
        'GREETING = "naïve\u2028text"\n'
        '\n'
        'def résumé(x):\n'
        '    return "→" + x\n'
    )
    [function] = extract_functions(source, "python")
    assert (function.name, function.start_line, function.end_line) == ("résumé", 4, 5)
    assert function.code == 'def résumé(x):\n    return "→" + x'


def test_code_is_the_whole_lines_of_the_definition() -> None:
    source = "struct S {\n    int get() const { return v; }\n    int v;\n};\n"
    [function] = extract_functions(source, "cpp")
    assert (function.name, function.start_line, function.end_line) == ("S::get", 2, 2)
    assert function.code == "    int get() const { return v; }"


# ---- bad input ---------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("language", ["c", "cpp", "cuda", "opencl", "python", "fortran"])
@pytest.mark.parametrize("source", ["", "\x00\ufeff}}{{ (((", "def int f( {\n", "x = '\udcff'\n"])
def test_bad_code_never_raises(language: str, source: str) -> None:
    assert isinstance(extract_functions(source, language), list)


def test_empty_source_has_no_functions() -> None:
    assert extract_functions("", "cuda") == []


def test_functions_around_a_syntax_error_are_still_found() -> None:
    source = """\
__global__ void good_before(float* x) { x[0] = 1; }

int broken( {{ oops

__global__ void good_after(float* x) { x[0] = 2; }
"""
    assert {"good_before", "good_after"} <= set(by_name(source, "cuda"))
    python = "def fine():\n    return 1\n\ndef broken(:\n    pass\n\ndef also_fine():\n    return 2\n"
    assert {"fine", "also_fine"} <= set(by_name(python, "python"))


# ---- changes -----------------------------------------------------------------------------------------------------

BEFORE = """\
__device__ float scale(float v) { return v * 2.0f; }
__device__ float scale(float v, float f) { return v * f; }

__global__ void kernel(float* x) {
    x[threadIdx.x] = scale(x[threadIdx.x]);
}

void removed_helper() { }
"""


def test_changed_overload_is_matched_by_order_of_appearance() -> None:
    after = BEFORE.replace("return v * f;", "return __fmul_rn(v, f);")
    [change] = changed_functions(BEFORE, after, "cuda")
    assert (change.name, change.kind) == ("scale", KernelKind.DEVICE_FUNCTION)
    assert "__fmul_rn" in change.after.code and "__fmul_rn" not in change.before.code
    assert change.before.start_line == change.after.start_line == 2


def test_an_added_overload_is_never_paired_with_its_unchanged_sibling() -> None:
    before = "__global__ void copy(float *d, const float *s) { d[threadIdx.x] = s[threadIdx.x]; }\n"
    vector = "__global__ void copy(float4 *d, const float4 *s) { d[threadIdx.x] = s[threadIdx.x]; }\n"
    assert changed_functions(before, vector + before, "cuda") == []  # added above: no pair, no false edit
    assert changed_functions(before + vector, before, "cuda") == []  # removed: none either
    edited = vector.replace("d[threadIdx.x] = s[threadIdx.x]", "d[threadIdx.x] = __ldg(&s[threadIdx.x])")
    [change] = changed_functions(before + vector, edited + before, "cuda")  # reordered, one edited
    assert "float4" in change.before.code and "__ldg" in change.after.code


def test_a_removed_ifdef_variant_is_not_an_edit_of_the_other() -> None:
    before = "#ifdef FAST\nint pick(int x) { return x * 2; }\n#else\nint pick(int x) { return x << 1; }\n#endif\n"
    assert changed_functions(before, "int pick(int x) { return x << 1; }\n", "c") == []
    assert changed_functions(before, "int pick(int x) { return x + x; }\n", "c") == []  # which one? unknown: none
    [change] = changed_functions(before, before.replace("x * 2", "x + x"), "c")  # both kept: by signature/order
    assert "x * 2" in change.before.code and "x + x" in change.after.code


def test_formatting_and_comment_changes_are_not_reported() -> None:
    after = BEFORE.replace(
        "    x[threadIdx.x] = scale(x[threadIdx.x]);",
        "    // scale in place\n    x[ threadIdx.x ]   =   scale( x[threadIdx.x] );",
    )
    assert changed_functions(BEFORE, after, "cuda") == []


def test_added_and_removed_functions_are_not_reported() -> None:
    after = BEFORE.replace("void removed_helper() { }", "void added_helper() { }")
    assert changed_functions(BEFORE, after, "cuda") == []


def test_change_reports_the_kind_of_the_after_version() -> None:
    before = "def body(x):\n    return x\n"
    after = "import triton\n\n@triton.jit\ndef body(x):\n    return x + 1\n"
    [change] = changed_functions(before, after, "python")
    assert change.kind == KernelKind.TRITON_KERNEL
    assert change.before.kind == KernelKind.PYTHON_FUNCTION
    assert (change.after.start_line, change.after.end_line) == (3, 5)


# ---- incremental parses -----------------------------------------------------------------------------------------

MANY_KERNELS = "".join(f"__global__ void k{i}(float *x) {{\n    x[threadIdx.x] *= {i}.0f;\n}}\n\n" for i in range(30))


def git_line_ranges(before: str, after: str, tmp_path: Path) -> list[tuple[int, int, int, int]]:
    """The hunks git writes for before -> after, read the way the miner reads them."""
    (tmp_path / "a.cu").write_text(before)
    (tmp_path / "b.cu").write_text(after)
    patch = subprocess.run(["git", "diff", "--no-index", "-U3", "a.cu", "b.cu"], cwd=tmp_path,
                           capture_output=True, text=True).stdout
    diff = FileDiff(path="b.cu", status="modified")
    parse_patch(diff, patch.partition("\n")[2], 10_000)
    return diff.line_ranges


def test_incremental_parse_from_the_hunks_finds_the_same_changes(tmp_path: Path) -> None:
    """Insertions at the top, edits in the middle, a deletion and a last line without a line break."""
    after = ("#include <cuda.h>\n\n" + MANY_KERNELS.replace("*= 7.0f", "*= 7.5f").replace("*= 20.0f", "+= 1.0f")
             .replace("__global__ void k25(float *x) {\n    x[threadIdx.x] *= 25.0f;\n}\n\n", "")
             + "__global__ void tail(float *x) { x[0] = 0; }")
    ranges = git_line_ranges(MANY_KERNELS, after, tmp_path)
    assert len(ranges) == 5
    assert functions._edited_tree(MANY_KERNELS, ranges, after, "cuda") is not None
    functions.clear_caches()
    incremental = changed_functions(MANY_KERNELS, after, "cuda", ranges)
    functions.clear_caches()
    assert incremental == changed_functions(MANY_KERNELS, after, "cuda")
    assert [change.name for change in incremental] == ["k7", "k20"]


def test_hunks_that_do_not_describe_the_change_fall_back_to_a_fresh_parse() -> None:
    after = MANY_KERNELS.replace("*= 7.0f", "*= 7.5f")
    elsewhere = [(1, 2, 1, 2)]  # the first two lines: the edit further down lies outside every hunk
    beyond = [(900, 1, 900, 1)]
    for wrong in (elsewhere, beyond):
        assert functions._edited_tree(MANY_KERNELS, wrong, after, "cuda") is None
        functions.clear_caches()
        assert [c.name for c in changed_functions(MANY_KERNELS, after, "cuda", wrong)] == ["k7"]


def test_versions_with_syntax_errors_are_parsed_afresh(tmp_path: Path) -> None:
    """Error recovery may settle differently when reparsing, so a broken version is never the starting point."""
    broken = MANY_KERNELS.replace("__global__ void k3(float *x) {", "__global__ void k3(float *x) {{ (")
    after = broken.replace("*= 7.0f", "*= 7.5f")
    ranges = git_line_ranges(broken, after, tmp_path)
    assert ranges and functions._edited_tree(broken, ranges, after, "cuda") is None
    functions.clear_caches()
    with_ranges = changed_functions(broken, after, "cuda", ranges)
    functions.clear_caches()
    assert with_ranges == changed_functions(broken, after, "cuda") != []
