"""Whole CUDA applications (IntelliPerf's mode): ncu ranks every launch by duration, then each of the top kernels
is profiled with the full set, one ncu pass per kernel. Profiles come back without diagnoses: the caller
(profiling/application.py profile_application) attaches them."""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

from perfforge.records import Profile, Timing
from profiling.cuda import ncu
from profiling.cuda.launches import rank_kernels, read_application_page
from profiling.cuda.profile import profile_from_files
from profiling.cuda.raw_csv import function_name
from profiling.cuda.source_csv import lines_of, read_source_page
from profiling.machine import tool_version

APPLICATION_TIMEOUT_S = 1800.0


def profile_cuda_application(argv: list[str], workdir: Path, *, top: int, work_dir: Path) -> list[Profile]:
    page = ncu.export_application_page(argv, work_dir / "ranking", timeout_s=APPLICATION_TIMEOUT_S, cwd=workdir,
                                       own_code=True)
    ranked = rank_kernels(read_application_page(page), top)
    profiles = []
    for index, kernel in enumerate(ranked):
        exports = ncu.profile_and_export(argv, work_dir / f"kernel-{index}", kernel_regex=kernel_pattern(kernel.kernel),
                                         launch_count=1, timeout_s=APPLICATION_TIMEOUT_S, nvtx_range=None,
                                         cwd=workdir, own_code=True)
        timing = Timing(median_ms=kernel.mean_ms, p10_ms=kernel.mean_ms, p90_ms=kernel.mean_ms, trials=kernel.launches,
                        method="ncu gpu__time_duration, mean over the application's launches (serialised under the "
                               "profiler: for ranking, not for verdicts)")
        profiles.append(profile_from_files(exports.raw_csv, exports.source_csv, timing=timing,
                                           source_file=_kernel_source_file(exports.source_csv, kernel.kernel),
                                           machine="", tool_versions=f"ncu: {tool_version('ncu')}",
                                           kernel=kernel.kernel))
    return profiles


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
