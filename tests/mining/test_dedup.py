"""mining/dedup.py: exact and near duplicates go, distinct edits of one function stay, the earliest pair wins."""

from __future__ import annotations

from typing import Any

from mining.dedup import deduplicate, pair_signatures
from perfforge.records import code_hash

# A kernel long enough (~150 tokens) that a renamed copy keeps a MinHash Jaccard well above 0.85.
BEFORE = """__global__ void row_sum(const float* __restrict__ x, float* out, int rows, int cols) {
    int row = blockIdx.x;
    int col = threadIdx.x;
    float acc = 0.0f;
    for (int c = col; c < cols; c += blockDim.x) {
        float v = x[row * cols + c];
        acc += v * v;
    }
    atomicAdd(&out[row], acc);
}"""
AFTER = BEFORE.replace("    atomicAdd(&out[row], acc);", """    for (int offset = 16; offset > 0; offset /= 2) {
        acc += __shfl_down_sync(0xffffffff, acc, offset);
    }
    if ((col & 31) == 0) {
        atomicAdd(&out[row], acc);
    }""")
# The same kernel reformatted and re-commented: the formatting-blind hash is unchanged.
BEFORE_REFORMATTED = "// sums the squares of each row\n" + BEFORE.replace("    ", "  ").replace(") {", ")\n{")
AFTER_REFORMATTED = "/* warp-reduced */\n" + AFTER.replace("    ", "\t").replace("v * v;", "v*v; // square")
# A second edit of the same function: vectorised loads on top of the warp reduction.
AFTER_SECOND = AFTER.replace("""    for (int c = col; c < cols; c += blockDim.x) {
        float v = x[row * cols + c];
        acc += v * v;
    }""", """    const float4* x4 = reinterpret_cast<const float4*>(x + row * cols);
    for (int c = col; c < cols / 4; c += blockDim.x) {
        float4 v = x4[c];
        acc += v.x * v.x + v.y * v.y + v.z * v.z + v.w * v.w;
    }""")


def row(before: str, after: str, date: str, repo: str = "owner/repo", commit: str = "c1", name: str = "row_sum",
        path: str = "src/sum.cu") -> dict[str, Any]:
    return {"repo": repo, "commit": commit, "date": date, "path": path, "kernel_name": name,
            "function_before": before, "function_after": after, "code_hash": code_hash(before, after, "cuda")}


def test_exact_duplicate_reformatted_with_other_comments_is_removed() -> None:
    """The same change cherry-picked into a fork that reformatted the file and rewrote its comments."""
    original = row(BEFORE, AFTER, "2024-01-01T00:00:00+00:00")
    copy = row(BEFORE_REFORMATTED, AFTER_REFORMATTED, "2024-03-01T00:00:00+00:00", repo="fork/repo", commit="c9")
    assert copy["code_hash"] == original["code_hash"]
    kept, stats = deduplicate([original, copy])
    assert kept == [original]
    assert (stats.exact_duplicates, stats.near_duplicates) == (1, 0)


def test_near_duplicate_same_edit_on_a_renamed_function_is_removed() -> None:
    """A port renamed the kernel (row_sum -> row_sum_sq) and made the same edit: different hash, same edit."""
    original = row(BEFORE, AFTER, "2024-01-01T00:00:00+00:00")
    renamed = row(BEFORE.replace("row_sum", "row_sum_sq"), AFTER.replace("row_sum", "row_sum_sq"),
                  "2024-02-01T00:00:00+00:00", repo="port/repo", name="row_sum_sq")
    assert renamed["code_hash"] != original["code_hash"]
    kept, stats = deduplicate([original, renamed])
    assert kept == [original]
    assert (stats.exact_duplicates, stats.near_duplicates) == (0, 1)


def test_successive_edits_of_one_function_are_both_kept() -> None:
    """A -> B (warp reduction) then B -> C (float4 loads): two different edits, both examples."""
    first = row(BEFORE, AFTER, "2024-01-01T00:00:00+00:00", commit="c1")
    second = row(AFTER, AFTER_SECOND, "2024-01-05T00:00:00+00:00", commit="c2")
    kept, stats = deduplicate([first, second])
    assert kept == [first, second]
    assert (stats.exact_duplicates, stats.near_duplicates) == (0, 0)


def test_same_edit_on_a_different_function_is_kept() -> None:
    """The warp-reduction edit made on an unrelated kernel: the edit is alike, the function before is not."""
    other_before = """__global__ void histogram(const int* keys, float* bins, const float* weights, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int lane = threadIdx.x & 31;
    if (i >= n) return;
    int key = keys[i] % 64;
    float w = weights[i] * 0.5f + 1.0f;
    float acc = w;
    atomicAdd(&out[row], acc);
}"""
    other_after = other_before.replace("    atomicAdd(&out[row], acc);", AFTER[AFTER.index("    for (int offset"):-2])
    first = row(BEFORE, AFTER, "2024-01-01T00:00:00+00:00")
    other = row(other_before, other_after, "2024-01-02T00:00:00+00:00", commit="c2", name="histogram")
    kept, stats = deduplicate([first, other])
    assert kept == [first, other]
    assert stats.near_duplicates == 0


def test_earliest_pair_is_kept_whatever_the_input_order() -> None:
    later = row(BEFORE_REFORMATTED, AFTER_REFORMATTED, "2024-06-01T00:00:00+00:00", repo="a/first-by-name")
    earliest = row(BEFORE, AFTER, "2023-12-31T23:00:00+00:00", repo="z/last-by-name")
    kept, _ = deduplicate([later, earliest])
    assert kept == [earliest]


def test_stats_count_each_kind_of_duplicate() -> None:
    """One original, two exact copies, one near copy, one distinct edit: 2 exact, 1 near, 2 kept."""
    rows = [
        row(BEFORE, AFTER, "2024-01-01T00:00:00+00:00", commit="orig"),
        row(BEFORE_REFORMATTED, AFTER_REFORMATTED, "2024-01-02T00:00:00+00:00", commit="cherry-pick"),
        row(BEFORE, AFTER, "2024-01-03T00:00:00+00:00", repo="fork/repo", commit="orig"),
        row(BEFORE.replace("row_sum", "rsum"), AFTER.replace("row_sum", "rsum"), "2024-01-04T00:00:00+00:00",
            commit="port", name="rsum"),
        row(AFTER, AFTER_SECOND, "2024-01-05T00:00:00+00:00", commit="next"),
    ]
    kept, stats = deduplicate(rows)
    assert [r["commit"] for r in kept] == ["orig", "next"]
    assert (stats.exact_duplicates, stats.near_duplicates) == (2, 1)


def test_no_rows() -> None:
    kept, stats = deduplicate([])
    assert kept == [] and (stats.exact_duplicates, stats.near_duplicates) == (0, 0)


def test_signatures_computed_by_workers_give_the_same_result() -> None:
    """The pipeline's workers store pair_signatures in each row; the merge must decide exactly as if it had
    computed them itself."""
    rows = [
        row(BEFORE, AFTER, "2024-01-01T00:00:00+00:00", commit="orig"),
        row(BEFORE.replace("row_sum", "rsum"), AFTER.replace("row_sum", "rsum"), "2024-01-04T00:00:00+00:00",
            commit="port", name="rsum"),
        row(AFTER, AFTER_SECOND, "2024-01-05T00:00:00+00:00", commit="next"),
    ]
    with_signatures = [{**r, "signatures": pair_signatures(r["function_before"], r["function_after"])} for r in rows]
    kept, stats = deduplicate(with_signatures)
    assert [r["commit"] for r in kept] == [r["commit"] for r in deduplicate(rows)[0]] == ["orig", "next"]
    assert stats.near_duplicates == 1
