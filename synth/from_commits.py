"""`perfforge synth commits`: ask a model to turn mined performance pairs into runnable tasks, and keep the ones
the pipeline proves.

For each mined pair (a performance commit's function before and after) the model gets the function at both
sides, the commit message, the task format (docs/tasks.md) and one complete example task read from examples/,
and answers with the files of a standalone task: task.toml, the slow source (the before version), the fast
source (the after version, the task's reference) and a harness. The answer is untrusted: file names are checked,
the manifest's compiler and flags must be known ones, and its code only ever runs through profiling's sandboxed
build and validate (synth.check.check_task), never imported or executed here. A task is kept when its fast
version is correct and measurably faster; its diagnoses are recorded but need not name anything, since a real
commit has no planted bottleneck. A failed attempt's reason is fed back for the next of `attempts` tries.

Layout of the output directory:

    tasks/<id>/        the last attempt's task (runnable with perfforge validate / profile)
    judged/<id>.json   the pair's provenance, outcome and every attempt (the answer, the reason, the check)
    pairs.parquet      the kept tasks as PairRecords (found_by synthetic:commit, the mined pair's provenance)
    stats.json         counts by outcome, attempts, speedups

Resumable: a pair whose judged file exists is not asked again. An endpoint that is down or does not serve the
model ends the run with one error (finished pairs stay written); a request the endpoint refuses (a prompt too
long for its context) is that pair's failure.
"""

from __future__ import annotations

import hashlib
import re
import time
import traceback
from collections import Counter
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, replace
from enum import StrEnum
from pathlib import Path
from typing import Any

from perfforge.errors import BackendError, PerfforgeError
from perfforge.io import atomic_dir, read_json, write_json
from perfforge.llm_client import ChatClient
from perfforge.naming import PAIRS_FILE, STATS_FILE
from perfforge.task import MANIFEST
from perfforge.verdict import Status
from synth.check import InstanceCheck, check_task, first_line, speedup_range
from synth.config import SynthCommitsConfig

PROJECT_ROOT = Path(__file__).resolve().parents[1]
FORMAT_DOC = PROJECT_ROOT / "docs" / "tasks.md"
EXAMPLES_DIR = PROJECT_ROOT / "examples" / "tasks"

# Characters of each function shown to the model: a long kernel fits, a vendored blob does not eat the context.
MAX_FUNCTION_CHARS = 8000
MAX_MESSAGE_CHARS = 2000
# Characters of a previous answer and of its failure's details fed back: the compiler's first errors or the first
# mismatch are what the model can act on; a whole answer repeated would crowd the context.
MAX_FEEDBACK_ANSWER_CHARS = 12000
MAX_FEEDBACK_DETAIL_CHARS = 3000
MAX_STORED_ANSWER_CHARS = 60000  # an answer kept in judged/<id>.json (for reading failures and later training)
# What an answer may hold: a task is a handful of small source files.
MAX_FILES = 8
MAX_FILE_CHARS = 200_000
SAFE_NAME_RE = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,63}")
SOURCE_SUFFIXES = (".toml", ".c", ".h", ".cc", ".cpp", ".cxx", ".hpp", ".cu", ".cuh", ".py")
# The manifest names a compiler the build runs verbatim: only these may be named, per target.
ALLOWED_COMPILERS = {"cpu": ("gcc", "g++", "cc", "c++", "clang", "clang++"), "cuda": ("nvcc",),
                     "triton": ("python3", "python")}
# Compiler flags that run other programs, load code or read files outside the task (-wrapper, -fplugin, -specs,
# -B, nvcc's -ccbin, @response files, absolute or parent paths) are refused; plain options pass.
SAFE_FLAG_RE = re.compile(r"-[A-Za-z][A-Za-z0-9_=+.,:-]*")
UNSAFE_FLAG_WORDS = ("wrapper", "plugin", "specs", "ccbin", "compiler-bindir", "..")
SAFE_LINK_RE = re.compile(r"-l[A-Za-z0-9_+.-]+|-pthread|-fopenmp")
# A kept task whose speedup is above the plausibility ratio (VALIDATION.md rule 14): check_task counts it as faster,
# as for a planted pattern, but a model-written reproduction may exaggerate the commit's gap, so the record says so.
REVIEW_NOTE = "speedup above the plausibility ratio: flagged for review (VALIDATION.md rule 14)"
# Ceilings on a generated manifest's [validate] settings: a model asking for a day-long timeout or a million
# trials would stall the run; these are above what the example tasks use (timeout 120 s, 30 trials, 4 rounds).
MAX_VALIDATE = {"seeds": 10, "calls": 4, "warmup": 10, "trials": 100, "rounds": 8, "timeout_s": 120.0}
# The bottleneck given to check_task when the model names none: a commit has no planted bottleneck, so the
# diagnoses are recorded, not required to name it.
UNNAMED_BOTTLENECK = "unnamed"
# A BackendError with this text is the endpoint refusing one request (HTTP 4xx: a prompt beyond its context),
# which other pairs may not meet; every other BackendError (down, unknown model) would fail every pair.
REFUSED_REQUEST = "refused the request"


class Outcome(StrEnum):
    """What became of one attempt (and of a pair: its last attempt's)."""

    KEPT = "kept"  # correct, measurably faster, profiled
    ENDPOINT_ERROR = "endpoint_error"  # the endpoint refused the request
    UNPARSABLE = "unparsable"  # no task.toml block, a truncated block, a file given twice
    UNSAFE = "unsafe"  # a file name outside the task directory, a compiler or flag that is not allowed
    INVALID_TASK = "invalid_task"  # load_task refused it, it names files it lacks, or the test is degenerate
    BUILD_FAILED = "build_failed"  # the slow or the fast version does not compile
    REJECTED = "rejected"  # a strict static check refused the fast version (it calls the slow one, a library...)
    INCORRECT = "incorrect"  # the fast version's outputs differ from the slow one's
    CRASHED = "crashed"
    TIMEOUT = "timeout"
    NOT_FASTER = "not_faster"  # correct, but not faster beyond the noise floor (or implausibly fast)
    PROFILING_FAILED = "profiling_failed"
    CHECK_CRASHED = "check_crashed"  # a bug of ours while checking; the traceback is in the attempt's detail


# verdict status (perfforge.verdict.Status) -> outcome, for checks that ended before profiling
_STATUS_OUTCOME = {Status.BUILD_FAILED: Outcome.BUILD_FAILED, Status.REJECTED: Outcome.REJECTED,
                   Status.INCORRECT: Outcome.INCORRECT, Status.CRASHED: Outcome.CRASHED,
                   Status.TIMEOUT: Outcome.TIMEOUT, Status.TASK_INVALID: Outcome.INVALID_TASK}


class AttemptFailed(Exception):
    """An attempt ended before the pipeline's check: its outcome, a one-line reason, and details for the model."""

    def __init__(self, outcome: Outcome, reason: str, detail: str = "") -> None:
        super().__init__(reason)
        self.outcome, self.reason, self.detail = outcome, reason, detail


@dataclass
class Attempt:
    number: int
    outcome: str
    reason: str = ""  # one line; empty when kept
    detail: str = ""  # what the model is told: the compiler's errors, the first mismatch
    answer: str = ""
    check: dict[str, Any] | None = None  # the InstanceCheck of a task that reached the pipeline
    duration_s: float = 0.0


@dataclass
class PairResult:
    """One mined pair's judgement (judged/<id>.json)."""

    id: str
    provenance: dict[str, Any]  # the mined record's fields copied into the synthetic record
    outcome: str = ""
    reason: str = ""
    attempts: list[Attempt] = field(default_factory=list)
    model: str = ""

    @property
    def kept(self) -> bool:
        return self.outcome == Outcome.KEPT

    @property
    def check(self) -> InstanceCheck | None:
        last = self.attempts[-1].check if self.attempts else None
        return InstanceCheck.from_dict(last) if last else None

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> PairResult:
        attempts = [Attempt(**a) for a in data.get("attempts", [])]
        return cls(**{**data, "attempts": attempts})


@dataclass
class CommitsResult:
    results: list[PairResult]
    stats: dict[str, Any]
    paths: dict[str, Path] = field(default_factory=dict)
    interrupted: bool = False


# Provenance fields copied from the mined record (and the code the model reproduces).
PROVENANCE_FIELDS = ("repo", "repo_url", "commit", "parent", "date", "licence", "category", "message", "path",
                     "language", "target", "kernel_name", "kernel_kind", "perf_score", "evidence", "code_hash")


# ---- choosing pairs -----------------------------------------------------------------------------------------------


def pair_id(row: dict[str, Any]) -> str:
    """Stable, file-name-safe identity of a mined pair."""
    digest = hashlib.sha256("\0".join(str(row.get(k, "")) for k in ("repo", "commit", "path", "kernel_name",
                                                                       "code_hash")).encode()).hexdigest()[:8]
    repo = re.sub(r"[^A-Za-z0-9_]+", "_", str(row.get("repo", "")).rsplit("/", 1)[-1])[:24]
    kernel = re.sub(r"[^A-Za-z0-9_]+", "_", str(row.get("kernel_name", "")))[:32]
    return f"{repo}-{str(row.get('commit', ''))[:10]}-{kernel}-{digest}"


def select_pairs(rows: list[dict[str, Any]], config: SynthCommitsConfig) -> tuple[list[dict[str, Any]], Counter]:
    """The performance pairs of the asked targets (at most `limit`), and why the others were skipped."""
    chosen, skipped = [], Counter()
    for row in rows:
        if row.get("category") in (None, "", "none") or (row.get("perf_score") or 0.0) < config.min_perf_score:
            skipped["not_perf"] += 1
        elif row.get("target") not in config.targets:
            skipped[f"target_{row.get('target')}"] += 1
        elif not (row.get("function_before") and row.get("function_after")):
            skipped["no_code"] += 1
        else:
            chosen.append(row)
    if config.limit is not None and len(chosen) > config.limit:
        skipped["over_limit"] += len(chosen) - config.limit
        chosen = chosen[:config.limit]
    return chosen, skipped


# ---- the prompt ---------------------------------------------------------------------------------------------------

_INSTRUCTIONS = """\
You write standalone, runnable performance tasks for perfforge. Given a function before and after a performance \
commit from a real repository, write a small self-contained task that reproduces the commit's slow version and \
its fast version, in the task format described below.

Rules:
- The slow source (kernel.<ext>) holds the BEFORE version of the function, the fast source (fast.<ext>) the \
AFTER version, with exactly the same signature; keep the commit's code as close as you can, replacing project \
types, macros and helpers by plain self-contained code.
- task.toml names: source = the slow file, reference = the fast file, kernel = the function's name, \
harness = the harness file, target = "{target}", at least two [[configs]] (a small one and a default one), \
every output buffer in [[outputs]], and [work].
- The harness follows the protocol (perfforge_harness.h for C, C++ and CUDA): inputs drawn with pf_input, every \
written buffer a pf_output or pf_inout, one call of the function between pf_begin and pf_end.
- Outputs must depend on the inputs; both versions must give the same outputs within the tolerances.
- Size the default config so one call of the slow version takes 1 to 50 milliseconds and the fast version is \
measurably faster.
- No files other than the task's; no network, no reading files, no calls into the other version.

Answer format, strictly: for each file, a line `### <file name>` followed by one fenced code block holding the \
whole file, and nothing else. File names are plain names (no directories). The files are task.toml, the slow \
source, the fast source and the harness."""


def load_example(target: str, example: Path | None) -> Path:
    """The example task shown to the model: the one given, else the first example of the target (or of cpu)."""
    if example is not None:
        if not (example / MANIFEST).is_file():
            raise PerfforgeError(f"--example {example} is not a task directory (it has no task.toml)")
        return example
    for folder in (EXAMPLES_DIR / target, EXAMPLES_DIR / "cpu"):
        tasks = sorted(p for p in folder.glob("*") if (p / MANIFEST).is_file()) if folder.is_dir() else []
        if tasks:
            return tasks[0]
    raise PerfforgeError(f"no example task under {EXAMPLES_DIR}; pass --example with a task directory")


def format_doc() -> str:
    if not FORMAT_DOC.is_file():
        raise PerfforgeError(f"the task format {FORMAT_DOC} is missing; run from a perfforge checkout")
    return FORMAT_DOC.read_text(encoding="utf-8")


def render_files(directory: Path) -> str:
    """A task's files in the answer format (task.toml first): the example doubles as a format example."""
    files = sorted((p for p in directory.iterdir() if p.is_file()), key=lambda p: (p.name != "task.toml", p.name))
    return "\n\n".join(f"### {p.name}\n```{_fence_language(p.name)}\n{p.read_text(encoding='utf-8').rstrip()}\n```"
                       for p in files)


def _fence_language(name: str) -> str:
    return {".toml": "toml", ".py": "python", ".cu": "cuda", ".c": "c", ".h": "c"}.get(Path(name).suffix, "cpp")


def build_messages(row: dict[str, Any], example: Path, task_format: str,
                   history: list[tuple[str, str]]) -> list[dict[str, str]]:
    """The chat: instructions, the format, the example and the commit; then each earlier answer with its failure."""
    commit = (f"Repository: {row.get('repo')}\nFile: {row.get('path')}\nLanguage: {row.get('language')}\n"
              f"Target: {row.get('target')}\nFunction: {row.get('kernel_name')}\n"
              f"Category: {row.get('category')}\n\nCommit message:\n{str(row.get('message', ''))[:MAX_MESSAGE_CHARS]}"
              f"\n\nFunction BEFORE the commit (the slow version):\n```\n"
              f"{str(row['function_before'])[:MAX_FUNCTION_CHARS]}\n```\n\n"
              f"Function AFTER the commit (the fast version):\n```\n{str(row['function_after'])[:MAX_FUNCTION_CHARS]}"
              "\n```")
    user = (f"# The task format\n\n{task_format}\n\n# A complete example task ({example.name})\n\n"
            f"{render_files(example)}\n\n# The commit to reproduce\n\n{commit}\n\n"
            "Write the task for this commit, in the answer format.")
    messages = [{"role": "system", "content": _INSTRUCTIONS.format(target=row.get("target"))},
                {"role": "user", "content": user}]
    for answer, failure in history:
        messages.append({"role": "assistant", "content": answer[:MAX_FEEDBACK_ANSWER_CHARS]})
        messages.append({"role": "user", "content": f"That task failed: {failure}\n\nFix it and answer again with "
                                                    "every file, in the same answer format."})
    return messages


# ---- parsing the answer -------------------------------------------------------------------------------------------

_FENCE_OPEN_RE = re.compile(r"^ {0,3}(?P<fence>`{3,}|~{3,})(?P<info>[^`]*)$")
# A file name inside a heading or an info string: letters, digits, _ . - and, so that they can be refused
# rather than silently cut, directory separators.
_NAME_TOKEN_RE = re.compile(r"[A-Za-z0-9_./\\-]*[A-Za-z0-9_-]\.[A-Za-z0-9]+")


def parse_answer(text: str) -> dict[str, str]:
    """{file name: content} of an answer in the asked format; AttemptFailed when it is not one."""
    files: dict[str, str] = {}
    lines = text.splitlines()
    index, header = 0, ""
    while index < len(lines):
        opened = _FENCE_OPEN_RE.match(lines[index])
        if not opened:
            if lines[index].strip():
                header = lines[index]
            index += 1
            continue
        end = _closing_fence(lines, index + 1, opened.group("fence"))
        if end is None:
            raise AttemptFailed(Outcome.UNPARSABLE, "the answer ends inside a code block (cut off? raise "
                                "--max-tokens)")
        name = _block_name(opened.group("info"), header)
        if name is not None:
            _add_file(files, name, "\n".join(lines[index + 1:end]) + "\n")
        index, header = end + 1, ""
    if "task.toml" not in files:
        found = ", ".join(sorted(files)) or "no named code blocks"
        raise AttemptFailed(Outcome.UNPARSABLE, f"no task.toml block in the answer (found: {found}); give each file "
                            "as a `### <file name>` line followed by one fenced code block")
    return files


def _closing_fence(lines: list[str], start: int, fence: str) -> int | None:
    for index in range(start, len(lines)):
        stripped = lines[index].strip()
        if stripped and set(stripped) == {fence[0]} and len(stripped) >= len(fence):
            return index
    return None


def _block_name(info: str, header: str) -> str | None:
    """The file a block holds: named in its info string (```c kernel.c, ```toml title="task.toml"), else in the
    heading line above it (### kernel.c, **fast.c**, File: harness.c)."""
    for source in (info, header):
        cleaned = source.replace('"', " ").replace("'", " ").replace("=", " ")
        match = _NAME_TOKEN_RE.search(cleaned)
        if match:
            return match.group(0)
    return None


def _add_file(files: dict[str, str], name: str, content: str) -> None:
    if not SAFE_NAME_RE.fullmatch(name) or ".." in name:
        raise AttemptFailed(Outcome.UNSAFE, f"unsafe file name {name!r}: files are plain names inside the task "
                            "directory (no directories, no leading dot)")
    if not name.endswith(SOURCE_SUFFIXES):
        raise AttemptFailed(Outcome.UNSAFE, f"file {name!r} is not a source file a task may hold "
                            f"({', '.join(SOURCE_SUFFIXES)})")
    if name in files:
        raise AttemptFailed(Outcome.UNPARSABLE, f"file {name} is given twice in the answer")
    if len(files) >= MAX_FILES or len(content) > MAX_FILE_CHARS:
        raise AttemptFailed(Outcome.UNPARSABLE, f"the answer holds too many or too large files (at most {MAX_FILES}, "
                            f"{MAX_FILE_CHARS} characters each)")
    files[name] = content


# ---- writing and checking the task --------------------------------------------------------------------------------


def write_task_files(directory: Path, files: dict[str, str]) -> Path:
    """The task directory holding exactly `files`, replacing an earlier attempt's (made aside, then renamed)."""
    with atomic_dir(directory) as staging:
        staging.mkdir()
        for name, content in files.items():
            (staging / name).write_text(content, encoding="utf-8")
    return directory


def load_generated_task(directory: Path, files: dict[str, str], target: str) -> Any:
    """The written task, loaded and held to the policy for generated tasks; AttemptFailed when it breaks it."""
    from perfforge.task import TaskError, load_task

    try:
        task = load_task(directory)
    except TaskError as exc:
        raise AttemptFailed(Outcome.INVALID_TASK, f"invalid task: {first_line(str(exc))}", str(exc)) from None
    if task.target != target:
        raise AttemptFailed(Outcome.INVALID_TASK, f"invalid task: target is {task.target!r}, the commit's is "
                            f"{target!r}")
    if task.reference is None:
        raise AttemptFailed(Outcome.INVALID_TASK, "invalid task: task.toml names no reference (the fast version)")
    for key in ("source", "harness", "reference"):
        if getattr(task, key) not in files:
            raise AttemptFailed(Outcome.INVALID_TASK, f"invalid task: {key} = {getattr(task, key)!r} is not one of "
                                f"the answer's files ({', '.join(sorted(files))})")
    if task.source == task.reference:
        raise AttemptFailed(Outcome.INVALID_TASK, "invalid task: source and reference are the same file")
    _check_build_policy(task)
    capped = replace(task.validate, **{k: min(getattr(task.validate, k), v) for k, v in MAX_VALIDATE.items()})
    return replace(task, validate=capped, bottleneck=task.bottleneck or UNNAMED_BOTTLENECK, pattern=None,
                   pattern_seed=None)


def _check_build_policy(task: Any) -> None:
    compiler = task.build.compiler
    if compiler not in ALLOWED_COMPILERS.get(task.target, ()):
        raise AttemptFailed(Outcome.UNSAFE, f"compiler {compiler!r} is not allowed for target {task.target} "
                            f"(allowed: {', '.join(ALLOWED_COMPILERS.get(task.target, ()))})")
    for flag in task.build.flags:
        if (not SAFE_FLAG_RE.fullmatch(flag) or flag.startswith("-B")
                or any(word in flag for word in UNSAFE_FLAG_WORDS)):
            raise AttemptFailed(Outcome.UNSAFE, f"compiler flag {flag!r} is not allowed in a generated task")
    for flag in task.build.link:
        if not SAFE_LINK_RE.fullmatch(flag):
            raise AttemptFailed(Outcome.UNSAFE, f"link flag {flag!r} is not allowed in a generated task "
                                "(only -lNAME, -pthread, -fopenmp)")


def judge_check(check: InstanceCheck) -> tuple[Outcome, str, str]:
    """(outcome, one-line reason, detail) of a finished check. Kept means correct, faster and profiled: the
    diagnoses then exist and are recorded, whatever they name."""
    if check.profile_slow is not None and check.profile_fast is not None:
        return Outcome.KEPT, "", ""
    detail = check.verdict_reason[:MAX_FEEDBACK_DETAIL_CHARS]
    status = check.verdict_status
    if status == Status.TASK_INVALID and "does not build" in check.verdict_reason:
        return Outcome.BUILD_FAILED, f"the slow version does not build: {_build_error(check)}", detail
    if status in _STATUS_OUTCOME:
        outcome = _STATUS_OUTCOME[status]
        first = _build_error(check) if outcome == Outcome.BUILD_FAILED else first_line(check.verdict_reason)
        return outcome, f"{outcome.value}: {first}", detail
    if check.reason.startswith("profiling failed"):
        return Outcome.PROFILING_FAILED, check.reason, detail
    return Outcome.NOT_FASTER, check.reason or f"not faster: {status}", detail


def _build_error(check: InstanceCheck) -> str:
    """The compiler's first error line, from a verdict reason holding the build log."""
    lines = [line.strip() for line in check.verdict_reason.splitlines() if line.strip()]
    return next((line for line in lines if "error" in line.lower() and not line.startswith("build failed")),
                first_line(check.verdict_reason))


# ---- one pair -----------------------------------------------------------------------------------------------------


@dataclass
class _Context:
    config: SynthCommitsConfig
    client: ChatClient
    task_format: str
    examples: dict[str, Path]


def synthesise_pair(row: dict[str, Any], context: _Context) -> PairResult:
    """Up to `attempts` answers for one pair, each checked; stops at the first kept task."""
    result = PairResult(id=pair_id(row), provenance={k: row.get(k) for k in PROVENANCE_FIELDS},
                        model=context.config.model)
    history: list[tuple[str, str]] = []
    for number in range(1, context.config.attempts + 1):
        attempt = _attempt(row, result.id, number, history, context)
        result.attempts.append(attempt)
        result.outcome, result.reason = attempt.outcome, attempt.reason
        if attempt.outcome in (Outcome.KEPT, Outcome.ENDPOINT_ERROR):
            break
        history.append((attempt.answer, "\n".join(filter(None, [attempt.reason, attempt.detail]))))
    return result


def _attempt(row: dict[str, Any], identity: str, number: int, history: list[tuple[str, str]],
             context: _Context) -> Attempt:
    started = time.monotonic()
    attempt = Attempt(number=number, outcome="")
    try:
        attempt.answer = _ask(row, history, context)
        files = parse_answer(attempt.answer)
        directory = write_task_files(context.config.out / "tasks" / identity, files)
        task = load_generated_task(directory, files, str(row["target"]))
        check = _check(task, context.config.out / "work" / identity)
        attempt.check = check.to_dict()
        outcome, attempt.reason, attempt.detail = judge_check(check)
        attempt.outcome = outcome.value
    except AttemptFailed as failed:
        attempt.outcome, attempt.reason, attempt.detail = failed.outcome.value, failed.reason, failed.detail
    attempt.answer = attempt.answer[:MAX_STORED_ANSWER_CHARS]
    attempt.duration_s = round(time.monotonic() - started, 3)
    return attempt


def _ask(row: dict[str, Any], history: list[tuple[str, str]], context: _Context) -> str:
    messages = build_messages(row, context.examples[str(row["target"])], context.task_format, history)
    try:
        texts = context.client.chat(messages, max_tokens=context.config.max_tokens,
                                    temperature=context.config.temperature)
    except BackendError as exc:
        if REFUSED_REQUEST in str(exc):
            raise AttemptFailed(Outcome.ENDPOINT_ERROR, f"endpoint error: {exc}") from None
        raise
    if not texts or not texts[0].strip():
        raise AttemptFailed(Outcome.UNPARSABLE, "the model's answer is empty")
    return texts[0]


def _check(task: Any, work_dir: Path) -> InstanceCheck:
    try:
        return check_task(task, work_dir)
    except Exception as exc:  # noqa: BLE001 (a crash while checking one task ends its attempt, not the run)
        raise AttemptFailed(Outcome.CHECK_CRASHED, f"check crashed: {type(exc).__name__}: {exc}",
                            traceback.format_exc(limit=5)) from None


# ---- the run ------------------------------------------------------------------------------------------------------


def judged_path(out: Path, identity: str) -> Path:
    return out / "judged" / f"{identity}.json"


def run_commits(config: SynthCommitsConfig, *, on_result: Callable[[PairResult], None] | None = None
                ) -> CommitsResult:
    """Judge every chosen pair not judged before; then stats.json and pairs.parquet. A BackendError (endpoint
    down, unknown model) ends the run after writing them for the pairs already judged."""
    from perfforge.io import read_parquet

    config.validate()
    if not config.pairs.is_file():
        raise PerfforgeError(f"{config.pairs} does not exist; give the pairs.parquet written by perfforge mine")
    rows, skipped = select_pairs(read_parquet(config.pairs).to_list(), config)
    context = _Context(config=config, client=ChatClient(config.url, config.model, api_key=config.api_key(),
                                                        timeout_s=config.timeout_s),
                       task_format=format_doc(),
                       examples={t: load_example(t, config.example) for t in {str(r["target"]) for r in rows}})
    done, todo = _split_judged(config.out, rows)
    result = CommitsResult(results=done, stats={})
    try:
        _judge_all(todo, context, result, on_result)
    except KeyboardInterrupt:
        result.interrupted = True
    finally:
        _finish(config, result, skipped, len(rows))
    return result


def _split_judged(out: Path, rows: list[dict[str, Any]]) -> tuple[list[PairResult], list[dict[str, Any]]]:
    done, todo, seen = [], [], set()
    for row in rows:
        identity = pair_id(row)
        if identity in seen:
            continue
        seen.add(identity)
        path = judged_path(out, identity)
        if path.is_file():
            done.append(PairResult.from_dict(read_json(path)))
        else:
            todo.append(row)
    return done, todo


def _judge_all(todo: list[dict[str, Any]], context: _Context, result: CommitsResult,
               on_result: Callable[[PairResult], None] | None) -> None:
    from tqdm import tqdm

    with tqdm(total=len(todo), unit="pair", desc="synth commits",
              disable=not context.config.progress or not todo) as bar:
        for row in todo:
            judged = synthesise_pair(row, context)
            write_json(judged_path(context.config.out, judged.id), asdict(judged))
            result.results.append(judged)
            bar.update(1)
            if on_result:
                on_result(judged)


def _finish(config: SynthCommitsConfig, result: CommitsResult, skipped: Counter, selected: int) -> None:
    result.stats = commits_stats(result.results, skipped, selected)
    result.paths["stats"] = config.out / STATS_FILE
    write_json(result.paths["stats"], result.stats)
    result.paths["pairs"] = write_commit_records(config.out, [r for r in result.results if r.kept])


def commits_stats(results: list[PairResult], skipped: Counter, selected: int) -> dict[str, Any]:
    """Counts by outcome (of pairs and of attempts), per target, and the kept speedups."""
    kept = [r for r in results if r.kept]
    by_target: dict[str, Counter] = {}
    for r in results:
        by_target.setdefault(str(r.provenance.get("target")), Counter())[r.outcome] += 1
    return {
        "selected": selected, "skipped": dict(skipped), "judged": len(results), "kept": len(kept),
        "kept_needing_review": sum(1 for c in (r.check for r in kept) if c and c.verdict_status == Status.NEEDS_REVIEW),
        "kept_share": round(len(kept) / len(results), 4) if results else None,
        "outcomes": dict(Counter(r.outcome for r in results).most_common()),
        "attempts": sum(len(r.attempts) for r in results),
        "attempt_outcomes": dict(Counter(a.outcome for r in results for a in r.attempts).most_common()),
        "by_target": {t: dict(c) for t, c in sorted(by_target.items())},
        **speedup_range([c.speedup for c in (r.check for r in kept) if c and c.speedup]),
    }


def write_commit_records(out: Path, kept: list[PairResult]) -> Path:
    """pairs.parquet of the kept tasks: PairRecords with the mined pair's provenance."""
    from perfforge.records import FoundBy
    from synth.records import task_pair_records, write_records

    records = []
    for judged in sorted(kept, key=lambda r: r.id):
        check = judged.check
        if check is None:
            continue
        source = judged.provenance
        evidence = [f"synthesised from {source.get('repo')}@{str(source.get('commit'))[:12]} "
                    f"({source.get('path')}: {source.get('kernel_name')}) by model {judged.model}, "
                    f"attempt {len(judged.attempts)}",
                    f"verified speedup {check.speedup:.3f}x" if check.speedup else "correctness verified",
                    "diagnoses of the slow version: " + (", ".join(f"{n} ({s:.2f})" for n, s in check.diagnoses)
                                                         or "none"),
                    *([REVIEW_NOTE] if check.verdict_status == Status.NEEDS_REVIEW else []),
                    *(source.get("evidence") or [])]
        records += task_pair_records(
                out / "tasks" / judged.id, check, repo=str(source.get("repo") or ""),
                repo_url=str(source.get("repo_url") or ""), commit=str(source.get("commit") or ""),
                parent=str(source.get("parent") or ""), date=str(source.get("date") or ""),
                licence=str(source.get("licence") or "NOASSERTION"), found_by=FoundBy.SYNTHETIC_COMMIT,
                category=str(source.get("category") or "other"), message=str(source.get("message") or ""),
                evidence=evidence)
    return write_records(out / PAIRS_FILE, records)

