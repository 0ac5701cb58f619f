"""perfforge.records: the schema, its parquet round trip, its documentation and the code hash."""

from __future__ import annotations

from pathlib import Path

import pyarrow.parquet as pq

from perfforge.io import read_parquet, write_parquet
from perfforge.record_docs import records_markdown
from perfforge.records import (
    COMMIT_FEATURES,
    PAIR_FEATURES,
    RECORD_CLASSES,
    SCHEMA_VERSION,
    CounterValue,
    PairRecord,
    Profile,
    Stall,
    Timing,
    as_row,
    code_hash,
    field_docs,
    normalise_code,
    read_records,
)

DOCS = Path(__file__).resolve().parents[2] / "docs" / "records.md"


def make_pair(**overrides: object) -> PairRecord:
    values = dict(repo="o/r", repo_url="https://example.com/o/r", commit="c" * 40, parent="p" * 40,
                  date="2024-01-01T00:00:00+00:00", path="k.cu", licence="MIT", found_by="mined:rules",
                  language="cuda", target="cuda", kernel_name="k", kernel_kind="cuda_kernel",
                  function_before="a", function_after="b", file_before="a", file_after="b", diff="", code_hash="h",
                  perf_score=0.9, category="tiling", evidence=["e"], message="m")
    values.update(overrides)
    return PairRecord(**values)


def test_pair_with_and_without_profile_round_trips_through_parquet(tmp_path: Path) -> None:
    profile = Profile(machine="NVIDIA H200", tool_versions="ncu 2025.3.1",
                      timing=Timing(1.5, 1.4, 1.7, 100, "cuda_events"),
                      counters=[CounterValue("dram__throughput.avg.pct_of_peak_sustained_elapsed", 91.0, "%")],
                      stalls=[Stall("long_scoreboard", 0.6)])
    rows = [as_row(make_pair()), as_row(make_pair(profile_after=profile))]
    path = tmp_path / "pairs.parquet"
    write_parquet(path, rows, PAIR_FEATURES)
    back = read_parquet(path)
    assert back[0]["profile_after"] is None
    assert back[1]["profile_after"]["timing"]["median_ms"] == 1.5
    assert back[1]["profile_after"]["counters"][0]["unit"] == "%"
    assert back[1]["schema_version"] == SCHEMA_VERSION


def test_a_pair_of_schema_2_0_reads_as_matched_by_name(tmp_path: Path) -> None:
    """Schema 2.1 added pairing and launched_kernels. A 2.0 pairs.parquet, written without their columns, is still
    read: its pairs were matched by name (same_name, no kernel launched with another configuration)."""
    import datasets

    row = {**as_row(make_pair()), "schema_version": "2.0"}
    del row["pairing"], row["launched_kernels"]
    features = datasets.Features({name: feature for name, feature in PAIR_FEATURES.items() if name in row})
    write_parquet(tmp_path / "pairs.parquet", [row], features)
    [pair] = read_records(tmp_path / "pairs.parquet", PairRecord)
    assert (pair.pairing, pair.launched_kernels, pair.schema_version) == ("same_name", [], "2.0")
    assert pair == make_pair(schema_version="2.0")


def test_empty_tables_keep_their_schema(tmp_path: Path) -> None:
    path = tmp_path / "commits.parquet"
    write_parquet(path, [], COMMIT_FEATURES)
    assert pq.read_table(path).num_rows == 0
    assert set(pq.read_table(path).column_names) == set(COMMIT_FEATURES)


def test_every_field_is_documented_and_the_docs_page_is_current() -> None:
    for cls in RECORD_CLASSES:
        for name, _, doc in field_docs(cls):
            assert doc, f"{cls.__name__}.{name} has no documentation"
    assert DOCS.read_text() == records_markdown(), "docs/records.md is stale: run python scripts/gen_record_docs.py"


def test_code_hash_ignores_formatting_and_comments_but_not_code() -> None:
    before = "__global__ void k(float* x) {\n  x[0] = 1; // one\n}"
    reformatted = "__global__ void k(float *x)\n{\n    /* set */ x[0] = 1;\n}"
    assert code_hash(before, "b") == code_hash(reformatted, "b")
    assert code_hash(before, "b") != code_hash(before.replace("1", "2"), "b")


def test_normalise_code_keeps_pragmas_and_python_floor_division() -> None:
    assert "#pragmaompparallelfor" in normalise_code("#pragma omp parallel for\nfor(;;){}")
    assert normalise_code("a = b // c  # note", "python") == "0:a=b//c"
    moved_into_loop = normalise_code("for i in r:\n    f(i)\ng()", "python")
    assert moved_into_loop != normalise_code("for i in r:\n    f(i)\n    g()", "python")
    assert "!$ompparalleldo" in normalise_code("!$omp parallel do\nx = 1 ! note", "fortran")


def test_comment_markers_inside_string_literals_are_code() -> None:
    """An edit on a line with "#" or "http://" in a string is an edit, not a comment change."""
    assert normalise_code('s = "#"; return x + 1', "python") != normalise_code('s = "#"; return x * 2', "python")
    assert normalise_code('puts("http://a"); x[0] = 1;') != normalise_code('puts("http://a"); x[0] = 2;')
    assert normalise_code("c = '/'; /* note */ d = '*';") == "c='/';d='*';"
    assert normalise_code("print *, 'Hi!' ! note", "fortran") == "print*,'Hi!'"
    assert code_hash('f("//x"); a();', "b") != code_hash('f("//x"); b();', "b")
