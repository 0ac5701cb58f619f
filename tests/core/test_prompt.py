"""perfforge.prompt: the prompt format shared by the optimisation loop and training, and reading answers back."""

from __future__ import annotations

import json

import pytest

from perfforge import prompt
from perfforge.errors import PerfforgeError
from perfforge.records import Diagnosis, Profile, Timing

CODE = prompt.CodeUnderTest(target="cpu", language="c", file_name="kernel.c", kernel="matvec",
                            code="void matvec(int n) {\n    (void)n;\n}\n\n\n")


def make_profile() -> Profile:
    return Profile(machine="Test CPU", tool_versions="gcc 12",
                   timing=Timing(median_ms=6.5, p10_ms=6.3, p90_ms=7.0, trials=7, method="monotonic_clock"),
                   diagnoses=[Diagnosis(name="cache_miss_bound", severity=0.52,
                                        evidence=["D1_miss_rate = 25 % (>= 10) at line 5"],
                                        hint="walk memory in the order it is laid out"),
                              Diagnosis(name="missing_parallelism", severity=0.40,
                                        evidence=["loop_nest_share = 0.9 ratio (>= 0.5) at line 3"],
                                        preconditions=["cpu_cores = 2 core (>= 2)"],
                                        hint="share the iterations among the cores")],
                   target="cpu", kernel="matvec", source_file="kernel.c")


def attempts(count: int) -> list[prompt.EarlierAttempt]:
    return [prompt.EarlierAttempt(label=f"round 1, candidate {k}", status="incorrect", reason=f"mismatch {k}")
            for k in range(1, count + 1)]


# --- build_messages -------------------------------------------------------------------------------------------------


def test_messages_are_system_then_user_and_byte_identical_twice() -> None:
    kwargs = {"focus": "cache_miss_bound", "earlier": attempts(3), "note": "Best so far."}
    first = prompt.build_messages(CODE, make_profile(), **kwargs)
    second = prompt.build_messages(CODE, make_profile(), **kwargs)
    assert json.dumps(first).encode() == json.dumps(second).encode()
    assert [m["role"] for m in first] == ["system", "user"]
    assert first[0]["content"] == prompt.SYSTEM_PROMPT
    assert first[1]["content"] == prompt.user_message(CODE, make_profile(), **kwargs)


def test_user_message_layout() -> None:
    text = prompt.user_message(CODE, make_profile(), focus="cache_miss_bound", earlier=attempts(1),
                               note="The file below is the best proven version so far.")
    assert text.startswith("Target: cpu (c). File: kernel.c. Kernel: matvec.\n\nProfile and diagnosis:\n"
                           "matvec [cpu] on Test CPU: median 6.5 ms")
    assert "1. cache_miss_bound (severity 0.52): walk memory in the order it is laid out" in text
    assert "   - D1_miss_rate = 25 % (>= 10) at line 5" in text
    assert "2. missing_parallelism (severity 0.40)" in text
    # sections in order: summary, focus, feedback, note, code (trailing blank lines of the code dropped)
    order = [text.index(part) for part in ("Profile and diagnosis:", "Target this bottleneck: cache_miss_bound.",
                                           "Earlier attempts", "The file below is the best proven",
                                           "The file kernel.c:\n```c\nvoid matvec")]
    assert order == sorted(order)
    assert text.endswith("The file kernel.c:\n```c\nvoid matvec(int n) {\n    (void)n;\n}\n```")


def test_without_profile_focus_feedback_or_note_only_the_task_and_code() -> None:
    text = prompt.user_message(CODE, None)
    assert text == ("Target: cpu (c). File: kernel.c. Kernel: matvec.\n\n"
                    "The file kernel.c:\n```c\nvoid matvec(int n) {\n    (void)n;\n}\n```")
    python = prompt.CodeUnderTest(target="triton", language="python", file_name="k.py", kernel="k", code="x = 1")
    assert "```python\nx = 1\n```" in prompt.user_message(python, None)
    unknown = prompt.CodeUnderTest(target="cpu", language="fortran", file_name="k.f90", kernel="k", code="end")
    assert "```\nend\n```" in prompt.user_message(unknown, None)


def test_sources_none_keeps_only_the_timing_line() -> None:
    text = prompt.user_message(CODE, make_profile(), sources="none")
    summary = text.split("Profile and diagnosis:\n", 1)[1].split("\n\n", 1)[0]
    assert summary.startswith("matvec [cpu] on Test CPU: median 6.5 ms") and "\n" not in summary
    assert "cache_miss_bound" not in text and "bottlenecks" not in text
    assert "cache_miss_bound" in prompt.user_message(CODE, make_profile(), sources=["counters"])
    with pytest.raises(PerfforgeError, match="unknown summary source"):
        prompt.user_message(CODE, make_profile(), sources="bogus")


def test_token_budget_is_respected() -> None:
    small = prompt.user_message(CODE, make_profile(), token_budget=100)
    assert "1. cache_miss_bound" in small and "missing_parallelism" not in small
    with pytest.raises(PerfforgeError, match="cannot hold even the timing line"):
        prompt.user_message(CODE, make_profile(), token_budget=10)
    assert "missing_parallelism" in prompt.user_message(CODE, make_profile(), token_budget=400)
    counted = prompt.prompt_tokens(prompt.build_messages(CODE, None), count_tokens=len)
    assert counted == len(prompt.SYSTEM_PROMPT) + len(prompt.user_message(CODE, None))


def test_feedback_most_recent_first_and_capped() -> None:
    earlier = attempts(prompt.MAX_FEEDBACK_ATTEMPTS + 2)
    text = prompt.feedback_text(earlier)
    lines = text.splitlines()
    assert lines[0] == "Earlier attempts, as the pipeline measured them (do not repeat a failure):"
    labels = [line[2:].split(":")[0] for line in lines if line.startswith("- ")]
    newest = len(earlier)
    assert labels == [f"round 1, candidate {k}" for k in range(newest, newest - prompt.MAX_FEEDBACK_ATTEMPTS, -1)]
    assert "candidate 1:" not in text and "candidate 2:" not in text


def test_feedback_entry_lines() -> None:
    long_reason = "kernel.c:2:46: error: expected ';'\n    2 |   x\n" + "y" * 2000
    entry = prompt.EarlierAttempt(label="round 2, candidate 3", status="build_failed", reason=long_reason,
                                  hypothesis="h" * 1000, counter_deltas="D1mr 3.1e+06 -> 200000 (-94%)")
    lines = prompt.feedback_text([entry]).splitlines()
    assert lines[1] == "- round 2, candidate 3: build_failed"
    assert lines[2] == "  claimed: " + "h" * (prompt.MAX_LABEL_CHARS - 3) + "..."
    assert lines[3].startswith("  measured: kernel.c:2:46: error: expected ';' 2 | x yyy")  # whitespace folded
    assert len(lines[3]) == len("  measured: ") + prompt.MAX_FEEDBACK_REASON_CHARS and lines[3].endswith("...")
    assert lines[4] == "  counters: D1mr 3.1e+06 -> 200000 (-94%)"
    bare = prompt.feedback_text([prompt.EarlierAttempt(label="round 1, candidate 1", status="unparsable", reason="")])
    assert bare.splitlines()[1:] == ["- round 1, candidate 1: unparsable"]


# --- parse_answer, completion_text ----------------------------------------------------------------------------------


def test_labels_in_markdown_bold_and_quotes() -> None:
    text = ("**Hypothesis:** swap the loops so rows are read in order\n"
            "> **Evidence**: cache_miss_bound at line 5 **\n```c\nint x;\n```")
    answer = prompt.parse_answer(text, language="c")
    assert answer.hypothesis == "swap the loops so rows are read in order"
    assert answer.evidence == "cache_miss_bound at line 5"
    assert answer.code == "int x;\n" and answer.ok and answer.problem == ""
    lower = prompt.parse_answer("hypothesis - unroll\nEVIDENCE: Ir\n```\nint y;\n```")
    assert (lower.hypothesis, lower.evidence, lower.code) == ("unroll", "Ir", "int y;\n")


def test_a_snippet_beside_the_whole_file_is_not_the_code() -> None:
    whole = "void f(void) {\n    int acc = 0;\n}\n"
    before = f"Hypothesis: h\nChange this line:\n```c\nacc += x;\n```\nThe whole file:\n```c\n{whole}```\nDone."
    assert prompt.parse_answer(before).code == whole
    after = f"```c\n{whole}```\nFor example:\n```c\nf();\n```\nBuild it:\n```bash\ngcc -O3 kernel.c\n```\n"
    assert prompt.parse_answer(after).code == whole


def test_the_version_after_an_echoed_original_is_the_code() -> None:
    original, mine = "int f(int x) {\n  return x * 2;\n}\n", "int f(int x) {\n  return x << 1;\n}\n"
    text = f"The original:\n```c\n{original}```\nMine:\n```c\n{mine}```\n"
    assert prompt.parse_answer(text).code == mine


def test_fences_count_only_at_the_start_of_a_line() -> None:
    code = "int f(int x) {\n  return x << 1;\n}\n"
    inline = prompt.parse_answer(f"Hypothesis: h\nEvidence: the ``` marks below\n```c\n{code}```\n")
    assert inline.code == code
    indented = prompt.parse_answer(f"Hypothesis: h\n  ```c\n{code}  ```\n")  # a list item's block
    assert indented.ok and indented.code == code


def test_unclosed_block_is_refused_as_cut_off() -> None:
    answer = prompt.parse_answer("Hypothesis: h\nEvidence: e\n```c\nvoid f(void) {\n    int acc = 0;\n")
    assert not answer.ok and answer.code == ""
    assert "cut off" in answer.problem and "not closed" in answer.problem
    assert (answer.hypothesis, answer.evidence) == ("h", "e")


def test_empty_block_and_no_block() -> None:
    empty = prompt.parse_answer("Hypothesis: h\n```c\n\n```")
    assert not empty.ok and empty.problem == "the code block is empty"
    none = prompt.parse_answer("Hypothesis: h\nEvidence: e\nswap the loops")
    assert not none.ok and none.problem.startswith("no fenced code block")
    assert none.hypothesis == "h"
    assert prompt.parse_answer("").problem.startswith("no fenced code block")


def test_empty_block_without_a_blank_line_is_empty() -> None:
    answer = prompt.parse_answer("Hypothesis: h\n```c\n```")
    assert not answer.ok and answer.problem == "the code block is empty"


def test_label_length_is_capped() -> None:
    answer = prompt.parse_answer("Hypothesis: " + "x" * 1000 + "\n```c\nint x;\n```")
    assert len(answer.hypothesis) == prompt.MAX_LABEL_CHARS and answer.hypothesis.endswith("...")


@pytest.mark.parametrize("language", ["c", "cuda", "python", "hip", "fortran"])
def test_completion_text_round_trips(language: str) -> None:
    code = "__global__ void k(float *x) {\n    x[0] = 1.0f;\n}\n\n"
    text = prompt.completion_text(code, language=language, hypothesis="write  once\n per  thread",
                                  evidence=" uncoalesced_access\tat line 2 ")
    assert text.splitlines()[:2] == ["Hypothesis: write once per thread", "Evidence: uncoalesced_access at line 2"]
    assert f"```{prompt.FENCE_LANGUAGE.get(language, '')}\n__global__" in text
    answer = prompt.parse_answer(text, language=language)
    assert answer == prompt.Answer(code=code.rstrip() + "\n", hypothesis="write once per thread",
                                   evidence="uncoalesced_access at line 2")
