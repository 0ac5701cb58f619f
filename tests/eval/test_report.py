"""eval.report (and the figures of eval.plots it draws): report.md with linked figures, a self-contained
report.html, per-line stall figures from real profile.json files, and an honest report for no rows."""

from __future__ import annotations

import base64
import re
from pathlib import Path

import pytest

from eval.plots import ablation_bars, hot_line_label, line_share_name, stall_comparison
from eval.report import CSS, HOW_TO_READ_HEADING, LINE_PROFILE_HEADING, stall_rows, write_report
from perfforge.io import write_json
from perfforge.records import EvalRecord, HotLine, Profile, RooflinePoint, Stall, Timing
from tests.eval.test_metrics import RUN, make_row

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
MACHINE = "NVIDIA H100 80GB HBM3"


def make_profile(median_ms: float, shares: list[tuple[int, str, float, str]], target: str = "cuda") -> Profile:
    """A profile with hot lines (line, code, share, dominant stall); an empty stall is a CPU line."""
    return Profile(machine=MACHINE, tool_versions="ncu 2025.1", target=target, kernel="k", source_file="k.cu",
                   timing=Timing(median_ms=median_ms, p10_ms=median_ms * 0.95, p90_ms=median_ms * 1.05, trials=50,
                                 method="cuda_events"),
                   stalls=[Stall("long_scoreboard", 0.6), Stall("barrier", 0.4)] if target == "cuda" else [],
                   hot_lines=[HotLine(line=n, code=code, share=share, dominant_stall=stall)
                              for n, code, share, stall in shares])


@pytest.fixture(scope="module")
def evaluation(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[EvalRecord]]:
    """Two tasks, the human reference and the base model under two source variants; sgemm's improved best
    candidate (a CUDA kernel) and copy's (a CPU loop) were profiled."""
    out = tmp_path_factory.mktemp("eval")
    gpu_before = make_profile(2.0, [(12, "acc += A[row * n + k] * B[k * n + col];", 0.7, "long_scoreboard"),
                                    (15, "__syncthreads();", 0.2, "barrier")])
    gpu_after = make_profile(0.8, [(20, "acc += As[ty][k] * Bs[k][tx];", 0.5, "mio_throttle"),
                                   (24, "__syncthreads();", 0.3, "barrier")])
    cpu_before = make_profile(5.0, [(3, "for (i = 0; i < n; i++) out[i] = in[i * stride];", 0.9, "")], "cpu")
    cpu_after = make_profile(4.0, [(3, "memcpy(out, in, n * sizeof(float));", 0.8, "")], "cpu")
    for name, profile in (("sgemm/before", gpu_before), ("sgemm/after", gpu_after), ("copy/before", cpu_before),
                          ("copy/after", cpu_after)):
        write_json(out / "runs" / name / "profile.json", profile.to_dict())
    before = RooflinePoint(2.0, 300.0, 150.0, 50000.0, 3000.0)
    after = RooflinePoint(16.0, 8000.0, 500.0, 50000.0, 3000.0)
    copy_point = RooflinePoint(0.0, 0.0, 900.0, 50000.0, 3000.0)  # no FLOPs: not on the log-log roofline
    gpu = {"machine": MACHINE, "baseline_ms": 2.0, "target": "cuda"}
    cpu = {"machine": MACHINE, "baseline_ms": 5.0}
    rows = [
        make_row("sgemm", "human", speedup=3.1, ci=(3.0, 3.2), roofline_before=before, roofline_after=after, **gpu),
        make_row("copy", "human", speedup=1.3, roofline_before=copy_point, roofline_after=copy_point, **cpu),
        make_row("sgemm", variant="sources=all;candidates=4;rounds=2", speedup=2.4, ci=(2.2, 2.6), attempts=RUN,
                 compiled=5, profile_before="runs/sgemm/before/profile.json",
                 profile_after="runs/sgemm/after/profile.json", roofline_before=before, roofline_after=after,
                 config_names=["small", "default", "large"], config_speedups=[1.4, 2.4, 2.9],
                 default_config="default", **gpu),
        make_row("copy", variant="sources=all;candidates=4;rounds=2", speedup=1.25, compiled=2,
                 attempts=[(1, 1, "incorrect", None), (1, 2, "improved", 1.25)],
                 profile_before="runs/copy/before/profile.json", profile_after="runs/copy/after/profile.json", **cpu),
        make_row("sgemm", variant="sources=none;candidates=4;rounds=2", status="needs_review", speedup=40.0,
                 attempts=RUN[:3], compiled=2, held_for_review=1, **gpu),
        make_row("copy", variant="sources=none;candidates=4;rounds=2", status="build_failed", attempts=RUN[:1],
                 machine="AMD EPYC 9654"),
    ]
    return out, rows


@pytest.fixture(scope="module")
def report(evaluation: tuple[Path, list[EvalRecord]]) -> tuple[Path, dict[str, Path]]:
    """The full report, drawn once for the tests that read it (figures take a few tenths of a second each)."""
    out, rows = evaluation
    return out, write_report(out, rows, title="Held-out <catalogue>")


def test_write_report_writes_markdown_html_and_figures(report: tuple[Path, dict[str, Path]]) -> None:
    out, written = report
    figures = sorted(name for name in written if name.startswith("figures/"))
    assert {"figures/speedups.png", "figures/fast_p.png", "figures/roofline.png", "figures/ablation_sources.png",
            "figures/ablation_rounds.png", "figures/ablation_candidates.png",
            "figures/stalls_sgemm_base.png", "figures/cost_copy_base.png"} == set(figures)
    for name in figures:
        assert written[name] == out / name
        assert (out / name).read_bytes().startswith(PNG_MAGIC)
    markdown = (out / "report.md").read_text()
    assert markdown.startswith("# Held-out <catalogue>\n")
    for name in figures:
        assert f"]({name})" in markdown  # linked relative to report.md
    assert "Computed from 6 rows: 2 tasks" in markdown
    assert f"{MACHINE} (5 rows)" in markdown and "AMD EPYC 9654 (1 row)" in markdown
    assert "needs_review" in markdown and "fast_p" in markdown
    assert "2.40x [2.20, 2.60] improved" in markdown  # sgemm under base, sources=all
    assert "1.40x (small)" in markdown and "2.90x (large)" in markdown  # generalisation
    assert not list(out.glob("**/*.incomplete"))


def test_report_html_is_self_contained(report: tuple[Path, dict[str, Path]]) -> None:
    out, written = report
    page = (out / "report.html").read_text()
    assert "http://" not in page and "https://" not in page
    assert not re.search(r"""(src|href)\s*=\s*["'](?!data:)""", page)  # nothing loaded from elsewhere
    images = re.findall(r'src="data:image/png;base64,([A-Za-z0-9+/=]+)"', page)
    assert len(images) == sum(1 for name in written if name.startswith("figures/"))
    assert all(base64.b64decode(data).startswith(PNG_MAGIC) for data in images)
    assert "<title>Held-out &lt;catalogue&gt;</title>" in page
    assert "<table>" in page and "sources=all;candidates=4;rounds=2" in page


def test_stall_tasks_are_chosen_by_speedup_or_named(evaluation: tuple[Path, list[EvalRecord]],
                                                   tmp_path: Path) -> None:
    profiles, rows = evaluation
    chosen, missing = stall_rows(rows, None)
    assert [r.task for r in chosen] == ["sgemm", "copy"] and missing == []  # largest speedup first
    chosen, missing = stall_rows(rows, ["copy", "nbody"])
    assert [r.task for r in chosen] == ["copy"] and missing == ["nbody"]
    written = write_report(tmp_path, rows, title="t", stall_tasks=["nbody"], profiles_root=profiles)
    assert not any(name.startswith(("figures/stalls_", "figures/cost_")) for name in written)
    assert "No row of task nbody has both profiles." in (tmp_path / "report.md").read_text()


def test_missing_profiles_are_reported_not_skipped(evaluation: tuple[Path, list[EvalRecord]],
                                                   tmp_path: Path) -> None:
    _, rows = evaluation
    write_report(tmp_path, rows, title="t")  # the profiles lie beside the other evaluation's output
    assert "sgemm (base): profile not found" in (tmp_path / "report.md").read_text()


def test_an_empty_evaluation_gives_an_honest_report(tmp_path: Path) -> None:
    written = write_report(tmp_path, [], title="nothing yet")
    assert set(written) == {"report.md", "report.html"}
    assert "No rows: nothing was evaluated yet." in (tmp_path / "report.md").read_text()


def test_stall_comparison_of_cpu_profiles_and_labels() -> None:
    cpu = make_profile(1.0, [(7, "x" * 80, 0.5, "")], "cpu")
    assert stall_comparison(cpu, make_profile(0.5, [], "cpu"), task="t").startswith(PNG_MAGIC)
    label = hot_line_label(HotLine(line=7, code="  a   =  b;  ", share=0.5, dominant_stall=""))
    assert label == "line 7: a = b;"
    assert hot_line_label(HotLine(line=7, code="x" * 80, share=0.5, dominant_stall="")) == "line 7: " + "x" * 37 \
        + "..."


def test_html_tables_wrap_to_fit_a_window(report: tuple[Path, dict[str, Path]]) -> None:
    """The 17-column summary overflowed a 1400-px window: cells wrap between words, a variant breaks after each
    ';', and a table too wide anyway scrolls in its own box (docs/eval_report_1400px.png shows the result)."""
    out, _ = report
    page = (out / "report.html").read_text()
    assert "overflow-wrap:break-word" in CSS and ".table{overflow-x:auto" in CSS
    assert page.count('<div class="table"><table>') == page.count("<table>") > 0
    assert "sources=all;<wbr>candidates=4;<wbr>rounds=2" in page
    assert "<th>attempts/<wbr>row</th>" in page


def test_results_come_before_the_explanation(report: tuple[Path, dict[str, Path]]) -> None:
    out, _ = report
    markdown = (out / "report.md").read_text()
    headings = re.findall(r"^## (.+)$", markdown, re.MULTILINE)
    assert headings[0] == "Summary" and headings[-1] == HOW_TO_READ_HEADING
    assert markdown.index("fast_p (KernelBench's metric)") > markdown.index("## Per task")


def test_an_all_zero_ablation_has_no_empty_chart(tmp_path: Path) -> None:
    """Every row of both sources values failed: bars of height zero would draw two empty frames."""
    rows = [make_row("t1", variant=f"sources={sources};candidates=4;rounds=2", status="build_failed",
                     attempts=RUN[:1]) for sources in ("all", "none")]
    written = write_report(tmp_path, rows, title="t")
    assert "figures/ablation_sources.png" not in written
    markdown = (tmp_path / "report.md").read_text()
    assert "No chart: no row of this ablation was correct (correctness and fast_1 are 0% at every sources value)." \
        in markdown


def test_ablation_bars_say_no_data_for_an_all_zero_metric(monkeypatch: pytest.MonkeyPatch) -> None:
    import eval.plots as plots

    said: list[str] = []
    drawing = plots._no_data
    monkeypatch.setattr(plots, "_no_data", lambda ax, what: (said.append(what), drawing(ax, what)))
    entries = [{"value": v, "configuration": "base", "variant": "", "correctness": c, "fast_1": 0.0}
               for v, c in (("all", 1.0), ("none", 0.5))]
    assert ablation_bars(entries, "sources").startswith(PNG_MAGIC)
    assert said == ["row with fast_1 above 0%"]  # correctness has bars; fast_1 would be an empty frame


def test_cpu_line_profiles_are_titled_by_cost_not_stalls(report: tuple[Path, dict[str, Path]]) -> None:
    out, _ = report
    cpu = make_profile(1.0, [(7, "x", 0.5, "")], "cpu")
    gpu = make_profile(1.0, [(7, "x", 0.5, "barrier")])
    assert line_share_name(cpu, cpu) == "share of cost" and line_share_name(gpu, gpu) == "share of stall samples"
    markdown = (out / "report.md").read_text()
    assert f"## {LINE_PROFILE_HEADING}" in markdown and "Per-line stalls" not in markdown
    assert "copy (base [sources=all;candidates=4;rounds=2], seed 0): each hot line's share of cost" in markdown
