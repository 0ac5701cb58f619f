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
