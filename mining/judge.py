"""An optional LLM judge for commits whose rule score falls in the uncertain band.

The judge sees the message and a truncated diff of the kernel files and answers in JSON. Its answer replaces
the rule decision (not the rule evidence, which stays in the record), and the commit's found_by says so.
An answer that is not the JSON asked for counts as no answer: the rule decision stands, and the run's
stats count it.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

from mining.classify import Classification
from mining.gitlog import FileDiff
from perfforge.llm_client import ChatClient
from perfforge.records import Category

# Characters of diff shown to the judge: enough for the changed kernels of a focused commit, small enough
# for a 4k-token context with the instructions.
MAX_DIFF_CHARS = 6000
# Scores the judge gives: a judged yes lands just above the threshold, a no just below, so a later reader can
# still tell judged records from confident rule decisions.
JUDGED_PERF_SCORE = 0.75
JUDGED_NOT_PERF_SCORE = 0.25

_INSTRUCTIONS = (
    "You classify git commits from GPU/HPC code. A commit is a performance change when its main purpose is to "
    "make code run faster or use memory or bandwidth more efficiently (kernel optimisations, tuning, avoiding "
    "copies or syncs, faster algorithms). Bug fixes, new features, refactors, tests, docs and build changes are "
    "not. Answer with JSON only: {\"is_perf\": true|false, \"category\": one of "
    + ", ".join(c.value for c in Category) + ", \"reason\": \"one line\"}"
)
_JSON_RE = re.compile(r"\{.*\}", re.DOTALL)


@dataclass
class Judgement:
    is_perf: bool
    category: Category
    reason: str


def judge_prompt(message: str, diffs: list[FileDiff]) -> list[dict[str, str]]:
    diff_text = "\n".join(f"--- {d.path}\n{d.patch}" for d in diffs)[:MAX_DIFF_CHARS]
    return [{"role": "system", "content": _INSTRUCTIONS},
            {"role": "user", "content": f"Commit message:\n{message}\n\nDiff:\n{diff_text}"}]


def parse_judgement(text: str) -> Judgement | None:
    match = _JSON_RE.search(text)
    if not match:
        return None
    try:
        data = json.loads(match.group(0))
        category = Category(str(data.get("category", "other")).lower())
        is_perf = data["is_perf"]
        if not isinstance(is_perf, bool):  # "false" is a yes to bool(): accept only the two JSON values
            is_perf = {"true": True, "false": False}[str(is_perf).strip().lower()]
        return Judgement(is_perf, category, str(data.get("reason", ""))[:200])
    except (ValueError, KeyError, TypeError):
        return None


def apply_judgement(rules: Classification, judgement: Judgement) -> Classification:
    """The rule classification with the judge's decision and reason on top of the rule evidence."""
    if judgement.is_perf:
        category = judgement.category if judgement.category != Category.NONE else Category.OTHER
        score = max(JUDGED_PERF_SCORE, rules.threshold)
    else:
        category, score = Category.NONE, min(JUDGED_NOT_PERF_SCORE, rules.threshold - 0.01)
    evidence = [f"llm_judge: {'perf' if judgement.is_perf else 'not perf'}: {judgement.reason}", *rules.evidence]
    return Classification(perf_score=score, category=category, evidence=evidence, threshold=rules.threshold)


def judge_commit(client: ChatClient, message: str, diffs: list[FileDiff]) -> Judgement | None:
    texts = client.chat(judge_prompt(message, diffs), max_tokens=200, temperature=0.0)
    return parse_judgement(texts[0]) if texts else None
