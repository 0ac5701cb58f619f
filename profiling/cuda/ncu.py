"""Nsight Compute (ncu) command lines for a built task harness, and running them.

Three passes, each a separate process (STACK.md: start-up dominates, so one ncu process profiles every launch it
needs):

- profile: the harness in `profile` mode under `--set full`; only launches inside the harness's NVTX range
  `pf_profile` (one warm-up call runs first, outside it), clocks left as they are (`--clock-control none`: the
  lent machines must keep their clocks), the source imported into the report so the source page can show it.
- export: the report's raw page (`--page raw --csv --print-units base`: one row per profiled launch, row 0 metric
  names, row 1 units, values in base units) and its source page (`--page source --csv --print-source cuda`:
  per-CUDA-line PC-sampling stall counts and memory counters, mapped from SASS through -lineinfo).
- application: a whole program with only `gpu__time_duration.sum` collected (one replay pass per launch), to
  rank kernels by total time before profiling the top ones in depth (profiling.cuda.launches).

Never time under the profiler (VALIDATION.md rule 16): ncu replays each kernel many times.
"""

from __future__ import annotations

import argparse
import contextlib
import shlex
import shutil
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from perfforge.errors import PerfforgeError
from profiling import landlock, sandbox
from profiling.device_turns import gpu_lock

NCU = "ncu"
PROFILE_RANGE = "pf_profile"  # the NVTX push/pop range perfforge_harness.h opens around the profiled call
DURATION_METRIC = "gpu__time_duration.sum"  # ns: wall time of one launch on the GPU


class NcuError(PerfforgeError):
    """ncu failed or produced output perfforge cannot read."""


@dataclass(frozen=True)
class NcuExports:
    """The CSV pages exported from one report."""

    report: Path
    raw_csv: Path
    source_csv: Path


def profile_command(program: Sequence[str], report: Path, *, kernel_regex: str | None = None,
                    launch_count: int | None = None, sections: Sequence[str] = (), ncu: str = NCU,
                    nvtx_range: str | None = PROFILE_RANGE, launch_skip: int = 0) -> list[str]:
    """ncu over `program` (a harness in profile mode): launches in the pf_profile range (nvtx_range=None for a
    whole application), --set full unless `sections` names some, written to `report` (.ncu-rep). kernel_regex is
    matched against ncu's "function" form of the name: no return type, parameters nor template arguments
    (`sgemm_shared_mem_block` for "void sgemm_shared_mem_block<32>(int, ...)"). Its "demangled" form is not the
    raw page's name: it spells template arguments with casts (`<(int)32>`), seen with ncu 2025.3.1 on the H100."""
    command = [ncu, "--clock-control", "none", "--import-source", "yes", "--force-overwrite", "--export", str(report)]
    if nvtx_range:
        command = [ncu, "--nvtx", "--nvtx-include", f"{nvtx_range}/", *command[1:]]
    if sections:
        for section in sections:
            command += ["--section", section]
    else:
        command += ["--set", "full"]
    if kernel_regex:
        command += ["--kernel-name-base", "function", "--kernel-name", f"regex:{kernel_regex}"]
    if launch_skip:  # launches matching the filter to pass over first (another instantiation of the same name)
        command += ["--launch-skip", str(launch_skip)]
    if launch_count:
        command += ["--launch-count", str(launch_count)]
    return command + list(program)


def raw_page_command(report: Path, metrics: Sequence[str] = (), ncu: str = NCU) -> list[str]:
    """The report's raw page as CSV in base units (byte, second, ...), optionally only `metrics`."""
    command = [ncu, "--import", str(report), "--csv", "--page", "raw", "--print-units", "base"]
    if metrics:
        command += ["--metrics", ",".join(metrics)]
    return command


def source_page_command(report: Path, views: Sequence[str] = ("cuda", "sass"), ncu: str = NCU) -> list[str]:
    """The report's source page as CSV: one row per line of each CUDA source file (view cuda) or per SASS
    instruction (view sass), with PC-sampling and memory counters."""
    return [ncu, "--import", str(report), "--csv", "--page", "source", "--print-source", ",".join(views)]


def application_command(program: Sequence[str], report: Path, ncu: str = NCU,
                        nvtx_range: str | None = None) -> list[str]:
    """ncu over a whole program collecting only each launch's duration (application mode); with `nvtx_range`,
    only the launches inside that NVTX range."""
    command = [ncu, "--metrics", DURATION_METRIC, "--clock-control", "none", "--force-overwrite",
               "--export", str(report), *program]
    return [ncu, "--nvtx", "--nvtx-include", f"{nvtx_range}/", *command[1:]] if nvtx_range else command


def run_ncu(command: Sequence[str], timeout_s: float, stdout_path: Path | None = None, *, cwd: Path | None = None,
            env: dict[str, str] | None = None) -> str:
    """Runs an ncu command in the sandbox; its stdout is returned (and written to stdout_path when given). ncu
    itself may write anywhere (its lock, its report); a generated program it profiles is fenced by its own command
    (`fenced_program`)."""
    if shutil.which(command[0]) is None:
        raise NcuError(f"{command[0]} not found: install Nsight Compute or pass its path as ncu=")
    scratch = cwd or Path(tempfile.mkdtemp(prefix="perfforge-ncu-"))
    # ncu keeps its sections and rules (Python among them) in HOME/Documents/NVIDIA Nsight Compute (seen on the
    # H100; whether it loads them from there was not tested): a HOME of its own, out of reach of the programs it
    # profiles (their fence allows scratch, and scratch is HOME by default).
    # One ncu profiling per GPU at a time (an `--import` reads a report and needs no turn): two at once on one GPU
    # fail (on the H100, `perfforge synth patterns --jobs 3` lost 37 of 42 CUDA checks to "ncu exited with status
    # 9", none one at a time); ncu's own lock cannot help, since the sandbox gives every run a TMPDIR of its own.
    # One lock per GPU the process sees (profiling/device_turns.py), so workers on other GPUs go on.
    profiling_lock = contextlib.nullcontext() if "--import" in command else gpu_lock("ncu", env)
    with tempfile.TemporaryDirectory(prefix="perfforge-ncu-home-") as home, profiling_lock:
        result = sandbox.run(list(command), cwd=scratch, env={**(env or {}), "HOME": home},
                             limits=sandbox.Limits(timeout_s=timeout_s, memory_bytes=None, file_bytes=8 << 30,
                                                   filesystem=True))
    if result.timed_out:
        raise NcuError(f"ncu ran past {timeout_s:.0f} s: {shlex.join(command)}")
    if result.returncode != 0:
        raise NcuError(f"ncu exited with status {result.returncode}: {shlex.join(command)}\n{ncu_said(result)}")
    if stdout_path is not None:
        stdout_path.write_text(result.stdout_full, encoding="utf-8")
    return result.stdout_full


def ncu_messages(text: str) -> list[str]:
    """ncu's own ==ERROR== and ==WARNING== lines in its output (it writes them to stdout as often as to stderr;
    `ncu --import` of a missing report says why on stdout only)."""
    return [line for line in text.splitlines() if line.startswith(("==ERROR==", "==WARNING=="))]


def ncu_said(result: sandbox.RunResult) -> str:
    """What ncu reported about a failure: its messages, else the tail of stderr."""
    lines = ncu_messages(result.stderr_full + "\n" + result.stdout_full)
    return "\n".join(lines)[-2000:] if lines else result.stderr[-2000:]


# Whether ncu's fenced target may also not signal, nor reach by abstract socket, processes outside its fence (ABI 6).
# The profiled program talks to ncu, which is outside, yet profiles of CUDA and Triton tasks came out whole so on
# the H100 (ncu 2025.3.1).
FENCE_SCOPED = True


def fenced_program(program: Sequence[str], writable: Sequence[Path], *, own_code: bool = False) -> list[str]:
    """The command that runs a program under ncu, a generated one fenced to the writable directories (sandbox.run's
    fence would cover ncu, not the program it starts in a process of its own, whose /proc entry it cannot name).
    Unchanged for the user's own code, and where the machine has no Landlock."""
    if own_code or not sandbox.filesystem_isolation_available():
        return list(program)
    return landlock.fenced_command(program, writable, scoped=FENCE_SCOPED)


def profile_and_export(program: Sequence[str], workdir: Path, *, kernel_regex: str | None = None,
                       launch_count: int | None = None, timeout_s: float = 600.0, ncu: str = NCU,
                       nvtx_range: str | None = PROFILE_RANGE, env: dict[str, str] | None = None,
                       cwd: Path | None = None, writable: Sequence[Path] = (), own_code: bool = False,
                       launch_skip: int = 0) -> NcuExports:
    """Profiles `program` into workdir/report.ncu-rep and exports raw.csv and source.csv beside it. The program may
    write beneath workdir, cwd and `writable` (anywhere if own_code: the user's own application)."""
    workdir.mkdir(parents=True, exist_ok=True)
    report = workdir / "report.ncu-rep"
    program = fenced_program(program, [cwd or workdir, workdir, *writable], own_code=own_code)
    said = run_ncu(profile_command(program, report.with_suffix(""), kernel_regex=kernel_regex,
                                   launch_count=launch_count, ncu=ncu, nvtx_range=nvtx_range,
                                   launch_skip=launch_skip), timeout_s,
                   cwd=cwd or workdir, env=env)
    if not report.is_file():  # ncu exits 0 when its filters matched no launch, and writes no report
        where = f" inside the NVTX range {nvtx_range!r}" if nvtx_range else ""
        notes = ncu_messages(said)
        raise NcuError(f"ncu profiled no kernel: no launch matched {kernel_regex or 'any kernel'!r}{where}"
                       + (f" ({notes[-1]})" if notes else "") + "; check the kernel's name and the program's arguments")
    exports = NcuExports(report, workdir / "raw.csv", workdir / "source.csv")
    run_ncu(raw_page_command(report, ncu=ncu), timeout_s, exports.raw_csv, cwd=workdir)
    run_ncu(source_page_command(report, ncu=ncu), timeout_s, exports.source_csv, cwd=workdir)
    return exports


def export_application_page(program: Sequence[str], workdir: Path, *, timeout_s: float = 600.0, ncu: str = NCU,
                            env: dict[str, str] | None = None, cwd: Path | None = None,
                            nvtx_range: str | None = None, writable: Sequence[Path] = (),
                            own_code: bool = False) -> Path:
    """Application mode: every launch's duration (inside `nvtx_range` when given), exported as
    workdir/application.csv (a raw page). Writable directories as in profile_and_export."""
    workdir.mkdir(parents=True, exist_ok=True)
    report = workdir / "application"
    program = fenced_program(program, [cwd or workdir, workdir, *writable], own_code=own_code)
    run_ncu(application_command(program, report, ncu=ncu, nvtx_range=nvtx_range), timeout_s, cwd=cwd or workdir,
            env=env)
    page = workdir / "application.csv"
    run_ncu(raw_page_command(report.with_suffix(".ncu-rep"), [DURATION_METRIC], ncu=ncu), timeout_s, page, cwd=workdir)
    return page


def _main(argv: Sequence[str] | None = None) -> int:
    """Prints one command line, shell-quoted (scripts/capture_ncu_fixtures.sh builds its commands here)."""
    parser = argparse.ArgumentParser(prog="python -m profiling.cuda.ncu",
                                     usage="%(prog)s WHICH --report R [options] -- PROGRAM [ARG ...]")
    parser.add_argument("which", choices=["profile", "raw", "source", "application"])
    parser.add_argument("--report", type=Path, required=True)
    parser.add_argument("--kernel-regex")
    parser.add_argument("--launch-count", type=int)
    parser.add_argument("--metrics", default="", help="comma-separated metric names (raw page only)")
    argv = list(argv if argv is not None else sys.argv[1:])
    split = argv.index("--") if "--" in argv else len(argv)
    args = parser.parse_args(argv[:split])
    args.program = argv[split + 1:]
    if args.which == "profile":
        command = profile_command(args.program, args.report, kernel_regex=args.kernel_regex,
                                  launch_count=args.launch_count)
    elif args.which == "raw":
        command = raw_page_command(args.report, [m for m in args.metrics.split(",") if m])
    elif args.which == "source":
        command = source_page_command(args.report)
    else:
        command = application_command(args.program, args.report)
    print(shlex.join(command))
    return 0


if __name__ == "__main__":
    raise SystemExit(_main())
