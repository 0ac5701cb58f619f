"""perfforge.io: results are either whole or absent."""

from __future__ import annotations

from pathlib import Path

import pytest

from perfforge.io import INCOMPLETE_SUFFIX, atomic_path, read_json, write_json


def test_failed_write_leaves_neither_a_partial_file_nor_a_temporary(tmp_path: Path) -> None:
    target = tmp_path / "out.json"
    write_json(target, {"old": True})
    with pytest.raises(RuntimeError), atomic_path(target) as tmp:
        tmp.write_text("{half")
        raise RuntimeError("interrupted")
    assert read_json(target) == {"old": True}
    assert not (tmp_path / ("out.json" + INCOMPLETE_SUFFIX)).exists()


def test_successful_write_replaces_the_target(tmp_path: Path) -> None:
    target = tmp_path / "nested" / "out.json"
    write_json(target, {"n": 1})
    write_json(target, {"n": 2})
    assert read_json(target) == {"n": 2}


def test_parquet_written_in_batches_reads_back_with_the_record_features(tmp_path: Path) -> None:
    """pairs.parquet is streamed batch by batch; datasets must see the same features and rows as a one-shot write."""
    from perfforge.io import read_parquet, write_parquet, write_parquet_batches
    from perfforge.records import PAIR_FEATURES, as_row
    from tests.core.test_records import make_pair

    rows = [as_row(make_pair(kernel_name=f"k{i}")) for i in range(5)]
    assert write_parquet_batches(tmp_path / "streamed.parquet", iter([rows[:2], [], rows[2:]]), PAIR_FEATURES) == 5
    write_parquet(tmp_path / "whole.parquet", rows, PAIR_FEATURES)
    streamed, whole = read_parquet(tmp_path / "streamed.parquet"), read_parquet(tmp_path / "whole.parquet")
    assert streamed.features == whole.features == PAIR_FEATURES
    assert streamed.to_list() == whole.to_list()
