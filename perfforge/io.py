"""Atomic writes: a result is either absent or whole, never half-written.

Everything is written to `<name>.incomplete` in the destination directory and renamed into place, the
habit of HF datasets' builder: an interrupted job leaves only `.incomplete` files, which the next run ignores
and overwrites.
"""

from __future__ import annotations

import json
import os
import shutil
import threading
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # datasets is imported where parquet is written or read: the GPU machine's image lacks it
    import datasets

INCOMPLETE_SUFFIX = ".incomplete"


def temporary_name(path: Path) -> Path:
    """The temporary name of `path` for this process and thread: writers of one file at once (threads judging the
    same task write its cached reference launches) each fill their own, and the last rename wins whole."""
    return path.with_name(f"{path.name}.{os.getpid()}.{threading.get_ident()}{INCOMPLETE_SUFFIX}")


@contextmanager
def atomic_path(path: Path) -> Iterator[Path]:
    """Yield a temporary path beside `path`; rename it onto `path` only if the block succeeds."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = temporary_name(path)
    try:
        yield tmp
        os.replace(tmp, path)
    finally:
        if tmp.exists():
            tmp.unlink()


@contextmanager
def atomic_dir(path: Path, *, keep_existing: bool = False) -> Iterator[Path]:
    """Yield a staging path beside `path` (absent: the block creates it); it takes the place of `path` only if
    the block succeeds, so a reader never sees half a directory. keep_existing: when `path` appeared meanwhile
    (another process made it), keep that one and drop the staging."""
    path.parent.mkdir(parents=True, exist_ok=True)
    staging = temporary_name(path)
    shutil.rmtree(staging, ignore_errors=True)
    try:
        yield staging
        if not (keep_existing and path.exists()):
            shutil.rmtree(path, ignore_errors=True)
            staging.rename(path)
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def write_text(path: Path, text: str) -> None:
    with atomic_path(path) as tmp:
        tmp.write_text(text, encoding="utf-8")


def write_json(path: Path, data: Any, *, compact: bool = False) -> None:
    """JSON for people (indented, sorted keys), or compact for machine-only intermediate files."""
    text = json.dumps(data, separators=(",", ":")) if compact else json.dumps(data, indent=2, sort_keys=True)
    write_text(path, text + "\n")


def read_json(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))


def write_parquet(path: Path, rows: list[dict[str, Any]], features: datasets.Features) -> None:
    """Rows written under the given features (an empty list gives an empty, typed table); datasets reads the file
    back with its features. Built by pyarrow, not through a datasets.Dataset: that fingerprints itself by pickling,
    which looks transformers up when it is imported (datasets' dill) and failed on a lazily imported transformers
    while iterate's threads wrote attempts; it also encodes row by row where from_list is used (seconds for a few
    hundred records carrying whole source files)."""
    write_parquet_batches(path, [rows], features)


def write_parquet_batches(path: Path, batches: Iterable[list[dict[str, Any]]], features: datasets.Features) -> int:
    """Rows arriving in batches, written as one parquet file without holding them all in memory (mined pairs
    carry whole source files). The schema carries the HF features, so datasets reads the file as write_parquet's.
    Returns the number of rows written."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    schema = features.arrow_schema
    written = 0
    with atomic_path(path) as tmp, pq.ParquetWriter(str(tmp), schema) as writer:
        for rows in batches:
            if rows:
                writer.write_table(pa.Table.from_pylist(rows, schema=schema))
                written += len(rows)
    return written


def read_parquet(path: Path) -> datasets.Dataset:
    import datasets

    datasets.disable_progress_bars()  # its "Generating train split" bars would bury the command's own lines
    return datasets.Dataset.from_parquet(str(path))
