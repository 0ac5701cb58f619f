"""training.examples and training.splits: prompts that are the loop's own, answers that parse back, preference pairs
of verified attempts, and splits by pattern and repository that never put a group or a near-duplicate on both sides.

Datasets are the hand-written parquet files of conftest.py, read back through the real writer and reader.
"""

from __future__ import annotations

import random
from dataclasses import replace
from pathlib import Path

import pytest

from inference.config import OptimizeConfig
from inference.loop import LoopState, choose_focus, round_messages
from mining.gitlog import FileDiff
from mining.judge import judge_prompt, judgement_record, parse_judgement
from perfforge import prompt
from perfforge.errors import ConfigError, DatasetError, PerfforgeError
from perfforge.io import write_parquet
from perfforge.naming import ATTEMPTS_FILE, JUDGEMENTS_FILE, PAIRS_FILE
from perfforge.records import JUDGEMENT_FEATURES, Category, Diagnosis, Profile, as_row
from perfforge.task import load_task
from tests.profiling.conftest import SLOW_C, write_task
from tests.training.conftest import PATTERNS, REPOS, attempt_records, hand_profile, pair_record, write_pairs
from training.examples import (
    MIN_PREFERENCE_RATIO,
    Example,
    attempt_examples,
    dataset_files,
    load_examples,
    pair_example,
    preference_examples,
    read_rows,
)
from training.splits import EVAL, TRAIN, assign_splits, components, split

SOURCES = ["all"]
BUDGET = 400


def make(row: dict, *, sources: list[str] = SOURCES, token_budget: int = BUDGET,
         max_code_chars: int = 6000) -> Example | None:
    return pair_example(row, sources=sources, token_budget=token_budget, max_code_chars=max_code_chars)


def pair_rows(path: Path) -> list[dict]:
    kind, rows = read_rows(write_pairs(path))
    assert kind == "pairs"
    return rows


def attempt_rows() -> list[dict]:
    return [as_row(r) for r in attempt_records()]


def expected_messages(row: dict, *, sources: list[str] = SOURCES, token_budget: int = BUDGET,
                      code: str | None = None) -> list[dict[str, str]]:
    profile = Profile.from_dict(row["profile_before"]) if row["profile_before"] else None
    shown = prompt.CodeUnderTest(target=row["target"], language=row["language"], file_name=Path(row["path"]).name,
                                 kernel=row["kernel_name"], code=row["file_before"] if code is None else code)
    focus = profile.diagnoses[0].name if profile and profile.diagnoses else ""
    return prompt.build_messages(shown, profile, sources=sources, token_budget=token_budget, focus=focus)


# --- pair examples -------------------------------------------------------------------------------------------------


def test_the_fixture_dataset_reads_back_as_written(tmp_path: Path) -> None:
    rows = pair_rows(tmp_path / "pairs.parquet")
    assert len(rows) == 12
    assert {r["pattern"] for r in rows} == {*PATTERNS, ""}
    assert {r["repo"] for r in rows if not r["pattern"]} == set(REPOS)
    profiled = [r for r in rows if r["profile_before"]]
    assert 0 < len(profiled) < len(rows)
    assert all(Profile.from_dict(r["profile_before"]).diagnoses for r in profiled)


@pytest.mark.parametrize(("sources", "budget"), [(["all"], 400), (["none"], 400), (["counters", "stalls"], 40)])
def test_pair_prompt_is_build_messages_of_the_code_before_and_its_profile(tmp_path: Path, sources: list[str],
                                                                          budget: int) -> None:
    for row in pair_rows(tmp_path / "pairs.parquet"):
        example = make(row, sources=sources, token_budget=budget)
        assert example is not None
        assert example.prompt == expected_messages(row, sources=sources, token_budget=budget)
        user = example.prompt[1]["content"]
        assert example.prompt[0] == {"role": "system", "content": prompt.SYSTEM_PROMPT}
        assert user.endswith(f"```c\n{row['file_before'].rstrip()}\n```")
        if row["profile_before"]:
            assert "Profile and diagnosis:" in user and "Target this bottleneck: cache_miss_bound." in user
        else:
            assert "Profile and diagnosis:" not in user and "Target this bottleneck" not in user
        assert example.group == (f"pattern:{row['pattern']}" if row["pattern"] else f"repo:{row['repo']}")


def test_pair_prompt_is_the_optimisation_loops_first_round_prompt(tmp_path: Path) -> None:
    """The same code, profile, sources and budget give the loop's own round-1 prompt, byte for byte."""
    task = load_task(write_task(tmp_path / "task"))
    for profile in (hand_profile("matvec"), None):
        record = replace(pair_record(0, pattern="cpu/matvec_colwalk"), path="tasks/matvec/" + task.source,
                         kernel_name=task.kernel, file_before=SLOW_C, profile_before=profile)
        example = make(as_row(record))
        config = OptimizeConfig(task=tmp_path / "task", sources=SOURCES, token_budget=BUDGET)
        state = LoopState(task=task, config=config, profile=profile, focus=choose_focus(profile, None, print))
        assert example is not None
        assert example.prompt == round_messages(state)


def test_completion_parses_back_to_the_code_after_with_hypothesis_and_evidence(tmp_path: Path) -> None:
    for row in pair_rows(tmp_path / "pairs.parquet"):
        example = make(row)
        assert example is not None
        [message] = example.completion
        assert message["role"] == "assistant"
        answer = prompt.parse_answer(message["content"], language="c")
        assert answer.ok, answer.problem
        assert answer.code == row["file_after"]
        assert answer.hypothesis == row["message"].splitlines()[0]
        if row["profile_before"]:
            top = Profile.from_dict(row["profile_before"]).diagnoses[0]
            assert answer.evidence.startswith(f"{top.name} (severity {top.severity:.2f})")
            assert top.evidence[0] in answer.evidence
        else:
            assert answer.evidence == "; ".join(row["evidence"])
        assert example.row() == {"prompt": example.prompt, "completion": example.completion}


def test_hypothesis_is_the_first_non_blank_line_and_falls_back_to_the_category() -> None:
    row = as_row(pair_record(3, message="\n\n   use a restrict pointer  \nso the loop vectorises\n"))
    answer = prompt.parse_answer(make(row).completion[0]["content"])
    assert answer.hypothesis == "use a restrict pointer"
    row = as_row(pair_record(3, message="  \n"))
    answer = prompt.parse_answer(make(row).completion[0]["content"])
    assert answer.hypothesis == f"apply memory_access to {row['kernel_name']}"
    row = as_row(replace(pair_record(3), evidence=[]))  # no profile, no classifier evidence: the category
    assert prompt.parse_answer(make(row).completion[0]["content"]).evidence == "memory_access"


def test_a_diagnosis_without_evidence_gives_its_hint() -> None:
    profile = hand_profile("k")
    profile.diagnoses = [Diagnosis(name="missed_vectorization", severity=0.3, evidence=[], hint="add restrict")]
    row = as_row(replace(pair_record(1), profile_before=profile))
    answer = prompt.parse_answer(make(row).completion[0]["content"])
    assert answer.evidence == "missed_vectorization (severity 0.30): add restrict"


def test_a_too_long_file_falls_back_to_the_function_and_too_long_code_is_skipped() -> None:
    filler = "/* " + "x" * 500 + " */\n"
    base = pair_record(0, profiled=True)
    long_file = as_row(replace(base, file_before=filler + base.function_before, file_after=base.file_after))
    example = make(long_file, max_code_chars=400)
    assert example is not None
    assert example.prompt == expected_messages(long_file, code=base.function_before)
    answer = prompt.parse_answer(example.completion[0]["content"])
    assert answer.code == base.function_after
    # only the file after is too long: both sides fall back, the prompt and the answer stay one function
    long_after = as_row(replace(base, file_after=filler + base.function_after))
    example = make(long_after, max_code_chars=400)
    assert example is not None and example.prompt == expected_messages(long_after, code=base.function_before)
    assert prompt.parse_answer(example.completion[0]["content"]).code == base.function_after
    # the whole file fits: it is the file that is shown, not the function
    assert make(long_file).prompt == expected_messages(long_file)
    # the function does not fit either, or there is no function: skipped
    assert make(long_file, max_code_chars=100) is None
    assert make(as_row(replace(base, file_before=filler, function_before="")), max_code_chars=400) is None
    assert make(as_row(replace(base, function_after=filler + filler, file_after=filler)), max_code_chars=400) is None


def test_load_examples_skips_what_does_not_fit(tmp_path: Path) -> None:
    path = write_pairs(tmp_path / "pairs.parquet")
    every = load_examples([path], method="sft", sources=SOURCES, token_budget=BUDGET, max_code_chars=6000)
    assert len(every) == 12
    longest_function = max(len(r.function_after) for r in [pair_record(i) for i in range(12)])
    fewer = load_examples([path], method="sft", sources=SOURCES, token_budget=BUDGET,
                          max_code_chars=longest_function - 1)
    assert 0 < len(fewer) < 12
    with pytest.raises(DatasetError, match="no examples"):
        load_examples([path], method="sft", sources=SOURCES, token_budget=BUDGET, max_code_chars=10)


# --- attempt examples ----------------------------------------------------------------------------------------------


def test_attempt_sft_examples_come_only_from_improved_attempts() -> None:
    rows = attempt_rows()
    examples = attempt_examples(rows)
    improved = [r for r in rows if r["status"] == "improved"]
    assert len(examples) == len(improved) == 4
    for example, row in zip(examples, improved, strict=True):
        assert example.prompt == [{"role": "system", "content": row["system"]},
                                  {"role": "user", "content": row["prompt"]}]
        answer = prompt.parse_answer(example.completion[0]["content"], language="c")
        assert answer.code == row["code"]
        assert answer.hypothesis == row["hypothesis"] and answer.evidence == row["evidence"]
        assert example.group == (f"pattern:{row['pattern']}" if row["pattern"] else f"repo:{row['task']}")
        assert not example.rejected
    # an improved attempt without code (it cannot happen in the loop, but the reader must not invent one)
    assert attempt_examples([{**improved[0], "code": ""}]) == []


def _pairs(examples: list[Example]) -> set[tuple[str, str]]:
    return {(e.completion[0]["content"], e.rejected[0]["content"]) for e in examples}


def test_preference_pairs_improved_over_each_failed_and_faster_over_clearly_slower() -> None:
    rows = attempt_rows()
    examples = preference_examples(rows)
    by_candidate = {(r["task"], r["candidate"]): r["completion"] for r in rows}
    a = {k: by_candidate[("matvec_colwalk", k)] for k in range(1, 7)}
    b = {k: by_candidate[("sum_rows", k)] for k in range(1, 3)}
    failed_a = (a[4], a[5], a[6])  # incorrect, build_failed, unparsable
    expected = {(win, lose) for win in (a[1], a[2], a[3]) for lose in failed_a}
    expected |= {(a[1], a[3]), (a[2], a[3])}  # 2.0 and 1.95 over 1.5: ratios 1.33 and 1.3
    expected |= {(b[1], b[2])}
    assert _pairs(examples) == expected
    assert len(examples) == len(expected) == 12  # no duplicate pair
    assert (a[1], a[2]) not in _pairs(examples) and (a[2], a[1]) not in _pairs(examples)  # 2.0/1.95 < 1.1
    for example in examples:
        assert example.row().keys() == {"prompt", "chosen", "rejected"}
        assert example.prompt[1]["content"] in (rows[0]["prompt"], rows[6]["prompt"])
        assert example.rejected[0]["content"] != example.completion[0]["content"]
    # a pair never crosses prompts
    prompt_of = {r["completion"]: r["prompt"] for r in rows}
    assert all(prompt_of[c] == prompt_of[r] == e.prompt[1]["content"]
               for e in examples for c, r in [(e.completion[0]["content"], e.rejected[0]["content"])])


@pytest.mark.parametrize(("faster", "slower", "paired"), [
    (1.5, 1.0, True),
    (1.1, 1.0, True),  # exactly the ratio
    (1.09, 1.0, False),
    (3.0, 2.8, False),
    (3.0, 2.7, True),
])
def test_faster_improved_over_slower_improved_only_from_the_minimum_ratio(faster: float, slower: float,
                                                                           paired: bool) -> None:
    first, second = attempt_rows()[:2]  # two improved candidates of one prompt
    rows = [{**first, "speedup": faster}, {**second, "speedup": slower}]
    assert (faster / slower >= MIN_PREFERENCE_RATIO) == paired
    expected = {(rows[0]["completion"], rows[1]["completion"])} if paired else set()
    assert _pairs(preference_examples(rows)) == expected


def test_no_preference_without_an_improved_candidate_or_a_worse_one() -> None:
    rows = attempt_rows()
    assert preference_examples([r for r in rows if r["status"] != "improved"]) == []
    assert preference_examples([rows[0]]) == []
    # a candidate that is correct but not faster ("needs_review", "correct") is neither side
    neutral = [{**rows[3], "status": status} for status in ("needs_review", "correct")]
    assert preference_examples([rows[0], *neutral]) == []
    # "slower" and "no_change" are worse than an improved one
    worse = [{**rows[3], "status": status, "completion": status} for status in ("slower", "no_change")]
    assert _pairs(preference_examples([rows[0], *worse])) == {(rows[0]["completion"], "slower"),
                                                              (rows[0]["completion"], "no_change")}


def test_load_examples_by_method(tmp_path: Path, attempts_parquet: Path) -> None:
    pairs = write_pairs(tmp_path / "pairs.parquet")
    kw = {"sources": SOURCES, "token_budget": BUDGET, "max_code_chars": 6000}
    assert len(load_examples([pairs, attempts_parquet], method="sft", **kw)) == 12 + 4
    dpo = load_examples([pairs, attempts_parquet], method="dpo", **kw)
    assert len(dpo) == 12 and all(e.rejected for e in dpo)
    with pytest.raises(DatasetError, match="preference pairs") as caught:
        load_examples([pairs], method="dpo", **kw)
    assert str(pairs) in str(caught.value)


def test_judgement_examples_are_the_judges_prompt_and_the_labelled_answer(tmp_path: Path) -> None:
    diff = FileDiff(path="sum.cu", status="modified", patch="@@ -1 +1 @@\n-atomicAdd(o, v);\n+v = warpReduce(v);\n")
    records = [judgement_record("o/kernels", f"{n:040x}", f"reduce {n}", [diff], is_perf=n % 2 == 0,
                                category=Category.ATOMICS if n % 2 == 0 else Category.NONE, reason=f"reason {n}",
                                max_diff_chars=20) for n in range(3)]
    (tmp_path / "labelled").mkdir()
    write_parquet(tmp_path / "labelled" / JUDGEMENTS_FILE, [as_row(r) for r in records], JUDGEMENT_FEATURES)
    assert dataset_files([tmp_path / "labelled"]) == [tmp_path / "labelled" / JUDGEMENTS_FILE]
    kw = {"sources": SOURCES, "token_budget": BUDGET, "max_code_chars": 6000}
    examples = load_examples([tmp_path / "labelled"], method="sft", **kw)
    assert [e.prompt for e in examples] == [judge_prompt(f"reduce {n}", [diff], 20) for n in range(3)]
    answers = [parse_judgement(e.completion[0]["content"]) for e in examples]
    assert [(a.is_perf, a.category, a.reason) for a in answers] == [
        (True, Category.ATOMICS, "reason 0"), (False, Category.NONE, "reason 1"), (True, Category.ATOMICS, "reason 2")]
    assert {e.group for e in examples} == {"repo:o/kernels"} and len({e.dedup_key for e in examples}) == 3
    with pytest.raises(DatasetError, match="preference pairs"):
        load_examples([tmp_path / "labelled"], method="dpo", **kw)
    pairs = write_pairs(tmp_path / "pairs.parquet")
    with pytest.raises(DatasetError, match="train a judge and an optimiser apart") as caught:
        load_examples([pairs, tmp_path / "labelled"], method="sft", **kw)
    assert str(tmp_path / "labelled" / JUDGEMENTS_FILE) in str(caught.value) and str(pairs) in str(caught.value)


# --- splits --------------------------------------------------------------------------------------------------------


def examples_of(tmp_path: Path) -> list[Example]:
    return load_examples([write_pairs(tmp_path / "pairs.parquet")], method="sft", sources=SOURCES,
                         token_budget=BUDGET, max_code_chars=6000)


def no_group_on_both_sides(examples: list[Example], assignment: dict[str, str]) -> None:
    train, held = split(examples, assignment)
    assert len(train) + len(held) == len(examples)
    assert not {e.group for e in train} & {e.group for e in held}
    assert not {e.dedup_key for e in train} & {e.dedup_key for e in held}
    assert set(assignment.values()) <= {TRAIN, EVAL}


def test_no_group_on_both_sides_for_any_seed_or_fraction(tmp_path: Path) -> None:
    examples = examples_of(tmp_path)
    groups = {e.group for e in examples}
    assert len(groups) == 6
    for seed in range(10):
        for fraction in (0.0, 0.2, 0.5, 0.9):
            assignment = assign_splits(examples, eval_fraction=fraction, seed=seed)
            assert set(assignment) == groups
            no_group_on_both_sides(examples, assignment)
            if fraction == 0.0:
                assert set(assignment.values()) == {TRAIN}
            else:
                assert EVAL in assignment.values()  # a small dataset still gets an eval group


def test_holdout_by_pattern_name_and_by_repository(tmp_path: Path) -> None:
    examples = examples_of(tmp_path)
    assignment = assign_splits(examples, eval_fraction=0.0, holdout=["cpu/sum_unroll", "alice/blas"])
    assert {g for g, side in assignment.items() if side == EVAL} == {"pattern:cpu/sum_unroll", "repo:alice/blas"}
    train, held = split(examples, assignment)
    assert len(held) == 4 and len(train) == 8
    # held out whatever the draw says
    for seed in range(10):
        assignment = assign_splits(examples, eval_fraction=0.3, holdout=["cpu/sum_unroll"], seed=seed)
        assert assignment["pattern:cpu/sum_unroll"] == EVAL
        no_group_on_both_sides(examples, assignment)
    # a name that is no group is a typo: one error naming it, never a run with nothing held out
    with pytest.raises(ConfigError, match=r"--holdout nobody/nothing: no pattern or repository of that name") as err:
        assign_splits(examples, eval_fraction=0.0, holdout=["cpu/sum_unroll", "nobody/nothing"])
    assert "alice/blas" in str(err.value) and "\n" not in str(err.value)


def test_groups_sharing_a_near_identical_code_before_share_a_split(tmp_path: Path) -> None:
    records = [pair_record(i, pattern=PATTERNS[i % 2], profiled=i == 0) for i in range(2)]
    records += [pair_record(i, repo=REPOS[i % 2]) for i in range(2, 6)]
    # repo bob/stencil mined a copy of pattern 0's function, reformatted and commented, in a file of its own
    twin = records[0].function_before.replace("    ", "\t").replace("{\n", "{ /* hot */\n")
    assert twin != records[0].function_before
    records.append(replace(pair_record(7, repo="bob/stencil"), function_before=twin,
                           file_before="/* stencil.c */\n" + twin))
    path = write_pairs(tmp_path / "pairs.parquet", records)
    examples = load_examples([path], method="sft", sources=SOURCES, token_budget=BUDGET, max_code_chars=6000)
    assert examples[0].dedup_key == examples[-1].dedup_key
    component_of = components(examples)
    assert component_of["repo:bob/stencil"] == component_of[f"pattern:{PATTERNS[0]}"] == \
        min("repo:bob/stencil", f"pattern:{PATTERNS[0]}")
    assert component_of["repo:alice/blas"] == "repo:alice/blas"
    sides = set()
    for seed in range(20):
        assignment = assign_splits(examples, eval_fraction=0.5, seed=seed)
        assert assignment["repo:bob/stencil"] == assignment[f"pattern:{PATTERNS[0]}"]
        no_group_on_both_sides(examples, assignment)
        sides.add(assignment["repo:bob/stencil"])
    assert sides == {TRAIN, EVAL}  # the seeds drew both ways, always together
    # holding one out holds its twin out
    assignment = assign_splits(examples, eval_fraction=0.0, holdout=["bob/stencil"])
    assert assignment[f"pattern:{PATTERNS[0]}"] == EVAL


def test_components_chain_transitively_in_any_order() -> None:
    def ex(group: str, key: str) -> Example:
        return Example(group=group, dedup_key=key, prompt=[])

    examples = [ex("repo:c", "k1"), ex("repo:b", "k1"), ex("repo:b", "k2"), ex("repo:a", "k2"), ex("repo:d", "k3")]
    for seed in range(5):
        shuffled = examples[:]
        random.Random(seed).shuffle(shuffled)
        assert components(shuffled) == {"repo:a": "repo:a", "repo:b": "repo:a", "repo:c": "repo:a",
                                         "repo:d": "repo:d"}


def test_the_draw_is_stable_across_row_orders_and_the_seed_changes_it(tmp_path: Path) -> None:
    examples = examples_of(tmp_path)
    draws = {}
    for seed in range(8):
        first = assign_splits(examples, eval_fraction=0.4, seed=seed)
        for shuffle in range(3):
            shuffled = examples[:]
            random.Random(shuffle).shuffle(shuffled)
            assert assign_splits(shuffled, eval_fraction=0.4, seed=seed) == first
            assert assign_splits(list(reversed(shuffled)), eval_fraction=0.4, seed=seed) == first
        draws[seed] = tuple(sorted(first.items()))
    assert len(set(draws.values())) > 1


def test_a_larger_fraction_holds_out_at_least_the_same_groups(tmp_path: Path) -> None:
    examples = examples_of(tmp_path)
    previous: set[str] = set()
    for fraction in (0.3, 0.5, 0.7, 0.95):  # above the small-dataset fallback
        held = {g for g, side in assign_splits(examples, eval_fraction=fraction, seed=1).items() if side == EVAL}
        assert previous <= held
        previous = held


# --- reading datasets ----------------------------------------------------------------------------------------------


def test_dataset_files_of_files_and_directories(tmp_path: Path, attempts_parquet: Path) -> None:
    both = tmp_path / "both"
    write_pairs(both / PAIRS_FILE)
    (both / ATTEMPTS_FILE).write_bytes(attempts_parquet.read_bytes())
    assert dataset_files([both]) == [both / PAIRS_FILE, both / ATTEMPTS_FILE]
    assert dataset_files([attempts_parquet.parent]) == [attempts_parquet]
    assert dataset_files([attempts_parquet, both / PAIRS_FILE]) == [attempts_parquet, both / PAIRS_FILE]
    assert read_rows(attempts_parquet)[0] == "attempts"
    assert read_rows(both / PAIRS_FILE)[0] == "pairs"
    # an iterate round's samples: sample/TASK/seedN/attempts.parquet, found below the directory given
    sample = tmp_path / "round_01" / "sample"
    runs = [sample / task / "seed0" / ATTEMPTS_FILE for task in ("b_task", "a_task")]
    for run in runs:
        run.parent.mkdir(parents=True)
        run.write_bytes(attempts_parquet.read_bytes())
    (sample / "a_task" / "seed0" / "original").mkdir()
    assert dataset_files([sample]) == sorted(runs)


@pytest.mark.parametrize("case", ["missing", "empty_dir", "not_parquet"])
def test_dataset_files_errors_name_the_path(tmp_path: Path, case: str) -> None:
    path = {"missing": tmp_path / "nowhere" / "pairs.parquet", "empty_dir": tmp_path / "empty",
            "not_parquet": tmp_path / "pairs.csv"}[case]
    if case == "empty_dir":
        path.mkdir()
        (path / "notes.txt").write_text("no dataset here\n")
    if case == "not_parquet":
        path.write_text("a,b\n1,2\n")
    with pytest.raises(DatasetError) as caught:
        dataset_files([write_pairs(tmp_path / "ok.parquet"), path])
    assert str(path) in str(caught.value)
    assert isinstance(caught.value, PerfforgeError) and "\n" not in str(caught.value)


def test_read_rows_of_other_records_names_the_path(tmp_path: Path) -> None:
    from perfforge.records import COMMIT_FEATURES

    commits = tmp_path / "commits.parquet"
    write_parquet(commits, [], COMMIT_FEATURES)
    with pytest.raises(DatasetError, match="neither pair, attempt nor judgement records") as caught:
        read_rows(commits)
    assert str(commits) in str(caught.value)


def test_read_rows_of_a_corrupt_parquet_file_is_a_dataset_error(tmp_path: Path) -> None:
    broken = tmp_path / "pairs.parquet"
    broken.write_bytes(b"PAR1 this is not a parquet file\n")
    with pytest.raises(DatasetError) as caught:
        read_rows(broken)
    assert str(broken) in str(caught.value)


TRITON_BEFORE = """\
@triton.jit
def scale_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    x = tl.load(x_ptr + offsets, mask=mask)
    tl.store(out_ptr + offsets, x * 2.0 / 1.0, mask=mask)
"""


def test_near_identical_python_code_before_shares_a_dedup_key() -> None:
    mask_line = "    mask = offsets < n\n"
    commented = TRITON_BEFORE.replace(mask_line, "    # stay inside the array\n" + mask_line)
    rows = []
    for index, (code, repo) in enumerate([(TRITON_BEFORE, "alice/triton"), (commented, "bob/triton")]):
        record = replace(pair_record(index, repo=repo), language="python", target="triton", path="k/scale.py",
                         kernel_name="scale_kernel", function_before=code, file_before=code,
                         file_after=code.replace(" / 1.0", ""))
        rows.append(as_row(record))
    first, second = (make(row) for row in rows)
    assert first.dedup_key == second.dedup_key
