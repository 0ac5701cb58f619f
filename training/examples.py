"""Training examples from the datasets: prompt/completion for SFT, prompt/chosen/rejected for DPO.

The prompt is the optimisation loop's own (perfforge.prompt.build_messages: the code before and its
token-budgeted diagnosis with the chosen insight sources, targeting the same default focus), so a model learns the
question it is asked at inference. The summary's budget is counted with perfforge.summary's estimate, as the loop
counts it for a served (OpenAI-compatible) model; in-process backends count with the tokenizer, so there the
summary may be cut a little differently. The completion is the answer format the loop parses
(perfforge.prompt.completion_text): a hypothesis (the change, from the commit message), the evidence (the before
profile's top diagnosis and its first finding, or the classifier's evidence for an unprofiled mined pair), and the
code after.

Sources:
  pairs.parquet      (perfforge mine, perfforge synth): one SFT example per pair
  attempts.parquet   (perfforge optimize): improved attempts are SFT examples; for DPO, within one prompt, every
                     improved candidate is preferred over each candidate that is incorrect, failed or slower, and
                     a faster improved one over a slower improved one
  judgements.parquet (bench/judge_examples.py, from labelled commits): one SFT example per commit, the mining
                     judge's own prompt (mining.judge.judge_prompt) and the labelled answer in its JSON format;
                     grouped by repository
"""

from __future__ import annotations

import hashlib
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from perfforge import prompt
from perfforge.errors import DatasetError
from perfforge.naming import TRAINING_FILES
from perfforge.records import Profile, check_schema_version, function_hash
from perfforge.verdict import Status

# Statuses whose candidate is worse than any improved one for the same prompt (DPO's rejected side): every
# failure (unparsable included), and correct but not faster. task_invalid says nothing of the candidate;
# needs_review and untimed correct results are not known to be worse.
REJECTED_STATUSES = frozenset({Status.SLOWER, Status.NO_CHANGE} |
                              {s for s in Status if not s.correct and s is not Status.TASK_INVALID})
# A faster candidate is preferred over a slower correct one only when their speedups differ by this factor:
# closer than that, two verdicts' intervals usually overlap and the order is noise.
MIN_PREFERENCE_RATIO = 1.1


@dataclass(frozen=True)
class Example:
    """One training example and what the split needs to know of it."""

    group: str  # the split's unit: the pattern (target/name) of a synthetic example, else the repository
    dedup_key: str  # formatting-blind hash of the function before (attempts: of the prompt): near-duplicates
    # share a split
    prompt: list[dict[str, str]]  # system and user messages
    completion: list[dict[str, str]] = field(default_factory=list)  # the assistant message (SFT)
    rejected: list[dict[str, str]] = field(default_factory=list)  # the worse answer (DPO; completion is chosen)

    def row(self) -> dict[str, Any]:
        if self.rejected:
            return {"prompt": self.prompt, "chosen": self.completion, "rejected": self.rejected}
        return {"prompt": self.prompt, "completion": self.completion}


def dataset_files(paths: list[Path]) -> list[Path]:
    """The parquet files that `paths` name: files, or directories holding any of TRAINING_FILES; a directory with
    none at its top is searched below (an iterate round's sample/TASK/seedN/attempts.parquet, an eval's runs)."""
    files = []
    for path in paths:
        if path.is_dir():
            found = [path / name for name in TRAINING_FILES if (path / name).is_file()]
            if not found:
                found = sorted(p for p in path.rglob("*.parquet") if p.name in TRAINING_FILES and p.is_file())
            if not found:
                raise DatasetError(f"{path} holds none of {', '.join(TRAINING_FILES)}, nor any directory below it; "
                                   "give a dataset directory written by perfforge mine, synth, optimize or "
                                   "iterate, or by bench/judge_examples.py")
            files.extend(found)
        elif path.is_file() and path.suffix == ".parquet":
            files.append(path)
        else:
            raise DatasetError(f"{path} is neither a parquet file nor a directory; give a pairs.parquet, an "
                               "attempts.parquet or a judgements.parquet")
    return files


def read_rows(path: Path) -> tuple[str, list[dict[str, Any]]]:
    """("pairs", "attempts" or "judgements", the rows) of one parquet file."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        table = pq.read_table(path)
    except (pa.ArrowException, OSError) as exc:
        raise DatasetError(f"{path} is not a readable parquet file ({str(exc).splitlines()[0]}); give a "
                           "pairs.parquet, an attempts.parquet or a judgements.parquet") from None
    columns = set(table.column_names)
    rows = table.to_pylist()
    check_schema_version(path, rows)
    if {"function_before", "file_after"} <= columns:
        return "pairs", rows
    if {"completion", "status", "prompt"} <= columns:
        return "attempts", rows
    if {"system", "prompt", "completion", "commit"} <= columns:
        return "judgements", rows
    raise DatasetError(f"{path} holds neither pair, attempt nor judgement records (columns: "
                       f"{', '.join(sorted(columns)[:8])}...)")


def pair_example(row: dict[str, Any], *, sources: list[str], token_budget: int, max_code_chars: int) -> Example | None:
    """The SFT example of one pair record; None when its code is too long for a prompt."""
    before, after = row["file_before"], row["file_after"]
    if len(before) > max_code_chars or len(after) > max_code_chars:
        before, after = row["function_before"], row["function_after"]  # the function alone may still fit
    if not before or not after or len(before) > max_code_chars or len(after) > max_code_chars:
        return None
    profile = Profile.from_dict(row["profile_before"]) if row.get("profile_before") else None
    code = prompt.CodeUnderTest(target=row["target"], language=row["language"], file_name=Path(row["path"]).name,
                                kernel=row["kernel_name"], code=before)
    messages = prompt.build_messages(code, profile, sources=sources, token_budget=token_budget,
                                     focus=prompt.default_focus(profile))
    answer = prompt.completion_text(after, language=row["language"], hypothesis=_hypothesis(row),
                                    evidence=_evidence(row, profile))
    # keyed on the function, whatever part of the file is shown: the same edit in another file or at another
    # --max-code-chars is the same example
    return Example(group=_group(row.get("pattern", ""), row["repo"]),
                   dedup_key=function_hash(row["function_before"] or before, row["language"]),
                   prompt=messages, completion=[{"role": "assistant", "content": answer}])


def _hypothesis(row: dict[str, Any]) -> str:
    lines = [line.strip() for line in row["message"].strip().splitlines() if line.strip()]
    return lines[0] if lines else f"apply {row['category']} to {row['kernel_name']}"


def _evidence(row: dict[str, Any], profile: Profile | None) -> str:
    if profile is not None and profile.diagnoses:
        top = profile.diagnoses[0]
        detail = top.evidence[0] if top.evidence else top.hint
        return f"{top.name} (severity {top.severity:.2f}): {detail}"
    return "; ".join(row.get("evidence") or []) or row["category"]


def attempt_examples(rows: list[dict[str, Any]]) -> list[Example]:
    """SFT examples of the improved attempts (correct and measurably faster), in the answer format."""
    examples = []
    for row in rows:
        if row["status"] != Status.IMPROVED or not row["code"]:
            continue
        answer = prompt.completion_text(row["code"], language=row["language"], hypothesis=row["hypothesis"],
                                        evidence=row["evidence"])
        examples.append(Example(group=_group(row["pattern"], row["task"]), dedup_key=_attempt_key(row),
                                prompt=_attempt_prompt(row), completion=[{"role": "assistant", "content": answer}]))
    return examples


def judgement_examples(rows: list[dict[str, Any]]) -> list[Example]:
    """SFT examples of labelled commits: the judge's prompt and the labelled answer, grouped by repository."""
    return [Example(group=_group("", row["repo"]), dedup_key=f"{row['repo']}@{row['commit']}",
                    prompt=_attempt_prompt(row), completion=[{"role": "assistant", "content": row["completion"]}])
            for row in rows]


def preference_examples(rows: list[dict[str, Any]]) -> list[Example]:
    """DPO examples: for each prompt, every improved candidate over each worse one (see the module docstring)."""
    by_prompt: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
    for row in rows:
        by_prompt[(row["task"], row["prompt"])].append(row)
    examples = []
    for candidates in by_prompt.values():
        wins = sorted((r for r in candidates if r["status"] == Status.IMPROVED and r["speedup"]),
                      key=lambda r: -r["speedup"])
        if not wins:
            continue
        first = wins[0]  # every candidate of the group shares the prompt, task and pattern
        group, key, messages = _group(first["pattern"], first["task"]), _attempt_key(first), _attempt_prompt(first)
        failed = [r for r in candidates if r["status"] in REJECTED_STATUSES]
        for win in wins:
            slower = [r for r in wins if r["speedup"] * MIN_PREFERENCE_RATIO <= win["speedup"] * (1 + 1e-9)]
            for loser in failed + slower:
                examples.append(Example(group=group, dedup_key=key, prompt=messages,
                                        completion=[{"role": "assistant", "content": win["completion"]}],
                                        rejected=[{"role": "assistant", "content": loser["completion"]}]))
    return examples


def _attempt_prompt(row: dict[str, Any]) -> list[dict[str, str]]:
    return [{"role": "system", "content": row["system"]}, {"role": "user", "content": row["prompt"]}]


def _attempt_key(row: dict[str, Any]) -> str:
    # the attempt's task source is what the prompt shows: its prompt text identifies it as well as any hash
    return hashlib.sha256(row["prompt"].encode()).hexdigest()[:32]


def _group(pattern: str, repo: str) -> str:
    return f"pattern:{pattern}" if pattern else f"repo:{repo}"


def _refuse_judge_mix(kinds: dict[str, Path]) -> None:
    """A judge and an optimiser are different models: one adapter trained on both answers neither way well."""
    if "judgements" in kinds and len(kinds) > 1:
        other = next(k for k in kinds if k != "judgements")
        raise DatasetError(f"{kinds['judgements']} holds judge examples and {kinds[other]} holds {other}; train a "
                           "judge and an optimiser apart (two perfforge train runs)")


def load_examples(paths: list[Path], *, method: str, sources: list[str], token_budget: int,
                  max_code_chars: int) -> list[Example]:
    """Every example the datasets give for the method (sft or dpo)."""
    examples: list[Example] = []
    kinds: dict[str, Path] = {}
    for path in dataset_files(paths):
        kind, rows = read_rows(path)
        kinds.setdefault(kind, path)
        _refuse_judge_mix(kinds)
        if method == "dpo":
            if kind == "attempts":
                examples.extend(preference_examples(rows))
        elif kind == "pairs":
            made = (pair_example(r, sources=sources, token_budget=token_budget, max_code_chars=max_code_chars)
                    for r in rows)
            examples.extend(e for e in made if e is not None)
        elif kind == "judgements":
            examples.extend(judgement_examples(rows))
        else:
            examples.extend(attempt_examples(rows))
    if not examples:
        wanted = "preference pairs (attempts.parquet with improved and failed candidates of one prompt)" \
            if method == "dpo" else "examples (pairs, improved attempts or judgements)"
        raise DatasetError(f"the datasets give no {wanted}; check what was passed: "
                           f"{', '.join(str(p) for p in paths)}")
    return examples
