"""Build the demo repository that `perfforge mine` mines when it is given no source.

The demo is "minikern", a tiny GPU/HPC project: CUDA kernels, C/OpenMP reference code, Triton kernels, tests and
docs. Its history interleaves ordinary commits (features, bug fixes, refactors, docs, debug build flags, a few
false friends such as "fix optimizer learning-rate warmup") with optimisations of existing code, some with
explicit messages and some with vague ones ("rework reduce", "small tweaks"), plus one merged feature branch.

Every optimisation is a catalogue instance (synth/patterns): a `FromPattern(pattern, seed, "slow")` change adds
the instance's slow source as a file of the demo in an ordinary commit, and a later commit replaces it by the
`"fast"` side, the instance's slow-to-fast change and nothing else on that file. The truth of such a commit (its
category) is the instance's; every commit without a fast side is not a performance change. The rest of the
project (build files, docs, the Python package, a few kernels that are never optimised) is ours: whole file
versions in scripts/demo_repo/ as `<path in the demo>.<tag>` (a leading dot of the file name is dropped, so
nothing there is hidden; the suffix keeps compilers, pytest and ruff away from them), and small changes as inline
`Edit`s below. Nothing fetched from elsewhere is committed. A version file that no step uses, or a step's
version file that is missing, is an error. Identities and dates are fixed per commit and git runs without user
or system config, so a rebuild gives the same shas (as long as the catalogue instances are unchanged).

Outputs: a bundle of the repository (`git bundle create --all`) and a CSV with the known truth for every
non-merge commit, in commit order.

    python scripts/build_demo_repo.py [--out-bundle PATH] [--out-truth PATH] [--keep-repo DIR]
"""

from __future__ import annotations

import argparse
import csv
import functools
import os
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from synth.instance import Instance

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


@dataclass(frozen=True)
class FromPattern:
    """The source text of catalogue instance `pattern` at `seed`: its slow version or its fast one. A fast side
    may only replace the same instance's slow side, and it makes its commit a performance change."""

    pattern: str
    seed: int
    side: str  # "slow" | "fast"

    def __post_init__(self) -> None:
        if self.side not in ("slow", "fast"):
            raise ValueError(f"FromPattern side must be 'slow' or 'fast', not {self.side!r}")

    @property
    def instance(self) -> Instance:
        return catalogue_instance(self.pattern, self.seed)

    @property
    def text(self) -> str:
        return self.instance.slow if self.side == "slow" else self.instance.fast


@dataclass(frozen=True)
class CopyOf:
    """The current text of another path of the demo (with that path deleted in the same step: a rename)."""

    path: str


# A change to one path: a version tag (the file scripts/demo_repo/<path>.<tag> replaces it), a catalogue
# instance's source, a copy of another path, one or more Edits of its current text, or None to delete it.
Change = str | FromPattern | CopyOf | Edit | tuple[Edit, ...] | None


@functools.cache
def catalogue_instance(pattern: str, seed: int) -> Instance:
    # Imported here: the catalogue lives in the project (synth/), which is not on the path of a script run.
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    from synth.patterns import generate

    return generate(pattern, seed)


@dataclass(frozen=True)
class Step:
    """One commit on `branch`. Its truth: a performance change of the category of the catalogue instance whose
    fast side it writes, or none; `note` says what the commit is (for a catalogue change, an optional remark
    in front of the instance's pattern, seed and summary)."""

    date: str
    message: str
    changes: dict[str, Change]
    note: str = ""
    author: Person = DANA
    branch: str = BRANCH

    @property
    def optimisations(self) -> list[FromPattern]:
        return [c for c in self.changes.values() if isinstance(c, FromPattern) and c.side == "fast"]

    @property
    def is_perf(self) -> bool:
        return bool(self.optimisations)

    @property
    def category(self) -> str:
        categories = {fast.instance.category for fast in self.optimisations}
        if len(categories) > 1:
            raise ValueError(f"step {self.message.splitlines()[0]!r} mixes categories {sorted(categories)}")
        return categories.pop() if categories else "none"

    @property
    def truth_note(self) -> str:
        if not self.is_perf:
            return self.note
        # Imported here for the same reason as in catalogue_instance (which has put ROOT on the path).
        from synth.patterns import patterns

        parts = [self.note] if self.note else []
        for fast in self.optimisations:
            (pattern,) = patterns(ids=[fast.pattern])
            parts.append(f"catalogue {fast.pattern} seed {fast.seed}: {pattern.summary}")
        return "; ".join(parts)


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


# The catalogue instances of the demo: (pattern, seed) -> the slow and the fast side.
def slow(pattern: str, seed: int) -> FromPattern:
    return FromPattern(pattern, seed, "slow")


def fast(pattern: str, seed: int) -> FromPattern:
    return FromPattern(pattern, seed, "fast")


TRANSPOSE = ("cuda/uncoalesced_global_access", 6)  # launch_transpose, double
REDUCE = ("cuda/atomic_contention", 8)  # launch_reduce_sum: segment sums
LAYOUT = ("cuda/shared_memory_bank_conflicts", 7)  # launch_flip_layout: int transpose through a shared tile
CPU_MATMUL = ("cpu/loop_order", 2)  # matmul
MATMUL = ("cuda/poor_cache_locality", 9)  # launch_matmul
POINTWISE = ("cuda/unfused_elementwise_chain", 5)  # launch_pointwise: square -> leaky -> shift
IMAGE = ("cuda/scalar_global_loads", 7)  # launch_darken_image
SMALL_GEMM = ("cuda/register_spills", 6)  # launch_small_gemm8
ROWNORM = ("cuda/launch_overhead", 6)  # launch_rowstat: row L2 normalisation
SMOOTH = ("cuda/redundant_global_loads", 9)  # launch_smooth_wide: 21-tap 1-D filter
SPRINGS = ("cpu/aliasing_update", 8)  # step_springs
NORMALIZE = ("cpu/row_invariant_call", 8)  # normalise_rows
SOFTPLUS = ("cpu/serial_elementwise", 8)  # softplus

CU_SRCS_V1 = "CU_SRCS := src/transpose.cu src/reduce.cu"
CFLAGS_V1 = "CFLAGS    ?= -O3 -std=c11 -Wall -Wextra -fPIC"
DEBUG_CFLAGS = "CFLAGS    := -O0 -g -std=c11 -Wall -Wextra -fPIC"


def add_cu(after: str, new: str, wrap: bool = False) -> Edit:
    """The Makefile edit that appends src/`new`.cu to CU_SRCS after src/`after`.cu (on a new line if `wrap`)."""
    sep = " \\\n           " if wrap else " "
    return Edit(f" src/{after}.cu\n", f" src/{after}.cu{sep}src/{new}.cu\n")


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
    "Kernels so far: matrix transpose and segment sums.\n",
    "## Contents\n\n"
    "- `src/`: CUDA kernels (transpose, segment sums, softmax), one operation per file\n"
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
        "- `src/`: CUDA kernels (transpose, segment sums, softmax), one operation per file\n"
        "- `cpu/`: C reference code (matmul, histogram) to check the GPU results against\n",
        "- `src/`: CUDA kernels (transposes, segment sums, softmax, matmul, point-wise ops, image ops,\n"
        "  batched 8x8 products, row normalisation, a 5-point stencil and a 1-D filter), one operation per file\n"
        "- `cpu/`: C and OpenMP reference code (matmul, histogram, springs, row normalisation, softplus)\n"
        "- `python/minikern/`: Triton kernels, a small SGD optimizer and a benchmark CLI\n"
        "- `docs/kernels.md`: what each kernel does\n",
    ),
    Edit(
        "    make DEBUG=1  # device debug info, into build-debug/\n",
        "    make DEBUG=1  # device debug info, into build-debug/\n\n"
        "Python tests (need a GPU, PyTorch and Triton): `pip install -e . && pytest`.\n",
    ),
)

# "cleanup": a ceil_div helper and a LAUNCH_CHECK macro in common.cuh; softmax uses the macro. No launch changes.
CLEANUP = {
    "src/common.cuh": Edit(
        "            std::exit(EXIT_FAILURE);                                       \\\n"
        "        }                                                                  \\\n"
        "    } while (0)\n",
        "            std::exit(EXIT_FAILURE);                                       \\\n"
        "        }                                                                  \\\n"
        "    } while (0)\n\n"
        "// Check the last kernel launch of this thread.\n"
        "#define LAUNCH_CHECK() CUDA_CHECK(cudaGetLastError())\n\n"
        "// Number of blocks of `block` threads needed to cover `n` items.\n"
        "inline int ceil_div(int n, int block) { return (n + block - 1) / block; }\n",
    ),
    "src/softmax.cu": Edit("    CUDA_CHECK(cudaGetLastError());\n", "    LAUNCH_CHECK();\n"),
}

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
    "## Why the flip_layout tile has 33 columns\n\n"
    "Shared memory has 32 banks of 4 bytes. In a 32x32 `int` tile every element of a column\n"
    "lives in the same bank, so the 32 threads of a warp reading a column would be served one\n"
    "after another. With one padding column, element `[r][c]` sits in bank `(33 r + c) % 32`,\n"
    "which differs for every `r`, and a column read is a single conflict-free access.\n\n"
    "## CPU reference code\n",
)

RENAME_DOCS = Edit("| `src/elementwise.cu` |", "| `src/pointwise.cu` |")

# Notes of the catalogue commits end with the pattern, the seed and the pattern's summary (Step.truth_note).
HISTORY: tuple[Step | StartBranch | Merge, ...] = (
    Step(
        "2024-01-08T10:14:00+01:00",
        "Initial import: CUDA transpose and segment sums",
        {
            "LICENSE": "mit",
            ".gitignore": "v1",
            "README.md": "v1",
            "Makefile": "v1",
            "src/common.cuh": "v1",
            "src/transpose.cu": slow(*TRANSPOSE),
            "src/reduce.cu": slow(*REDUCE),
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
        {"cpu/matmul.c": slow(*CPU_MATMUL), "cpu/histogram.c": "v1", "Makefile": MAKEFILE_CPU},
    ),
    Step("2024-01-12T09:30:00+01:00", "README: build and usage instructions", {"README.md": README_BUILD}),
    Step(
        "2024-01-15T14:22:00+01:00",
        "softmax: 64-bit row offsets\n\nblockIdx.x * cols overflowed int for inputs over 2^31 elements.",
        {
            "src/softmax.cu": (
                Edit("in + blockIdx.x * cols;", "in + (size_t)blockIdx.x * cols;"),
                Edit("out + blockIdx.x * cols;", "out + (size_t)blockIdx.x * cols;"),
            )
        },
        note="bug fix: int overflow of the row offset",
    ),
    Step(
        "2024-01-16T10:05:00+01:00",
        "histogram: clamp the bin index",
        {
            "cpu/histogram.c": Edit(
                "        bins[b]++;\n",
                "        /* rounding can put a value just below hi into bin nbins */\n"
                "        bins[b < nbins ? b : nbins - 1]++;\n",
            )
        },
        note="bug fix: a value just below hi could be counted past the last bin",
    ),
    Step(
        "2024-01-17T17:48:00+01:00",
        catalogue_instance(*TRANSPOSE).message,
        {"src/transpose.cu": fast(*TRANSPOSE)},
        note="the instance's own message",
    ),
    Step(
        "2024-01-19T13:15:00+01:00",
        "Add element-wise kernels: square, leaky ReLU, shift",
        {"src/elementwise.cu": slow(*POINTWISE), "Makefile": add_cu("softmax", "elementwise")},
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
        "2024-01-25T10:30:00+01:00",
        "Add flip_layout: transpose of int label maps",
        {"src/layout.cu": slow(*LAYOUT), "Makefile": add_cu("elementwise", "layout", wrap=True)},
    ),
    Step(
        "2024-01-29T10:12:00+01:00",
        "rework reduce",
        {"src/reduce.cu": fast(*REDUCE)},
        note="vague message",
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
        "cpu matmul: i-k-j loop order\n\nThe inner loop now walks rows of b and c with unit stride.",
        {"cpu/matmul.c": fast(*CPU_MATMUL)},
        author=RAVI,
    ),
    Step(
        "2024-02-05T14:40:00+01:00",
        "Add naive CUDA matmul",
        {"src/matmul.cu": slow(*MATMUL), "Makefile": add_cu("layout", "matmul")},
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
        catalogue_instance(*LAYOUT).message + "\n\nReading a column of a 32x32 int tile hits one bank 32 times; one\n"
        "extra column spreads it over all 32 banks.",
        {"src/layout.cu": fast(*LAYOUT)},
        note="the instance's own message, with a body",
    ),
    Step(
        "2024-02-14T17:10:00+01:00",
        "Add darken_image for 8-bit images",
        {"src/image.cu": slow(*IMAGE), "Makefile": add_cu("matmul", "image")},
    ),
    Step(
        "2024-02-20T12:00:00+01:00",
        "Add springs, row normalisation and softplus to the CPU reference code",
        {
            "cpu/springs.c": slow(*SPRINGS),
            "cpu/normalize.c": slow(*NORMALIZE),
            "cpu/activations.c": slow(*SOFTPLUS),
            "Makefile": Edit(
                "C_SRCS  := cpu/matmul.c cpu/histogram.c\n",
                "C_SRCS  := cpu/matmul.c cpu/histogram.c cpu/springs.c cpu/normalize.c \\\n"
                "           cpu/activations.c\n",
            ),
        },
        author=RAVI,
    ),
    Step(
        "2024-02-22T16:35:00+01:00",
        "cleanup",
        CLEANUP,
        note="plain refactor: LAUNCH_CHECK and ceil_div helpers; same launches",
    ),
    Step(
        "2024-02-26T10:50:00+01:00",
        "cleanup matmul",
        {"src/matmul.cu": fast(*MATMUL)},
        note="vague message",
    ),
    Step(
        "2024-02-28T14:15:00+01:00",
        catalogue_instance(*POINTWISE).message + "\n\nOne pass over the tensor instead of three.",
        {"src/elementwise.cu": fast(*POINTWISE)},
        note="the instance's own message, with a body",
    ),
    Step(
        "2024-02-29T09:20:00+01:00",
        "Add batched 8x8 products (A A^T per matrix)",
        {"src/small_gemm.cu": slow(*SMALL_GEMM), "Makefile": add_cu("image", "small_gemm")},
    ),
    Step(
        "2024-03-01T11:40:00+01:00",
        catalogue_instance(*SMALL_GEMM).message,
        {"src/small_gemm.cu": fast(*SMALL_GEMM)},
        note="the instance's own message",
    ),
    Step("2024-03-04T15:20:00+01:00", "docs: kernel overview", {"docs/kernels.md": "v1"}, author=RAVI),
    Step(
        "2024-03-06T09:45:00+01:00",
        "softplus: OpenMP\n\nparallel for over the elements; needs -fopenmp.",
        {
            "cpu/activations.c": fast(*SOFTPLUS),
            "Makefile": (Edit(CFLAGS_V1, CFLAGS_V1 + " -fopenmp"), Edit(DEBUG_CFLAGS, DEBUG_CFLAGS + " -fopenmp")),
            "docs/kernels.md": Edit(
                "Build them with\n`make cpu`.\n",
                "Build them with\n`make cpu`; `softplus` runs in parallel with OpenMP.\n",
            ),
        },
        author=RAVI,
    ),
    Step(
        "2024-03-08T17:05:00+01:00",
        "small tweaks",
        {"cpu/normalize.c": fast(*NORMALIZE), "docs/kernels.md": Edit("againts", "against")},
        note="vague message; also a typo fix in the docs",
        author=RAVI,
    ),
    Step(
        "2024-03-11T10:10:00+01:00",
        catalogue_instance(*SPRINGS).message,
        {"cpu/springs.c": fast(*SPRINGS)},
        note="the instance's own message",
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
        "2024-03-14T16:10:00+01:00",
        "darken_image: vector loads, 8 pixels per thread",
        {"src/image.cu": fast(*IMAGE)},
    ),
    Step(
        "2024-03-15T11:55:00+01:00",
        "Add row L2 normalisation kernel",
        {"src/rownorm.cu": slow(*ROWNORM), "Makefile": add_cu("small_gemm", "rownorm", wrap=True)},
    ),
    StartBranch("stencil"),
    Step(
        "2024-03-18T10:20:00+01:00",
        "Add 5-point stencil kernel",
        {"src/stencil.cu": "v1", "Makefile": add_cu("rownorm", "stencil")},
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
        "docs: why the flip_layout tile has 33 columns",
        {"docs/kernels.md": DOCS_PADDING},
        note="false friend: docs explaining bank conflicts; no code change",
    ),
    Step(
        "2024-03-20T15:25:00+01:00",
        "Add wide 1-D smoothing filter",
        {"src/smooth.cu": slow(*SMOOTH), "Makefile": add_cu("stencil", "smooth")},
        author=RAVI,
        branch="stencil",
    ),
    Step(
        "2024-03-21T14:05:00+01:00",
        catalogue_instance(*SMOOTH).message,
        {"src/smooth.cu": fast(*SMOOTH)},
        note="on the feature branch; the instance's own message",
        author=RAVI,
        branch="stencil",
    ),
    Merge("2024-03-25T11:30:00+01:00", "stencil"),
    Step("2024-03-27T15:50:00+01:00", "tests: warmup and SGD step tests", {"tests/test_optim.py": "v1"}, author=RAVI),
    Step(
        "2024-03-29T10:40:00+01:00",
        catalogue_instance(*ROWNORM).message,
        {"src/rownorm.cu": fast(*ROWNORM)},
        note="the instance's own message",
    ),
    Step(
        "2024-04-02T10:25:00+02:00",
        "Rename elementwise.cu to pointwise.cu",
        {
            "src/elementwise.cu": None,
            "src/pointwise.cu": CopyOf("src/elementwise.cu"),
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
                "| `A A^T` per matrix |\n",
                "| `A A^T` per matrix |\n"
                "| Row L2 normalisation | `src/rownorm.cu` | `launch_rowstat` | `float` |\n"
                "| Heat step | `src/stencil.cu` | `stencil5` | 5-point Laplacian |\n"
                "| Smoothing | `src/smooth.cu` | `launch_smooth_wide` | 21-tap 1-D filter, zero outside |\n",
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


def apply_change(repo: Path, path: str, change: Change, copies: dict[str, bytes]) -> None:
    target = repo / path
    if change is None:
        target.unlink()
    elif isinstance(change, Edit | tuple):
        apply_edits(target, (change,) if isinstance(change, Edit) else change)
    else:
        if isinstance(change, str):
            data = version_file(path, change).read_bytes()
        elif isinstance(change, CopyOf):
            data = copies[change.path]
        else:
            if change.side == "fast" and (not target.exists() or target.read_bytes() != change.instance.slow.encode()):
                raise ValueError(
                    f"{path}: the fast side of {change.pattern} seed {change.seed} must replace its slow"
                    " side, which is not the file's current text"
                )
            data = change.text.encode("utf-8")
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)


def commit_step(repo: Path, step: Step) -> str:
    """Check out the step's branch, write its changes, commit; returns the new sha."""
    if git(repo, "branch", "--show-current") != step.branch:
        git(repo, "checkout", "-q", step.branch)
    # Copies are read first: a rename deletes its source in the same step.
    copies = {c.path: (repo / c.path).read_bytes() for c in step.changes.values() if isinstance(c, CopyOf)}
    for path, change in step.changes.items():
        apply_change(repo, path, change, copies)
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


def check_version_files() -> None:
    """Every version file in scripts/demo_repo/ is used by some step, and every one a step names exists."""
    named = {
        version_file(path, change)
        for item in HISTORY
        if isinstance(item, Step)
        for path, change in item.changes.items()
        if isinstance(change, str)
    }
    present = {p for p in VERSIONS_DIR.rglob("*") if p.is_file()}
    problems = [f"missing version file {p.relative_to(ROOT)}" for p in sorted(named - present)]
    problems += [f"unused version file {p.relative_to(ROOT)}" for p in sorted(present - named)]
    if problems:
        raise RuntimeError("; ".join(problems))


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
    from perfforge.records import Category  # importable: catalogue_instance has put ROOT on the path

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
            writer.writerow((sha, "true" if step.is_perf else "false", step.category, step.truth_note))
    partial.replace(path)


def write_bundle(repo: Path, path: Path) -> None:
    partial = path.with_name(path.name + ".incomplete")
    git(repo, "bundle", "create", "-q", str(partial), "--all")
    partial.replace(path)


def build(out_bundle: Path, out_truth: Path, repo: Path) -> list[tuple[str, Step]]:
    check_version_files()
    truth = build_repo(repo)
    check_history(repo, truth)
    for out in (out_bundle, out_truth):
        out.parent.mkdir(parents=True, exist_ok=True)
    write_bundle(repo, out_bundle)
    write_truth(out_truth, truth)
    return truth


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(allow_abbrev=False, description=__doc__.split("\n\n")[0])
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
