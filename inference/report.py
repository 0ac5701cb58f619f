"""The optimisation report: report.json for tools and report.md for people (and for a pull request's body).

Both say what was targeted and why (the diagnosis), every attempt with its verdict, the best speedup with its
spread, the counter deltas, and the belief trace: each candidate's stated hypothesis, the evidence it cited,
and whether the measurement confirmed it.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import asdict
from pathlib import Path
from typing import Any

from inference.belief import deltas_text
from inference.loop import LoopState
from perfforge.io import write_json, write_text
from perfforge.records import AttemptRecord
from perfforge.summary import summarize
from perfforge.verdict import Status

MAX_REASON_CHARS = 400  # of a verdict's reason in the report's attempt list (the attempt files keep it whole)
MAX_TABLE_TEXT = 90  # characters of a hypothesis or reason in the Markdown table


def report_data(state: LoopState, paths: dict[str, Path]) -> dict[str, Any]:
    task, config, best = state.task, state.config, state.best
    attempts = state.attempts
    statuses = Counter(a.status for a in attempts)
    return {
        "task": task.name, "target": task.target, "kernel": task.kernel, "source": task.source,
        "model": attempts[0].model if attempts else "",
        "settings": {"candidates": config.candidates, "rounds": config.rounds, "sources": config.sources,
                     "token_budget": config.token_budget, "temperature": config.temperature, "seed": config.seed,
                     "formula": config.formula, "max_tokens": config.max_tokens},
        "focus": state.focus,
        "diagnoses": [{"name": d.name, "severity": d.severity, "evidence": d.evidence, "hint": d.hint}
                      for d in (state.profile.diagnoses if state.profile else [])],
        "original_timing": asdict(state.profile.timing) if state.profile else None,
        "outcome": outcome(state),
        "best": _attempt_entry(best) if best is not None else None,
        "held_for_review": [_attempt_entry(a) for a in attempts if Status(a.status) is Status.NEEDS_REVIEW],
        "attempts": [_attempt_entry(a) for a in attempts],
        "counts": dict(sorted(statuses.items())),
        "beliefs": dict(sorted(Counter(a.belief for a in attempts).items())),
        "rounds_run": max((a.round for a in attempts), default=0),
        # the K candidates of a round share one prompt: count it once per round
        "tokens": {"prompt": sum({a.round: a.prompt_tokens for a in attempts}.values()),
                   "completion": sum(a.completion_tokens for a in attempts)},
        "paths": {name: str(path) for name, path in paths.items()},
    }


def outcome(state: LoopState) -> str:
    if state.pending_bundle is not None:
        return "pending_bundle"
    return "improved" if state.best is not None else "no_improvement"


def _attempt_entry(a: AttemptRecord) -> dict[str, Any]:
    return {"round": a.round, "candidate": a.candidate, "status": a.status, "speedup": a.speedup,
            "speedup_ci": [a.speedup_ci_low, a.speedup_ci_high] if a.speedup_ci_low is not None else None,
            "baseline_ms": a.baseline_ms, "candidate_ms": a.candidate_ms,
            "reason": a.reason[:MAX_REASON_CHARS], "hypothesis": a.hypothesis, "evidence": a.evidence,
            "cited": a.cited, "belief": a.belief, "belief_detail": a.belief_detail,
            "counter_deltas": [asdict(d) for d in a.counter_deltas], "diagnoses_after": a.diagnoses_after,
            "finish_reason": a.finish_reason, "completion_tokens": a.completion_tokens}


def write_report(state: LoopState, paths: dict[str, Path]) -> dict[str, Path]:
    data = report_data(state, paths)
    written = {"report_json": state.layout.report_json, "report_md": state.layout.report_md}
    write_json(written["report_json"], data)
    write_text(written["report_md"], markdown(state, data, paths))
    return written


def headline(state: LoopState) -> str:
    best = state.best
    n = len(state.attempts)
    if best is None:
        return f"{state.task.name}: no proven improvement in {n} candidate(s)"
    return (f"{state.task.name}: {best.speedup:.3f}x [{best.speedup_ci_low:.3f}, {best.speedup_ci_high:.3f}] "
            f"({best.baseline_ms:.4g} ms -> {best.candidate_ms:.4g} ms), round {best.round} candidate "
            f"{best.candidate} of {n} candidate(s)")


def markdown(state: LoopState, data: dict[str, Any], paths: dict[str, Path]) -> str:
    lines = [f"# perfforge optimize: {state.task.name}", "", f"**{headline(state)}**", "",
             f"Target {state.task.target}, kernel `{state.task.kernel}` in `{state.task.source}`; model "
             f"`{data['model']}`; {data['settings']['candidates']} candidate(s) per round, up to "
             f"{data['settings']['rounds']} round(s), insight sources {', '.join(state.config.sources)}.", ""]
    lines += ["## Diagnosis of the original", ""]
    if state.profile is not None:
        summary = summarize(state.profile, sources=state.config.sources, token_budget=state.config.token_budget)
        lines += ["```text", summary, "```", ""]
    lines += [f"Targeted bottleneck: **{state.focus or 'none diagnosed'}**.", ""]
    lines += _attempt_table(state)
    lines += _belief_section(state.attempts)
    best = state.best
    if best is not None:
        lines += ["## Best candidate", "", f"Round {best.round}, candidate {best.candidate}: "
                  f"{best.reason.splitlines()[0] if best.reason else ''}", ""]
        if best.counter_deltas:
            lines += ["Counter deltas (original -> candidate): " + deltas_text(best.counter_deltas), ""]
        if "patch" in paths:
            lines += ["```diff", paths["patch"].read_text(encoding="utf-8").rstrip(), "```", ""]
    held = data["held_for_review"]
    if held:
        lines += [f"{len(held)} candidate(s) were faster beyond plausibility and are held for review, not counted.",
                  ""]
    return "\n".join(lines) + "\n"


def _attempt_table(state: LoopState) -> list[str]:
    """One row per candidate: a link to its code (none for an answer with no code), the verdict's first line (for a
    failed build, the compiler's first error) and the tokens it took."""
    lines = ["## Attempts", "", "| round | cand. | code | verdict | speedup [95% CI] | belief | hypothesis | "
             "measured | tokens |", "|---|---|---|---|---|---|---|---|---|"]
    for a in state.attempts:
        speed = (f"{a.speedup:.3f}x [{a.speedup_ci_low:.3f}, {a.speedup_ci_high:.3f}]"
                 if a.speedup is not None and a.speedup_ci_low is not None else "")
        code = state.layout.candidate_dir(a.round, a.candidate) / state.task.source_path.name
        link = f"[{code.name}]({code.relative_to(state.layout.out)})" if a.code and code.is_file() else ""
        lines.append(f"| {a.round} | {a.candidate} | {link} | {a.status} | {speed} | {a.belief} | "
                     f"{_cell(a.hypothesis)} | {_cell(a.reason)} | {a.completion_tokens} |")
    return lines + [""]


def _belief_section(attempts: list[AttemptRecord]) -> list[str]:
    lines = ["## Belief trace", ""]
    for a in attempts:
        claim = a.hypothesis or "(no hypothesis stated)"
        cited = ", ".join(a.cited) if a.cited else "nothing from the diagnosis"
        lines.append(f"- round {a.round} candidate {a.candidate}: claimed \"{_cell(claim)}\"; cited {cited}; "
                     f"**{a.belief}**: {a.belief_detail}")
    return lines + [""]


def _cell(text: str) -> str:
    flat = " ".join(text.split()).replace("|", "\\|")
    return flat if len(flat) <= MAX_TABLE_TEXT else flat[:MAX_TABLE_TEXT - 3] + "..."
