"""The evaluation's one table: OUT/results.parquet, EvalRecord rows keyed by (suite, task, configuration,
variant, seed). A row is added only once its measurement is complete, and the file is rewritten atomically after
each, so an interrupted evaluation loses at most the run in progress and a rerun skips every key present."""

from __future__ import annotations

from pathlib import Path

from perfforge.records import EvalRecord, as_row, read_records

RESULTS_FILE = "results.parquet"


def load(path: Path) -> list[EvalRecord]:
    """The rows of a results table (none when it does not exist yet)."""
    if not path.is_file():
        return []
    return read_records(path, EvalRecord)


def save(path: Path, rows: list[EvalRecord]) -> None:
    from perfforge.io import write_parquet
    from perfforge.records import EVAL_FEATURES

    write_parquet(path, [as_row(r) for r in sorted(rows, key=lambda r: r.key)], EVAL_FEATURES)


class ResultsTable:
    """The table on disk and in memory; `add` replaces a row of the same key and saves."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.rows = {row.key: row for row in load(path)}

    def has(self, key: tuple[str, str, str, str, int]) -> bool:
        return key in self.rows

    def add(self, row: EvalRecord) -> None:
        self.rows[row.key] = row
        save(self.path, list(self.rows.values()))

    def relabel_splits(self, splits: dict[tuple[str, str], str]) -> None:
        """Give every row of (suite, task) its split against the training runs now under evaluation (a row made
        before an adapter joined the comparison was labelled without it)."""
        stale = [row for row in self.rows.values() if splits.get((row.suite, row.task), row.split) != row.split]
        for row in stale:
            row.split = splits[(row.suite, row.task)]
        if stale:
            save(self.path, list(self.rows.values()))

    def all(self) -> list[EvalRecord]:
        return sorted(self.rows.values(), key=lambda r: r.key)
