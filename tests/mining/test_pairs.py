"""mining/pairs.py: function-level pairs of one commit read from a real repository, and the files it skips."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from mining.gitlog import BlobReader, CommitMeta, iter_commit_meta, iter_patches
from mining.licence import licence_of
from mining.pairs import CommitContext, FileSkip, decode_source, pairs_of_commit
from perfforge.records import FoundBy, PairRecord, code_hash
from tests.conftest import MIT_LICENSE, NAIVE_SUM_CU, REDUCED_SUM_CU, RepoBuilder, git

# A device helper and the kernel both change; the host launcher does not.
SQUARE_BEFORE = "__device__ float square(float v) {\n    return v * v;\n}\n\n"
SQUARE_AFTER = "__device__ __forceinline__ float square(float v) {\n    return __fmul_rn(v, v);\n}\n\n"
KERNEL_BEFORE = NAIVE_SUM_CU.split("__global__")[1].split("void launch_sum")[0]
KERNEL_AFTER = REDUCED_SUM_CU.split("__global__")[1].split("void launch_sum")[0]
SUM_BEFORE = NAIVE_SUM_CU.replace("__global__", SQUARE_BEFORE + "__global__", 1)
SUM_AFTER = REDUCED_SUM_CU.replace("__global__", SQUARE_AFTER + "__global__", 1)
LATIN1_BEFORE = "/* Copyright 1999 François Müller */\nint add(int a, int b) {\n    return a + b;\n}\n"
LATIN1_AFTER = "/* Copyright 1999 François Müller */\nint add(int a, int b) {\n    return b + a;\n}\n"
BIG_PADDING = "// " + "x" * 96 + "\n"
MAX_FILE_BYTES = 4_000


@dataclass
class MinedCommit:
    repo: RepoBuilder
    meta: CommitMeta
    pairs: list[PairRecord]
    skips: list[FileSkip]


def mine_commit(repo: RepoBuilder, sha: str, max_patch_lines: int = 10_000) -> MinedCommit:
    """What pipeline.run_chunk does for one perf commit: metadata, patches of all its files, pairs."""
    git_dir = repo.path / ".git"
    [meta] = iter_commit_meta(git_dir, [sha], [])
    [(_, diffs)] = iter_patches(git_dir, [sha], {sha: meta.files}, max_patch_lines, [])
    context = CommitContext(repo="owner/kernels", repo_url=str(repo.path), licence=licence_of(git_dir, sha),
                            meta=meta, perf_score=0.9, category="atomics",
                            evidence=["diff_atomics_replaced (+1.5): atomic operations removed"],
                            found_by=FoundBy.MINED_RULES)
    with BlobReader(git_dir) as blobs:
        pairs, skips = pairs_of_commit(context, diffs, blobs, MAX_FILE_BYTES)
    return MinedCommit(repo, meta, pairs, skips)


@pytest.fixture(scope="module")
def kernels_repo(tmp_path_factory: pytest.TempPathFactory) -> RepoBuilder:
    """Commit 1 imports everything; commit 2 edits two functions of sum.cu, a binary file named .cu, a .cu file
    larger than MAX_FILE_BYTES, a Latin-1 .c file and a Metal shader, and adds a new kernel file. Built once per
    module: every test only reads it."""
    path = tmp_path_factory.mktemp("kernels")
    git(path, "init", "-q", "-b", "main")
    repo = RepoBuilder(path)
    big = "__global__ void big(float* x) { x[0] = 1.0f; }\n" + BIG_PADDING * 50
    repo.commit("import", {
        "LICENSE": MIT_LICENSE, "src/sum.cu": SUM_BEFORE, "src/table.cu": b"\x00\x01\x02 __global__ table\n",
        "src/big.cu": big, "src/legacy.c": LATIN1_BEFORE.encode("latin-1"),
        "shaders/blur.metal": "kernel void blur() { }\n",
    })
    repo.commit("rework reduce", {
        "src/sum.cu": SUM_AFTER, "src/table.cu": b"\x00\x01\x03 __global__ table\n",
        "src/big.cu": big.replace("1.0f", "2.0f"), "src/legacy.c": LATIN1_AFTER.encode("latin-1"),
        "shaders/blur.metal": "kernel void blur() { return; }\n",
        "src/new.cu": "__global__ void fresh(float* x) { x[0] = 0.0f; }\n",
    })
    return repo


@pytest.fixture(scope="module")
def mined(kernels_repo: RepoBuilder) -> MinedCommit:
    return mine_commit(kernels_repo, kernels_repo.shas[1])


def pairs_in(mined: MinedCommit, path: str) -> dict[str, PairRecord]:
    return {pair.kernel_name: pair for pair in mined.pairs if pair.path == path}


def test_one_pair_per_changed_function(mined: MinedCommit) -> None:
    """square and sum_kernel changed, launch_sum did not."""
    pairs = pairs_in(mined, "src/sum.cu")
    assert sorted(pairs) == ["square", "sum_kernel"]
    assert (pairs["sum_kernel"].kernel_kind, pairs["square"].kernel_kind) == ("cuda_kernel", "device_function")


def test_pair_holds_function_and_file_texts(mined: MinedCommit) -> None:
    pair = pairs_in(mined, "src/sum.cu")["sum_kernel"]
    assert pair.function_before == "__global__" + KERNEL_BEFORE.rstrip("\n")
    assert pair.function_after == "__global__" + KERNEL_AFTER.rstrip("\n")
    assert (pair.file_before, pair.file_after) == (SUM_BEFORE, SUM_AFTER)
    assert pair.diff.startswith("--- a/src/sum.cu\n+++ b/src/sum.cu\n@@ ")
    assert "+        v += __shfl_down_sync(0xffffffff, v, offset);\n" in pair.diff
    assert pair.code_hash == code_hash(pair.function_before, pair.function_after, "cuda")
    assert (pair.language, pair.target) == ("cuda", "cuda")


def test_pair_carries_licence_provenance_and_classification(mined: MinedCommit) -> None:
    pair = pairs_in(mined, "src/sum.cu")["sum_kernel"]
    assert pair.licence == "MIT"
    assert (pair.repo, pair.repo_url) == ("owner/kernels", str(mined.repo.path))
    assert (pair.commit, pair.parent) == (mined.repo.shas[1], mined.repo.shas[0])
    assert pair.date == mined.meta.date == "2024-01-02T12:00:00+00:00"
    assert (pair.message, pair.found_by) == ("rework reduce", "mined:rules")
    assert (pair.perf_score, pair.category) == (0.9, "atomics")
    assert pair.evidence == ["diff_atomics_replaced (+1.5): atomic operations removed"]
    assert pair.profile_before is None and pair.profile_after is None


def test_binary_file_with_a_cu_name_is_skipped_as_binary(mined: MinedCommit) -> None:
    assert FileSkip(mined.repo.shas[1], "src/table.cu", "binary_file") in mined.skips
    assert pairs_in(mined, "src/table.cu") == {}


def test_file_over_max_file_bytes_is_skipped_as_too_large(mined: MinedCommit) -> None:
    assert FileSkip(mined.repo.shas[1], "src/big.cu", "file_too_large") in mined.skips
    assert pairs_in(mined, "src/big.cu") == {}


def test_latin1_c_file_decodes_and_pairs(mined: MinedCommit) -> None:
    """Not UTF-8 (ç and ü are single bytes), so it is read as Latin-1: no skip, every character kept."""
    pair = pairs_in(mined, "src/legacy.c")["add"]
    assert (pair.language, pair.kernel_kind, pair.target) == ("c", "host_function", "cpu")
    assert (pair.file_before, pair.file_after) == (LATIN1_BEFORE, LATIN1_AFTER)
    assert not any(skip.path == "src/legacy.c" for skip in mined.skips)


def test_latin1_file_diff_keeps_the_characters_of_its_texts(mined: MinedCommit) -> None:
    """The comment line is context of the hunk: the diff must show it as file_before and file_after do."""
    pair = pairs_in(mined, "src/legacy.c")["add"]
    assert " /* Copyright 1999 François Müller */\n" in pair.diff


def test_unsupported_language_is_recorded(mined: MinedCommit) -> None:
    """The prefilter keeps Metal shaders; no grammar reads them, so the file is skipped with its reason."""
    assert FileSkip(mined.repo.shas[1], "shaders/blur.metal", "unsupported_language") in mined.skips


def test_added_file_gives_no_pair_and_no_skip(mined: MinedCommit) -> None:
    assert pairs_in(mined, "src/new.cu") == {}
    assert not any(skip.path == "src/new.cu" for skip in mined.skips)


def test_skips_are_exactly_the_unpairable_modified_files(mined: MinedCommit) -> None:
    assert sorted((s.path, s.reason) for s in mined.skips) == [
        ("shaders/blur.metal", "unsupported_language"), ("src/big.cu", "file_too_large"),
        ("src/table.cu", "binary_file")]


def test_truncated_patch_is_skipped_as_huge_diff(kernels_repo: RepoBuilder) -> None:
    mined = mine_commit(kernels_repo, kernels_repo.shas[1], max_patch_lines=5)
    assert FileSkip(kernels_repo.shas[1], "src/sum.cu", "huge_diff") in mined.skips
    assert mined.pairs == []


def test_root_commit_gives_no_pairs(kernels_repo: RepoBuilder) -> None:
    """Every file of a root commit is added: nothing has a before side."""
    mined = mine_commit(kernels_repo, kernels_repo.shas[0])
    assert (mined.pairs, mined.skips) == ([], [])


@pytest.mark.parametrize(("data", "text"), [
    (b"int a;\n", "int a;\n"),
    ("/* Müller */".encode(), "/* Müller */"),
    ("/* Müller */".encode("latin-1"), "/* Müller */"),
    (b"\x7fELF\x00\x00", None),
])
def test_decode_source(data: bytes, text: str | None) -> None:
    assert decode_source(data) == text


def test_target_follows_the_kernel_and_the_dsl_of_its_file() -> None:
    """A Triton file's launch wrapper runs with its kernel (triton); a HIP file is hip; plain C is cpu."""
    from mining.pairs import target_of
    from perfforge.records import KernelKind, Target

    triton_file = "import triton\nx = torch.empty(8, device='cuda')\n"
    assert target_of("python", KernelKind.PYTHON_FUNCTION, triton_file) == Target.TRITON
    assert target_of("python", KernelKind.PYTHON_FUNCTION, "import cutlass.cute as cute\n") == Target.CUDA
    assert target_of("python", KernelKind.PYTHON_FUNCTION, "import numpy\n") == Target.CPU
    assert target_of("cuda", KernelKind.CUDA_KERNEL, "#include <hip/hip_runtime.h>\n") == Target.HIP
    assert target_of("cuda", KernelKind.CUDA_KERNEL, "#include <cuda_runtime.h>\n") == Target.CUDA
    assert target_of("c", KernelKind.OPENMP_REGION, "#include <omp.h>\n") == Target.CPU


def test_one_stray_byte_changes_only_its_own_line() -> None:
    """A file that gains one Latin-1 byte keeps its UTF-8 lines as they were: its untouched functions do not
    turn into false edits ("µs" read as "Âµs")."""
    before = "int a() { return 10; } // 10 µs\n".encode()
    after = before + b"int b() { return 0; } /* \xe9t\xe9 */\n"
    assert decode_source(before) == "int a() { return 10; } // 10 µs\n"
    assert decode_source(after) == "int a() { return 10; } // 10 µs\nint b() { return 0; } /* été */\n"
