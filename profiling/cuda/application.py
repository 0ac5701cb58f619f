"""Whole CUDA applications (IntelliPerf's mode): ncu ranks every launch by duration, then each of the top kernels
is profiled with the full set, one ncu pass per kernel. Profiles come back without diagnoses: the caller
(profiling/application.py profile_application) attaches them."""

from __future__ import annotations

import re
import sys
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path

from perfforge.records import Profile, Timing
from profiling.cuda import ncu
from profiling.cuda.launches import KernelTime, rank_kernels, read_application_page
from profiling.cuda.profile import profile_from_files
from profiling.cuda.raw_csv import ANONYMOUS, KernelLaunch, NcuCsvError, function_name, read_raw_page
from profiling.cuda.source_csv import lines_of, read_source_page
from profiling.machine import tool_version

APPLICATION_TIMEOUT_S = 1800.0


def _stderr(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def profile_cuda_application(argv: list[str], workdir: Path, *, top: int, work_dir: Path,
                             log: Callable[[str], None] = _stderr) -> list[Profile]:
    """The top kernels' profiles. A kernel that cannot be profiled (a library's, a name ncu spells otherwise) is
    reported through `log` and left out: the others are still profiled; only when none is does the error stand."""
    page = ncu.export_application_page(argv, work_dir / "ranking", timeout_s=APPLICATION_TIMEOUT_S, cwd=workdir,
                                       own_code=True)
    launches = read_application_page(page)
    ranked = rank_kernels(launches, top)
    profiles = []
    failures: list[Exception] = []
    for index, kernel in enumerate(ranked):
        try:
            profiles.append(_profile_kernel(argv, workdir, work_dir / f"kernel-{index}", kernel,
                                            launch_skip(launches, kernel.kernel)))
        except (ncu.NcuError, NcuCsvError) as exc:
            log(f"kernel {kernel.kernel}: not profiled ({str(exc).splitlines()[0]})")
            failures.append(exc)
    if failures and not profiles:
        raise failures[0]
    return profiles


def _profile_kernel(argv: list[str], workdir: Path, kernel_dir: Path, kernel: KernelTime, skip: int) -> Profile:
    exports = ncu.profile_and_export(argv, kernel_dir, kernel_regex=kernel_pattern(kernel.kernel), launch_count=1,
                                     timeout_s=APPLICATION_TIMEOUT_S, nvtx_range=None, cwd=workdir, own_code=True,
                                     launch_skip=skip)
    profiled = {launch.kernel_base for launch in read_raw_page(exports.raw_csv)}
    if not any(same_kernel(kernel.kernel, name) for name in profiled):  # launched in another order than ranked
        raise ncu.NcuError(f"the profiled launch was {', '.join(sorted(profiled))}, not the ranked {kernel.kernel}")
    timing = Timing(median_ms=kernel.mean_ms, p10_ms=kernel.mean_ms, p90_ms=kernel.mean_ms, trials=kernel.launches,
                    method="ncu gpu__time_duration, mean over the application's launches (serialised under the "
                           "profiler: for ranking, not for verdicts)")
    return profile_from_files(exports.raw_csv, exports.source_csv, timing=timing,
                              source_file=_kernel_source_file(exports.source_csv, kernel.kernel), machine="",
                              tool_versions=f"ncu: {tool_version('ncu')}", kernel=kernel.kernel)


def launch_skip(launches: Sequence[KernelLaunch], ranked_name: str) -> int:
    """How many launches kernel_pattern(ranked_name) selects before the ranked kernel's first: the launches of other
    instantiations of the same function (PyTorch's vectorized_elementwise_kernel<4, ...> for several operators)."""
    name = function_name(ranked_name)
    same = [launch for launch in launches if function_name(launch.kernel) == name]
    return next((index for index, launch in enumerate(same) if launch.kernel_base == ranked_name), 0)


def same_kernel(ranked_name: str, profiled_name: str) -> bool:
    """Whether two of ncu's spellings name one instantiation. The ranking and the profiled raw page differ in
    namespaces ("void cutlass::Kernel2<cutlass_80_simt_sgemm_256x128_8x4_nn_align1>" against "void Kernel2<...>",
    seen on the H100 for cuBLAS's kernel) and in how template arguments are cast ("<32>" against "<(int)32>")."""
    return _unqualified(ranked_name) == _unqualified(profiled_name)


def _unqualified(name: str) -> str:
    name = re.sub(r"\((unsigned |signed )?(int|long|short|char|bool|unsigned)\)", "", name.replace(ANONYMOUS, ""))
    return re.sub(r"\s+", " ", re.sub(r"\b\w+::", "", name)).strip()


def kernel_pattern(ranked_name: str) -> str:
    """The regex that selects a ranked kernel's launches under ncu's "function" name form: its bare function name
    (no return type, namespace, template arguments nor parameters: "void cutlass::Kernel2<cutlass_80_simt_...>"
    gives Kernel2), whole, after any namespace ("kernel1" must not select "kernel10"). The ranking's own name, the
    raw page's, selected no launch of a template (ncu's forms spell template arguments differently)."""
    return f"^(.*::)?{re.escape(function_name(ranked_name))}$"


def _kernel_source_file(source_csv: Path, kernel: str) -> str:
    """The source file holding most of the kernel's lines (its hot lines are read from that file)."""
    paths = [line.path for line in lines_of(read_source_page(source_csv), kernel)]
    return Counter(paths).most_common(1)[0][0] if paths else ""
