"""Options of `perfforge validate`, `perfforge profile` and `perfforge diagnose`: one dataclass each, mirrored by
the command line and a YAML file (perfforge.config)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from perfforge.errors import ConfigError
from perfforge.summary import SOURCES_HELP, split_sources


@dataclass
class ValidateConfig:
    task: Path = field(default=Path("."), metadata={"positional": True, "help": "task directory (holds task.toml)"})
    candidate: Path | None = field(default=None, metadata={
        "help": "the candidate file standing in for the task's editable source (default: the task's reference)"})
    out: Path = field(default=Path("perfforge-out/validate"), metadata={
        "help": "directory for verdict.json and the build and run scratch space"})
    timing: bool = field(default=True, metadata={"help": "time the candidate against the original (--no-timing: "
                                                          "correctness only)"})

    def validate(self) -> None:
        if self.candidate is not None and not self.candidate.is_file():
            raise ConfigError(f"--candidate {self.candidate} does not exist; give the path of a source file")


@dataclass
class ProfileConfig:
    task: Path | None = field(default=None, metadata={"positional": True,
                                                       "help": "task directory to profile (or use --command)"})
    candidate: Path | None = field(default=None, metadata={
        "help": "profile this file in place of the task's editable source"})
    config_name: str | None = field(default=None, metadata={"help": "task configuration to profile (default: the "
                                                                     "task's default)"})
    command: str | None = field(default=None, metadata={
        "help": "profile a whole application instead of a task: its command line, run in --workdir"})
    target: str = field(default="cuda", metadata={"help": "with --command: cuda or cpu"})
    workdir: Path = field(default=Path("."), metadata={"help": "with --command: directory the command runs in"})
    top: int = field(default=3, metadata={"help": "with --command: how many of the costliest kernels to profile"})
    out: Path = field(default=Path("perfforge-out/profile"), metadata={"help": "output directory (profile.json)"})
    sources: list[str] = field(default_factory=lambda: ["all"], metadata={"help": SOURCES_HELP})
    token_budget: int = field(default=400, metadata={"help": "token budget of the printed prompt summary"})

    def validate(self) -> None:
        if (self.task is None) == (self.command is None):
            raise ConfigError("give either a task directory or --command, not both and not neither")
        if self.command is not None and self.target not in ("cuda", "cpu"):
            raise ConfigError(f"--target must be cuda or cpu with --command, got {self.target!r}")
        if self.top < 1:
            raise ConfigError("--top must be at least 1")
        if self.candidate is not None and not self.candidate.is_file():
            raise ConfigError(f"--candidate {self.candidate} does not exist; give the path of a source file")
        self.sources = split_sources(self.sources)  # an unknown source is an error before anything is profiled


@dataclass
class DiagnoseConfig:
    path: Path = field(default=Path("."), metadata={
        "positional": True, "help": "a task directory (profiled first) or a profile.json written by perfforge profile"})
    out: Path = field(default=Path("perfforge-out/profile"), metadata={
        "help": "where a task's profile is written when one has to be made"})
    sources: list[str] = field(default_factory=lambda: ["all"], metadata={"help": SOURCES_HELP})
    token_budget: int = field(default=400, metadata={"help": "token budget of the prompt summary"})
    json: bool = field(default=False, metadata={"help": "print the diagnoses as JSON instead of text"})

    def validate(self) -> None:
        self.sources = split_sources(self.sources)  # an unknown source is an error before anything is profiled
