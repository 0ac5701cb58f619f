"""Answers that always parse: the loop's answer format enforced token by token while a model generates.

The loop reads an answer (perfforge/prompt.py, parse_answer) as

    Hypothesis: <one line>
    Evidence: <one line>
    ```<fence>
    <the whole file>
    ```

Small models often miss it: prose without a fence, a block opened and never closed before max_tokens, a stop
inside the block (34 of 56 SmolLM2 answers could not be read, docs/eval_cpu.md). AnswerFormat is that layout
as segments, and FormatProcessor (a transformers LogitsProcessor) walks each sampled sequence through them:

    forced "Hypothesis: " -> free line -> forced "Evidence: " -> free line -> forced "```<fence>\\n"
      -> free code, which ends when it writes "\\n```" (or, once only room for it is left, "\\n```" is forced)
      -> the end-of-sequence token

In a forced segment every token but the next one of the segment is masked; in a free one the stop tokens are
(a line ends at its newline, or is cut by a forced newline after LABEL_TOKENS, or sooner when the budget
needs the room for what must follow). What the model writes inside
the block is its own: the format makes an answer readable, not right, so a length cut now reads as code that
does not build rather than as no answer. The model's own sampling (temperature, seed) is unchanged.

A CUDA block may not close before its code holds what every CUDA answer must (REQUIRED_CODE: a `__global__`
kernel and a launch, the judge's static check no_device_kernel): until then no token with a backtick is
allowed, so the model writes on rather than ending (30 of 48 CUDA answers of SmolLM2, base and fine-tuned, were
rejected for lacking one: docs/eval_cuda.md). Nothing that check would accept is ever refused by it; the budget's
forced fence still ends a block that never gets there.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

# Most tokens a Hypothesis or Evidence line may take before its newline is forced: the prompt asks for one line
# each, and a line that runs on eats the file's budget.
LABEL_TOKENS = 60
CLOSING_FENCE = "\n```"
# Per fence: groups of texts the code must hold before its block may close, one text of each group (the judge's
# static check no_device_kernel refuses a CUDA candidate without a __global__ kernel and a launch).
REQUIRED_CODE: dict[str, tuple[tuple[str, ...], ...]] = {
    "cuda": (("__global__",), ("<<<", "cudaLaunch", "hipLaunch")),
}


class Kind(Enum):
    FORCED = "forced"  # exactly these tokens
    LINE = "line"  # free text up to and including a newline (at most LABEL_TOKENS)
    CODE = "code"  # free text up to the closing fence, which is forced when the budget runs out
    END = "end"  # the stop token


@dataclass(frozen=True)
class Segment:
    kind: Kind
    token_ids: tuple[int, ...] = ()  # FORCED: the tokens


@dataclass(frozen=True)
class AnswerFormat:
    """The answer's segments for one tokenizer and fence language."""

    segments: tuple[Segment, ...]
    newline_id: int
    closing_ids: tuple[int, ...]
    stop_ids: tuple[int, ...]  # every id that ends generation (eos, the chat template's end of turn)
    # ids other than the newline whose text holds a newline ("\n    "): a line may end only at the newline itself,
    # so the label after it starts a line
    other_newline_ids: tuple[int, ...] = ()
    required: tuple[tuple[str, ...], ...] = ()  # REQUIRED_CODE of the fence
    backtick_ids: tuple[int, ...] = ()  # ids whose text holds a backtick: masked in the code until it has `required`

    def lacks(self, code: str) -> bool:
        """Whether `code` still misses one of the required groups."""
        return any(not any(text in code for text in group) for group in self.required)

    @classmethod
    def for_tokenizer(cls, tokenizer: Any, fence: str, stop_ids: Sequence[int]) -> AnswerFormat:
        def ids(text: str) -> tuple[int, ...]:
            return tuple(tokenizer.encode(text, add_special_tokens=False))

        newline = ids("\n")
        if len(newline) != 1:
            raise ValueError(f"the tokenizer writes a newline as {len(newline)} tokens; the answer format needs one")
        segments = (Segment(Kind.FORCED, ids("Hypothesis:")), Segment(Kind.LINE),
                    Segment(Kind.FORCED, ids("Evidence:")), Segment(Kind.LINE),
                    Segment(Kind.FORCED, ids(f"```{fence}\n")), Segment(Kind.CODE), Segment(Kind.END))
        texts = [tokenizer.decode([i]) for i in range(len(tokenizer))]
        others = tuple(i for i, text in enumerate(texts) if i != newline[0] and "\n" in text)
        required = REQUIRED_CODE.get(fence, ())
        backticks = tuple(i for i, text in enumerate(texts) if "`" in text) if required else ()
        return cls(segments, newline[0], ids(CLOSING_FENCE), tuple(dict.fromkeys(stop_ids)), others, required,
                   backticks)


@dataclass
class _Walk:
    """Where one sequence is in its format."""

    format: AnswerFormat
    budget: int  # the sequence's max_new_tokens
    segment: int = 0
    taken: list[int] = field(default_factory=list)  # tokens of the current segment so far
    closing: int = -1  # CODE: how many closing-fence tokens were forced (-1: not closing)
    code: str = ""  # CODE: the text written so far, while the format requires something of it


class FormatProcessor:
    """A transformers LogitsProcessor that keeps the sequences of a generate() call in their answer formats.

    formats: one for every row, or a list with a row's own (None: that row is free, as when a batch mixes
    constrained and free requests); prompt_tokens: the (padded) prompt's length, where every row's new tokens
    start; max_new_tokens: the budget, one for all or one per row, so the closing fence is forced while there is
    room for it."""

    def __init__(self, formats: AnswerFormat | Sequence[AnswerFormat | None], tokenizer: Any, *, prompt_tokens: int,
                 max_new_tokens: int | Sequence[int]) -> None:
        self.formats, self.tokenizer = formats, tokenizer
        self.prompt_tokens, self.max_new_tokens = prompt_tokens, max_new_tokens
        self.walks: dict[int, _Walk | None] = {}

    def _walk(self, row: int) -> _Walk | None:
        if row not in self.walks:
            answer_format = self.formats if isinstance(self.formats, AnswerFormat) else self.formats[row]
            budget = self.max_new_tokens if isinstance(self.max_new_tokens, int) else self.max_new_tokens[row]
            self.walks[row] = None if answer_format is None else _Walk(answer_format, budget)
        return self.walks[row]

    def __call__(self, input_ids: Any, scores: Any) -> Any:
        generated = input_ids.shape[1] - self.prompt_tokens
        for row in range(input_ids.shape[0]):
            walk = self._walk(row)
            if walk is None:
                continue
            if generated > 0:
                self._advance(walk, int(input_ids[row, -1]))
            allowed = self._next(walk, walk.budget - generated)
            if allowed is not None:
                keep = scores[row, allowed].clone()
                scores[row, :] = float("-inf")
                scores[row, allowed] = keep
            else:
                scores[row, list(walk.format.stop_ids)] = float("-inf")
                kind = self._segment(walk).kind
                if kind is Kind.LINE and walk.format.other_newline_ids:
                    scores[row, list(walk.format.other_newline_ids)] = float("-inf")
                elif kind is Kind.CODE and walk.format.required and walk.format.lacks(walk.code):
                    scores[row, list(walk.format.backtick_ids)] = float("-inf")  # no closing fence yet
        return scores

    # --- one sequence

    def _reserve_after(self, walk: _Walk) -> int:
        """Tokens the segments after the current one need at the least (a line its newline, the code a token and
        its closing fence, the end its stop token)."""
        need = {Kind.LINE: 1, Kind.CODE: 1 + len(walk.format.closing_ids), Kind.END: 1}
        return sum(len(s.token_ids) if s.kind is Kind.FORCED else need[s.kind]
                   for s in walk.format.segments[walk.segment + 1:])

    def _segment(self, walk: _Walk) -> Segment:
        return walk.format.segments[min(walk.segment, len(walk.format.segments) - 1)]

    def _advance(self, walk: _Walk, token: int) -> None:
        """Take the token the sequence just got, and move on where its segment is complete."""
        segment = self._segment(walk)
        if segment.kind is Kind.END:
            return
        walk.taken.append(token)
        if segment.kind is Kind.FORCED:
            done = len(walk.taken) >= len(segment.token_ids)
        elif segment.kind is Kind.LINE:
            done = token == walk.format.newline_id
        else:  # CODE
            if walk.closing >= 0:
                walk.closing += 1
                done = walk.closing >= len(walk.format.closing_ids)
            else:
                if walk.format.required:
                    walk.code += self.tokenizer.decode([token])
                tail = self.tokenizer.decode(walk.taken[-8:])
                done = CLOSING_FENCE in "\n" + tail if len(walk.taken) <= 8 else CLOSING_FENCE in tail
        if done:
            walk.segment += 1
            walk.taken, walk.closing, walk.code = [], -1, ""

    def _next(self, walk: _Walk, left: int) -> list[int] | None:
        """The only tokens the sequence may take next (None: any but a stop token)."""
        segment = self._segment(walk)
        if segment.kind is Kind.END:
            return list(walk.format.stop_ids[:1])
        if segment.kind is Kind.FORCED:
            return [segment.token_ids[len(walk.taken)]]
        if segment.kind is Kind.LINE:
            # a line gives way to what must still come after it: at most an eighth of the budget each
            cap = min(LABEL_TOKENS, max(1, walk.budget // 8))
            full = len(walk.taken) >= cap or left <= self._reserve_after(walk) + 1
            return [walk.format.newline_id] if full else None
        closing = walk.format.closing_ids
        if walk.closing < 0 and left <= len(closing) + 1:  # room for the fence and the stop token, no more
            walk.closing = 0
        if walk.closing >= 0:
            return [closing[walk.closing]]
        return None


def answer_regex(fence: str) -> str:
    """The answer format as a regular expression, for a server's structured outputs (vLLM: the request's
    `structured_outputs.regex`). The file may hold no triple backtick, so the closing fence ends it. A server
    enforces the layout but not the budget: an answer cut by max_tokens still leaves its block open (the
    in-process FormatProcessor closes it in time). A CUDA block holds a kernel and a launch (REQUIRED_CODE)."""
    label = "[^\\n]{0," + str(LABEL_TOKENS * 4) + "}"  # about four characters per token
    return f"Hypothesis:{label}\\nEvidence:{label}\\n```{fence}\\n{_code_holding(REQUIRED_CODE.get(fence, ()))}\\n```"


def _code_holding(groups: tuple[tuple[str, ...], ...]) -> str:
    """A regular expression of code without a triple backtick that holds a text of every group, in any order."""
    text = "([^`]|`[^`]|``[^`])*"
    if not groups:
        return text
    orders = ["".join(f"{text}({'|'.join(re.escape(t) for t in group)})" for group in order) + text
              for order in itertools.permutations(groups)]
    return "(" + "|".join(orders) + ")"


_FORMATS: dict[tuple[int, str, tuple[int, ...]], AnswerFormat] = {}


def format_processor(tokenizer: Any, fence: str | None | Sequence[str | None], *, stop_ids: Sequence[int],
                     prompt_tokens: int, max_new_tokens: int | Sequence[int]) -> Any:
    """A LogitsProcessorList holding one FormatProcessor, for model.generate(logits_processor=...). fence and
    max_new_tokens: one for every row, or one per row (a batch of requests; a None fence leaves its row free)."""
    from transformers import LogitsProcessorList

    def answer_format(language: str | None) -> AnswerFormat | None:
        if language is None:
            return None
        key = (id(tokenizer), language, tuple(stop_ids))
        found = _FORMATS.get(key)
        if found is None:  # its vocabulary scan takes a second or two on a 49k vocabulary: once per tokenizer
            found = _FORMATS[key] = AnswerFormat.for_tokenizer(tokenizer, language, stop_ids)
        return found

    formats = answer_format(fence) if fence is None or isinstance(fence, str) else [answer_format(f) for f in fence]
    if formats is None:
        raise ValueError("format_processor needs a fence (or a fence for some row)")
    return LogitsProcessorList([FormatProcessor(formats, tokenizer, prompt_tokens=prompt_tokens,
                                                max_new_tokens=max_new_tokens)])
