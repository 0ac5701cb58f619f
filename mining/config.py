"""Options of `perfforge mine`: one dataclass, mirrored by the command line and a YAML file (perfforge.config)."""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import asdict, dataclass, field
from pathlib import Path

from mining.classify import PERF_THRESHOLD
from perfforge.errors import ConfigError
from perfforge.executor import ExecutorConfig
from perfforge.records import SCHEMA_VERSION

# Characters of diff shown to the LLM judge by default: enough for the changed kernels of a focused commit, small
# enough for a 4k-token context with the instructions.
JUDGE_DIFF_CHARS = 6000
# MinHash Jaccard at which two pairs count as near-duplicates (mining/dedup.py's docstring gives its reason).
NEAR_DUPLICATE_JACCARD = 0.85

# Bump when a change to mining makes earlier shards wrong, so resumed runs refuse to mix them.
# 2: the judge sees at most 2,000 characters of message; definitions of one name are paired by code and
# signature; comment markers inside strings are code; a stray non-UTF-8 byte changes only its own line.
# 3: kernels renamed or fused are paired with the kernels they replace, launch-configuration changes are marked
# (mining/kernel_pairing.py), and pairs say how they were matched (schema 2.1's pairing, launched_kernels).
MINER_VERSION = "3"


@dataclass
class MineConfig:
    sources: list[str] = field(default_factory=list, metadata={
        "positional": True,
        "help": "repositories to mine: paths (work tree or bare), git URLs, or files listing them one per line; "
                "none mines the embedded demo repository"})
    out: Path = field(default=Path("perfforge-out/mine"), metadata={"help": "output directory"})
    rev: str = field(default="HEAD", metadata={"help": "revision whose history is mined (a branch, tag or sha)"})
    jobs: int = field(default_factory=lambda: os.cpu_count() or 1, metadata={
        "help": "worker processes for diffs, classification and pairs (default: one per CPU core)"})
    executor: str = field(default="local", metadata={
        "help": "where chunks run: local (--jobs processes here) or dask (a Dask cluster: --cluster, or a local "
                "one of --jobs workers; docs/scale.md)"})
    cluster: str | None = field(default=None, metadata={
        "help": "address of a running Dask scheduler (tcp://host:8786) for --executor dask"})
    # 50: a chunk of real repositories' candidates takes about 0.1-0.5 s (llm.c, perf-ninja, SGEMM_CUDA), so the
    # largest chunk, which bounds a run on many workers, stays short; 200 left a 1.8 s chunk on the critical path.
    chunk_size: int = field(default=50, metadata={
        "help": "candidate commits per unit of work; a finished unit is never redone after an interruption"})
    perf_threshold: float = field(default=PERF_THRESHOLD, metadata={
        "help": "perf score at or above which a commit is a performance change"})
    judge_url: str | None = field(default=None, metadata={
        "help": "OpenAI-compatible endpoint (e.g. http://127.0.0.1:8000/v1) of an LLM judge for uncertain commits"})
    judge_model: str = field(default="default", metadata={"help": "model name the judge endpoint serves"})
    judge_band_low: float = field(default=0.3, metadata={"help": "lowest rule score sent to the judge"})
    judge_band_high: float = field(default=0.7, metadata={"help": "highest rule score sent to the judge"})
    judge_diff_chars: int = field(default=JUDGE_DIFF_CHARS, metadata={
        "help": "characters of the kernel files' diff in the judge's prompt (lower it for a small context)"})
    max_patch_lines: int = field(default=20_000, metadata={
        "help": "a file's patch longer than this is cut and the file recorded as a huge diff"})
    max_file_bytes: int = field(default=2_000_000, metadata={
        "help": "source files larger than this give no function pairs (generated or vendored code)"})
    pairs: bool = field(default=True, metadata={
        "help": "extract function-level pairs of performance commits (--no-pairs: classify commits only)"})
    kernels_only: bool = field(default=False, metadata={
        "help": "keep only pairs whose function is a kernel (CUDA/HIP __global__ or __device__, Triton, OpenCL, an "
                "OpenMP region), not host or plain Python functions (three quarters of llm.c's pairs are host "
                "functions)"})
    near_duplicate_jaccard: float = field(default=NEAR_DUPLICATE_JACCARD, metadata={
        "help": "MinHash Jaccard similarity at which two pairs are near duplicates"})
    overwrite: bool = field(default=False, metadata={
        "help": "discard finished work in OUT instead of resuming it"})
    progress: bool = field(default=True, metadata={"help": "show a progress bar"})

    def validate(self) -> None:
        self.executor_config()
        if self.chunk_size < 1:
            raise ConfigError(f"--chunk-size must be at least 1, got {self.chunk_size}")
        for name in ("perf_threshold", "judge_band_low", "judge_band_high", "near_duplicate_jaccard"):
            value = getattr(self, name)
            if not 0.0 <= value <= 1.0:
                raise ConfigError(f"--{name.replace('_', '-')} must be in [0, 1], got {value}")
        if self.judge_band_low >= self.judge_band_high:
            raise ConfigError("--judge-band-low must be below --judge-band-high")
        for name in ("max_patch_lines", "max_file_bytes", "judge_diff_chars"):
            if getattr(self, name) < 1:
                raise ConfigError(f"--{name.replace('_', '-')} must be positive, got {getattr(self, name)}")

    def fingerprint(self) -> str:
        """Identity of the options that change results; finished work made under another one is not reused."""
        # the merge's choices (deduplication, the kernel filter) apply to finished chunks: they do not start anew
        relevant = {k: v for k, v in asdict(self).items() if k not in ("sources", "out", "jobs", "overwrite",
                                                                         "progress", "near_duplicate_jaccard",
                                                                         "kernels_only", "executor", "cluster")}
        relevant.update(miner=MINER_VERSION, schema=SCHEMA_VERSION)
        return hashlib.sha256(json.dumps(relevant, sort_keys=True, default=str).encode()).hexdigest()[:16]

    def executor_config(self) -> ExecutorConfig:
        """The executor --executor, --jobs and --cluster name (one clear error for bad values)."""
        return ExecutorConfig.of(self.executor, self.jobs, self.cluster)
