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
    assert not list(tmp_path.glob("out.json*" + INCOMPLETE_SUFFIX))


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


def test_parquet_is_written_from_threads_while_transformers_is_half_imported(tmp_path: Path,
                                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """iterate --jobs 12 on an H100: the threads writing attempts.parquet died with "module 'transformers' has no
    attribute 'PreTrainedTokenizerBase'" (datasets fingerprints a Dataset by pickling it, and its pickler looks
    transformers up whenever it is in sys.modules, here while another thread was importing it lazily). Writing
    must not depend on what else the process has imported: 8 threads write at once with such a transformers."""
    import sys
    import types
    from concurrent.futures import ThreadPoolExecutor

    from perfforge.io import read_parquet, write_parquet
    from perfforge.records import PAIR_FEATURES, as_row
    from tests.core.test_records import make_pair

    monkeypatch.setitem(sys.modules, "transformers", types.ModuleType("transformers"))  # no attributes yet
    rows = [as_row(make_pair())]
    paths = [tmp_path / f"t{i}.parquet" for i in range(8)]
    with ThreadPoolExecutor(8) as pool:
        list(pool.map(lambda path: write_parquet(path, rows, PAIR_FEATURES), paths))
    monkeypatch.undo()
    assert all(len(read_parquet(path)) == 1 for path in paths)


def test_writers_of_one_file_at_once_never_tear_it(tmp_path: Path) -> None:
    """eval --parallel-runs: the runs in flight are mostly one task's (every configuration in turn), and each judge
    caches the original's kernel launches in one file named by the original's digest. With one temporary name per
    file, a rename moved the inode another writer was still filling: FileNotFoundError (the eval stopped) and
    readers of the target saw half a JSON. Four threads write the same file 100 times each while one reads it."""
    import threading

    path = tmp_path / "launches.json"
    errors: list[BaseException] = []
    done = threading.Event()

    def write(index: int) -> None:
        try:
            for _ in range(100):
                write_json(path, {"writer": index, "launches": list(range(2000))})
        except BaseException as error:  # noqa: BLE001 (the test reports every failure)
            errors.append(error)

    def read() -> None:
        while not done.is_set():
            if path.exists():
                try:
                    assert len(read_json(path)["launches"]) == 2000
                except BaseException as error:  # noqa: BLE001
                    errors.append(error)

    reader = threading.Thread(target=read)
    reader.start()
    writers = [threading.Thread(target=write, args=(i,)) for i in range(4)]
    for thread in writers:
        thread.start()
    for thread in writers:
        thread.join()
    done.set()
    reader.join()
    assert not errors, errors[:3]
    assert [p.name for p in tmp_path.iterdir()] == ["launches.json"]
