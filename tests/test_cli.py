"""The perfforge command: the main job on the embedded demo, the card, and one clear line for bad input."""

from __future__ import annotations

import csv
from pathlib import Path

import pyarrow.parquet as pq
import pytest
import yaml

from mining.sources import demo_bundle
from perfforge.cli import main


@pytest.fixture(scope="module")
def demo_dataset(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("demo") / "mine"
    assert main(["mine", "--out", str(out), "--no-progress"]) == 0
    return out


def error_line(capsys: pytest.CaptureFixture[str]) -> str:
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    return err[0]


def test_mine_with_no_source_mines_the_embedded_demo_and_finds_its_known_truth(demo_dataset: Path) -> None:
    """The demo history's truth file says which commits are optimisations: the miner must agree closely."""
    truth = {row["sha"]: row for row in csv.DictReader(demo_bundle().with_name("demo_truth.csv").open())}
    commits = pq.read_table(demo_dataset / "commits.parquet").to_pylist()
    assert commits and all(c["repo"] == "perfforge/minikern-demo" for c in commits)
    predicted = {c["commit"] for c in commits if c["is_perf"]}
    actual = {sha for sha, row in truth.items() if row["is_perf"] == "true"}
    precision = len(predicted & actual) / len(predicted)
    recall = len(predicted & actual) / len(actual)
    assert precision >= 0.9, f"precision {precision:.2f} on the demo"
    assert recall >= 0.6, f"recall {recall:.2f} on the demo"
    agree = [c for c in commits
             if c["commit"] in actual and c["is_perf"] and c["category"] == truth[c["commit"]]["category"]]
    assert len(agree) >= 0.7 * len(predicted & actual)
    pairs = pq.read_table(demo_dataset / "pairs.parquet").to_pylist()
    assert {p["licence"] for p in pairs} == {"MIT"}
    assert {"cuda_kernel", "openmp_region"} <= {p["kernel_kind"] for p in pairs}


def test_mine_prints_a_summary_and_where_results_are(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["mine", "--out", str(tmp_path / "o"), "--no-progress", "--jobs", "1"]) == 0
    out = capsys.readouterr().out
    assert "mined 1 repositories" in out and "performance commits" in out
    assert str(tmp_path / "o" / "pairs.parquet") in out


def test_card_writes_a_hugging_face_card_from_the_data(demo_dataset: Path, tmp_path: Path) -> None:
    assert main(["card", str(demo_dataset), "--out-dir", str(tmp_path), "--name", "minikern-demo"]) == 0
    text = (tmp_path / "minikern-demo.md").read_text()
    header = yaml.safe_load(text.split("---\n")[1])
    assert header["license"] == ["mit"]
    assert header["configs"][0]["data_files"] == "pairs.parquet"
    n_pairs = pq.read_table(demo_dataset / "pairs.parquet").num_rows
    assert f"{n_pairs} pairs" in text
    for section in ("## Dataset Structure", "### Data Fields", "## Dataset Creation", "### Known Limitations",
                    "### Licensing Information"):
        assert section in text


@pytest.mark.parametrize(("argv", "message"), [
    (["mine", "/no/such/repo"], "perfforge: error: source /no/such/repo does not exist"),
    (["mine", "--jobs", "0"], "perfforge: error: --jobs must be at least 1"),
    (["mine", "--judge-diff-chars", "0"], "perfforge: error: --judge-diff-chars must be positive, got 0"),
    (["card", "/no/such/dataset"], "perfforge: error: /no/such/dataset is not a perfforge dataset"),
])
def test_bad_input_gets_one_clear_error_line(argv: list[str], message: str, tmp_path: Path,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    assert main([*argv, *(["--out", str(tmp_path / "o")] if argv[0] == "mine" else [])]) == 2
    assert error_line(capsys).startswith(message)


def test_a_directory_that_is_not_a_repository(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "plain").mkdir()
    assert main(["mine", str(tmp_path / "plain"), "--out", str(tmp_path / "o")]) == 2
    assert "is not a git repository" in error_line(capsys)


def test_unknown_option_in_a_config_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = tmp_path / "mine.yaml"
    config.write_text("chunk: 10\n")
    assert main(["mine", "--config", str(config), "--out", str(tmp_path / "o")]) == 2
    assert "unknown option 'chunk'" in error_line(capsys)


@pytest.mark.parametrize(("argv", "refused"), [
    (["optimize", "task", "--candidate", "3"], "--candidate 3"),  # once ran as --candidates 3
    (["eval", "--model", "base"], "--model base"),  # once started a 7-pattern evaluation as --models base
    (["mine", "--no-pair"], "--no-pair"),
    (["synth", "patterns", "--instance", "2"], "--instance 2"),
])
def test_an_abbreviated_option_is_refused_not_taken_for_another(argv: list[str], refused: str,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as stopped:
        main(argv)
    assert stopped.value.code == 2
    assert f"unrecognized arguments: {refused}" in capsys.readouterr().err


@pytest.mark.parametrize(("command", "shown"), [
    (["optimize"], ["candidates sampled per round, in one batched request (default: 4)",
                    "(default: --profile-candidates)", "(default: all)", "(default: none)"]),
    (["mine"], ["(default: perfforge-out/mine)", "(default: one per CPU core)", "(default: --pairs)"]),
    (["eval"], ["(default: catalogue)", "(default: base)"]),
])
def test_help_shows_every_default(command: list[str], shown: list[str], capsys: pytest.CaptureFixture[str],
                                  monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "250")  # one line per option, so that the text can be matched whole
    with pytest.raises(SystemExit):
        main([*command, "--help"])
    text = capsys.readouterr().out
    for expected in shown:
        assert expected in text


@pytest.mark.parametrize(("argv", "message"), [
    (["optimize", "{task}", "--sources", "a,b"], "unknown summary source(s) 'a', 'b'; valid sources: none,"),
    (["optimize", "{task}", "--backend", "vlm"], "--backend 'vlm' is not a backend; choose one of auto, openai"),
    (["profile", "{task}", "--sources", "roofline,stals"], "unknown summary source(s) 'stals'"),
    (["diagnose", "{task}", "--sources", "x"], "unknown summary source(s) 'x'"),
    (["profile", "{task}", "--candidate", "missing.c"], "--candidate missing.c does not exist"),
])
def test_options_are_checked_before_any_work(argv: list[str], message: str, tmp_path: Path,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    """These were refused only after minutes of profiling (or with a traceback): now before anything runs, so an
    empty directory stands in for the task."""
    task = tmp_path / "task"
    task.mkdir()
    assert main([part.format(task=task) for part in argv]) == 2
    assert error_line(capsys).startswith(f"perfforge: error: {message}")


def test_comma_joined_sources_are_split(tmp_path: Path) -> None:
    from perfforge.config import resolve
    from profiling.config import ProfileConfig

    config = resolve(ProfileConfig, {}, {"task": tmp_path, "sources": ["roofline,counters", "stalls"]})
    assert config.sources == ["roofline", "counters", "stalls"]


def test_card_by_default_writes_outside_the_tracked_tree(demo_dataset: Path, tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """Run from a clone, the old default (data_cards/) rewrote the committed demo card."""
    monkeypatch.chdir(tmp_path)
    assert main(["card", str(demo_dataset), "--name", "demo"]) == 0
    assert (tmp_path / "perfforge-out" / "cards" / "demo.md").is_file()
    assert not (tmp_path / "data_cards").exists()


def test_the_committed_demo_card_is_of_this_miner_and_schema() -> None:
    """The committed card says which miner and schema made it: regenerate it (README) when either changes."""
    from mining.config import MINER_VERSION
    from perfforge.records import SCHEMA_VERSION

    card = (Path(__file__).resolve().parents[1] / "data_cards" / "minikern-demo.md").read_text()
    assert f"miner v{MINER_VERSION} (schema {SCHEMA_VERSION})" in card


def test_kernels_only_keeps_kernels_and_says_so_in_the_card(demo_dataset: Path, tmp_path: Path) -> None:
    """The demo's pairs include host functions (launchers); --kernels-only keeps the kernels alone, and the card
    says which the dataset holds."""
    import pyarrow.parquet as pq

    from mining.pipeline import KERNEL_KINDS

    every = pq.read_table(demo_dataset / "pairs.parquet").to_pylist()
    out = tmp_path / "kernels"
    assert main(["mine", "--out", str(out), "--no-progress", "--kernels-only"]) == 0
    kept = pq.read_table(out / "pairs.parquet").to_pylist()
    assert kept and all(p["kernel_kind"] in KERNEL_KINDS for p in kept)
    assert len(kept) == sum(p["kernel_kind"] in KERNEL_KINDS for p in every) < len(every)
    assert main(["card", str(out), "--out-dir", str(tmp_path), "--name", "kernels"]) == 0
    assert "Only kernels were kept" in (tmp_path / "kernels.md").read_text()


def test_a_child_forked_with_the_interrupt_handler_dies_of_sigterm_quietly() -> None:
    """A pool worker terminated between its fork and its initializer ran the CLI's SIGTERM handler inherited from
    the parent and printed a KeyboardInterrupt traceback into the parent's stderr (seen once under load in
    tests/mining/test_interrupt.py); in any process but the one that installed it, the handler is the default."""
    import os
    import signal as signals
    import time

    from perfforge import cli

    previous = signals.signal(signals.SIGTERM, cli._interrupt)
    saved = list(cli._INTERRUPTED_PID)
    cli._INTERRUPTED_PID[:] = [os.getpid()]
    read_end, write_end = os.pipe()
    try:
        pid = os.fork()
        if pid == 0:  # the child: no handler of its own yet
            os.close(read_end)
            os.dup2(write_end, 2)
            try:
                while True:
                    time.sleep(0.01)
            finally:
                os._exit(3)
        os.close(write_end)
        time.sleep(0.2)
        os.kill(pid, signals.SIGTERM)
        _, status = os.waitpid(pid, 0)
        with os.fdopen(read_end) as stderr:
            printed = stderr.read()
    finally:
        signals.signal(signals.SIGTERM, previous)
        cli._INTERRUPTED_PID[:] = saved
    assert os.WIFSIGNALED(status) and os.WTERMSIG(status) == signals.SIGTERM, status
    assert printed == ""
