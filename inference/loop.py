"""`perfforge optimize TASK`: profile, diagnose, prompt a model, validate what it writes, feed back, keep the best.

One round: the prompt (perfforge.prompt: code, token-budgeted diagnosis, the bottleneck to target, what earlier
attempts measured) goes to the backend once for K candidates; each candidate is judged by profiling.validate in
its sandboxed subprocesses (generated code never runs any other way), and every improved one is profiled for
counter deltas and the belief check. Up to N rounds; the loop stops after the first round that proves an
improvement unless told to keep going. The best improved candidate (highest speedup; a result held for review
is never a win) becomes the patch.

Everything is kept on disk as it happens (perfforge.naming.RunLayout names every path), so an interrupted run
resumes where it stopped without asking the model again for a round it already answered:

    original/profile.json            the original's profile (the prompt's diagnosis)
    rounds/NN/request.json           the messages and sampling settings of round NN
    rounds/NN/completions.json       the backend's answers
    rounds/NN/cK/<file>              candidate K as a file; rounds/NN/cK/attempt.json its AttemptRecord
    rounds/NN/cK/profile.json        an improved candidate's profile
    bundles/NN/                      with --bundle: the work a GPU machine runs (profiling.bundle)
    attempts.parquet, report.json, report.md, patch.diff, optimized/<file>
"""

from __future__ import annotations

import difflib
import shutil
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from inference.backends import Backend
from inference.belief import cited_evidence, counter_deltas, deltas_text, judge_belief
from inference.config import OptimizeConfig
from perfforge import prompt
from perfforge.errors import PerfforgeError
from perfforge.io import read_json, write_json, write_text
from perfforge.llm_client import Completion
from perfforge.naming import ATTEMPT_FILE, PROFILE_FILE, RunLayout, candidate_name
from perfforge.records import AttemptRecord, Profile
from perfforge.task import Task
from perfforge.verdict import Status, Verdict
from profiling.judge import Judgement


@dataclass
class LoopState:
    """Everything the loop knows: the original's profile, the focus, and every attempt so far."""

    task: Task
    config: OptimizeConfig
    profile: Profile | None = None
    focus: str = ""
    attempts: list[AttemptRecord] = field(default_factory=list)
    pending_bundle: Path | None = None  # with --bundle: the bundle waiting to be run elsewhere

    @property
    def layout(self) -> RunLayout:
        return RunLayout(self.config.out)

    @property
    def best(self) -> AttemptRecord | None:
        wins = [a for a in self.attempts if Status(a.status) is Status.IMPROVED and a.speedup is not None]
        return max(wins, key=lambda a: a.speedup or 0.0) if wins else None


# Judges a round's candidates: (task, [(name, candidate file)], work dir, whether to profile the original) ->
# ({name: Judgement}, the original's profile if asked for). None when the work was handed elsewhere (--bundle).
# (task, candidates, bundle directory, profile the original?, on_judged=None) -> (judgements, profile), or None
# while a bundle is pending; a judge that judges here calls on_judged(name, judgement) as each candidate is done.
Judge = Callable[..., tuple[dict[str, Judgement], Profile | None] | None]


def optimize(task: Task, config: OptimizeConfig, make_backend: Callable[[], Backend], judge: Judge,
             log: Callable[[str], None] = print) -> LoopState:
    """Run (or resume) the loop on `task`; the state says what was found, or which bundle is pending."""
    state = LoopState(task, config)
    started: list[Backend] = []  # made on first need: a resumed run whose rounds are all answered needs none

    def backend() -> Backend:
        if not started:
            started.append(make_backend())
        return started[0]

    if not _load_profile(state, judge, log):
        return state
    state.focus = choose_focus(state.profile, config.formula, log)
    state.attempts = load_attempts(state.layout)
    try:
        for number in range(1, config.rounds + 1):
            directory = state.layout.round_dir(number)
            completions, request = _round_answers(state, number, directory, backend, log)
            if not _judge_round(state, number, directory, completions, request, judge, log):
                return state
            if state.best is not None and not config.keep_going:
                break
    finally:
        for model in started:
            model.close()
    return state


def _load_profile(state: LoopState, judge: Judge, log: Callable[[str], None]) -> bool:
    """The original's profile, made (or imported from a bundle) on first use. False while a bundle is pending."""
    path = state.layout.original_profile
    if path.is_file():
        state.profile = Profile.from_dict(read_json(path))
        return True
    bundle = state.layout.bundle_dir(0)
    log(f"profiling the original {state.task.source} ..." if not state.config.bundle else
        f"the original's profile: from {bundle}")
    result = judge(state.task, [], bundle, True)
    if result is None:
        state.pending_bundle = bundle
        return False
    _, profile = result
    if profile is None:
        raise PerfforgeError(f"profiling the original of task {state.task.name} gave no profile")
    write_json(path, profile.to_dict())
    state.profile = profile
    return True


def choose_focus(profile: Profile | None, formula: str | None, log: Callable[[str], None]) -> str:
    """The bottleneck to target: --formula when given, else the most severe diagnosis (empty when none)."""
    if not formula:
        return prompt.default_focus(profile)
    names = [d.name for d in profile.diagnoses] if profile else []
    if formula not in names:
        log(f"note: {formula} is not among the original's diagnoses ({', '.join(names) or 'none'}); targeting it "
            "as asked")
    return formula


def _round_answers(state: LoopState, number: int, directory: Path, backend: Callable[[], Backend],
                   log: Callable[[str], None] = print) -> tuple[list[Completion], dict[str, Any]]:
    """The round's completions and its request (messages, sampling settings, model): read back when already
    asked for, else asked now."""
    answers_path = directory / "completions.json"
    if answers_path.is_file():
        return [Completion(**c) for c in read_json(answers_path)], read_json(directory / "request.json")
    model = backend()
    config = state.config
    messages = round_messages(state, model.count_tokens())
    constrained = config.constrain and model.constrains()
    request = {"messages": messages, "n": config.candidates, "seed": config.seed + number - 1,
               "temperature": config.temperature, "max_tokens": config.max_tokens, "model": model.describe(),
               "constrained": constrained}
    write_json(directory / "request.json", request)
    # Generation takes from seconds to minutes and prints nothing of its own: say what is being waited for.
    log(f"round {number}: generating {config.candidates} candidate(s) of up to {config.max_tokens} tokens with "
        f"{model.describe()}" + (", the answer format enforced" if constrained else "") + " ...")
    completions = model.generate(messages, n=config.candidates, max_tokens=config.max_tokens,
                                 temperature=config.temperature, seed=request["seed"],
                                 fence=prompt.FENCE_LANGUAGE.get(state.task.language, "") if constrained else None)
    write_json(answers_path, [asdict(c) for c in completions])
    return completions, request


def round_messages(state: LoopState, count_tokens: Callable[[str], int] | None = None) -> list[dict[str, str]]:
    """The round's prompt: the best proven version so far (or the original) with the feedback of every attempt."""
    task, best = state.task, state.best
    code = best.code if best is not None else task.source_path.read_text(encoding="utf-8")
    shown = prompt.CodeUnderTest(target=task.target, language=task.language, file_name=task.source,
                                 kernel=task.kernel, code=code)
    earlier = [prompt.EarlierAttempt(label=f"round {a.round}, candidate {a.candidate}", status=a.status,
                                     reason=a.reason, hypothesis=a.hypothesis,
                                     counter_deltas=deltas_text(a.counter_deltas)) for a in state.attempts]
    note = (f"The file below is the best proven version so far ({best.speedup:.2f}x faster than the original); "
            "improve it further." if best is not None else "")
    return prompt.build_messages(shown, state.profile, sources=state.config.sources,
                                 token_budget=state.config.token_budget, focus=state.focus, earlier=earlier,
                                 note=note, count_tokens=count_tokens)


def _judge_round(state: LoopState, number: int, directory: Path, completions: list[Completion],
                 request: dict[str, Any], judge: Judge, log: Callable[[str], None]) -> bool:
    """Judge every candidate of the round that has no attempt yet. False while a bundle is pending."""
    task = state.task
    waiting: list[tuple[str, Path]] = []
    answers = {}
    for index, completion in enumerate(completions, start=1):
        name = candidate_name(index)
        answer = prompt.parse_answer(completion.text, language=task.language)
        answers[name] = (index, completion, answer)
        if (directory / name / ATTEMPT_FILE).is_file():
            continue
        if not answer.ok:
            _record(state, directory / name, number, index, completion, answer, request,
                    Judgement(Verdict.unparsable(task.name, task.target, f"{answer.problem}; answer with the whole "
                                                                         "file in one fenced code block")), log)
            continue
        path = directory / name / task.source_path.name
        write_text(path, answer.code)
        waiting.append((name, path))
    if waiting:
        recorded: set[str] = set()

        def record(name: str, judgement: Judgement) -> None:  # as soon as it is judged: an interruption keeps it
            index, completion, answer = answers[name]
            _record(state, directory / name, number, index, completion, answer, request, judgement, log)
            recorded.add(name)

        result = judge(task, waiting, state.layout.bundle_dir(number), False, on_judged=record)
        if result is None:
            state.pending_bundle = state.layout.bundle_dir(number)
            return False
        judgements, _ = result
        for name, _path in waiting:
            if name not in recorded:
                record(name, judgements[name])
    state.attempts = load_attempts(state.layout)
    return True


def _record(state: LoopState, directory: Path, number: int, index: int, completion: Completion,
            answer: prompt.Answer, request: dict[str, Any], judgement: Judgement,
            log: Callable[[str], None]) -> None:
    attempt = make_attempt(state, number, index, completion, answer, request, judgement)
    if judgement.profile is not None:  # before attempt.json, whose presence marks the candidate as judged
        write_json(directory / PROFILE_FILE, judgement.profile.to_dict())
    write_json(directory / ATTEMPT_FILE, asdict(attempt))
    speed = f" {attempt.speedup:.3f}x" if attempt.speedup is not None else ""
    log(f"round {number} candidate {index}: {attempt.status}{speed}: {_first_line(attempt.reason)}")


def make_attempt(state: LoopState, number: int, index: int, completion: Completion, answer: prompt.Answer,
                 request: dict[str, Any], judgement: Judgement) -> AttemptRecord:
    """The attempt record of one judged candidate (of the round's `request`), with its belief trace."""
    task, verdict, messages = state.task, judgement.verdict, request["messages"]
    candidate_profile = judgement.profile
    belief, belief_detail = judge_belief(verdict.status, focus=state.focus, original=state.profile,
                                         candidate=candidate_profile)
    ci = verdict.speedup_ci or (None, None)
    return AttemptRecord(
        task=task.name, target=task.target, language=task.language, kernel=task.kernel, pattern=task.pattern or "",
        bottleneck=state.focus, model=request.get("model", ""), prompt_version=prompt.PROMPT_VERSION,
        sources=",".join(state.config.sources), system=messages[0]["content"] if messages else "",
        prompt=messages[-1]["content"] if messages else "", completion=completion.text, code=answer.code,
        round=number, candidate=index, prompt_tokens=completion.prompt_tokens,
        completion_tokens=completion.completion_tokens, finish_reason=completion.finish_reason,
        status=verdict.status.value, reason=verdict.reason, speedup=verdict.speedup, speedup_ci_low=ci[0],
        speedup_ci_high=ci[1], baseline_ms=verdict.baseline_timing.median_ms if verdict.baseline_timing else None,
        candidate_ms=verdict.candidate_timing.median_ms if verdict.candidate_timing else None,
        hypothesis=answer.hypothesis, evidence=answer.evidence,
        cited=cited_evidence(f"{answer.hypothesis}\n{answer.evidence}", state.profile), belief=belief.value,
        belief_detail=belief_detail,
        counter_deltas=counter_deltas(state.profile, candidate_profile) if state.profile and candidate_profile
        else [],
        diagnoses_after=[f"{d.name} ({d.severity:.2f})" for d in candidate_profile.diagnoses]
        if candidate_profile else [],
        machine=verdict.machine)


def load_attempts(layout: RunLayout) -> list[AttemptRecord]:
    """Every attempt recorded in the run, in round and candidate order."""
    return [AttemptRecord.from_dict(read_json(p)) for p in layout.attempt_files()]


def unified_patch(task: Task, code: str) -> str:
    """The candidate as a unified diff against the task's original file (paths relative to the task)."""
    original = task.source_path.read_text(encoding="utf-8")
    return "".join(difflib.unified_diff(original.splitlines(keepends=True), code.splitlines(keepends=True),
                                        fromfile=f"a/{task.source}", tofile=f"b/{task.source}"))


def write_outcome(state: LoopState) -> dict[str, Path]:
    """The best candidate's patch and file (when there is one) and the attempts as a dataset."""
    from perfforge.io import write_parquet
    from perfforge.records import ATTEMPT_FEATURES, as_row

    layout = state.layout
    paths = {"attempts": layout.attempts}
    write_parquet(paths["attempts"], [as_row(a) for a in state.attempts], ATTEMPT_FEATURES)
    shutil.rmtree(layout.optimized_dir, ignore_errors=True)
    layout.patch.unlink(missing_ok=True)
    best = state.best
    if best is not None:
        paths["patch"] = layout.patch
        write_text(paths["patch"], unified_patch(state.task, best.code))
        paths["optimized"] = layout.optimized_dir / state.task.source_path.name
        write_text(paths["optimized"], best.code)
    return paths


def _first_line(text: str) -> str:
    stripped = text.strip()
    return stripped.splitlines()[0] if stripped else ""
