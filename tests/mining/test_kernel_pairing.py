"""mining/kernel_pairing.py through mining/pairs.py: kernels fused, renamed, or launched with another configuration,
mined from commits of a real repository.

Each commit of the fixture repository changes one file in one way (its docstring scenario); each test mines one
commit as pipeline.run_chunk does and reads the pairs of that file.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from perfforge.io import write_parquet
from perfforge.records import PAIR_FEATURES, Pairing, PairRecord, as_row, code_hash, read_records
from tests.conftest import MIT_LICENSE, RepoBuilder, git
from tests.mining.test_pairs import MinedCommit, mine_commit

EVIDENCE = ["diff_atomics_replaced (+1.5): atomic operations removed"]  # what mine_commit classifies every commit

SCALE = """__global__ void scale_kernel(float* x, float a, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] = x[i] * a;
}"""
BIAS = """__global__ void bias_kernel(float* x, float b, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] = x[i] + b;
}"""
SCALE_BIAS = """__global__ void scale_bias_kernel(float* x, float a, float b, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] = fmaf(x[i], a, b);
}"""
POINTWISE_BEFORE = f"""#include <cuda_runtime.h>

{SCALE}

{BIAS}

void scale_bias(float* x, float a, float b, int n) {{
    int blocks = (n + 255) / 256;
    scale_kernel<<<blocks, 256>>>(x, a, n);
    bias_kernel<<<blocks, 256>>>(x, b, n);
}}
"""
POINTWISE_AFTER = f"""#include <cuda_runtime.h>

{SCALE_BIAS}

void scale_bias(float* x, float a, float b, int n) {{
    int blocks = (n + 255) / 256;
    scale_bias_kernel<<<blocks, 256>>>(x, a, b, n);
}}
"""

COPY = """__global__ void copy_kernel(const float* in, float* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = in[i];
}"""
COPY_VEC4 = """__global__ void copy_vec4_kernel(const float4* in, float4* out, int n4) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n4) out[i] = in[i];
}"""
COPY_BEFORE = f"""{COPY}

void copy(const float* in, float* out, int n) {{
    copy_kernel<<<(n + 255) / 256, 256>>>(in, out, n);
}}
"""
COPY_AFTER = f"""{COPY_VEC4}

void copy(const float* in, float* out, int n) {{
    copy_vec4_kernel<<<(n / 4 + 255) / 256, 256>>>((const float4*)in, (float4*)out, n / 4);
}}
"""

SUM = """__global__ void sum_kernel(const float* x, float* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) atomicAdd(out, x[i]);
}"""
SUM_WARP = """__global__ void sum_kernel(const float* x, float* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    float v = i < n ? x[i] : 0.0f;
    for (int offset = 16; offset > 0; offset /= 2) v += __shfl_down_sync(0xffffffff, v, offset);
    if ((threadIdx.x & 31) == 0) atomicAdd(out, v);
}"""
LAUNCH_SUM = """void launch_sum(const float* x, float* out, int n, cudaStream_t stream) {
    int threads = 256;
    int blocks = (n + threads - 1) / threads;
    sum_kernel<<<blocks, threads, 0, stream>>>(x, out, n);
}"""
LAUNCH_SUM_1024 = LAUNCH_SUM.replace("threads = 256", "threads = 1024")
SUM_WARP_LDG = SUM_WARP.replace("x[i] : 0.0f", "__ldg(x + i) : 0.0f")
SUM_V1 = f"{SUM}\n\n{LAUNCH_SUM}\n"
SUM_V2 = f"{SUM}\n\n{LAUNCH_SUM_1024}\n"  # the block size alone: the chevrons read the same
SUM_V3 = f"{SUM_WARP}\n\n{LAUNCH_SUM_1024}\n"  # the kernel alone
SUM_V4 = f"{SUM_WARP_LDG}\n\n{LAUNCH_SUM}\n"  # the kernel and the block size
SUM_V5 = SUM_V4.replace("sum_kernel", "reduce_sum_kernel")  # the kernel's name alone

ADD_TRITON_BEFORE = '''import torch
import triton
import triton.language as tl


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK_SIZE: tl.constexpr):
    offs = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) + tl.load(y_ptr + offs, mask=mask), mask=mask)


def add(x, y):
    out = torch.empty_like(x)
    n = out.numel()
    grid = lambda meta: (triton.cdiv(n, meta["BLOCK_SIZE"]),)
    add_kernel[grid](x, y, out, n, BLOCK_SIZE=1024)
    return out
'''
ADD_TRITON_AFTER = ADD_TRITON_BEFORE.replace("BLOCK_SIZE=1024)", "BLOCK_SIZE=4096, num_warps=8)")

GELU = """__global__ void gelu_kernel(float* x, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] = 0.5f * x[i] * (1.0f + tanhf(0.79788456f * x[i]));
}"""
DROPOUT = """__global__ void dropout_kernel(float* x, const float* keep, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] = x[i] * keep[i] * 2.0f;
}"""
GELU_DROPOUT = """__global__ void gelu_dropout_kernel(float* x, const float* keep, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        float v = x[i];
        x[i] = 0.5f * v * (1.0f + tanhf(0.79788456f * v)) * keep[i] * 2.0f;
    }
}"""
LAYERS_BEFORE = f"""{GELU}

{DROPOUT}

static void gelu(float* x, int n) {{
    gelu_kernel<<<(n + 255) / 256, 256>>>(x, n);
}}

static void dropout(float* x, const float* keep, int n) {{
    dropout_kernel<<<(n + 255) / 256, 256>>>(x, keep, n);
}}

void forward(float* x, const float* keep, int n) {{
    gelu(x, n);
    dropout(x, keep, n);
}}
"""
LAYERS_AFTER = f"""{GELU_DROPOUT}

static void gelu_dropout(float* x, const float* keep, int n) {{
    gelu_dropout_kernel<<<(n + 255) / 256, 256>>>(x, keep, n);
}}

void forward(float* x, const float* keep, int n) {{
    gelu_dropout(x, keep, n);
}}
"""


def pipeline_file(kernels: tuple[str, ...], launches: tuple[str, ...]) -> str:
    """One definition per kernel (a body of its own: renaming one changes its code) and a `run` launching the given
    kernels in order."""
    bodies = [f"__global__ void {name}(float* x) {{ x[{i}] += {len(name)}.0f; }}\n" for i, name in enumerate(kernels)]
    calls = "".join(f"    {name}<<<1, 32>>>(x);\n" for name in launches)
    return "".join(bodies) + f"\nvoid run(float* x) {{\n{calls}}}\n"


# Two kernels replaced each around an unchanged launch (the anchor), and two replaced by two with none.
ANCHORED_BEFORE = pipeline_file(("load", "norm", "store"), ("load", "norm", "store"))
ANCHORED_AFTER = pipeline_file(("load_v2", "norm", "store_v2"), ("load_v2", "norm", "store_v2"))
UNANCHORED_BEFORE = pipeline_file(("first", "second"), ("first", "second"))
UNANCHORED_AFTER = pipeline_file(("third", "fourth"), ("third", "fourth"))

COMMITS = {  # message -> (path, file before, file after)
    "fuse scale and bias into one kernel": ("src/pointwise.cu", POINTWISE_BEFORE, POINTWISE_AFTER),
    "copy with float4": ("src/copy.cu", COPY_BEFORE, COPY_AFTER),
    "launch sum with 1024 threads": ("src/sum.cu", SUM_V1, SUM_V2),
    "sum with warp shuffles": ("src/sum.cu", SUM_V2, SUM_V3),
    "read through the texture cache, 256 threads": ("src/sum.cu", SUM_V3, SUM_V4),
    "rename the sum kernel": ("src/sum.cu", SUM_V4, SUM_V5),
    "triton add: bigger blocks": ("ops/add.py", ADD_TRITON_BEFORE, ADD_TRITON_AFTER),
    "fuse gelu and dropout": ("src/layers.cu", LAYERS_BEFORE, LAYERS_AFTER),
    "vectorised load and store": ("src/anchored.cu", ANCHORED_BEFORE, ANCHORED_AFTER),
    "new pipeline kernels": ("src/unanchored.cu", UNANCHORED_BEFORE, UNANCHORED_AFTER),
}


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> RepoBuilder:
    """Commit 1 imports every file at its first version; then one commit per COMMITS entry, in order."""
    path = tmp_path_factory.mktemp("kernel_pairing")
    git(path, "init", "-q", "-b", "main")
    builder = RepoBuilder(path)
    first: dict[str, str | bytes | None] = {"LICENSE": MIT_LICENSE}
    for file_path, before, _ in COMMITS.values():
        first.setdefault(file_path, before)
    builder.commit("import", first)
    for message, (file_path, _, after) in COMMITS.items():
        builder.commit(message, {file_path: after})
    return builder


def mined(repo: RepoBuilder, message: str) -> MinedCommit:
    return mine_commit(repo, repo.shas[1 + list(COMMITS).index(message)])


def pairs_of(repo: RepoBuilder, message: str) -> dict[str, PairRecord]:
    path = COMMITS[message][0]
    commit = mined(repo, message)
    assert commit.skips == []
    return {pair.kernel_name: pair for pair in commit.pairs if pair.path == path}


def test_fixture_files_chain() -> None:
    """Each commit's before side is what the previous commit of the same file left (the scenarios hold)."""
    last: dict[str, str] = {}
    for path, before, after in COMMITS.values():
        assert last.get(path, before) == before, path
        last[path] = after


def test_fusion_pairs_the_removed_kernels_with_the_fused_one(repo: RepoBuilder) -> None:
    """scale_kernel and bias_kernel are deleted, scale_bias_kernel added, and scale_bias launches it instead of
    them: the fused kernel is a pair whose before side is both old kernels, in file order."""
    pairs = pairs_of(repo, "fuse scale and bias into one kernel")
    assert list(pairs) == ["scale_bias_kernel", "scale_bias"]  # in after-file order
    fused = pairs["scale_bias_kernel"]
    assert (fused.function_before, fused.function_after) == (f"{SCALE}\n\n{BIAS}", SCALE_BIAS)
    assert (fused.kernel_kind, fused.target, fused.language) == ("cuda_kernel", "cuda", "cuda")
    assert fused.code_hash == code_hash(f"{SCALE}\n\n{BIAS}", SCALE_BIAS, "cuda")
    assert (fused.file_before, fused.file_after) == (POINTWISE_BEFORE, POINTWISE_AFTER)
    assert fused.evidence == [*EVIDENCE, "pairing_fused: scale_kernel + bias_kernel -> scale_bias_kernel, "
                                         "launched in place by scale_bias"]
    assert (fused.pairing, fused.launched_kernels) == (Pairing.FUSED, [])


def test_fusion_keeps_the_launcher_pair_as_it_was(repo: RepoBuilder) -> None:
    """The launcher is still paired by its name, with nothing added: it launches other kernels now, which is no
    launch-configuration change."""
    launcher = pairs_of(repo, "fuse scale and bias into one kernel")["scale_bias"]
    assert (launcher.kernel_kind, launcher.evidence) == ("host_function", EVIDENCE)
    assert (launcher.pairing, launcher.launched_kernels) == (Pairing.SAME_NAME, [])


def test_rename_pairs_the_old_kernel_with_its_replacement(repo: RepoBuilder) -> None:
    pairs = pairs_of(repo, "copy with float4")
    assert sorted(pairs) == ["copy", "copy_vec4_kernel"]
    renamed = pairs["copy_vec4_kernel"]
    assert (renamed.function_before, renamed.function_after) == (COPY, COPY_VEC4)
    assert renamed.kernel_kind == "cuda_kernel"
    assert renamed.evidence[-1] == "pairing_renamed: copy_kernel -> copy_vec4_kernel, launched in place by copy"
    assert (renamed.pairing, renamed.launched_kernels) == (Pairing.RENAMED, [])


def test_rename_alone_gives_no_kernel_pair(repo: RepoBuilder) -> None:
    """sum_kernel becomes reduce_sum_kernel with the same code: only the launcher, which names it, changed."""
    pairs = pairs_of(repo, "rename the sum kernel")
    assert list(pairs) == ["launch_sum"]
    assert (pairs["launch_sum"].evidence, pairs["launch_sum"].pairing) == (EVIDENCE, Pairing.SAME_NAME)


def test_launch_configuration_change_names_the_unchanged_kernel(repo: RepoBuilder) -> None:
    """Only `threads = 256` became 1024 above an identical `<<<blocks, threads, 0, stream>>>`: the launcher's pair
    says that it launches sum_kernel, whose code did not change, with another configuration."""
    pairs = pairs_of(repo, "launch sum with 1024 threads")
    assert list(pairs) == ["launch_sum"]
    launcher = pairs["launch_sum"]
    assert (launcher.function_before, launcher.function_after) == (LAUNCH_SUM, LAUNCH_SUM_1024)
    assert launcher.kernel_kind == "host_function"
    assert launcher.evidence == [*EVIDENCE, "pairing_launch_config: launch_sum launches sum_kernel with another "
                                            "configuration; the kernel code, unchanged, is in file_before and "
                                            "file_after"]
    assert (launcher.pairing, launcher.launched_kernels) == (Pairing.LAUNCH_CONFIG, ["sum_kernel"])
    assert SUM in launcher.file_before and SUM in launcher.file_after  # the kernel travels as context


def test_triton_launch_options_are_a_launch_configuration(repo: RepoBuilder) -> None:
    """BLOCK_SIZE (a constexpr meta-parameter) and num_warps of `add_kernel[grid](...)` changed, the kernel did not."""
    pairs = pairs_of(repo, "triton add: bigger blocks")
    assert list(pairs) == ["add"]
    assert (pairs["add"].kernel_kind, pairs["add"].target) == ("python_function", "triton")
    assert pairs["add"].evidence[-1].startswith("pairing_launch_config: add launches add_kernel with another ")
    assert (pairs["add"].pairing, pairs["add"].launched_kernels) == (Pairing.LAUNCH_CONFIG, ["add_kernel"])


def test_ordinary_same_name_change_is_paired_as_before(repo: RepoBuilder) -> None:
    """The kernel's body changed and its launcher did not: one pair, by name (same_name, no kernel launched with
    another configuration), every other field what mining has always written (no pairing evidence)."""
    commit = mined(repo, "sum with warp shuffles")
    before, after = COMMITS["sum with warp shuffles"][1:]
    [pair] = commit.pairs
    assert pair == PairRecord(
        repo="owner/kernels", repo_url=str(repo.path), commit=commit.meta.sha, parent=commit.meta.parents[0],
        date=commit.meta.date, path="src/sum.cu", licence="MIT", found_by="mined:rules", language="cuda",
        target="cuda", kernel_name="sum_kernel", kernel_kind="cuda_kernel", function_before=SUM,
        function_after=SUM_WARP, file_before=before, file_after=after, diff=pair.diff,
        code_hash=code_hash(SUM, SUM_WARP, "cuda"), perf_score=0.9, category="atomics", evidence=EVIDENCE,
        message="sum with warp shuffles", pairing="same_name", launched_kernels=[])
    assert pair.diff.startswith("--- a/src/sum.cu\n+++ b/src/sum.cu\n@@ ")


def test_kernel_and_launch_changed_together_are_two_plain_pairs(repo: RepoBuilder) -> None:
    """The block size and the kernel changed: the kernel has its own pair, and the launcher's is no
    launch-configuration-only change."""
    pairs = pairs_of(repo, "read through the texture cache, 256 threads")
    assert sorted(pairs) == ["launch_sum", "sum_kernel"]
    assert [(pair.evidence, pair.pairing) for pair in pairs.values()] == [(EVIDENCE, Pairing.SAME_NAME)] * 2


def test_fusion_is_found_through_renamed_launchers(repo: RepoBuilder) -> None:
    """forward called gelu() and dropout(), each launching its kernel; now it calls gelu_dropout(), launching the
    fused kernel. No launcher kept its name: forward, which reaches the kernels through them, shows the fusion."""
    pairs = pairs_of(repo, "fuse gelu and dropout")
    fused = pairs["gelu_dropout_kernel"]
    assert (fused.function_before, fused.function_after) == (f"{GELU}\n\n{DROPOUT}", GELU_DROPOUT)
    assert fused.evidence[-1] == ("pairing_fused: gelu_kernel + dropout_kernel -> gelu_dropout_kernel, "
                                  "launched in place by forward")
    assert fused.pairing == Pairing.FUSED


def test_kernels_replaced_around_an_unchanged_launch_are_paired_each_with_its_own(repo: RepoBuilder) -> None:
    """run launched load, norm, store and now load_v2, norm, store_v2: norm anchors the alignment, so each new
    kernel replaces the old one at its place (not both old ones each)."""
    pairs = pairs_of(repo, "vectorised load and store")
    assert {name: pair.pairing for name, pair in pairs.items()} == {
        "load_v2": Pairing.RENAMED, "store_v2": Pairing.RENAMED, "run": Pairing.SAME_NAME}
    assert pairs["load_v2"].function_before == "__global__ void load(float* x) { x[0] += 4.0f; }"
    assert pairs["store_v2"].function_before == "__global__ void store(float* x) { x[2] += 5.0f; }"


def test_several_new_kernels_in_one_replaced_run_give_no_kernel_pair(repo: RepoBuilder) -> None:
    """first, second became third, fourth with no launch in between: which replaced which is not known."""
    assert list(pairs_of(repo, "new pipeline kernels")) == ["run"]


def test_pairs_written_before_the_pairing_field_read_back_with_their_pairing(repo: RepoBuilder,
                                                                            tmp_path: Path) -> None:
    """Schema 2.0 had no pairing or launched_kernels: miner v2 wrote the pairing as the last evidence entry. Such a
    file, every pairing of the fixture repository in it, reads back as mined now: the pairing from that entry (the
    launch_config kernels too), same_name where the evidence names none."""
    import datasets

    pairs = [pair for message in COMMITS for pair in mined(repo, message).pairs]
    assert {pair.pairing for pair in pairs} == set(Pairing)
    rows = [{**as_row(pair), "schema_version": "2.0"} for pair in pairs]
    for row in rows:
        del row["pairing"], row["launched_kernels"]
    features = datasets.Features({name: feature for name, feature in PAIR_FEATURES.items()
                                  if name not in ("pairing", "launched_kernels")})
    write_parquet(tmp_path / "pairs.parquet", rows, features)
    back = read_records(tmp_path / "pairs.parquet", PairRecord)
    assert [(p.pairing, p.launched_kernels) for p in back] == [(p.pairing, p.launched_kernels) for p in pairs]
    assert {p.schema_version for p in back} == {"2.0"}
