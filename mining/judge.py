"""An optional LLM judge for commits whose rule score falls in the uncertain band.

The judge sees the message and a truncated diff of the kernel files and answers in JSON. Its answer replaces
the rule decision (not the rule evidence, which stays in the record), and the commit's found_by says so.
An answer that is not the JSON asked for counts as no answer: the rule decision stands, and the run's
stats count it.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from dataclasses import dataclass

from mining.classify import Classification, classify_commit
from mining.config import JUDGE_DIFF_CHARS, MineConfig
from mining.gitlog import FileDiff
from perfforge.errors import BackendError
from perfforge.llm_client import ChatClient
from perfforge.records import Category, FoundBy, JudgementRecord

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
# Characters of the commit message shown to the judge: the subject and the first paragraphs. The messages of
# upstream syncs list hundreds of commits (36,000 tokens in one of ggml's), more than any small model's context.
MAX_MESSAGE_CHARS = 2000
# Seconds a judge may take per commit: a 135M model on 2 CPU cores answers in about 10 s, a long prompt in 30.
JUDGE_TIMEOUT_S = 60.0
_JSON_RE = re.compile(r"\{.*\}", re.DOTALL)


@dataclass
class Judgement:
    is_perf: bool
    category: Category
    reason: str


def judge_prompt(message: str, diffs: list[FileDiff],
                 max_diff_chars: int = JUDGE_DIFF_CHARS) -> list[dict[str, str]]:
    diff_text = "\n".join(f"--- {d.path}\n{d.patch}" for d in diffs)[:max_diff_chars]
    return [{"role": "system", "content": _INSTRUCTIONS},
            {"role": "user", "content": f"Commit message:\n{message[:MAX_MESSAGE_CHARS]}\n\nDiff:\n{diff_text}"}]


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


def judge_answer(is_perf: bool, category: Category, reason: str) -> str:
    """The answer the instructions ask for: what a judge fine-tuned on labelled commits learns to write."""
    return json.dumps({"is_perf": is_perf, "category": category.value, "reason": reason})


def judgement_record(repo: str, sha: str, message: str, diffs: list[FileDiff], *, is_perf: bool,
                     category: Category, reason: str, max_diff_chars: int = JUDGE_DIFF_CHARS) -> JudgementRecord:
    """A labelled commit as a training example of the judge: its prompt, and the label as the answer."""
    system, user = judge_prompt(message, diffs, max_diff_chars)
    return JudgementRecord(repo=repo, commit=sha, is_perf=is_perf, category=category.value, system=system["content"],
                           prompt=user["content"], completion=judge_answer(is_perf, category, reason))


def judge_client(config: MineConfig, *, check: bool = False) -> ChatClient | None:
    """The judge's client, None without --judge-url. check=True asks it once now, so that a dead endpoint or a
    wrong model name fails at the start with one error, not silently once per judged commit."""
    if not config.judge_url:
        return None
    client = ChatClient(config.judge_url, config.judge_model, timeout_s=JUDGE_TIMEOUT_S)
    if check:
        client.chat([{"role": "user", "content": "Answer OK."}], max_tokens=1)
    return client


def judge_commit(client: ChatClient, message: str, diffs: list[FileDiff],
                 max_diff_chars: int = JUDGE_DIFF_CHARS) -> Judgement | None:
    texts = client.chat(judge_prompt(message, diffs, max_diff_chars), max_tokens=200, temperature=0.0)
    return parse_judgement(texts[0]) if texts else None


def classify_with_judge(message: str, diffs: list[FileDiff], config: MineConfig, judge: ChatClient | None,
                        judge_counts: Counter[str]) -> tuple[Classification, FoundBy]:
    """The rule classification, replaced by the judge's decision when its score is in the uncertain band and the
    judge answers; judge_counts tallies what the judge was asked and how it answered."""
    rules = classify_commit(message, diffs, config.perf_threshold)
    if judge is None or not config.judge_band_low <= rules.perf_score <= config.judge_band_high:
        return rules, FoundBy.MINED_RULES
    judge_counts["asked"] += 1
    try:
        judgement = judge_commit(judge, message, diffs, config.judge_diff_chars)
    except BackendError:
        judge_counts["endpoint_errors"] += 1
        return rules, FoundBy.MINED_RULES
    if judgement is None:
        judge_counts["unparsable_answers"] += 1
        return rules, FoundBy.MINED_RULES
    judge_counts["answered"] += 1
    judged = apply_judgement(rules, judgement)
    if judged.is_perf != rules.is_perf:
        judge_counts["changed_decision"] += 1
    return judged, FoundBy.MINED_LLM_JUDGE
