"""What an evaluation is made of: suites (with split labels from training runs), model configurations, variants,
and the table's keyed, relabelled rows."""

from __future__ import annotations

from pathlib import Path

import pytest

from eval.config import SOURCES_ABLATION, EvalConfig
from eval.configurations import ModelConfiguration, parse, remembered_patterns, trained_patterns
from eval.results import ResultsTable
from eval.runner import Variant, variants
from eval.suites import HELD_OUT_INSTANCE, HELD_OUT_PATTERN, collect
from perfforge.errors import ConfigError
from perfforge.io import write_json
from perfforge.records import EvalRecord
from tests.inference.conftest import write_cpu_task


def training_run(root: Path, groups: dict[str, str]) -> Path:
    (root / "adapter").mkdir(parents=True)
    write_json(root / "adapter" / "adapter_config.json", {"peft_type": "LORA"})
    write_json(root / "splits.json", {"groups": groups})
    return root


def test_catalogue_suite_labels_splits_from_the_training_runs(tmp_path: Path) -> None:
    run = training_run(tmp_path / "ft", {"pattern:cpu/aliasing_update": "train", "pattern:cpu/loop_order": "eval",
                                         "repo:owner/name": "train"})
    configurations = parse(["base", f"ft={run}"])
    trained = trained_patterns(configurations)
    assert trained == {"cpu/aliasing_update": "train", "cpu/loop_order": "eval"}
    tasks = collect(["catalogue"], tmp_path / "out", target="cpu", patterns=["cpu/aliasing_update",
                    "cpu/loop_order", "cpu/row_invariant_call"], instances=2, seed_base=300, trained=trained)
    splits = {(t.task.pattern, t.task.pattern_seed): t.split for t in tasks}
    assert splits == {("cpu/aliasing_update", 300): HELD_OUT_INSTANCE, ("cpu/aliasing_update", 301): HELD_OUT_INSTANCE,
                      ("cpu/loop_order", 300): HELD_OUT_PATTERN, ("cpu/loop_order", 301): HELD_OUT_PATTERN,
                      ("cpu/row_invariant_call", 300): HELD_OUT_PATTERN,
                      ("cpu/row_invariant_call", 301): HELD_OUT_PATTERN}
    again = collect(["catalogue"], tmp_path / "out", target="cpu", patterns=["cpu/loop_order"], instances=1,
                    seed_base=300, trained={})
    assert again[0].split == "" and again[0].task.root == tasks[2].task.root  # generated once, no split known


def test_a_pattern_any_adapter_trained_on_counts_as_trained(tmp_path: Path) -> None:
    one = training_run(tmp_path / "a", {"pattern:cpu/loop_order": "eval"})
    two = training_run(tmp_path / "b", {"pattern:cpu/loop_order": "train"})
    assert trained_patterns(parse([f"a={one}", f"b={two}"])) == {"cpu/loop_order": "train"}


def test_tasks_suite_finds_task_directories_at_any_depth(tmp_path: Path) -> None:
    write_cpu_task(tmp_path / "tasks" / "group" / "matvec")
    (item,) = collect([f"tasks:{tmp_path / 'tasks'}"], tmp_path / "out", target="cpu", patterns=[], instances=1,
                      seed_base=0, trained={})
    assert (item.suite, item.key, item.split) == ("tasks", "tasks/matvec_colwalk", "")


def test_model_specs(tmp_path: Path) -> None:
    adapter = tmp_path / "lora"
    adapter.mkdir()
    write_json(adapter / "adapter_config.json", {})
    base, lora, endpoint = parse(["base", f"ft={adapter}", "ep=http://127.0.0.1:8000/v1#some-model"])
    assert base == ModelConfiguration("base") and base.served
    assert lora.adapter == adapter and lora.training_run is None and lora.served
    assert (endpoint.url, endpoint.model, endpoint.served) == ("http://127.0.0.1:8000/v1", "some-model", False)
    with pytest.raises(ConfigError, match="used twice or is reserved"):
        parse(["base", "base"])
    with pytest.raises(ConfigError, match="used twice or is reserved"):
        parse([f"human={adapter}"])


def test_variants_cross_sources_and_candidates() -> None:
    config = EvalConfig(candidates=[1, 4], rounds=3, ablate_sources=True)
    made = variants(config)
    assert len(made) == len(SOURCES_ABLATION) * 2
    assert made[0] == Variant("none", 1, 3) and made[0].label == "sources=none;candidates=1;rounds=3"
    assert Variant("roofline,counters", 4, 2).directory == "roofline+counters-c4-r2"


@pytest.mark.parametrize(("changes", "message"), [
    ({"candidates": [0]}, "at least 1"),
    ({"temperature": 0.0, "candidates": [4]}, "--temperature 0"),
    ({"target": "gpu"}, "--target must be"),
    ({"models": [], "human": False}, "nothing to evaluate"),
])
def test_config_errors(changes: dict, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        EvalConfig(**changes).validate()


def row(task: str, configuration: str, split: str = "") -> EvalRecord:
    return EvalRecord(suite="catalogue", task=task, configuration=configuration, variant="", seed=0, target="cpu",
                      language="c", kernel="k", pattern="", split=split, bottleneck="", kind="model", model="",
                      sources="", candidates=0, rounds=0, temperature=0.0, status="incorrect", correct=False)


def test_table_is_keyed_atomic_and_relabelled(tmp_path: Path) -> None:
    table = ResultsTable(tmp_path / "results.parquet")
    table.add(row("a", "base"))
    table.add(row("a", "base"))  # the same key replaces
    table.add(row("b", "base"))
    table.relabel_splits({("catalogue", "a"): HELD_OUT_PATTERN})
    reread = ResultsTable(tmp_path / "results.parquet")
    assert [(r.task, r.split) for r in reread.all()] == [("a", HELD_OUT_PATTERN), ("b", "")]
    assert not list(tmp_path.glob("*.incomplete*")) and not list(tmp_path.glob(".*"))


def test_a_later_evaluation_of_fewer_configurations_keeps_the_splits(tmp_path: Path) -> None:
    """An H100 run evaluated an adapter (SFT + expert iteration, trained on cpu/a) into a directory, then the base
    model alone into the same one: the second evaluation knew no training run, and every row of the first lost its
    split (held-out instance or pattern). The trained patterns of every evaluation into OUT are remembered; a
    pattern some run trained on stays trained, one only held out so far becomes trained when a run trains on it."""
    first = remembered_patterns(tmp_path, {"cpu/a": "train", "cpu/b": "eval"})
    assert first == {"cpu/a": "train", "cpu/b": "eval"}
    assert remembered_patterns(tmp_path, {}) == first  # the base model alone
    assert remembered_patterns(tmp_path, {"cpu/a": "eval", "cpu/b": "train"}) == {"cpu/a": "train", "cpu/b": "train"}
    tasks = collect(["catalogue"], tmp_path / "out", target="cpu", patterns=["cpu/loop_order"], instances=1,
                    seed_base=300, trained=remembered_patterns(tmp_path, {"cpu/loop_order": "eval"}))
    assert [t.split for t in tasks] == [HELD_OUT_PATTERN]
