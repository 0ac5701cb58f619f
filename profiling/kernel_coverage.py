"""Whose kernels did the work: a torch-target answer's own kernels must run and account for its device time.

KernelBench's rule is that an answer does the work in custom kernels (Triton, or CUDA through load_inline). The
static check (static_checks.no_device_kernel) sees that one is defined and launched somewhere in the source; it
cannot see whether the launch runs, nor whether PyTorch's operators do the work beside it (the red team's dead
Triton kernel next to a torch forward read CORRECT). So a correct torch-target answer is profiled once more, from
outside its interpreter: ncu in application mode over one call of its harness (the pf_profile NVTX range), which
lists every kernel launch the driver saw with its GPU duration. The launches are split into the answer's own
(their function names are the @triton.jit functions and __global__ kernels its source defines) and the rest
(PyTorch's, cuBLAS's, ...), as KernelGYM checks that an answer's kernels appear in a profiler trace and cover its
device time.

A name alone does not say whose a launch is: ncu prints a CUDA template named after a PyTorch kernel family
("void vectorized_elementwise_kernel<4, ...>(int, T2, T3)") exactly as it prints PyTorch's, and a Triton kernel
named after a library kernel (cuBLAS's "sm90_xmma_gemm_...") bare, as it prints the library's. So the reference
(the PyTorch original) is profiled the same way, once per build of it and kind of GPU, and a launch printed as
the reference itself launches is never the answer's: an answer defining a kernel of such a name is refused and
told to rename it.

The profiled run is the candidate's interpreter too, and it can tell it is profiled (its arguments say "profile";
ncu's injection is visible). An answer that launches its kernel only when profiled and answers with PyTorch when
served would be faster served than its profiled kernels can be: the profiled kernel time per call must fit in the
served call's median (MAX_PROFILED_OVER_SERVED).
"""

from __future__ import annotations

import re
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from pathlib import Path

from perfforge.io import read_json, write_json
from profiling.cuda.launches import launch_duration_ms
from profiling.cuda.raw_csv import KernelLaunch, function_name

# Share of the answer's device time its own kernels must take. Half: an answer may keep a few PyTorch operators for
# layout (a .contiguous() copy, a view's materialisation, an output's allocation fill), which are short next to
# the work; an answer whose PyTorch operators take more than its kernels has PyTorch doing the work.
MIN_OWN_SHARE = 0.5
# How much the profiled kernels' time per call may exceed the served call's median (both with a cold L2: ncu's
# cache control flushes before each launch, the judge before each call; clocks unlocked in both). Kernel time
# is part of a served call, so the ratio is below 1 for an honest answer; 1.5 leaves room for ncu's per-launch
# flush on many-launch answers and the run-to-run noise of short kernels.
MAX_PROFILED_OVER_SERVED = 1.5

# `@triton.jit` (or autotune/heuristics stacked on it) above `def NAME(`
_TRITON_KERNEL = re.compile(r"@triton\.(?:jit|autotune|heuristics)\b[^\n]*\n(?:\s*@[^\n]*\n)*\s*def\s+(\w+)\s*\(")
# `__global__ [qualifiers] void [__launch_bounds__(...)] NAME(` or `NAME<...>(`: the first called-looking name after
# __global__ that is not an attribute
_CUDA_KERNEL = re.compile(r"__global__\b")
_CALLED_NAME = re.compile(r"\b([A-Za-z_]\w*)\s*(?:<[^<>();{}]*>\s*)?\(")
_ATTRIBUTES = {"__launch_bounds__", "__attribute__", "__declspec", "alignas", "__maxnreg__", "__cluster_dims__"}


@dataclass(frozen=True)
class DefinedKernels:
    """The kernels an answer's source defines, by how ncu prints their launches: a Triton kernel bare ("gelu_kernel"),
    a CUDA one with its parameters ("gelu_cuda_kernel(const float *, float *, long)"), a CUDA template with its
    return type and arguments ("void tile<64>(float *)"). A launch is the answer's only in its definition's form:
    a @triton.jit function named after a PyTorch kernel ("vectorized_elementwise_kernel", never launched) does not
    make PyTorch's "void vectorized_elementwise_kernel<4, ...>(int, T2, T3)" its own. A CUDA template named after a
    PyTorch template prints in the same form as PyTorch's: that is told apart by the reference's own launches
    (coverage_of's reference_kernels)."""

    triton: tuple[str, ...] = ()
    cuda: tuple[str, ...] = ()

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(self.triton + self.cuda))

    def owns(self, kernel: str) -> bool:
        """Whether the launch ncu printed as `kernel` runs one of these kernels."""
        kernel = kernel.strip()
        if kernel in self.triton:
            return True
        return any(kernel == name or kernel.startswith((f"{name}(", f"{name}<", f"void {name}<", f"void {name}("))
                   for name in self.cuda)


@dataclass(frozen=True)
class Coverage:
    """One profiled call's launches, split into the answer's own kernels and the rest."""

    own_ms: float  # GPU time of the answer's own kernels in the call
    other_ms: float  # GPU time of every other kernel (PyTorch's, libraries')
    own_kernels: tuple[str, ...]  # function names that ran, the answer's own
    other_kernels: tuple[str, ...]  # function names that ran, the rest, longest first
    defined: tuple[str, ...]  # the answer's kernels found in its source
    # launches its definitions would own but that print as the reference's own launches do (ncu's forms): whose
    # they are cannot be told, so they count as the rest, and the answer is refused
    ambiguous_kernels: tuple[str, ...] = ()

    @property
    def own_share(self) -> float:
        total = self.own_ms + self.other_ms
        return self.own_ms / total if total > 0 else 0.0

    def problem(self, served_call_ms: float | None) -> str:
        """Why the answer's kernels did not do the work ("" when they did); served_call_ms: the served call's median
        (None when the call was not timed)."""
        if self.ambiguous_kernels:
            names = ", ".join(self.ambiguous_kernels[:3])
            return (f"its kernel name(s) {names} print as kernels the PyTorch reference "
                    "itself launches, so whose launches they are cannot be told: rename its kernels")
        if not self.own_kernels:
            ran = ", ".join(self.other_kernels[:4]) or "no kernel at all"
            return (f"none of its kernels ({', '.join(self.defined) or 'none found in the source'}) ran in a profiled "
                    f"call (ran: {ran}): the work must be done by its own kernels, not PyTorch's")
        if self.own_share < MIN_OWN_SHARE:
            return (f"its own kernels ({', '.join(self.own_kernels)}) took {self.own_share:.0%} of the call's device "
                    f"time ({self.own_ms * 1e3:.1f} us of {(self.own_ms + self.other_ms) * 1e3:.1f} us; "
                    f"{', '.join(self.other_kernels[:3])} the rest), under the {MIN_OWN_SHARE:.0%} required: "
                    "PyTorch's operators did the work")
        profiled_ms = self.own_ms + self.other_ms
        if served_call_ms is not None and profiled_ms > MAX_PROFILED_OVER_SERVED * served_call_ms:
            return (f"its profiled kernels take {profiled_ms:.4g} ms per call, but its served calls took "
                    f"{served_call_ms:.4g} ms: it does not run the profiled kernels when it is timed")
        return ""

    def summary(self) -> str:
        return (f"own kernels {', '.join(self.own_kernels) or '-'} took {self.own_share:.0%} of "
                f"{(self.own_ms + self.other_ms) * 1e3:.1f} us of device time in a profiled call")


def defined_kernels(source: str) -> DefinedKernels:
    """The kernels an answer's source defines: @triton.jit functions, and __global__ functions (load_inline's CUDA
    sources are strings in the same file), in order of appearance."""
    cuda = []
    for kernel in _CUDA_KERNEL.finditer(source):
        declaration = source[kernel.end():kernel.end() + 400]
        called = (m.group(1) for m in _CALLED_NAME.finditer(declaration))
        name = next((n for n in called if n not in _ATTRIBUTES), None)
        if name:
            cuda.append(name)
    return DefinedKernels(tuple(dict.fromkeys(m.group(1) for m in _TRITON_KERNEL.finditer(source))),
                          tuple(dict.fromkeys(cuda)))


def coverage_of(launches: Sequence[KernelLaunch], defined: DefinedKernels, calls: int = 1, *,
                reference_kernels: Collection[str] = ()) -> Coverage:
    """Split `launches` (an application-mode page over `calls` calls) by whether `defined` owns each; a launch
    printed as one of `reference_kernels` (the reference's own launches, reference_kernel_forms) is never owned."""
    own: dict[str, float] = {}
    other: dict[str, float] = {}
    ambiguous: set[str] = set()
    reference = {kernel.strip() for kernel in reference_kernels}
    for launch in launches:
        name = function_name(launch.kernel)
        owned = defined.owns(launch.kernel)
        if owned and launch.kernel.strip() in reference:
            ambiguous.add(name)
            owned = False
        side = own if owned else other
        side[name] = side.get(name, 0.0) + launch_duration_ms(launch)

    def ranked(times: dict[str, float]) -> tuple[str, ...]:
        return tuple(sorted(times, key=lambda n: (-times[n], n)))

    return Coverage(own_ms=sum(own.values()) / calls, other_ms=sum(other.values()) / calls,
                    own_kernels=ranked(own), other_kernels=ranked(other), defined=defined.names,
                    ambiguous_kernels=tuple(sorted(ambiguous)))


def profiled_launches(argv: Sequence[str], env: dict[str, str], args: Sequence[str], work_dir: Path, *,
                      writable: Sequence[Path], timeout_s: float) -> list[KernelLaunch]:
    """ncu (application mode, the pf_profile range) over one profiled call of a built harness: `argv` the harness
    command, `args` the configuration's arguments."""
    from profiling.cuda import ncu
    from profiling.cuda.launches import read_application_page

    out = work_dir / "coverage-out"
    out.mkdir(parents=True, exist_ok=True)
    program = [*argv, "profile", "--seed", "0", "--out", str(out), *args]
    page = ncu.export_application_page(program, work_dir / "coverage", timeout_s=timeout_s, env=env,
                                       nvtx_range=ncu.PROFILE_RANGE, writable=[out, *writable])
    return read_application_page(page)


def reference_kernel_forms(argv: Sequence[str], env: dict[str, str], args: Sequence[str], cache: Path, key: str, *,
                           work_dir: Path, writable: Sequence[Path], timeout_s: float) -> frozenset[str]:
    """The kernels (as ncu prints them) that one profiled call of the reference launches, kept in `cache` under
    `key` (written atomically by the judge only; candidates cannot write there): the same build, arguments and
    kind of GPU launch the same kernels, and profiling the reference costs 10-15 s of every verdict otherwise."""
    try:
        cached = read_json(cache) if cache.exists() else {}
    except (OSError, ValueError):  # unreadable: profiled again and rewritten, never a crash of the judge
        cached = {}
    if not isinstance(cached, dict) or not all(isinstance(v, list) for v in cached.values()):
        cached = {}
    if key not in cached:
        launches = profiled_launches(argv, env, args, work_dir, writable=writable, timeout_s=timeout_s)
        cached[key] = sorted({launch.kernel.strip() for launch in launches})
        write_json(cache, cached)
    return frozenset(cached[key])
