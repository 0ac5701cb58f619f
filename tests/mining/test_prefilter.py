"""mining/prefilter.py: which changed paths are kernel files, and which commits are worth a diff."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from mining.functions import LANGUAGE_BY_EXTENSION
from mining.gitlog import CommitMeta
from mining.prefilter import MAX_KERNEL_FILES, is_kernel_file, kernel_python_files_at, prefilter
from tests.conftest import RepoBuilder

TRITON_KERNEL = """import triton
import triton.language as tl


@triton.jit
def add_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(y_ptr + offsets, tl.load(x_ptr + offsets, mask=offsets < n), mask=offsets < n)
"""


def commit_of(*files: str) -> CommitMeta:
    return CommitMeta(sha="a" * 40, parents=["b" * 40], date="2024-01-01T12:00:00+00:00", message="change",
                      files=list(files))


@pytest.mark.parametrize("path", [
    "src/softmax.cu", "include/common.cuh", "hip/add.hip", "kernels/add.cl", "shaders/blur.metal",
    "vulkan/matmul.comp", "ggml.c", "ops.cc", "ops.cpp", "ops.h", "ops.hpp", "impl.inl", "solver.f90", "old.F",
])
def test_kernel_extensions_are_kept(path: str) -> None:
    assert is_kernel_file(path, set())


@pytest.mark.parametrize("path", [
    "tests/test_softmax.cu", "test/kernels.cu", "src/unittest/sum.cu", "docs/example.cu", "doc/snippet.c",
    "examples/gemm.cu", "vendor/cutlass/gemm.cu", "third_party/cub/block.cuh", "third-party/x.c",
    "external/eigen/core.h", "deps/zlib/inflate.c", "Tests/Ops.cpp", ".github/check.c",
])
def test_tests_docs_and_vendored_code_are_excluded(path: str) -> None:
    assert not is_kernel_file(path, set())


@pytest.mark.parametrize("path", ["README.md", "CMakeLists.txt", "setup.py", "scripts/train.py", "src/sum.cu.orig"])
def test_other_files_are_not_kernel_files(path: str) -> None:
    assert not is_kernel_file(path, set())


@pytest.mark.parametrize("path", ["kernels/softmax.py", "src/triton_utils.py", "model/ops/rms_norm.py",
                                  "model/fused_ops.py", "cute/gemm.py", "lib/pallas_attention.py"])
def test_python_file_kept_when_its_path_says_kernel(path: str) -> None:
    assert is_kernel_file(path, set())


def test_python_file_in_a_top_level_ops_directory() -> None:
    """An ops directory at the top of the repository has no '/' before it and must still count."""
    assert is_kernel_file("ops/rms_norm.py", set())


def test_python_file_kept_when_listed_as_kernel_python() -> None:
    """model/layers.py says nothing in its path; it counts only when the tip's grep found a DSL import in it."""
    assert not is_kernel_file("model/layers.py", set())
    assert is_kernel_file("model/layers.py", {"model/layers.py"})
    assert not is_kernel_file("tests/layers.py", {"tests/layers.py"})  # exclusions still win


def test_kernel_python_files_at_finds_dsl_imports(make_repo: Callable[[str], RepoBuilder]) -> None:
    """At HEAD: a Triton kernel, a Numba CUDA kernel, and plain Python; a Triton file deleted before HEAD is gone."""
    repo = make_repo("python_kernels")
    first = repo.commit("import", {"model/layers.py": TRITON_KERNEL, "old/removed.py": TRITON_KERNEL,
                                   "model/numba_add.py": "from numba import cuda\n\n@cuda.jit\ndef add(x):\n    pass\n",
                                   "model/train.py": "import torch\n", "model/notes.txt": "import triton\n"})
    repo.commit("drop the old kernel", {"old/removed.py": None})
    git_dir = repo.path / ".git"
    assert kernel_python_files_at(git_dir, "HEAD") == {"model/layers.py", "model/numba_add.py"}
    assert kernel_python_files_at(git_dir, first) == {"model/layers.py", "model/numba_add.py", "old/removed.py"}


def test_kernel_python_files_at_without_matches_is_empty(make_repo: Callable[[str], RepoBuilder]) -> None:
    repo = make_repo("plain_python")
    repo.commit("import", {"train.py": "import torch\n"})
    assert kernel_python_files_at(repo.path / ".git", "HEAD") == set()


def test_kernel_python_file_with_non_ascii_name(make_repo: Callable[[str], RepoBuilder]) -> None:
    """git grep C-quotes non-ASCII paths unless core.quotepath=off; a quoted name never equals the commit's path."""
    repo = make_repo("python_kernels_unicode")
    repo.commit("import", {"model/übung.py": TRITON_KERNEL})
    assert kernel_python_files_at(repo.path / ".git", "HEAD") == {"model/übung.py"}


def test_every_source_the_function_extractor_reads_is_a_kernel_file() -> None:
    """Contract with mining.functions: a file whose functions could be paired (.C, .hxx, .f08, any casing such as
    .CU) is not dropped before the diff."""
    paths = [f"src/file{suffix}" for suffix, language in LANGUAGE_BY_EXTENSION.items() if language != "python"]
    assert [p for p in [*paths, "src/Kernel.CU"] if not is_kernel_file(p, set())] == []


# ---- commit decisions ---------------------------------------------------------------------------------------------


def test_candidate_keeps_only_its_kernel_files() -> None:
    result = prefilter(commit_of("src/sum.cu", "README.md", "tests/test_sum.cu", "model/ops/add.py"), set())
    assert result.reason == "candidate" and result.is_candidate
    assert result.kernel_files == ["src/sum.cu", "model/ops/add.py"]


def test_no_kernel_files() -> None:
    result = prefilter(commit_of("README.md", "docs/guide.cu", "train.py"), set())
    assert (result.reason, result.kernel_files, result.is_candidate) == ("no_kernel_files", [], False)


def test_empty_commit_has_no_kernel_files() -> None:
    assert prefilter(commit_of(), set()).reason == "no_kernel_files"


def test_mass_change_over_the_limit_is_dropped() -> None:
    """A reformat of MAX_KERNEL_FILES + 1 kernel files is dropped; exactly MAX_KERNEL_FILES is still a candidate."""
    paths = [f"src/k{i}.cu" for i in range(MAX_KERNEL_FILES + 1)]
    over = prefilter(commit_of(*paths, "README.md"), set())
    assert (over.reason, over.is_candidate, len(over.kernel_files)) == ("mass_change", False, MAX_KERNEL_FILES + 1)
    assert prefilter(commit_of(*paths[:MAX_KERNEL_FILES]), set()).reason == "candidate"


def test_vendored_files_do_not_count_towards_a_mass_change() -> None:
    paths = [f"third_party/lib/k{i}.cu" for i in range(MAX_KERNEL_FILES + 10)]
    result = prefilter(commit_of(*paths, "src/sum.cu"), set())
    assert (result.reason, result.kernel_files) == ("candidate", ["src/sum.cu"])
