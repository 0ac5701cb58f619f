"""mining/classify.py: one scenario per rule, each a commit message with the diff of its kernel files."""

from __future__ import annotations

import re

import pytest

from mining.classify import PERF_THRESHOLD, classify_commit
from mining.gitlog import FileDiff, iter_patches
from perfforge.records import Category
from tests.conftest import RepoBuilder

Hunk = tuple[list[str], list[str]]


def diff_of(path: str, status: str, *hunks: Hunk) -> FileDiff:
    """A FileDiff as iter_patches makes it: per-hunk (removed, added) lines and their concatenations."""
    diff = FileDiff(path=path, status=status)
    for removed, added in hunks:
        diff.hunks.append((removed, added))
        diff.removed_lines.extend(removed)
        diff.added_lines.extend(added)
    return diff


def weight_of(evidence: str) -> float:
    """The signed weight written into an evidence string: 'signal (+1.4): detail'."""
    return float(re.search(r"\(([+-]\d+\.\d+)\)", evidence).group(1))


# Per-element atomics replaced by a warp-shuffle reduction that writes one partial sum per warp.
ATOMICS_TO_SHUFFLE = diff_of("src/sum.cu", "modified", (
    ["    if (i < n) {", "        atomicAdd(out, x[i]);", "    }"],
    ["    float v = i < n ? x[i] : 0.0f;",
     "    #pragma unroll",
     "    for (int offset = 16; offset > 0; offset /= 2) {",
     "        v += __shfl_down_sync(0xffffffff, v, offset);",
     "    }",
     "    if ((threadIdx.x & 31) == 0) {",
     "        partial[i / 32] = v;",
     "    }"],
))
BLOCK_RETUNE = diff_of("src/sum.cu", "modified", (["constexpr int BLOCK = 1024;"], ["constexpr int BLOCK = 256;"]))


def test_vague_message_with_atomics_replaced_by_warp_shuffles_is_perf() -> None:
    """'rework sum kernel' says nothing; the rewritten hunk trades atomicAdd for __shfl_down_sync."""
    result = classify_commit("rework sum kernel", [ATOMICS_TO_SHUFFLE])
    assert result.is_perf
    assert result.category == Category.ATOMICS
    assert any(e.startswith("diff_atomics_replaced") for e in result.evidence)
    assert any(e.startswith("diff_constructs") and "__shfl_down_sync" in e for e in result.evidence)


def test_vague_message_with_per_warp_atomic_after_shuffles_is_perf(perf_repo: RepoBuilder) -> None:
    """conftest's own optimisation, read from the repository, with its message reduced to 'rework reduce'."""
    sha = perf_repo.shas[2]
    [(_, diffs)] = iter_patches(perf_repo.path / ".git", [sha], {sha: ["src/sum.cu"]}, 1000, [])
    result = classify_commit("rework reduce", diffs)
    assert result.is_perf and result.category == Category.ATOMICS


def test_perf_repo_commit_with_its_own_message_is_perf(perf_repo: RepoBuilder) -> None:
    """The same diff with the message naming the technique ('per-element atomics', 'shuffle reduction')."""
    sha = perf_repo.shas[2]
    [(_, diffs)] = iter_patches(perf_repo.path / ".git", [sha], {sha: ["src/sum.cu"]}, 1000, [])
    result = classify_commit("rework reduce: warp shuffle reduction instead of per-element atomics", diffs)
    assert result.is_perf and result.category == Category.ATOMICS
    assert any(e.startswith("technique_backed_by_diff") for e in result.evidence)


def test_explicit_speedup_in_the_subject_is_perf() -> None:
    diff = diff_of("src/softmax.cu", "modified", (["    float m = -INFINITY;", "    float s = 0.0f;"],
                                                  ["    float m = -FLT_MAX;", "    float s = 0.f;"]))
    result = classify_commit("softmax: 2.1x faster on long rows", [diff])
    assert result.is_perf
    assert result.evidence[0] == "message_outcome_subject (+3.0): '2.1x'"


def test_optimizer_fix_with_a_small_diff_is_not_perf() -> None:
    """'optimizer' is not 'optimize', and 'fix' marks other work."""
    diff = diff_of("src/train.cu", "modified",
                   (["    float lr = base_lr;"], ["    float lr = base_lr * warmup(step);"]))
    result = classify_commit("fix optimizer learning-rate warmup", [diff])
    assert not result.is_perf
    assert result.category == Category.NONE
    assert not any(e.startswith("message_outcome") for e in result.evidence)
    assert any(e.startswith("other_work_subject") for e in result.evidence)


def test_a_revert_is_other_work_even_when_it_quotes_performance_words() -> None:
    diff = diff_of("src/softmax.cu", "modified", (["    float m = -FLT_MAX;"], ["    float m = -INFINITY;"]))
    result = classify_commit('Revert "softmax: 2.1x faster on long rows"', [diff])
    assert "other_work_subject (-2.0): 'Revert'" in result.evidence
    assert result.perf_score < classify_commit("softmax: 2.1x faster on long rows", [diff]).perf_score


@pytest.mark.parametrize("subject", ["[Bugfix] reduce thread extent", "BugFix: reduce thread extent",
                                     "hotfix: reduce thread extent"])
def test_bugfix_and_hotfix_subjects_are_other_work(subject: str) -> None:
    diff = diff_of("src/reduce.cu", "modified", (["    int extent = 256;"], ["    int extent = blockDim.x;"]))
    assert any(e.startswith("other_work_subject") for e in classify_commit(subject, [diff]).evidence)


def test_message_words_are_found_in_any_case_and_reported_in_their_own() -> None:
    diff = diff_of("src/sum.cu", "modified", (["    x = a[i];"], ["    x = __ldg(&a[i]);"]))
    result = classify_commit("Use TMA loads for the K tile\n\nTHROUGHPUT up 20%", [diff])
    assert "message_outcome_body (+1.4): 'THROUGHPUT'" in result.evidence
    assert any("'TMA'" in e for e in result.evidence)


def test_fast_in_a_name_on_a_bench_file_is_not_perf() -> None:
    """'fast_math' names an option; the only kernel file changed is a benchmark."""
    diff = diff_of("bench/bench_sum.cu", "modified",
                   (["    bool verbose = false;"], ["    bool verbose = false;", "    bool fast_math = false;"]))
    result = classify_commit("add fast_math option", [diff])
    assert not result.is_perf and result.category == Category.NONE
    assert any(e.startswith("only_test_or_bench_files") for e in result.evidence)


def test_commit_adding_only_new_files_is_a_feature() -> None:
    """A new kernel that uses shared memory (and says so) is a feature, not a before/after change."""
    new_kernel = diff_of("src/layernorm.cu", "added", ([], [
        "__global__ void layernorm(const float* x, float* y, int n) {",
        "    __shared__ float partial[32];",
        "    y[threadIdx.x] = x[threadIdx.x] - partial[0];",
        "}",
    ]))
    result = classify_commit("layernorm kernel using shared memory", [new_kernel])
    assert not result.is_perf and result.category == Category.NONE
    assert any(e.startswith("only_new_files") for e in result.evidence)


def test_numeric_retune_with_launch_bounds_message_is_perf() -> None:
    """`BLOCK = 1024` -> `= 256` is a tuning parameter whose line changed only in its number."""
    result = classify_commit("sum: lower BLOCK to fit launch_bounds", [BLOCK_RETUNE])
    assert result.is_perf
    assert result.category == Category.REGISTER_PRESSURE
    assert any(e.startswith("diff_numeric_tuning") and "1024" in e and "256" in e for e in result.evidence)


def test_numeric_change_off_a_tuning_parameter_is_not_tuning() -> None:
    diff = diff_of("src/sum.cu", "modified", (["    float eps = 1e-5f;"], ["    float eps = 1e-6f;"]))
    result = classify_commit("sum: smaller eps", [diff])
    assert not any(e.startswith("diff_numeric_tuning") for e in result.evidence)


def test_binary_diffs_are_ignored() -> None:
    """A binary .cu (is_binary, no lines) gives no diff evidence at all, not even 'tiny edit'."""
    binary = FileDiff(path="src/blob.cu", status="modified", is_binary=True)
    assert classify_commit("update blob", [binary]).evidence == []


SCENARIOS = [
    ("rework sum kernel", [ATOMICS_TO_SHUFFLE]),
    ("sum: lower BLOCK to fit launch_bounds", [BLOCK_RETUNE]),
    ("fix optimizer learning-rate warmup", [BLOCK_RETUNE]),
    ("Revert 'docs: typo'", []),
    ("", []),
    ("3x faster: coalesced float4 loads, fused kernels, tiled, bank conflicts removed\n\n| 1.2 | 0.4 |\n+35%",
     [ATOMICS_TO_SHUFFLE, BLOCK_RETUNE]),
    ("fix test build crash: revert nan overflow warning", [diff_of("tests/test_x.cu", "added", ([], ["int x;"]))]),
]


@pytest.mark.parametrize(("message", "diffs"), SCENARIOS)
def test_evidence_is_sorted_strongest_first(message: str, diffs: list[FileDiff]) -> None:
    weights = [abs(weight_of(e)) for e in classify_commit(message, diffs).evidence]
    assert weights == sorted(weights, reverse=True)


@pytest.mark.parametrize(("message", "diffs"), SCENARIOS)
def test_score_is_a_probability_and_category_follows_it(message: str, diffs: list[FileDiff]) -> None:
    result = classify_commit(message, diffs)
    assert 0.0 <= result.perf_score <= 1.0
    assert result.is_perf == (result.perf_score >= PERF_THRESHOLD)
    assert (result.category == Category.NONE) == (not result.is_perf)


def test_no_evidence_leaves_the_prior() -> None:
    """An empty message and no diff: the prior alone, about 12%, category none."""
    result = classify_commit("", [])
    assert result.evidence == []
    assert result.perf_score == pytest.approx(0.1192, abs=1e-4)
    assert result.category == Category.NONE


# A layernorm whose hand-written warp loop becomes a cooperative-groups reduction: no atomic anywhere.
CG_REDUCE = diff_of("dev/cuda/layernorm.cu", "modified", (
    ["    float sum = 0.0f;", "    for (int i = lane; i < C; i += 32) sum += x[i];"],
    ["    float sum = 0.0f;", "    for (int i = warp.thread_rank(); i < C; i += warp.size()) sum += x[i];",
     "    sum = cg::reduce(warp, sum, cg::plus<float>{});"],
))


def test_cg_reduce_alone_is_no_evidence_of_atomics() -> None:
    """cg::reduce is a cooperative-groups reduction: without atomics removed beside it, it says nothing about
    atomics (it used to vote for the atomics category on every kernel that reduces this way)."""
    result = classify_commit("layernorm: use cooperative groups", [CG_REDUCE])
    assert result.category != Category.ATOMICS
    assert not any("atomics" in e for e in result.evidence), result.evidence


def test_cg_reduce_replacing_atomics_is_atomics() -> None:
    diff = diff_of("src/sum.cu", "modified", (
        ["    if (i < n) {", "        atomicAdd(out, x[i]);", "    }"],
        ["    float v = cg::reduce(warp, i < n ? x[i] : 0.0f, cg::plus<float>{});",
         "    if (warp.thread_rank() == 0) {", "        partial[i / 32] = v;", "    }"]))
    result = classify_commit("sum: a warp reduction instead of per-element atomics", [diff])
    assert result.is_perf and result.category == Category.ATOMICS
    assert any(e.startswith("diff_atomics_replaced") for e in result.evidence)
