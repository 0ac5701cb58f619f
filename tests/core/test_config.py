"""perfforge.config: defaults < YAML < flags, strict about unknown keys and types."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from mining.config import MineConfig
from perfforge.config import add_arguments, from_namespace
from perfforge.errors import ConfigError


def parse(argv: list[str]) -> MineConfig:
    parser = argparse.ArgumentParser()
    parser.add_argument("--config", default=None)
    add_arguments(parser, MineConfig)
    return from_namespace(MineConfig, parser.parse_args(argv))


def test_defaults_when_nothing_given() -> None:
    config = parse([])
    assert config == MineConfig()
    assert config.sources == []


def test_yaml_overrides_defaults_and_flags_override_yaml(tmp_path: Path) -> None:
    yaml_file = tmp_path / "mine.yaml"
    yaml_file.write_text("jobs: 4\nchunk_size: 10\nprogress: false\nsources: [a, b]\n")
    config = parse(["--config", str(yaml_file), "--jobs", "3", "c"])
    assert config.jobs == 3  # flag beats YAML
    assert config.chunk_size == 10  # YAML beats default
    assert config.progress is False
    assert config.sources == ["c"]


def test_unknown_yaml_key_is_rejected_with_a_suggestion(tmp_path: Path) -> None:
    yaml_file = tmp_path / "mine.yaml"
    yaml_file.write_text("jbos: 4\n")
    with pytest.raises(ConfigError, match="unknown option 'jbos'.*did you mean jobs"):
        parse(["--config", str(yaml_file)])


def test_value_of_the_wrong_type_names_the_option() -> None:
    with pytest.raises(ConfigError, match="option 'jobs': 'many' is not a valid int"):
        parse(["--jobs", "many"])


def test_validation_rejects_out_of_range_values() -> None:
    with pytest.raises(ConfigError, match="--jobs must be at least 1"):
        parse(["--jobs", "0"])
    with pytest.raises(ConfigError, match="--perf-threshold must be in"):
        parse(["--perf-threshold", "1.5"])
    with pytest.raises(ConfigError, match="--judge-band-low must be below"):
        parse(["--judge-band-low", "0.8", "--judge-band-high", "0.2"])


def test_missing_or_malformed_config_file(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="does not exist"):
        parse(["--config", str(tmp_path / "nope.yaml")])
    bad = tmp_path / "bad.yaml"
    bad.write_text("- a list\n- not a mapping\n")
    with pytest.raises(ConfigError, match="must hold a mapping"):
        parse(["--config", str(bad)])


def test_fingerprint_ignores_options_that_do_not_change_results() -> None:
    base = MineConfig()
    assert MineConfig(jobs=7, progress=False, out=Path("x")).fingerprint() == base.fingerprint()
    assert MineConfig(perf_threshold=0.6).fingerprint() != base.fingerprint()


def test_a_subset_of_the_options_for_a_script_that_shares_them() -> None:
    """bench/eval_classifier.py takes perfforge mine's judge options as they are: same flags, types, checks."""
    parser = argparse.ArgumentParser()
    add_arguments(parser, MineConfig, only=("judge_url", "judge_diff_chars"))
    assert from_namespace(MineConfig, parser.parse_args(["--judge-diff-chars", "1500"])).judge_diff_chars == 1500
    with pytest.raises(SystemExit):
        parser.parse_args(["--jobs", "2"])  # not taken over
    with pytest.raises(ConfigError, match="--judge-diff-chars must be positive"):
        from_namespace(MineConfig, parser.parse_args(["--judge-diff-chars", "0"]))
