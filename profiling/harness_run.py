"""Running a built harness in one of its modes (check, time, profile), isolated, and reading what it wrote.

Each run gets a fresh output directory and a fresh process, so nothing of one run (memory, buffers) reaches the
next: the candidate never sees the reference's results (VALIDATION.md rule 3).
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from perfforge.errors import PerfforgeError
from perfforge.targets import target_spec
from perfforge.task import Task, TaskConfig
from profiling import sandbox
from profiling.build import Build

# glibc fills fresh malloc memory with the complement of this byte (MALLOC_PERTURB_): two runs of one candidate
# with different bytes make reads of uninitialised heap memory visible as a difference (rule 7).
MALLOC_PERTURB_BYTES = (0x5A, 0xC3)

# Exit statuses of perfforge_harness.h / perfforge_harness.py and what they mean.
HARNESS_EXIT_REASONS = {
    2: "the harness rejected its arguments",
    3: "a buffer was written out of bounds",
    4: "a CUDA error (a launch that fails has not run)",
    5: "the harness could not write its results",
}


class TamperedBuild(PerfforgeError):
    """A build's binary (or Python files) changed between two runs."""


@dataclass
class HarnessRun:
    result: sandbox.RunResult
    out_dir: Path

    @property
    def ok(self) -> bool:
        return self.result.ok

    def reason(self) -> str:
        if self.result.ok:
            return ""
        meaning = HARNESS_EXIT_REASONS.get(self.result.returncode)
        base = self.result.reason()
        return f"{base} ({meaning})" if meaning and not self.result.timed_out else base

    def times_ms(self) -> list[float]:
        return [float(t) for t in self.timing()["times_ms"]]

    def timing(self) -> dict:
        path = self.out_dir / "timing.json"
        if not path.is_file():
            raise RuntimeError(f"the harness wrote no timing.json in {self.out_dir}")
        return json.loads(path.read_text())

    def take(self, calls: Iterable[int]) -> dict[int, tuple[dict[str, np.ndarray], dict[str, str]]]:
        """{call: (buffers, digests)} of the given calls, then every buffer and digest file the run wrote deleted
        (timing.json stays): what a reference run wrote is a reference result, and no process that runs next may
        find it on disk (VALIDATION.md rule 3)."""
        try:
            return {call: (self.buffers(call), self.digests(call)) for call in calls}
        finally:
            for path in [*self.out_dir.glob("*.npy"), *self.out_dir.glob("*.digest")]:
                path.unlink()

    def buffers(self, call: int) -> dict[str, np.ndarray]:
        """Every output buffer the harness wrote after call `call`, by name."""
        suffix = f".{call}.npy"
        return {p.name[: -len(suffix)]: load_npy(p) for p in sorted(self.out_dir.glob(f"*{suffix}"))}

    def digests(self, call: int) -> dict[str, str]:
        """The digest of every input buffer after call `call`, by name."""
        suffix = f".{call}.digest"
        return {p.name[: -len(suffix)]: p.read_text().strip() for p in sorted(self.out_dir.glob(f"*{suffix}"))}


def load_npy(path: Path) -> np.ndarray:
    return np.load(path, allow_pickle=False)


def run_harness(task: Task, built: Build, mode: str, config: TaskConfig, out_dir: Path, *, seed: int = 0,
                calls: int | None = None, warmup: int | None = None, trials: int | None = None, flush: bool = True,
                timeout_s: float | None = None, malloc_perturb: int | None = None,
                save_calls: tuple[int, ...] = ()) -> HarnessRun:
    """Run the built harness once; out_dir is emptied first. (Profilers wrap the harness themselves:
    profiling.cpu.callgrind, profiling.cuda.ncu.) TamperedBuild when the build changed since it was made."""
    if not built.intact():
        raise TamperedBuild(f"{built.directory} changed after it was built: code under test wrote outside its "
                            "scratch directory")
    out_dir = out_dir.resolve()  # the harness runs in its own directory
    if out_dir.exists():
        shutil.rmtree(out_dir)
    out_dir.mkdir(parents=True)
    argv = [*built.argv, mode, "--seed", str(seed), "--out", str(out_dir)]
    if mode == "check":
        argv += ["--calls", str(calls or task.validate.calls)]
    if mode == "time":
        argv += ["--warmup", str(task.validate.warmup if warmup is None else warmup),
                 "--trials", str(trials or task.validate.trials)]
    for call in save_calls:
        argv += ["--save-call", str(call)]
    if not flush:
        argv.append("--no-flush")
    argv += config.args()
    env = dict(built.env)
    if malloc_perturb is not None:
        env["MALLOC_PERTURB_"] = str(malloc_perturb)
    limits = sandbox.Limits(timeout_s=timeout_s or task.validate.timeout_s,
                            memory_bytes=target_spec(task.target).memory_limit_bytes)
    result = sandbox.run(argv, cwd=out_dir.parent / (out_dir.name + ".scratch"), limits=limits, env=env,
                         writable=[out_dir, *built.cache_dirs])
    return HarnessRun(result=result, out_dir=out_dir)
