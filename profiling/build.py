"""Building a task's harness with one version of its editable source (the original, a candidate, the reference).

The build directory holds the harness, the task's other auxiliary files and the version under test saved under
the editable source's own name, so compiler messages and line tables name the file the optimiser edits. The
task's reference (its known fast version) is never copied in: a candidate cannot include it. Builds run in the
sandbox and are cached by the hash of everything that goes in.

Targets with a binary policy (perfforge/targets.py) compile the editable source alone first, into an object
the binary policy reads (profiling/binary_policy.py; the preprocessed source is kept beside it), then link it
with the harness. Their compiler reads nothing beyond the build directory, the harness runtime and the system's
directories (a computed `#include` of the reference, or of another candidate's build, finds nothing).
"""

from __future__ import annotations

import hashlib
import re
import shutil
import sys
import sysconfig
from dataclasses import dataclass
from pathlib import Path

from perfforge.io import atomic_path
from perfforge.targets import target_spec
from perfforge.task import Task
from profiling import sandbox

RUNTIME_DIR = Path(__file__).with_name("runtime")  # perfforge_harness.h and perfforge_harness.py
PYTHON_LAUNCHER = RUNTIME_DIR / "perfforge_launch.py"  # runs a Python harness (serve mode: the filter first)
PYTHON_RUNTIME = (RUNTIME_DIR / "perfforge_harness.py", RUNTIME_DIR / "perfforge_serve.py", PYTHON_LAUNCHER)
BUILD_TIMEOUT_S = 300.0
# A Python harness's compile caches, per build (environment variable -> folder in the build directory)
CACHE_VARIABLES = {"TRITON_CACHE_DIR": ".triton-cache", "TORCH_EXTENSIONS_DIR": ".torch-extensions"}
COMPILER_LOG_CHARS = 3000  # the first errors are what a model can act on; later ones mostly cascade from them
# A line that names a cause (compiler error, linker failure); the driver's summary lines name none.
_CAUSE_RE = re.compile(r"\berror\b|undefined reference|multiple definition|cannot find -l|fatal|No such file|"
                       r"Permission denied", re.IGNORECASE)
_SUMMARY_RE = re.compile(r"collect2: error: ld returned|error: linker command failed|compilation terminated")


@dataclass(frozen=True)
class Build:
    """A built version: how to run its harness, and what the compiler said."""

    ok: bool
    argv: tuple[str, ...]  # the harness command, before MODE and its arguments
    directory: Path
    log: str
    duration_s: float
    env: tuple[tuple[str, str], ...] = ()  # extra environment of every run (PYTHONPATH for Python harnesses)
    digest: str = ""  # of what runs (build_digest), taken when it was built
    object_name: str = ""  # served targets: the editable source's own object, beside its preprocessed source

    @property
    def cache_dirs(self) -> tuple[Path, ...]:
        """Directories every run of this build may write besides its own: Triton's and load_inline's caches
        (_run_env)."""
        return tuple(Path(value) for name, value in self.env if name in CACHE_VARIABLES)

    @property
    def readable_dirs(self) -> tuple[Path, ...]:
        """What a served run of this build may read besides the system's directories: its own directory; for a
        Python harness also the runtime beside it and the interpreter's libraries (never the task's directory or
        the checkout, where the task's reference lives)."""
        if not any(name == "PYTHONPATH" for name, _ in self.env):
            return (self.directory,)
        paths = sysconfig.get_paths()
        libraries = {Path(paths[key]) for key in ("stdlib", "platstdlib", "purelib", "platlib") if key in paths}
        libraries |= {Path(sys.prefix), Path(sys.base_prefix)}  # the interpreter, its pyvenv.cfg, its packages
        return (self.directory, RUNTIME_DIR, *sorted(p for p in libraries if p.is_dir()))

    def intact(self) -> bool:
        """Whether what runs is still what was built: the code under test runs with write access to the disk, and a
        candidate that rewrote the original's binary would slow the baseline down."""
        return not self.ok or build_digest(self.directory) == self.digest

    def reason(self) -> str:
        """The first line that says what is wrong, then the compiler's output (its start: later errors mostly
        cascade). The linker's closing "collect2: error: ld returned 1 exit status" says nothing of the cause: the
        line before it (an undefined reference, a multiple definition) does."""
        if self.ok:
            return ""
        lines = self.log.splitlines()
        first = next((line for line in lines if _CAUSE_RE.search(line) and not _SUMMARY_RE.search(line)),
                     next((line for line in lines if "error" in line.lower()), lines[0] if lines else "no output"))
        return f"build failed: {first.strip()}\n{self.log[:COMPILER_LOG_CHARS]}"


def build(task: Task, version: Path, work_dir: Path, *, extra_flags: tuple[str, ...] = ()) -> Build:
    """Build the task's harness with `version` as its editable source; cached under work_dir."""
    if not version.is_file():
        raise FileNotFoundError(f"{version} does not exist")
    directory = work_dir.resolve() / f"build-{_build_key(task, version, extra_flags)}"
    marker, recorded = directory / ".built", directory / ".digest"
    digest = recorded.read_text() if marker.is_file() and recorded.is_file() else None
    if digest is not None and digest == build_digest(directory):
        return Build(ok=True, argv=_run_argv(task, directory), directory=directory, log=marker.read_text(),
                     duration_s=0.0, env=_run_env(task, directory), digest=digest, object_name=_object_name(task))
    _stage(task, version, directory)  # new, or changed since it was built: made again
    if task.language == "python":
        return _finished(task, directory, "", 0.0)
    split = target_spec(task.target).binary_policy
    steps = served_compile_argvs(task, extra_flags) if split else [compile_argv(task, extra_flags)]
    cached_harness = _harness_cache(task, work_dir, steps[1]) if split else None
    log, duration_s = "", 0.0
    for index, argv in enumerate(steps):
        if split and index == 1 and cached_harness is not None and cached_harness.is_file():
            shutil.copy2(cached_harness, directory / harness_object_name(task))  # built for another version
            continue
        result = sandbox.run(argv, cwd=directory, limits=sandbox.Limits(timeout_s=BUILD_TIMEOUT_S, memory_bytes=None),
                             readable=[RUNTIME_DIR] if len(steps) > 1 else None)
        if split and index == 1 and result.ok and cached_harness is not None:
            _keep(directory / harness_object_name(task), cached_harness)
        log, duration_s = (log + "\n" + (result.stderr_full + result.stdout)).strip(), duration_s + result.duration_s
        if result.timed_out:
            log = f"the compiler did not finish within {BUILD_TIMEOUT_S:.0f} s\n{log}"
        if not result.ok:
            break
    if result.ok and (directory / "bin").is_file():
        return _finished(task, directory, log, duration_s)
    return Build(ok=False, argv=_run_argv(task, directory), directory=directory, log=log,
                 duration_s=duration_s, env=_run_env(task, directory))


def _finished(task: Task, directory: Path, log: str, duration_s: float) -> Build:
    """A successful build, marked done with its digest (the marker last: a build without it is made again)."""
    digest = build_digest(directory)
    (directory / ".digest").write_text(digest)
    (directory / ".built").write_text(log)
    return Build(ok=True, argv=_run_argv(task, directory), directory=directory, log=log, duration_s=duration_s,
                 env=_run_env(task, directory), digest=digest, object_name=_object_name(task))


def _object_name(task: Task) -> str:
    return f"{Path(task.source).stem}.o" if target_spec(task.target).binary_policy else ""


def preprocessed_name(task: Task) -> str:
    """The editable source as the compiler saw it, beside its object: gcc -save-temps's .i/.ii, nvcc --keep's host
    side (.cpp4.ii)."""
    stem = Path(task.source).stem
    if task.build.compiler == "nvcc":
        return f"{stem}.cpp4.ii"
    return f"{stem}.{'ii' if task.language == 'cpp' else 'i'}"


def build_digest(directory: Path) -> str:
    """sha256 of what a build runs: its binary, or its Python files and the harness runtime they import, with their
    permission bits (code under test could not rewrite a binary through the sandbox's fence, but could chmod it)."""
    digest = hashlib.sha256()
    binary = directory / "bin"
    paths = [binary] if binary.is_file() else [*sorted(directory.glob("*.py")), *PYTHON_RUNTIME]
    for path in paths:
        mode = f"{path.stat().st_mode & 0o7777:o}"
        digest.update(path.name.encode() + b"\0" + mode.encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()


def compile_argv(task: Task, extra_flags: tuple[str, ...] = ()) -> list[str]:
    """The compiler command, run inside the build directory."""
    compiler = task.build.compiler
    if task.language == "cpp" and compiler == "gcc":
        compiler = "g++"
    flags = [*task.build.flags, *extra_flags]
    if task.build.openmp:
        flags.append("-Xcompiler=-fopenmp" if compiler == "nvcc" else "-fopenmp")
    link = list(task.build.link)
    if task.build.openmp and compiler == "nvcc":
        link.append("-lgomp")
    return [compiler, *flags, f"-I{RUNTIME_DIR}", "-I.", task.harness, task.source, "-o", "bin", *link]


def served_compile_argvs(task: Task, extra_flags: tuple[str, ...] = ()) -> list[list[str]]:
    """The editable source alone into its object (its preprocessed source kept), the harness into its own (the
    binary policy reads what it imports), then both linked."""
    full = compile_argv(task, extra_flags)
    split = full.index(task.harness)
    flags, link = full[1:split], full[split + 4:]  # after "harness source -o bin"
    obj, harness_obj = _object_name(task), harness_object_name(task)
    keep = ["--keep"] if full[0] == "nvcc" else ["-save-temps=obj"]  # nvcc keeps its intermediates in the cwd
    return [[full[0], *flags, "-c", task.source, "-o", obj, *keep],
            [full[0], *flags, "-c", task.harness, "-o", harness_obj],
            [full[0], *flags, harness_obj, obj, "-o", "bin", *link]]


def _harness_cache(task: Task, work_dir: Path, argv: list[str]) -> Path:
    """Where the harness's object for this task and compiler command is kept: it is the same for every version
    judged (an nvcc compile of it is a third of a CUDA build)."""
    digest = hashlib.sha256(repr(argv).encode())
    digest.update((task.root / task.harness).read_bytes())
    for path in sorted(RUNTIME_DIR.iterdir()):
        if path.is_file():
            digest.update(path.read_bytes())
    for path in sorted(task.root.iterdir()):  # headers the harness may include
        if path.is_file() and path.name not in {task.source, task.reference}:
            digest.update(path.name.encode() + b"\0" + path.read_bytes())
    return work_dir.resolve() / "harness-objects" / f"{digest.hexdigest()[:16]}.o"


def _keep(built: Path, cache: Path) -> None:
    with atomic_path(cache) as partial:  # one temporary per process and thread: two judges may keep the same object
        shutil.copy2(built, partial)


def harness_object_name(task: Task) -> str:
    return f"{Path(task.harness).stem}.harness.o"


def _stage(task: Task, version: Path, directory: Path) -> None:
    if directory.exists():
        shutil.rmtree(directory)
    directory.mkdir(parents=True)
    for path in task.root.iterdir():
        if path.is_file() and path.name not in {task.source, task.reference, "task.toml"}:
            shutil.copy2(path, directory / path.name)
    shutil.copy2(version, directory / task.source)


def _run_argv(task: Task, directory: Path) -> tuple[str, ...]:
    if task.language == "python":
        # through the launcher: in serve mode the system-call filter goes in before harness.py imports the
        # candidate's module (perfforge_launch.py)
        return (sys.executable, str(PYTHON_LAUNCHER), str(directory / task.harness))
    return (str(directory / "bin"),)


def _run_env(task: Task, directory: Path) -> tuple[tuple[str, str], ...]:
    """Python harnesses find perfforge_harness.py; Triton and torch's load_inline keep what they compile per build,
    so the many runs of one version compile once (each run's HOME is a fresh scratch directory, where their
    default caches would be lost: an inline CUDA extension would be built by nvcc again in every process)."""
    if task.language == "python":
        return (("PYTHONPATH", str(RUNTIME_DIR)), ("PYTHONDONTWRITEBYTECODE", "1"),
                *((name, str(directory / folder)) for name, folder in CACHE_VARIABLES.items()))
    return ()


def _build_key(task: Task, version: Path, extra_flags: tuple[str, ...]) -> str:
    digest = hashlib.sha256()
    digest.update(version.read_bytes())
    for path in sorted(task.root.iterdir()):
        if path.is_file() and path.name not in {task.source, task.reference}:
            digest.update(path.name.encode() + b"\0" + path.read_bytes())
    for path in sorted(RUNTIME_DIR.iterdir()):
        if path.is_file():
            digest.update(path.read_bytes())
    digest.update(repr((task.build, task.language, extra_flags)).encode())
    return digest.hexdigest()[:16]
