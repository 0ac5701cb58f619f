"""The prompt format: one module, used by the optimisation loop (inference/) and by training (training/).

A prompt is a chat: a system message that states the job and the answer format, and a user message that holds
the task (target, language, file, kernel), the token-budgeted diagnosis (perfforge.summary, with the chosen
insight sources), the bottleneck to target, the code, and, from the second round on, what the pipeline measured
of earlier attempts. The answer (a model's completion, or a training example's target) is:

    Hypothesis: <what the edit changes and why it will be faster>
    Evidence: <the diagnosis lines, counters or hot lines it relies on>
    ```<language>
    <the whole file, edited>
    ```

`parse_answer` reads it back leniently (small models wrap lines in markdown, omit a label, or answer with code
only) and says precisely what was missing when no code can be read. Everything here is deterministic: the same
inputs give byte-identical prompts, so prompts can be hashed, cached and compared across runs.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

import perfforge.records as records
from perfforge.summary import DEFAULT_TOKEN_BUDGET, estimate_tokens, parse_sources, summarize

# Bump when the text of prompts changes: attempt records carry it, and training data built with one version
# should not be mixed silently with another.
PROMPT_VERSION = "1"

# Markdown fence names per task language (models answer best when the fence names the language).
FENCE_LANGUAGE = {"c": "c", "cpp": "cpp", "cuda": "cuda", "hip": "cpp", "python": "python"}
# Characters of an earlier attempt's failure shown in feedback: a compiler's first errors or the first mismatch
# are what the model can act on; later lines mostly cascade from them.
MAX_FEEDBACK_REASON_CHARS = 600
# Earlier attempts listed in feedback, most recent first: enough to show what failed and how, small enough to
# leave the context for the code.
MAX_FEEDBACK_ATTEMPTS = 6
MAX_LABEL_CHARS = 400  # a hypothesis or evidence line kept from an answer

SYSTEM_PROMPT = (
    "You are a performance engineer. You rewrite one source file so that its kernel runs faster on the target "
    "hardware while producing the same outputs. The profile and diagnosis below were measured; use them. Every "
    "rewrite you propose is compiled, checked against the original on fresh random inputs and timed, so keep "
    "the file's interface (function names, signatures, headers) unchanged and do not call the original or a "
    "library that does the whole job.\n"
    "Answer in exactly this form:\n"
    "Hypothesis: <one sentence: what you change and why it removes the bottleneck>\n"
    "Evidence: <the diagnosis, counter or hot line that shows the bottleneck>\n"
    "then the whole edited file in one fenced code block."
)

# A block opens with ``` (and an optional language) and closes at a line that starts with ```; a block never
# closed (the answer was cut by max_tokens) runs to the end of the text.
# A fence opens and closes at the start of a line (indentation allowed): ``` inside a sentence is no block.
_FENCE_RE = re.compile(r"^[ \t]*```[ \t]*([A-Za-z0-9_+.-]*)[^\n]*\n(.*?)(^[ \t]*```|\Z)", re.DOTALL | re.MULTILINE)
# Blocks in these languages are never the kernel's file: build commands, logs, data.
_NOT_CODE_FENCES = frozenset({"bash", "sh", "shell", "console", "text", "txt", "json", "yaml", "make", "makefile",
                              "cmake", "diff", "output", "log"})
# A block shorter than this share of the longest is a snippet beside the file, not the file.
_SNIPPET_SHARE = 0.5
_LABEL_RE = {
    "hypothesis": re.compile(r"^[\s>*#_-]*hypothesis[\s*_]*[:\-][\s*_]*(.+)$", re.IGNORECASE | re.MULTILINE),
    "evidence": re.compile(r"^[\s>*#_-]*evidence[\s*_]*[:\-][\s*_]*(.+)$", re.IGNORECASE | re.MULTILINE),
}


@dataclass(frozen=True)
class CodeUnderTest:
    """What a prompt shows of the code: the file the model may edit and the kernel in it."""

    target: str  # cuda, triton, cpu, hip
    language: str  # c, cpp, cuda, python, hip
    file_name: str
    kernel: str
    code: str


@dataclass(frozen=True)
class EarlierAttempt:
    """One earlier candidate as feedback shows it: its claim and what the pipeline measured."""

    label: str  # e.g. "round 1, candidate 2"
    status: str  # perfforge.verdict.Status value, or "unparsable"
    reason: str  # the verdict's reason (compiler errors, first mismatch, timing with spread)
    hypothesis: str = ""
    counter_deltas: str = ""  # "DLmr 3.1e6 -> 2.0e5 (-94%)", when the candidate was profiled


@dataclass(frozen=True)
class Answer:
    """A completion read back: the code (empty when none could be read) and the model's stated belief."""

    code: str
    hypothesis: str
    evidence: str
    problem: str = ""  # why no code was read; empty when code was read

    @property
    def ok(self) -> bool:
        return bool(self.code)


def default_focus(profile: records.Profile | None) -> str:
    """The bottleneck a prompt targets unless told otherwise: the most severe diagnosis (empty when none)."""
    return profile.diagnoses[0].name if profile and profile.diagnoses else ""


def build_messages(code: CodeUnderTest, profile: records.Profile | None, *, sources: Iterable[str] | str = ("all",),
                   token_budget: int = DEFAULT_TOKEN_BUDGET, focus: str = "",
                   earlier: Sequence[EarlierAttempt] = (), note: str = "",
                   count_tokens: Callable[[str], int] | None = None) -> list[dict[str, str]]:
    """The chat messages of one prompt: system, then user. `focus` names the bottleneck to target; `note` is a
    line said just before the code (e.g. that it is the best proven version so far)."""
    return [{"role": "system", "content": SYSTEM_PROMPT},
            {"role": "user", "content": user_message(code, profile, sources=sources, token_budget=token_budget,
                                                     focus=focus, earlier=earlier, note=note,
                                                     count_tokens=count_tokens)}]


def user_message(code: CodeUnderTest, profile: records.Profile | None, *, sources: Iterable[str] | str = ("all",),
                 token_budget: int = DEFAULT_TOKEN_BUDGET, focus: str = "", earlier: Sequence[EarlierAttempt] = (),
                 note: str = "", count_tokens: Callable[[str], int] | None = None) -> str:
    parts = [f"Target: {code.target} ({code.language}). File: {code.file_name}. Kernel: {code.kernel}."]
    if profile is not None:
        parse_sources(sources)  # an unknown source is an error even when the budget would drop it
        parts.append("Profile and diagnosis:\n" + summarize(profile, sources=sources, token_budget=token_budget,
                                                            count_tokens=count_tokens))
    if focus:
        parts.append(f"Target this bottleneck: {focus}.")
    if earlier:
        parts.append(feedback_text(earlier))
    if note:
        parts.append(note)
    fence = FENCE_LANGUAGE.get(code.language, "")
    parts.append(f"The file {code.file_name}:\n```{fence}\n{code.code.rstrip()}\n```")
    return "\n\n".join(parts)


def feedback_text(earlier: Sequence[EarlierAttempt]) -> str:
    """What the pipeline measured of earlier attempts, most recent first (at most MAX_FEEDBACK_ATTEMPTS)."""
    lines = ["Earlier attempts, as the pipeline measured them (do not repeat a failure):"]
    for attempt in list(earlier)[::-1][:MAX_FEEDBACK_ATTEMPTS]:
        lines.append(f"- {attempt.label}: {attempt.status}")
        if attempt.hypothesis:
            lines.append(f"  claimed: {_clip(attempt.hypothesis, MAX_LABEL_CHARS)}")
        if attempt.reason:
            lines.append("  measured: " + _clip(" ".join(attempt.reason.split()), MAX_FEEDBACK_REASON_CHARS))
        if attempt.counter_deltas:
            lines.append(f"  counters: {attempt.counter_deltas}")
    return "\n".join(lines)


def completion_text(code: str, *, language: str, hypothesis: str, evidence: str) -> str:
    """An answer in the format the system prompt asks for: what training's completions hold."""
    fence = FENCE_LANGUAGE.get(language, "")
    return (f"Hypothesis: {' '.join(hypothesis.split())}\nEvidence: {' '.join(evidence.split())}\n"
            f"```{fence}\n{code.rstrip()}\n```")


def parse_answer(text: str, *, language: str = "") -> Answer:
    """The code and stated belief of a completion. The code is the last fenced block that is not a snippet:
    blocks of build commands or output are skipped, and so is a block under half the longest one's length (a
    short snippet before or after the whole file); the last is taken because a model that echoes the original
    first gives its version after it. A block left open by a length cut is refused, since half a file would
    only fail to compile."""
    hypothesis, evidence = (_label(text, name) for name in ("hypothesis", "evidence"))
    blocks = [(m.group(1).lower(), m.group(2), bool(m.group(3))) for m in _FENCE_RE.finditer(text)]
    blocks = [b for b in blocks if b[0] not in _NOT_CODE_FENCES] or blocks
    if not blocks:
        return Answer("", hypothesis, evidence, "no fenced code block (```) in the answer")
    longest = max(len(block[1]) for block in blocks)
    _, code, closed = [b for b in blocks if len(b[1]) >= _SNIPPET_SHARE * longest][-1]
    if not closed:
        return Answer("", hypothesis, evidence, "the code block is not closed (the answer was cut off; shorten it)")
    if not code.strip():
        return Answer("", hypothesis, evidence, "the code block is empty")
    return Answer(code.rstrip() + "\n", hypothesis, evidence)


def prompt_tokens(messages: Sequence[dict[str, str]], count_tokens: Callable[[str], int] | None = None) -> int:
    """The prompt's size in tokens (a real tokenizer's count when given, else summary.estimate_tokens)."""
    count = count_tokens or estimate_tokens
    return sum(count(m["content"]) for m in messages)


def _label(text: str, name: str) -> str:
    match = _LABEL_RE[name].search(text)
    return _clip(match.group(1).strip().strip("*_ "), MAX_LABEL_CHARS) if match else ""


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[:limit - 3] + "..."
