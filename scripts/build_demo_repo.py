"""Build the demo repository that `perfforge mine` mines when it is given no source.

The demo is "minikern", a tiny GPU/HPC project: CUDA kernels, C/OpenMP reference code, a Triton file, tests and
docs. Its history interleaves ordinary commits (features, bug fixes, refactors, docs, debug build flags, a few
false friends such as "fix optimizer learning-rate warmup") with real optimisations of existing functions, some
with explicit messages and some with vague ones ("rework reduce", "small tweaks"), plus one merged feature branch.

Whole file versions live in scripts/demo_repo/ as `<path in the demo>.<tag>` (a leading dot of the file name is
dropped, so nothing there is hidden); the suffix keeps compilers, pytest and ruff away from them. Small changes
are inline `Edit`s below. Identities and dates are fixed per commit and git runs without user or system config,
so a rebuild gives the same shas.

Outputs: a bundle of the repository (`git bundle create --all`) and a CSV with the known truth for every
non-merge commit, in commit order.

    python scripts/build_demo_repo.py [--out-bundle PATH] [--out-truth PATH] [--keep-repo DIR]
"""

from __future__ import annotations

import argparse
import csv
import os
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
VERSIONS_DIR = Path(__file__).resolve().parent / "demo_repo"
DEFAULT_BUNDLE = ROOT / "perfforge" / "data" / "demo.bundle"
DEFAULT_TRUTH = ROOT / "perfforge" / "data" / "demo_truth.csv"
TRUTH_HEADER = ("sha", "is_perf", "category", "note")
BRANCH = "main"


@dataclass(frozen=True)
class Person:
    name: str
    email: str


DANA = Person("Dana Whitfield", "dana.whitfield@example.org")
RAVI = Person("Ravi Menon", "ravi.menon@example.org")


@dataclass(frozen=True)
class Edit:
    """Replace `old`, which must occur exactly once, by `new` in the file's current text."""

    old: str
    new: str


# A change to one path: a version tag (the file scripts/demo_repo/<path>.<tag> replaces it), one or more
# Edits of its current text, or None to delete it.
Change = str | Edit | tuple[Edit, ...] | None


@dataclass(frozen=True)
class Step:
    """One commit on `branch` and its known truth (category "none" for a commit that is not a perf change)."""

    date: str
    message: str
    changes: dict[str, Change]
    category: str = "none"
    note: str = ""
    author: Person = DANA
    branch: str = BRANCH

    @property
    def is_perf(self) -> bool:
        return self.category != "none"


@dataclass(frozen=True)
class StartBranch:
    """Create `name` at the current tip of main; later Steps name it as their branch."""

    name: str


@dataclass(frozen=True)
class Merge:
    """Merge `branch` into main with a merge commit (never a fast-forward), then delete the branch."""

    date: str
    branch: str
    author: Person = DANA


CU_SRCS_V1 = "CU_SRCS := src/transpose.cu src/reduce.cu"
CFLAGS_V1 = "CFLAGS    ?= -O3 -std=c11 -Wall -Wextra -fPIC"
DEBUG_CFLAGS = "CFLAGS    := -O0 -g -std=c11 -Wall -Wextra -fPIC"

MAKEFILE_CPU = (
    Edit(
        "NVCCFLAGS ?= -O3 -std=c++17 -arch=sm_80 -Xcompiler -fPIC\n",
        f"NVCCFLAGS ?= -O3 -std=c++17 -arch=sm_80 -Xcompiler -fPIC\nCC        ?= cc\n{CFLAGS_V1}\n",
    ),
    Edit(
        "CU_OBJS := $(patsubst src/%.cu,$(BUILD)/%.o,$(CU_SRCS))\n",
        "CU_OBJS := $(patsubst src/%.cu,$(BUILD)/%.o,$(CU_SRCS))\n"
        "C_SRCS  := cpu/matmul.c cpu/histogram.c\n"
        "C_OBJS  := $(patsubst cpu/%.c,$(BUILD)/cpu_%.o,$(C_SRCS))\n",
    ),
    Edit(
        ".PHONY: all clean\n\nall: $(BUILD)/libminikern.so\n",
        ".PHONY: all cpu clean\n\nall: $(BUILD)/libminikern.so cpu\n\ncpu: $(BUILD)/libminikern_cpu.a\n",
    ),
    Edit(
        "$(BUILD):\n",
        "$(BUILD)/libminikern_cpu.a: $(C_OBJS)\n\tar rcs $@ $^\n\n"
        "$(BUILD)/cpu_%.o: cpu/%.c | $(BUILD)\n\t$(CC) $(CFLAGS) -c -o $@ $<\n\n$(BUILD):\n",
    ),
)

MAKEFILE_DEBUG = Edit(
    "BUILD     := build\n",
    "BUILD     := build\n\n"
    "# DEBUG=1: device debug info (-G) and no optimisation, for cuda-gdb and compute-sanitizer.\n"
    "# Much slower; never time a debug build.\n"
    "ifeq ($(DEBUG),1)\n"
    "NVCCFLAGS := -O0 -g -G -lineinfo -std=c++17 -arch=sm_80 -Xcompiler -fPIC\n"
    f"{DEBUG_CFLAGS}\n"
    "BUILD     := build-debug\n"
    "endif\n",
)

README_BUILD = Edit(
    "Kernels so far: matrix transpose and sum reduction.\n",
    "## Contents\n\n"
    "- `src/`: CUDA kernels (transpose, sum reduction, softmax), one operation per file\n"
    "- `cpu/`: C reference code (matmul, histogram) to check the GPU results against\n\n"
    "## Building\n\n"
    "Needs CUDA 12 or newer and a C11 compiler.\n\n"
    "    make          # build/libminikern.so and build/libminikern_cpu.a\n"
    "    make cpu      # only the CPU library\n"
    "    make clean\n\n"
    "The default GPU architecture is `sm_80`; for another one pass your own flags, e.g.\n"
    '`make NVCCFLAGS="-O3 -std=c++17 -arch=sm_90 -Xcompiler -fPIC"`.\n',
)

README_RELEASE = (
    Edit(
        "- `src/`: CUDA kernels (transpose, sum reduction, softmax), one operation per file\n"
        "- `cpu/`: C reference code (matmul, histogram) to check the GPU results against\n",
        "- `src/`: CUDA kernels (transpose, sum reduction, softmax, matmul, point-wise ops, 5-point stencil),\n"
        "  one operation per file\n"
        "- `cpu/`: C and OpenMP reference code (matmul, histogram, vector ops, row normalisation)\n"
        "- `python/minikern/`: Triton kernels, a small SGD optimizer and a benchmark CLI\n"
        "- `docs/kernels.md`: what each kernel does and why it looks the way it does\n",
    ),
    Edit(
        "    make DEBUG=1  # device debug info, into build-debug/\n",
        "    make DEBUG=1  # device debug info, into build-debug/\n\n"
        "Python tests (need a GPU, PyTorch and Triton): `pip install -e . && pytest`.\n",
    ),
)

TRANSPOSE_PAD = Edit(
    "    __shared__ float tile[TILE][TILE];\n",
    "    // One padding column: a column of the tile then spans all 32 banks instead of one.\n"
    "    __shared__ float tile[TILE][TILE + 1];\n",
)

SOFTMAX_LAUNCH_BOUNDS = (
    Edit(
        "constexpr int BLOCK = 1024;\n",
        "// 256 threads per row are plenty for rows of a few thousand columns. The launch bound tells\n"
        "// nvcc that no block is larger, so it budgets registers for 256 threads, not 1024.\n"
        "constexpr int BLOCK = 256;\n",
    ),
    Edit("__global__ void softmax_kernel(", "__global__ void __launch_bounds__(BLOCK) softmax_kernel("),
)

# "cleanup": ceil_div replaces the hand-written rounding in the launchers; no launch changes.
CEIL_DIV = Edit(
    "            std::exit(EXIT_FAILURE);                                       \\\n"
    "        }                                                                  \\\n"
    "    } while (0)\n",
    "            std::exit(EXIT_FAILURE);                                       \\\n"
    "        }                                                                  \\\n"
    "    } while (0)\n\n"
    "// Number of blocks of `block` threads needed to cover `n` items.\n"
    "inline int ceil_div(int n, int block) { return (n + block - 1) / block; }\n",
)
CLEANUP = {
    "src/common.cuh": CEIL_DIV,
    "src/transpose.cu": Edit(
        "dim3 grid((cols + TILE - 1) / TILE, (rows + TILE - 1) / TILE);",
        "dim3 grid(ceil_div(cols, TILE), ceil_div(rows, TILE));",
    ),
    "src/reduce.cu": Edit(
        "int grid = std::min((n + BLOCK - 1) / BLOCK, MAX_BLOCKS);",
        "int grid = std::min(ceil_div(n, BLOCK), MAX_BLOCKS);",
    ),
    "src/matmul.cu": Edit(
        "dim3 grid((N + TILE - 1) / TILE, (M + TILE - 1) / TILE);", "dim3 grid(ceil_div(N, TILE), ceil_div(M, TILE));"
    ),
    "src/elementwise.cu": (
        Edit(
            "    int threads = n / 4 + 1;\n    scale_kernel<<<(threads + BLOCK - 1) / BLOCK, BLOCK>>>",
            "    scale_kernel<<<ceil_div(n / 4 + 1, BLOCK), BLOCK>>>",
        ),
        Edit("bias_add_kernel<<<(n + BLOCK - 1) / BLOCK, BLOCK>>>", "bias_add_kernel<<<ceil_div(n, BLOCK), BLOCK>>>"),
        Edit("relu_kernel<<<(n + BLOCK - 1) / BLOCK, BLOCK>>>", "relu_kernel<<<ceil_div(n, BLOCK), BLOCK>>>"),
    ),
}

VECOPS_RESTRICT = (
    Edit(
        "void axpy(size_t n, float a, const float *x, float *y)",
        "void axpy(size_t n, float a, const float *restrict x, float *restrict y)",
    ),
    Edit(
        "void vmul(size_t n, const float *x, const float *y, float *z)",
        "void vmul(size_t n, const float *restrict x, const float *restrict y, float *restrict z)",
    ),
    Edit(
        "/* BLAS-1 style helpers for the CPU reference path. */\n",
        "/* BLAS-1 style helpers for the CPU reference path.\n"
        " * restrict: the arrays never overlap, so the compiler may vectorise the loops without\n"
        " * emitting a runtime overlap check or falling back to scalar code. */\n",
    ),
)

BENCH_FAST_MATH = (
    Edit(
        '    parser.add_argument("--json", action="store_true", help="print one JSON object instead of text")\n',
        '    parser.add_argument("--json", action="store_true", help="print one JSON object instead of text")\n'
        "    parser.add_argument(\n"
        '        "--fast_math", action="store_true", help="tag the result as coming from a -use_fast_math build"\n'
        "    )\n",
    ),
    Edit(
        '    return {"op": args.op, "size": args.size, "ms": ms}\n',
        '    return {"op": args.op, "size": args.size, "ms": ms, "fast_math": args.fast_math}\n',
    ),
)

DOCS_PADDING = Edit(
    "## CPU reference code\n",
    "## Why the transpose tile has 33 columns\n\n"
    "Shared memory has 32 banks of 4 bytes. In a 32x32 `float` tile every element of a column\n"
    "lives in the same bank, so the 32 threads of a warp reading a column would be served one\n"
    "after another. With one padding column, element `[r][c]` sits in bank `(33 r + c) % 32`,\n"
    "which differs for every `r`, and a column read is a single conflict-free access.\n\n"
    "## CPU reference code\n",
)

STENCIL_COALESCE = (
    Edit(
        "// Thread (tx, ty) of block (bx, by) updates row y = bx * BX + tx, column x = by * BY + ty.\n",
        "// Consecutive threads of a warp update consecutive cells of a row, so loads and stores coalesce.\n",
    ),
    Edit(
        "    int y = blockIdx.x * blockDim.x + threadIdx.x;\n    int x = blockIdx.y * blockDim.y + threadIdx.y;\n",
        "    int x = blockIdx.x * blockDim.x + threadIdx.x;\n    int y = blockIdx.y * blockDim.y + threadIdx.y;\n",
    ),
    Edit("dim3 grid(ceil_div(ny, BX), ceil_div(nx, BY));", "dim3 grid(ceil_div(nx, BX), ceil_div(ny, BY));"),
)

RENAME_DOCS = (
    Edit("| Scale | `src/elementwise.cu` |", "| Scale | `src/pointwise.cu` |"),
    Edit("| Bias + ReLU | `src/elementwise.cu` |", "| Bias + ReLU | `src/pointwise.cu` |"),
)

# Speed-ups in the notes were measured once on an H200 (CUDA 13; gcc 12 -O3 -march=native, 16 OpenMP threads)
# by a throwaway harness that also checked every version against a host reference; they are context only.
HISTORY: tuple[Step | StartBranch | Merge, ...] = (
    Step(
        "2024-01-08T10:14:00+01:00",
        "Initial import: CUDA transpose and sum reduction",
        {
            "LICENSE": "mit",
            ".gitignore": "v1",
            "README.md": "v1",
            "Makefile": "v1",
            "src/common.cuh": "v1",
            "src/transpose.cu": "naive",
            "src/reduce.cu": "atomic",
        },
    ),
    Step(
        "2024-01-09T16:40:00+01:00",
        "Add softmax kernel",
        {"src/softmax.cu": "v1", "Makefile": Edit(CU_SRCS_V1, CU_SRCS_V1 + " src/softmax.cu")},
    ),
    Step(
        "2024-01-11T11:02:00+01:00",
        "Add CPU reference code for matmul and histogram",
        {"cpu/matmul.c": "ijk", "cpu/histogram.c": "v1", "Makefile": MAKEFILE_CPU},
    ),
    Step("2024-01-12T09:30:00+01:00", "README: build and usage instructions", {"README.md": README_BUILD}),
    Step(
        "2024-01-15T14:22:00+01:00",
        "transpose: fix out-of-bounds read for non-square matrices",
        {"src/transpose.cu": Edit("if (r < cols && c < cols)", "if (r < rows && c < cols)")},
        note="bug fix: the row bound compared against cols",
    ),
    Step(
        "2024-01-16T10:05:00+01:00",
        "reduce: round the grid size up so the tail is summed",
        {"src/reduce.cu": Edit("int grid = n / BLOCK;", "int grid = (n + BLOCK - 1) / BLOCK;")},
        note="bug fix in the launch configuration (n % 256 elements were dropped); not a speed change",
    ),
    Step(
        "2024-01-17T17:48:00+01:00",
        "Use shared memory tile in transpose",
        {"src/transpose.cu": "tiled"},
        "shared_memory",
        "naive transpose -> 32x32 shared-memory tile so reads and writes are both coalesced; 1.4x",
    ),
    Step(
        "2024-01-19T13:15:00+01:00",
        "Add element-wise kernels: scale, bias add, ReLU",
        {"src/elementwise.cu": "v1", "Makefile": Edit(" src/softmax.cu\n", " src/softmax.cu src/elementwise.cu\n")},
    ),
    Step(
        "2024-01-22T15:31:00+01:00",
        "Add Triton vector add and row softmax",
        {"python/minikern/__init__.py": "v1", "python/minikern/triton_kernels.py": "v1", "pyproject.toml": "v1"},
        author=RAVI,
    ),
    Step(
        "2024-01-24T11:47:00+01:00",
        "tests: compare Triton kernels against torch",
        {"tests/test_triton.py": "v1"},
        author=RAVI,
    ),
    Step(
        "2024-01-26T18:20:00+01:00",
        "transpose: pad shared tile to avoid bank conflicts, 2.2x\n\n"
        "Reading a column of a 32x32 float tile hits one bank 32 times. One extra\n"
        "column spreads it over all 32 banks.\n\n"
        "4096x4096 on H200: 86 us -> 39 us.",
        {"src/transpose.cu": TRANSPOSE_PAD},
        "shared_memory",
        "shared tile [TILE][TILE] -> [TILE][TILE+1]: no 32-way bank conflicts on the column read; 2.2x",
    ),
    Step(
        "2024-01-29T10:12:00+01:00",
        "reduce: one atomicAdd per block instead of per element",
        {"src/reduce.cu": "block"},
        "atomics",
        "per-element atomicAdd on one address -> shared-memory tree reduction, one atomic per block; 240x",
    ),
    Step(
        "2024-01-31T16:03:00+01:00",
        "Makefile: DEBUG=1 builds with -G -lineinfo",
        {
            "Makefile": MAKEFILE_DEBUG,
            "README.md": Edit(
                "    make clean\n", "    make clean\n    make DEBUG=1  # device debug info, into build-debug/\n"
            ),
        },
        note="debug build flags only; the default build is unchanged",
    ),
    Step(
        "2024-02-02T09:55:00+01:00",
        "cpu matmul: i-k-j loop order\n\nUnit stride in the inner loop; 1024x1024 goes from 4.3 s to 0.14 s at -O3.",
        {"cpu/matmul.c": "ikj"},
        "memory_access",
        "C matmul loop order i-j-k -> i-k-j: unit-stride inner loop over B and C; 30x at n=1024",
        author=RAVI,
    ),
    Step(
        "2024-02-05T14:40:00+01:00",
        "Add naive CUDA matmul",
        {"src/matmul.cu": "naive", "Makefile": Edit(" src/elementwise.cu\n", " src/elementwise.cu src/matmul.cu\n")},
    ),
    Step(
        "2024-02-06T11:20:00+01:00",
        "Add SGD optimizer with warmup and an MLP example",
        {"python/minikern/optim.py": "v1", "examples/train_mlp.py": "v1"},
        author=RAVI,
    ),
    Step(
        "2024-02-08T15:05:00+01:00",
        "fix optimizer learning-rate warmup\n\n"
        "warmup_lr gave lr = 0 at step 0, so the first step was wasted; ramp over\n"
        "steps 1..warmup_steps instead.",
        {
            "python/minikern/optim.py": (
                Edit(
                    "(0-based): a linear ramp, then constant.",
                    "(0-based): a linear ramp that reaches base_lr\n    at step warmup_steps - 1, then constant.",
                ),
                Edit("min(1.0, step / warmup_steps)", "min(1.0, (step + 1) / warmup_steps)"),
            )
        },
        note="false friend: 'optimizer' is the SGD training optimizer; a learning-rate bug fix",
        author=RAVI,
    ),
    Step(
        "2024-02-09T10:30:00+01:00",
        "Add bench CLI for the Triton kernels",
        {"python/minikern/bench.py": "v1"},
        author=RAVI,
    ),
    Step(
        "2024-02-12T13:44:00+01:00",
        "elementwise: fix wrong bias index (one bias per column, not per row)",
        {"src/elementwise.cu": Edit("bias[i % rows]", "bias[i % cols]")},
        note="bug fix: wrong index into bias",
    ),
    Step(
        "2024-02-14T17:10:00+01:00",
        "rework reduce",
        {"src/reduce.cu": "shuffle"},
        "atomics",
        "vague message: __shfl_down_sync warp reduction plus a grid-stride loop over at most 1024 blocks;"
        " the 4.5x comes from 1024 atomics instead of n/256 (the shuffle alone measured no change)",
    ),
    Step(
        "2024-02-16T09:25:00+01:00",
        "use float4 loads in scale kernel",
        {"src/elementwise.cu": "float4"},
        "vectorization",
        "scale_kernel: scalar loads/stores -> float4 (16-byte) loads/stores, scalar tail; 1.6x",
    ),
    Step(
        "2024-02-20T12:00:00+01:00",
        "Add vector ops and row normalisation to the CPU reference code",
        {
            "cpu/vecops.c": "v1",
            "cpu/normalize.c": "v1",
            "Makefile": Edit(
                "C_SRCS  := cpu/matmul.c cpu/histogram.c\n",
                "C_SRCS  := cpu/matmul.c cpu/histogram.c cpu/vecops.c cpu/normalize.c\n",
            ),
        },
        author=RAVI,
    ),
    Step(
        "2024-02-22T16:35:00+01:00",
        "cleanup",
        CLEANUP,
        note="plain refactor: ceil_div helper replaces hand-written rounding; same grids and blocks",
    ),
    Step(
        "2024-02-26T10:50:00+01:00",
        "cleanup matmul",
        {"src/matmul.cu": "tiled"},
        "tiling",
        "vague message: naive matmul -> 16x16 shared-memory tiled matmul; 1.5x at 2048^3",
    ),
    Step(
        "2024-02-28T14:15:00+01:00",
        "fuse bias add and relu into one kernel\n\nSaves a full read and write of the activations.",
        {"src/elementwise.cu": "fused"},
        "fusion",
        "bias_add_kernel + relu_kernel -> one bias_relu_kernel, one pass over x instead of two; 1.9x",
    ),
    Step(
        "2024-03-01T11:40:00+01:00",
        "launch_bounds for softmax",
        {"src/softmax.cu": SOFTMAX_LAUNCH_BOUNDS},
        "register_pressure",
        "__launch_bounds__(256) on softmax_kernel and block size 1024 -> 256; 2.7x on 1000-column rows",
    ),
    Step("2024-03-04T15:20:00+01:00", "docs: kernel overview", {"docs/kernels.md": "v1"}, author=RAVI),
    Step(
        "2024-03-06T09:45:00+01:00",
        "histogram: OpenMP\n\nparallel for with an array reduction over the bins; needs -fopenmp.",
        {
            "cpu/histogram.c": "openmp",
            "Makefile": (Edit(CFLAGS_V1, CFLAGS_V1 + " -fopenmp"), Edit(DEBUG_CFLAGS, DEBUG_CFLAGS + " -fopenmp")),
            "docs/kernels.md": Edit(
                "Build them with\n`make cpu`.\n",
                "Build them with\n`make cpu`; `histogram` runs in parallel with OpenMP.\n",
            ),
        },
        "parallelism",
        "serial histogram -> #pragma omp parallel for with reduction(+ : bins[:nbins]); 8.5x on 16 threads",
        author=RAVI,
    ),
    Step(
        "2024-03-08T17:05:00+01:00",
        "small tweaks",
        {"cpu/normalize.c": "hoisted", "docs/kernels.md": Edit("againts", "against")},
        "algorithmic",
        "vague message: loop-invariant row norm hoisted out of the inner loop, O(cols^2) -> O(cols) per row",
        author=RAVI,
    ),
    Step(
        "2024-03-11T10:10:00+01:00",
        "vecops: mark pointer args restrict",
        {"cpu/vecops.c": VECOPS_RESTRICT},
        "vectorization",
        "restrict on axpy/vmul pointers so the loops vectorise without alias checks; no measurable change"
        " with gcc 12 -O3, which already versions these loops for aliasing (labelled by intent)",
        author=RAVI,
    ),
    Step(
        "2024-03-13T14:30:00+01:00",
        "bench: add fast_math option",
        {"python/minikern/bench.py": BENCH_FAST_MATH},
        author=RAVI,
        note="false friend: the flag only tags the JSON result; no build or kernel change",
    ),
    Step(
        "2024-03-15T11:55:00+01:00",
        "triton: tune BLOCK_SIZE and num_warps",
        {"python/minikern/triton_kernels.py": "tuned"},
        "parallelism",
        "Triton launch config: vadd BLOCK_SIZE 128 -> 1024 with num_warps=4 (1.7x); softmax num_warps by row"
        " width (1.3x at 16384 columns, unchanged at <= 4096)",
    ),
    StartBranch("stencil"),
    Step(
        "2024-03-18T10:20:00+01:00",
        "Add 5-point stencil kernel",
        {
            "src/stencil.cu": "v1",
            "Makefile": Edit(" src/matmul.cu\n", " src/matmul.cu \\\n           src/stencil.cu\n"),
        },
        author=RAVI,
        branch="stencil",
    ),
    Step(
        "2024-03-19T16:45:00+01:00",
        "stencil: fix off-by-one in boundary check",
        {"src/stencil.cu": Edit("x == nx || y == ny", "x == nx - 1 || y == ny - 1")},
        note="bug fix: last row and column were treated as interior and read out of bounds",
        author=RAVI,
        branch="stencil",
    ),
    Step(
        "2024-03-20T09:40:00+01:00",
        "docs: why the transpose tile has 33 columns",
        {"docs/kernels.md": DOCS_PADDING},
        note="false friend: docs explaining bank conflicts; no code change",
    ),
    Step(
        "2024-03-21T14:05:00+01:00",
        "stencil: swap thread mapping so warps read along rows",
        {"src/stencil.cu": STENCIL_COALESCE},
        "memory_access",
        "on the feature branch: threadIdx.x ran down a column (stride nx) -> along x, so accesses coalesce; 4.3x",
        author=RAVI,
        branch="stencil",
    ),
    Merge("2024-03-25T11:30:00+01:00", "stencil"),
    Step("2024-03-27T15:50:00+01:00", "tests: warmup and SGD step tests", {"tests/test_optim.py": "v1"}, author=RAVI),
    Step(
        "2024-04-02T10:25:00+02:00",
        "Rename elementwise.cu to pointwise.cu",
        {
            "src/elementwise.cu": None,
            "src/pointwise.cu": "v1",
            "Makefile": Edit("src/elementwise.cu", "src/pointwise.cu"),
            "docs/kernels.md": RENAME_DOCS,
        },
        note="rename; the kernels are unchanged",
    ),
    Step(
        "2024-04-05T16:00:00+02:00",
        "Release 0.2.0",
        {
            "README.md": README_RELEASE,
            "pyproject.toml": Edit('version = "0.1.0"', 'version = "0.2.0"'),
            "python/minikern/__init__.py": Edit('"0.1.0"', '"0.2.0"'),
            "docs/kernels.md": Edit(
                "| in place |\n",
                "| in place |\n"
                "| Heat step | `src/stencil.cu` | `stencil5(in, out, nx, ny, alpha)` | 5-point Laplacian |\n",
            ),
        },
    ),
)


def git_env(person: Person | None = None, date: str | None = None) -> dict[str, str]:
    """The environment for git: no user or system config and no inherited GIT_* variables, so that nothing on
    the machine (hooks, templates, signing, autocrlf) changes the objects; identity and date when committing."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update(GIT_CONFIG_GLOBAL=os.devnull, GIT_CONFIG_NOSYSTEM="1", LC_ALL="C")
    if person is not None and date is not None:
        env.update(
            GIT_AUTHOR_NAME=person.name,
            GIT_AUTHOR_EMAIL=person.email,
            GIT_AUTHOR_DATE=date,
            GIT_COMMITTER_NAME=person.name,
            GIT_COMMITTER_EMAIL=person.email,
            GIT_COMMITTER_DATE=date,
        )
    return env


def git(repo: Path, *args: str, env: dict[str, str] | None = None, stdin: str | None = None) -> str:
    result = subprocess.run(
        ["git", "-C", str(repo), *args], check=False, env=env or git_env(), input=stdin, capture_output=True, text=True
    )
    if result.returncode != 0:
        raise RuntimeError(f"git {' '.join(args)} failed in {repo}:\n{result.stderr}")
    return result.stdout.strip()


def version_file(path: str, tag: str) -> Path:
    rel = Path(path)
    return VERSIONS_DIR / rel.parent / f"{rel.name.lstrip('.')}.{tag}"


def apply_edits(target: Path, edits: tuple[Edit, ...]) -> None:
    text = target.read_text(encoding="utf-8")
    for edit in edits:
        count = text.count(edit.old)
        if count != 1:
            raise ValueError(f"{target}: edit target occurs {count} times, expected once: {edit.old!r}")
        text = text.replace(edit.old, edit.new)
    target.write_bytes(text.encode("utf-8"))


def apply_change(repo: Path, path: str, change: Change) -> None:
    target = repo / path
    if change is None:
        target.unlink()
    elif isinstance(change, str):
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(version_file(path, change).read_bytes())
    else:
        apply_edits(target, (change,) if isinstance(change, Edit) else change)


def commit_step(repo: Path, step: Step) -> str:
    """Check out the step's branch, write its changes, commit; returns the new sha."""
    if git(repo, "branch", "--show-current") != step.branch:
        git(repo, "checkout", "-q", step.branch)
    for path, change in step.changes.items():
        apply_change(repo, path, change)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "--no-verify", "-F", "-", env=git_env(step.author, step.date), stdin=step.message)
    return git(repo, "rev-parse", "HEAD")


def merge_branch(repo: Path, merge: Merge) -> None:
    git(repo, "checkout", "-q", BRANCH)
    git(
        repo,
        "merge",
        "-q",
        "--no-ff",
        "--no-edit",
        "-m",
        f"Merge branch '{merge.branch}'",
        merge.branch,
        env=git_env(merge.author, merge.date),
    )
    git(repo, "branch", "-q", "-d", merge.branch)


def build_repo(repo: Path) -> list[tuple[str, Step]]:
    """Create the demo history in the empty directory `repo`; returns (sha, step) per non-merge commit."""
    git(repo, "init", "-q", "-b", BRANCH)
    truth = []
    for item in HISTORY:
        if isinstance(item, Step):
            truth.append((commit_step(repo, item), item))
        elif isinstance(item, StartBranch):
            git(repo, "branch", item.name, BRANCH)
        else:
            merge_branch(repo, item)
    return truth


def check_history(repo: Path, truth: list[tuple[str, Step]]) -> None:
    """The truth must cover exactly the non-merge commits, with categories from perfforge's Category."""
    # Imported here: the data model pulls in `datasets`, which the build itself does not need.
    sys.path.insert(0, str(ROOT))
    from perfforge.records import Category

    valid = {c.value for c in Category}
    bad = [step.message for _, step in truth if step.category not in valid]
    if bad:
        raise ValueError(f"unknown category in steps {bad}; valid: {sorted(valid)}")
    listed = set(git(repo, "rev-list", "--no-merges", BRANCH).split())
    if listed != {sha for sha, _ in truth}:
        raise RuntimeError("truth rows do not match the non-merge commits of the built history")


def write_truth(path: Path, truth: list[tuple[str, Step]]) -> None:
    partial = path.with_name(path.name + ".incomplete")
    with partial.open("w", newline="", encoding="utf-8") as fh:
        writer = csv.writer(fh, lineterminator="\n")
        writer.writerow(TRUTH_HEADER)
        for sha, step in truth:
            writer.writerow((sha, "true" if step.is_perf else "false", step.category, step.note))
    partial.replace(path)


def write_bundle(repo: Path, path: Path) -> None:
    partial = path.with_name(path.name + ".incomplete")
    git(repo, "bundle", "create", "-q", str(partial), "--all")
    partial.replace(path)


def build(out_bundle: Path, out_truth: Path, repo: Path) -> list[tuple[str, Step]]:
    truth = build_repo(repo)
    check_history(repo, truth)
    for out in (out_bundle, out_truth):
        out.parent.mkdir(parents=True, exist_ok=True)
    write_bundle(repo, out_bundle)
    write_truth(out_truth, truth)
    return truth


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out-bundle", type=Path, default=DEFAULT_BUNDLE, help="where to write the git bundle")
    parser.add_argument("--out-truth", type=Path, default=DEFAULT_TRUTH, help="where to write the truth CSV")
    parser.add_argument(
        "--keep-repo", type=Path, help="build the repository in this new or empty directory and keep it"
    )
    args = parser.parse_args(argv)
    if args.keep_repo is not None and args.keep_repo.exists() and any(args.keep_repo.iterdir()):
        parser.error(f"--keep-repo {args.keep_repo} is not empty; give a new or empty directory")
    return args


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    if args.keep_repo is not None:
        args.keep_repo.mkdir(parents=True, exist_ok=True)
        truth = build(args.out_bundle, args.out_truth, args.keep_repo)
    else:
        with tempfile.TemporaryDirectory(prefix="minikern-") as tmp:
            truth = build(args.out_bundle, args.out_truth, Path(tmp))
    for sha, step in truth:
        print(f"{sha[:10]}  {'perf' if step.is_perf else '    '}  {step.category:<17}  {step.message.splitlines()[0]}")
    print(f"{len(truth)} commits (+ merges); bundle {args.out_bundle} ({args.out_bundle.stat().st_size} bytes)")


if __name__ == "__main__":
    main()
