"""KernelBench rows against torch.compile (eval/baselines.py): the judge's speedup joined with the baseline files by
a ratio of ratios, the proof taken from the scaled interval, and the report's section."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from eval.baselines import against_compile, problem_key, read_baselines
from eval.report import write_report
from perfforge.errors import ConfigError
from perfforge.verdict import Status
from tests.eval.test_metrics import make_row


def _baselines(tmp_path: Path, eager: dict, compiled: dict) -> tuple[Path, Path]:
    paths = tmp_path / "baseline_eager.json", tmp_path / "baseline_compile.json"
    for path, timings in zip(paths, (eager, compiled), strict=True):
        path.write_text(json.dumps(timings))
    return paths


@pytest.fixture
def baselines(tmp_path: Path):
    """GELU: compile is 4x faster than eager; ReLU: compile no faster; a level-2 problem only in the eager file."""
    eager = {"level1": {"88_MinGPTNewGelu.py": {"mean": 1.6}, "19_ReLU.py": {"mean": 2.0}},
             "level2": {"3_X.py": {"mean": 5.0}}}
    compiled = {"level1": {"88_MinGPTNewGelu.py": {"mean": 0.4}, "19_ReLU.py": {"mean": 2.0}}}
    return read_baselines(*_baselines(tmp_path, eager, compiled))


def kb_row(task: str, **fields):
    return make_row(task, suite="kernelbench", target="torch", language="python", **fields)


def test_task_names_give_level_and_problem() -> None:
    assert problem_key("kb_l1_088_min_gptnew_gelu") == (1, 88)
    assert problem_key("kb_l2_003_conv_transpose3d") == (2, 3)
    assert problem_key("matvec_colwalk") is None


def test_a_win_over_eager_is_scaled_by_compile_over_eager(baselines) -> None:
    """2.6x against eager on GELU, whose compiled reference is 4x faster than eager: 0.65x against compile, its
    interval scaled alike and wholly under 1, so slower; on ReLU (compile no faster) it stays proven faster."""
    rows = [kb_row("kb_l1_088_gelu", speedup=2.6, ci=(2.5, 2.7)),
            kb_row("kb_l1_019_re_lu", speedup=1.5, ci=(1.4, 1.6))]
    join = against_compile(rows, baselines)
    gelu, relu = join.rows
    assert gelu.speedup == pytest.approx(0.65) and gelu.speedup_ci_low == pytest.approx(0.625)
    assert gelu.status == Status.SLOWER
    assert relu.speedup == pytest.approx(1.5) and relu.status == Status.IMPROVED
    assert join.missing == 0


def test_an_interval_across_one_is_no_change_and_failures_stay(baselines) -> None:
    rows = [kb_row("kb_l1_088_gelu", speedup=4.2, ci=(3.6, 4.8)),
            kb_row("kb_l1_019_re_lu", status="incorrect", speedup=None)]
    near, wrong = against_compile(rows, baselines).rows
    assert near.speedup == pytest.approx(1.05) and near.status == Status.NO_CHANGE
    assert wrong.status == "incorrect" and wrong.speedup is None


def test_rows_without_both_baselines_are_counted_and_other_suites_ignored(baselines) -> None:
    rows = [kb_row("kb_l2_003_x", speedup=2.0, ci=(1.9, 2.1)), kb_row("kb_l3_007_y", speedup=2.0, ci=(1.9, 2.1)),
            make_row("matvec", speedup=3.0, ci=(2.9, 3.1))]
    join = against_compile(rows, baselines)
    assert join.rows == [] and join.missing == 2


def test_a_file_that_is_not_a_baseline_is_one_clear_error(tmp_path: Path) -> None:
    eager, compiled = _baselines(tmp_path, {"level1": {"88_G.py": {"mean": 1.0}}}, {"level1": {}})
    with pytest.raises(ConfigError, match="--baseline-compile .* no problem with a mean time"):
        read_baselines(eager, compiled)
    eager.write_text("not json")
    with pytest.raises(ConfigError, match="--baseline-eager .* not readable"):
        read_baselines(eager, compiled)


def test_the_report_reads_kernelbench_rows_against_compile(tmp_path: Path, baselines) -> None:
    rows = [kb_row("kb_l1_088_gelu", speedup=2.6, ci=(2.5, 2.7)),
            kb_row("kb_l1_019_re_lu", speedup=1.5, ci=(1.4, 1.6)), kb_row("kb_l2_003_x", speedup=2.0, ci=(1.9, 2.1))]
    written = write_report(tmp_path, rows, title="kb", baselines=baselines)
    text = written["report.md"].read_text()
    section = text.split("## Against torch.compile", 1)[1].split("\n## ", 1)[0]
    assert "baseline_compile.json" in section and "1 kernelbench row(s)" in section
    # 2 joined rows, one proven faster: fast_1 50%
    assert "| base |" in section and "50%" in section
    assert "## Against torch.compile" not in write_report(tmp_path / "plain", rows, title="kb")["report.md"].read_text()


def test_one_baseline_file_alone_is_refused() -> None:
    from eval.config import EvalConfig

    with pytest.raises(ConfigError, match="go together"):
        EvalConfig(baseline_eager=Path("eager.json")).validate()
