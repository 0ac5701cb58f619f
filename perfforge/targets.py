"""The targets a task may name (cpu, cuda, triton, hip): one TargetSpec each, what every stage needs to know of it.

A target is where a task's kernel runs and how it is built, profiled and judged. Each property of a target lives
here, once, and the stages read it from the spec: task.toml's defaults (perfforge/task.py), the profiler and the
diagnosis thresholds (profiling/), the validator's GPU rules and static checks, the prompt summary's key
counters. Adding a target is one `TARGETS.register` entry below plus its own modules; docs/targets.md says which.

The core knows profilers and thresholds only by name (profiling/profile.py maps the profiler key to the code that
runs it; the thresholds file lies in profiling/diagnoses/thresholds/): perfforge/ imports no stage.

These are the runnable targets. perfforge.records.Target is the wider set the records label code with (mining
finds OpenCL and Metal code too, which no task can run yet); every name here is one of its values.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

# `import ... as`, not `from perfforge.records import ...`: the from-form makes the import system probe
# records.__path__, and records' module __getattr__ imports `datasets` (absent on GPU machines) before it looks.
import perfforge.records as records
from perfforge.registry import Registry


@dataclass(frozen=True)
class TargetSpec:
    """Everything the stages need to know of one target."""

    name: str  # the task.toml `target` value; one of perfforge.records.Target's values
    languages: tuple[str, ...]  # the task.toml `language` values a task of this target is written in
    # source-file suffix -> language, read when a task.toml names no language; a language's first suffix here is
    # the one generated tasks write their files with
    suffixes: Mapping[str, str]
    compiler: str  # the [build] compiler when task.toml names none
    flags: tuple[str, ...]  # the [build] flags when task.toml gives none
    gpu: bool  # whether its kernels run on a GPU: the validator's GPU rules and the device-code static checks apply
    # the profiler profiling/ runs on it, by key (profiling/profile.py PROFILERS maps the key to the code); the
    # diagnosis rules written for a profiler's counters apply to every target it profiles
    profiler: str
    # the file of profiling/diagnoses/thresholds/ its diagnoses read (value, unit and reason per threshold);
    # None: no diagnosis rules for it yet
    thresholds: str | None
    # counters worth a line of their own in the prompt summary when a profile has them: (tool name, short label)
    key_counters: tuple[tuple[str, str], ...]
    # library routines that would do a candidate's whole job (static check library_fallback, VALIDATION.md rule 9)
    library_pattern: str
    # address-space limit of a harness run in bytes; None: none (CUDA maps far more virtual memory than it uses,
    # so an address-space limit kills every CUDA program, and torch under Triton does the same)
    memory_limit_bytes: int | None
    # whether verdicts run its kernels in served processes the judge drives (profiling/served.py: the judge draws,
    # times and reads; a system-call filter; the compiled object checked by profiling/binary_policy.py); the
    # other targets are still judged through the harness's own check and time modes (docs/validation.md)
    served: bool = False
    # whether a candidate is compiled alone and its object read by the binary policy (profiling/binary_policy.py:
    # definitions, imports, constructors, raw system calls, precision) instead of the source word checks
    binary_policy: bool = False
    # whether a correct candidate's own kernels must have done the work: one profiled call under ncu, whose
    # launches of the kernels its source defines must take most of its device time (profiling/kernel_coverage.py;
    # the torch target, whose answers may mix PyTorch operators with their kernels)
    kernel_coverage: bool = False
    # Python targets: names of library routines refused wherever host code (outside a @triton.jit function) reads
    # them as an attribute, whatever the receiver (`x.sum(1)`, `torch.Tensor.sum`, `torch.linalg.matmul`, `s =
    # torch.sum`), and whether the `@` operator is one (python_policy.host_library_uses). The tenth red team's
    # Triton answer launched an empty kernel and returned `x.sum(1)`: correct, and nothing on a CPU saw it.
    library_methods: frozenset[str] = frozenset()
    library_matmul_operator: bool = False
    # Python targets whose host code may only allocate, read shapes and launch the candidate's own kernels: every
    # other torch/numpy call refused (python_policy.triton_host_problems; the seventeenth red team's empty Triton
    # kernel with the row sum done by torch.addmv, var_mean, index_add_, functools.reduce(torch.add, ...): correct)
    host_allowlist: bool = False
    # whether its kernels keep IEEE subnormals, so that outputs flushed to zero where the original's are subnormal
    # are wrong whatever the tolerance (profiling/correctness.py FLUSH_*): gcc without fast-math never flushes, and a
    # CPU kernel that does set FTZ/DAZ (eighteenth session: the red team's fesetenv found by hand, set and put back
    # within each call, where no rule of the object's could see it). Not the GPU targets: Triton flushes f32
    # subnormals by default (nvvm-reflect-ftz), and CUDA's fast intrinsics may.
    keeps_subnormals: bool = False

    def __post_init__(self) -> None:
        # the records label code with a Target: a runnable target the records cannot name would be lost there
        if self.name not in {t.value for t in records.Target}:
            raise ValueError(f"target {self.name!r} is not a perfforge.records.Target value: add it there first")
        object.__setattr__(self, "suffixes", MappingProxyType(dict(self.suffixes)))  # frozen all the way down


TARGETS: Registry[TargetSpec] = Registry("target", entry_type=TargetSpec)

# The memory limit of CPU harness runs: twice the sandbox's 4 GiB default for other programs, so the largest
# example tasks' buffers fit, while a runaway allocation still stops before it takes the shared machine down. Set
# when the harness runner was written, not measured against a task that needed more.
CPU_MEMORY_LIMIT_BYTES = 8 << 30

# Nsight Compute metrics (profiling/cuda/metrics.py documents each) for every target ncu profiles.
NCU_KEY_COUNTERS = (
    ("sm__throughput.avg.pct_of_peak_sustained_elapsed", "SM throughput"),
    ("gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed", "memory throughput"),
    ("dram__throughput.avg.pct_of_peak_sustained_elapsed", "DRAM throughput"),
    ("sm__warps_active.avg.pct_of_peak_sustained_active", "achieved occupancy"),
    ("l1tex__t_sector_hit_rate.pct", "L1 hit rate"),
    ("lts__t_sector_hit_rate.pct", "L2 hit rate"),
    ("launch__registers_per_thread", "registers per thread"),
)

TARGETS.register("cpu", TargetSpec(
    name="cpu", languages=("c", "cpp"), suffixes={".c": "c", ".cpp": "cpp", ".cc": "cpp", ".cxx": "cpp"},
    # -g: callgrind's per-line costs need line tables; -march=native: the kernel is timed on the machine it is
    # built on (profile builds drop AVX-512 for valgrind: profiling/profile.py profile_build_flags)
    compiler="gcc", flags=("-O3", "-march=native", "-g"), gpu=False,
    profiler="callgrind", thresholds="cpu.toml",
    # callgrind's simulated events (profiling/cpu/callgrind.py)
    key_counters=(("Ir", "instructions"), ("D1mr", "L1 data read misses"), ("DLmr", "last-level read misses"),
                  ("D1mw", "L1 data write misses"), ("Bcm", "mispredicted branches")),
    # any use, not only a call: `(qsort)(...)`, `&qsort` or a pointer to it does the whole job as well
    library_pattern=r"\b(cblas_\w+|LAPACKE_\w+|mkl_\w+|dgemm_|sgemm_|qsort)\b",
    memory_limit_bytes=CPU_MEMORY_LIMIT_BYTES, served=True, binary_policy=True, keeps_subnormals=True))

TARGETS.register("cuda", TargetSpec(
    name="cuda", languages=("cuda",), suffixes={".cu": "cuda"},
    # -lineinfo: ncu's source page maps stalls to lines; sm_90: the H100/H200 this project measures on
    compiler="nvcc", flags=("-O3", "-lineinfo", "-arch=sm_90"), gpu=True,
    profiler="ncu", thresholds="cuda.toml", key_counters=NCU_KEY_COUNTERS,
    library_pattern=r"\b(cublas\w*|cublasLt\w*|cudnn\w*|cusparse\w*|cufft\w*|thrust::\w+|cub::Device\w+|cutlass::\w+)",
    memory_limit_bytes=None, served=True, binary_policy=True))

# Triton kernels run on the same GPUs and are read through the same ncu metrics as CUDA ones: same profiler,
# thresholds and key counters.
TARGETS.register("triton", TargetSpec(
    name="triton", languages=("python",), suffixes={".py": "python"},
    compiler="python3", flags=(), gpu=True,  # nothing to compile ahead: Triton compiles its kernels when they run
    profiler="ncu", thresholds="cuda.toml", key_counters=NCU_KEY_COUNTERS,
    library_pattern=r"\b(torch\.(matmul|mm|bmm|sum|mean|softmax|einsum|nn\.functional\.\w+|cumsum|sort|add|mul)|"
                    r"F\.\w+)\s*\(",
    # reductions, scans, sorts and products that would be a Triton task's whole job done by PyTorch on the host
    library_methods=frozenset({"sum", "nansum", "mean", "nanmean", "prod", "cumsum", "cumprod", "logcumsumexp",
                               "logsumexp", "softmax", "log_softmax", "sort", "argsort", "topk", "amax", "amin",
                               "norm", "var", "std", "matmul", "mm", "bmm", "mv", "dot", "vdot", "inner",
                               "tensordot", "einsum", "addmm", "baddbmm", "multi_dot", "linear", "histc",
                               "bincount"}),
    library_matmul_operator=True, host_allowlist=True,
    # served (profiling/runtime/perfforge_serve.py): the candidate's interpreter is not trusted; each call is
    # staged, flushed by the judge and timed whole, so a Python launch's host cost counts (row_sum_strided on the
    # H200: 2.71x served against 7.74x by the old path's in-process events; docs/validation.md)
    memory_limit_bytes=None, served=True))

# A PyTorch module as the original (a KernelBench problem: synth/kernelbench.py), a Python ModelNew as the
# candidate, with custom kernels inline (torch.utils.cpp_extension.load_inline) or in Triton. Served like Triton:
# the candidate's interpreter is not trusted. Profiled by ncu like the other GPU targets.
TARGETS.register("torch", TargetSpec(
    name="torch", languages=("python",), suffixes={".py": "python"},
    compiler="python3", flags=(), gpu=True,
    profiler="ncu", thresholds="cuda.toml", key_counters=NCU_KEY_COUNTERS,
    # the operators that do a whole problem's work, and the problem module itself; elementwise torch operators, and
    # nn modules built in __init__ (for the reference's initial weights), are allowed. A module called in forward
    # (self.linear(x)) is not seen here: the profiled call's kernels are (kernel_coverage, on a GPU).
    # also the matmul operator (`x @ w`, not a decorator) and aten's operators (the red team's spellings)
    library_pattern=r"\b(torch\.(matmul|mm|bmm|addmm|baddbmm|einsum|conv\w*)|(torch\.)?nn\.functional\.(conv\w*|"
                    r"linear|scaled_dot_product_attention)|F\.(conv\w*|linear|scaled_dot_product_attention))\s*\(|"
                    r"\btorch\.ops\.aten\.\w+|(?<=[\w)\]])[ \t]*@[ \t]*[\w(]|"
                    r"^\s*(import\s+[^\n]*\bproblem\b|from\s+problem\b)",
    # the GEMMs and convolutions a problem's reference calls, under any receiver (x.matmul, torch.linalg.matmul)
    library_methods=frozenset({"matmul", "mm", "bmm", "addmm", "baddbmm", "addbmm", "mv", "inner", "tensordot",
                               "einsum", "multi_dot", "linear", "bilinear", "conv1d", "conv2d", "conv3d",
                               "conv_transpose1d", "conv_transpose2d", "conv_transpose3d",
                               "scaled_dot_product_attention"}),
    memory_limit_bytes=None, served=True, kernel_coverage=True))

# HIP is EXPERIMENTAL: rocprofv3 output is parsed (profiling/hip/), but no AMD machine builds or runs tasks here.
TARGETS.register("hip", TargetSpec(
    name="hip", languages=("hip",), suffixes={".hip": "hip"},
    compiler="hipcc", flags=("-O3", "-g"), gpu=True,
    profiler="rocprofv3", thresholds=None,
    # rocprofv3 hardware counters (profiling/hip/rocprof.py)
    key_counters=(("GRBM_GUI_ACTIVE", "GPU busy cycles"), ("SQ_WAVES", "waves"),
                  ("SQ_INSTS_VALU", "vector ALU instructions"), ("TCC_HIT", "L2 hits"), ("TCC_MISS", "L2 misses"),
                  ("FETCH_SIZE", "bytes fetched"), ("WRITE_SIZE", "bytes written"),
                  ("SQ_LDS_BANK_CONFLICT", "LDS bank-conflict cycles")),
    library_pattern=r"\b(hipblas\w*|rocblas\w*|miopen\w*|hipcub::Device\w+|thrust::\w+)",
    memory_limit_bytes=None))


def target_spec(name: str) -> TargetSpec:
    """The spec of target `name`; an unknown name is an UnknownNameError naming the close matches and the targets."""
    return TARGETS.get(name)


def languages() -> tuple[str, ...]:
    """Every language some target's tasks are written in, in target order, each once."""
    return tuple(dict.fromkeys(language for spec in TARGETS.values() for language in spec.languages))


def language_of_suffix() -> dict[str, str]:
    """Source-file suffix -> language, over every target."""
    return {suffix: language for spec in TARGETS.values() for suffix, language in spec.suffixes.items()}


def source_suffixes() -> dict[str, str]:
    """Language -> the suffix generated files of that language are written with (its first suffix in a spec)."""
    found: dict[str, str] = {}
    for spec in TARGETS.values():
        for suffix, language in spec.suffixes.items():
            found.setdefault(language, suffix)
    return found


def profiled_with(profiler: str) -> tuple[str, ...]:
    """The targets whose profiler is `profiler` (the targets the diagnoses of its counters apply to)."""
    return tuple(spec.name for spec in TARGETS.values() if spec.profiler == profiler)
