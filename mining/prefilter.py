"""Stage one: decide from metadata and changed paths alone which commits deserve a diff.

A commit is a candidate when it changes at least one kernel-bearing file (a source the function extractor
reads, mining.functions.LANGUAGE_BY_EXTENSION, or a shader) outside tests, docs and vendored code, and is
not a mass change (imports, reformatting, vendoring) too large to be a before/after example.
Python files count only when they hold GPU kernels written in a Python DSL (Triton, CuTe DSL, TileLang,
Numba CUDA, Pallas): a path that says so, or a file that imports such a DSL at the tip of the history (one
`git grep`, not one read per commit).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from mining.functions import language_of
from mining.gitlog import CommitMeta, run_git
from perfforge.errors import SourceError

# Kernel files the function extractor cannot parse but the classifier can still read: shaders.
SHADER_EXTENSIONS = {".metal", ".comp", ".glsl", ".wgsl", ".hlsl"}
# Directories whose changes are never performance work on the code itself.
EXCLUDED_DIR_RE = re.compile(
    r"(^|/)(tests?|testing|unittests?|docs?|examples?|third[_-]?party|vendor|external|extern|deps|\.github)(/|$)",
    re.IGNORECASE)
# Paths that mark Python files as kernel code even if they no longer exist at the tip.
KERNEL_PY_PATH_RE = re.compile(r"(triton|kernel|cute|tilelang|pallas|(^|/)ops/|_ops\.py$)", re.IGNORECASE)
# Imports and decorators of Python kernel DSLs, for `git grep -E`.
KERNEL_PY_GREP = (r"import (triton|cutlass|tilelang|helion)|from (triton|cutlass|tilelang|helion)|@triton\.jit|"
                  r"@cute\.(jit|kernel)|from numba import cuda|@cuda\.jit|jax\.experimental\.pallas")
# A commit changing more kernel files than this is a mass change (vendoring, reformatting, a big import):
# no function-level pair from it would be a focused example.
MAX_KERNEL_FILES = 40


@dataclass
class PrefilterResult:
    commit: CommitMeta
    kernel_files: list[str]
    reason: str  # why it was kept or dropped: "candidate", "no_kernel_files", "mass_change"

    @property
    def is_candidate(self) -> bool:
        return self.reason == "candidate"


def kernel_python_files_at(git_dir: Path, rev: str) -> set[str]:
    """Python files at rev that write GPU kernels in a Python DSL."""
    try:
        out = run_git(git_dir, "-c", "core.quotepath=off", "grep", "-l", "-E", KERNEL_PY_GREP, rev, "--", "*.py")
    except SourceError:  # git grep exits 1 when nothing matches
        return set()
    return {line.split(":", 1)[1] for line in out.splitlines() if ":" in line}


def is_kernel_file(path: str, kernel_py_files: set[str]) -> bool:
    if EXCLUDED_DIR_RE.search(path):
        return False
    language = language_of(path)
    if language == "python":
        return path in kernel_py_files or bool(KERNEL_PY_PATH_RE.search(path))
    return language is not None or PurePosixPath(path).suffix.lower() in SHADER_EXTENSIONS


def prefilter(commit: CommitMeta, kernel_py_files: set[str]) -> PrefilterResult:
    kernel_files = [p for p in commit.files if is_kernel_file(p, kernel_py_files)]
    if not kernel_files:
        return PrefilterResult(commit, [], "no_kernel_files")
    if len(kernel_files) > MAX_KERNEL_FILES:
        return PrefilterResult(commit, kernel_files, "mass_change")
    return PrefilterResult(commit, kernel_files, "candidate")
