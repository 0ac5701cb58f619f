"""Options of `perfforge synth patterns`, `perfforge synth commits` and `perfforge synth recipe`: one dataclass each,
mirrored by the command line and a YAML file (perfforge.config)."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from perfforge.errors import ConfigError

SYNTH_TARGETS = ("cpu", "cuda", "triton", "all")


@dataclass
class SynthPatternsConfig:
    out: Path = field(default=Path("perfforge-out/synth"), metadata={
        "help": "output directory: tasks/, checks/, pairs.parquet, stats.json, catalogue.md"})
    target: str = field(default="cpu", metadata={"help": "patterns of this target: cpu, cuda, triton or all "
                                                          "(cuda and triton need a GPU machine with nvcc and ncu)"})
    patterns: list[str] = field(default_factory=list, metadata={
        "help": "only these pattern ids (target/name); `perfforge synth list` names them"})
    instances: int = field(default=3, metadata={"help": "instances generated per pattern"})
    seed: int = field(default=0, metadata={"help": "first seed; instance k of a pattern uses seed + k"})
    timing: bool = field(default=True, metadata={
        "help": "require the fast version to be measurably faster (--no-timing: correctness and diagnosis only)"})
    jobs: int = field(default=1, metadata={
        "help": "instances checked at once; timings of concurrent checks disturb each other, so keep 1 for "
                "reported figures"})
    build_jobs: int = field(default_factory=lambda: os.cpu_count() or 1, metadata={
        "help": "compilers run at once ahead of the checks (builds may overlap; timings may not)"})
    progress: bool = field(default=True, metadata={"help": "show a progress bar"})

    def validate(self) -> None:
        if self.target not in SYNTH_TARGETS:
            raise ConfigError(f"--target must be one of {', '.join(SYNTH_TARGETS)}, got {self.target!r}")
        if self.instances < 1:
            raise ConfigError(f"--instances must be at least 1, got {self.instances}")
        if self.seed < 0:
            raise ConfigError(f"--seed must be non-negative, got {self.seed}")
        if self.jobs < 1:
            raise ConfigError(f"--jobs must be at least 1, got {self.jobs}")


@dataclass
class SynthListConfig:
    target: str = field(default="all", metadata={"help": "list the patterns of this target: cpu, cuda, triton, all"})

    def validate(self) -> None:
        if self.target not in SYNTH_TARGETS:
            raise ConfigError(f"--target must be one of {', '.join(SYNTH_TARGETS)}, got {self.target!r}")
