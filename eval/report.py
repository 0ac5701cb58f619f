"""The evaluation report: OUT/report.md (figures saved under OUT/figures/ and linked) and OUT/report.html (the same
content, self-contained: figures embedded as data: URIs, inline CSS, no external resource).

The report is built once as a list of blocks (headings, paragraphs, tables, figures) and rendered twice, so that
the two files cannot disagree. Every number comes from eval/metrics.py.
"""

from __future__ import annotations

import base64
import html
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from eval import metrics, plots
from eval.baselines import Baselines, against_compile
from perfforge.io import atomic_path, read_json, write_text
from perfforge.records import EvalRecord, Profile
from perfforge.verdict import Status

MAX_STALL_TASKS = 3  # stall figures chosen automatically: each is a wide figure, and three tell the story
FIGURES_DIR = "figures"
# Tables must fit a 1400-px window (the summary has 17 columns): cells wrap between words rather than widen the
# table, the HTML renderer adds break opportunities after ';' and '/' (variants, ratios), and a table still too
# wide for a narrow window scrolls inside its own box instead of pushing columns off the page.
CSS = """body{font-family:system-ui,sans-serif;max-width:1360px;margin:2em auto;padding:0 1em;color:#222}
.table{overflow-x:auto;max-width:100%}
table{border-collapse:collapse;margin:1em 0;font-size:0.85em}th,td{border:1px solid #ccc;padding:0.25em 0.4em;
text-align:left;vertical-align:top;overflow-wrap:break-word}th{background:#f3f3f3}
td{font-variant-numeric:tabular-nums}img{max-width:100%}
figure{margin:1em 0}figcaption{color:#555;font-size:0.9em}"""


@dataclass
class Heading:
    level: int
    text: str


@dataclass
class Paragraph:
    text: str


@dataclass
class Table:
    headers: list[str]
    rows: list[list[str]]


@dataclass
class Figure:
    name: str  # file stem under figures/
    caption: str
    png: bytes


Block = Heading | Paragraph | Table | Figure


def write_report(out_dir: Path, rows: list[EvalRecord], *, title: str, stall_tasks: list[str] | None = None,
                 profiles_root: Path | None = None, baselines: Baselines | None = None) -> dict[str, Path]:
    """Write report.md, report.html and figures/*.png under out_dir; returns each written file by its path
    relative to out_dir (report.md, report.html, figures/NAME.png).

    profiles_root (default out_dir) is what the rows' profile_before and profile_after are relative to.
    stall_tasks: the tasks whose per-line stall figure is drawn; default up to MAX_STALL_TASKS tasks with a
    profiled improved best candidate, the largest speedup first. baselines: KernelBench's eager and compile
    baseline times, for the kernelbench rows' section against torch.compile (eval/baselines.py).
    """
    blocks = build_blocks(rows, title=title, stall_tasks=stall_tasks, profiles_root=profiles_root or out_dir,
                          baselines=baselines)
    written: dict[str, Path] = {}
    for block in blocks:
        if isinstance(block, Figure):
            relative = f"{FIGURES_DIR}/{block.name}.png"
            _write_bytes(out_dir / relative, block.png)
            written[relative] = out_dir / relative
    for name, text in (("report.md", render_markdown(blocks)), ("report.html", render_html(blocks, title))):
        write_text(out_dir / name, text)
        written[name] = out_dir / name
    return written


def _write_bytes(path: Path, data: bytes) -> None:
    with atomic_path(path) as tmp:
        tmp.write_bytes(data)


# --- content


def build_blocks(rows: Sequence[EvalRecord], *, title: str, stall_tasks: list[str] | None,
                 profiles_root: Path, baselines: Baselines | None = None) -> list[Block]:
    """Results first (a reader opens the report for the numbers), then how to read them."""
    blocks: list[Block] = [Heading(1, title), Paragraph(overview(rows))]
    if rows:
        blocks += _summary_section(rows)
        if baselines is not None:
            blocks += _compile_section(rows, baselines)
        blocks += _tasks_section(rows)
        blocks += _ablation_sections(rows)
        blocks += _generalisation_section(rows)
        blocks += _roofline_section(rows)
        blocks += _line_profile_section(rows, stall_tasks, profiles_root)
    return [*blocks, Heading(2, HOW_TO_READ_HEADING), *(Paragraph(text) for text in HOW_TO_READ)]


HOW_TO_READ_HEADING = "How to read this"


HOW_TO_READ = (
    "A row is one task evaluated under one configuration (the human reference, or a model configuration), one "
    "variant of the loop's settings and one seed. Speedups are the original's median time over the candidate's, "
    "timed interleaved on the same machine; a row's speedup is its best trusted correct candidate's.",
    "fast_p (KernelBench's metric) is the share of rows whose result is correct and more than p times faster "
    "than the original: fast_0 is the correctness rate, fast_1 the share that is faster at all. From p = 1 up, "
    "only a speedup the validator proved counts (status improved: beyond the noise floor, its CI above 1), so a "
    "no_change measured at 1.03x is not faster.",
    "needs_review marks a correct result whose speedup is implausibly large: it is held for a person to check "
    "and never counts as faster, neither in fast_p (p > 0) nor in the geometric means.",
    "The geometric-mean speedup counts 1.0 for a row without a trusted correct speedup, since the user keeps the "
    "original; 'correct only' averages just the rows that have one. Its 95% confidence interval is a two-level "
    "bootstrap: rows are resampled, and each resampled row's log-speedup is drawn from a normal with the spread "
    "of that row's own measured confidence interval, so the interval covers both which tasks were picked and "
    "the noise of repeated measurements.",
    "The rounds and candidates ablations are read from each run's attempts: 'within r rounds' is the best attempt "
    "of rounds 1..r; 'k candidates' is the best of the first k candidates of round 1 only, since a later round "
    "depends on every earlier candidate. Roofline fractions are achieved over attainable performance at the "
    "kernel's arithmetic intensity (bandwidth over peak bandwidth without floating-point work), unclamped: above "
    "1 means a measured peak was beaten.",
)


def overview(rows: Sequence[EvalRecord]) -> str:
    """How many rows the figures come from, and where they were measured."""
    if not rows:
        return "No rows: nothing was evaluated yet."
    tasks = len({(r.suite, r.task) for r in rows})
    groups = len({(r.configuration, r.variant) for r in rows})
    suites = ", ".join(sorted({r.suite for r in rows}))
    machines = Counter(r.machine or "(not recorded)" for r in rows)
    where = "; ".join(f"{m} ({n} row{'' if n == 1 else 's'})" for m, n in machines.most_common())
    return (f"Computed from {len(rows)} rows: {tasks} tasks (suites: {suites}), {groups} configuration/variant "
            f"combinations, seeds {', '.join(str(s) for s in sorted({r.seed for r in rows}))}. "
            f"Measured on: {where}. What each number means: '{HOW_TO_READ_HEADING}', at the end.")


def _summary_section(rows: Sequence[EvalRecord]) -> list[Block]:
    headers = ["configuration", "variant", "tasks", "rows", "correct (fast_0)",
               *(metrics.fast_key(p) for p in metrics.FAST_PS if p > 0), "geomean [95% CI]", "geomean, correct only",
               "roofline before -> after", "attempts/row", "built", "attempts/success", "tokens/success",
               "held for review"]
    table = Table(headers, [_summary_cells(e) for e in metrics.summary_table(rows)])
    return [Heading(2, "Summary"), table,
            Figure("speedups", "Speedup per configuration: boxes over trusted speedups; grey crosses at 1.0 are "
                   "rows without one.", plots.speedup_distribution(rows)),
            Figure("fast_p", "fast_p against the threshold p, per configuration and variant.",
                   plots.fast_p_curves(rows))]


def _compile_section(rows: Sequence[EvalRecord], baselines: Baselines) -> list[Block]:
    """The kernelbench rows against torch.compile: the summary's table over the joined rows."""
    join = against_compile(list(rows), baselines)
    how = (f"KernelBench's second baseline. Each kernelbench row's speedup is the judge's (against the eager "
           f"reference, both served) times the compiled reference's time over the eager one's, from "
           f"{baselines.compile_path.name} and {baselines.eager_path.name} (CUDA events on the same GPU): a ratio "
           "of ratios, so the judge's clock and the baselines' never meet. A row is proven faster when its scaled "
           "95% interval lies above 1.")
    if join.missing:
        how += f" {join.missing} kernelbench row(s) whose problem is missing from either file are left out."
    if not join.rows:
        return [Heading(2, "Against torch.compile"), Paragraph(how + " No kernelbench row has both baselines.")]
    headers = ["configuration", "variant", "tasks", "rows", "correct (fast_0)",
               *(metrics.fast_key(p) for p in metrics.FAST_PS if p > 0), "geomean [95% CI]", "geomean, correct only"]
    table = Table(headers, [_summary_cells(e)[:len(headers)] for e in metrics.summary_table(join.rows)])
    return [Heading(2, "Against torch.compile"), Paragraph(how), table]


def _summary_cells(e: dict) -> list[str]:
    roofline = "-"
    if e["roofline_rows"]:
        roofline = f"{e['roofline_before']:.2f} -> {e['roofline_after']:.2f} (n={e['roofline_rows']})"
    return [e["configuration"], e["variant"] or "-", str(e["tasks"]), str(e["rows"]), _pct(e["correctness"]),
            *(_pct(e[metrics.fast_key(p)]) for p in metrics.FAST_PS if p > 0), e["geomean"].text(),
            e["geomean_correct"].text(), roofline, _num(e["attempts_per_row"], 1), _pct(e["compiled_share"]),
            _num(e["attempts_per_success"], 1), _num(e["tokens_per_success"], 0), str(e["held_for_review"])]


def _tasks_section(rows: Sequence[EvalRecord]) -> list[Block]:
    columns = list(metrics.group_rows(rows, lambda r: (r.configuration, r.variant)))
    by_task = metrics.group_rows(rows, lambda r: (r.suite, r.task))
    table_rows = []
    for (suite, task), task_rows in sorted(by_task.items()):
        cells = {(r.configuration, r.variant): [] for r in task_rows}
        for row in sorted(task_rows, key=lambda r: r.seed):
            cells[(row.configuration, row.variant)].append(row)
        table_rows.append([task, suite, task_rows[0].target, _original_cell(task_rows),
                           *(_result_cell(cells.get(column, [])) for column in columns)])
    headers = ["task", "suite", "target", "original", *(plots.group_label(*c) for c in columns)]
    return [Heading(2, "Per task"),
            Paragraph("Each cell: the best trusted speedup [95% CI] and the best attempt's status, per seed when "
                      "there are several. The original column gives the original's median time."),
            Table(headers, table_rows)]


def _original_cell(rows: list[EvalRecord]) -> str:
    reference = sorted(rows, key=lambda r: r.kind != metrics.REFERENCE_KIND)
    baseline = next((r.baseline_ms for r in reference if r.baseline_ms is not None), None)
    return "1.00x" if baseline is None else f"1.00x ({baseline:.4g} ms)"


def _result_cell(rows: list[EvalRecord]) -> str:
    if not rows:
        return ""
    texts = [_result_text(r) for r in rows]
    if len(rows) == 1:
        return texts[0]
    return "; ".join(f"s{r.seed}: {t}" for r, t in zip(rows, texts, strict=True))


def _result_text(row: EvalRecord) -> str:
    speedup = metrics.trusted_speedup(row)
    if speedup is None:
        held = row.status == Status.NEEDS_REVIEW and row.speedup is not None
        return f"{row.speedup:.2f}x held for review (not counted)" if held else row.status
    ci = ""
    if row.speedup_ci_low is not None and row.speedup_ci_high is not None:
        ci = f" [{row.speedup_ci_low:.2f}, {row.speedup_ci_high:.2f}]"
    return f"{speedup:.2f}x{ci} {row.status}"


def _ablation_sections(rows: Sequence[EvalRecord]) -> list[Block]:
    blocks: list[Block] = []
    for factor in metrics.ABLATION_FACTORS:
        entries = metrics.ablation(rows, factor)
        if len({e["value"] for e in entries}) < 2:  # one value is no ablation
            continue
        table = Table([factor, "configuration", "variant", "rows", "correct", "fast_1", "geomean [95% CI]"],
                      [[e["value"], e["configuration"], e["variant"] or "-", str(e["rows"]),
                        _pct(e["correctness"]), _pct(e["fast_1"]), e["geomean"].text()] for e in entries])
        blocks += [Heading(2, f"Ablation: {factor}"), table]
        if any(e[metric] for e in entries for metric in ("correctness", "fast_1")):
            blocks.append(Figure(f"ablation_{factor}", f"Correctness and fast_1 per {factor} value.",
                                 plots.ablation_bars(entries, factor)))
        else:  # every bar would be zero-high: an empty chart says less than this line
            blocks.append(Paragraph(f"No chart: no row of this ablation was correct (correctness and fast_1 are "
                                    f"0% at every {factor} value)."))
    return blocks


def _generalisation_section(rows: Sequence[EvalRecord]) -> list[Block]:
    entries = metrics.generalisation(rows)
    if not entries:
        return []
    table = Table(["task", "configuration", "variant", "seed", "min", "default", "max", "failed"],
                  [[e["task"], e["configuration"], e["variant"] or "-", str(e["seed"]),
                    _speedup_at(e["min"], e["min_config"]), _speedup_at(e["default"], e["default_config"]),
                    _speedup_at(e["max"], e["max_config"]), f"{e['failed']}/{e['configs']}"] for e in entries])
    return [Heading(2, "Generalisation across input configurations"),
            Paragraph("The best candidate re-measured on each input configuration of its task: the smallest, the "
                      "default (the one the loop's verdicts were timed on) and the largest speedup."), table]


def _roofline_section(rows: Sequence[EvalRecord]) -> list[Block]:
    if not any(r.roofline_before is not None and r.roofline_after is not None for r in rows):
        return []
    return [Heading(2, "Roofline"),
            Figure("roofline", "Each task's original (circle) and best candidate (triangle) against the machine's "
                   "measured roofs.", plots.roofline(rows))]


# --- per-line profiles: stalls on GPUs, cost on CPUs

LINE_PROFILE_HEADING = "Per-line profile before and after"


def _line_profile_section(rows: Sequence[EvalRecord], stall_tasks: list[str] | None, root: Path) -> list[Block]:
    chosen, missing = stall_rows(rows, stall_tasks)
    blocks: list[Block] = [Paragraph(f"No row of task {task} has both profiles.") for task in missing]
    for row in chosen:
        blocks += _line_profile_figure(row, root)
    if not blocks:
        return []
    intro = Paragraph("GPU profiles: each hot line's share of the stall samples, coloured by its dominant stall. "
                      "CPU profiles have no stall reasons: each hot line's share of the kernel's cost (callgrind).")
    return [Heading(2, LINE_PROFILE_HEADING), intro, *blocks]


def stall_rows(rows: Sequence[EvalRecord], stall_tasks: list[str] | None) -> tuple[list[EvalRecord], list[str]]:
    """The row drawn for each stall task, and the named tasks that have no row with both profiles. Chosen
    automatically: rows whose improved best candidate (or reference) was profiled, one per task, model rows
    first, then the largest speedup, at most MAX_STALL_TASKS."""
    profiled = [r for r in rows if r.profile_before and r.profile_after]
    if stall_tasks is not None:
        chosen = {task: max((r for r in profiled if r.task == task), default=None, key=_stall_preference)
                  for task in stall_tasks}
        return [r for r in chosen.values() if r is not None], [t for t, r in chosen.items() if r is None]
    improved = [r for r in profiled if r.status == Status.IMPROVED and metrics.trusted_speedup(r) is not None]
    picked: dict[str, EvalRecord] = {}
    for row in sorted(improved, key=_stall_preference, reverse=True):
        if row.task not in picked and len(picked) < MAX_STALL_TASKS:
            picked[row.task] = row
    return list(picked.values()), []


def _stall_preference(row: EvalRecord) -> tuple[bool, float]:
    return row.kind == metrics.MODEL_KIND, metrics.trusted_speedup(row) or 0.0


def _line_profile_figure(row: EvalRecord, root: Path) -> list[Block]:
    paths = [root / row.profile_before, root / row.profile_after]
    absent = [str(p) for p in paths if not p.is_file()]
    if absent:
        return [Paragraph(f"Task {row.task} ({row.configuration}): profile not found: {', '.join(absent)}.")]
    before, after = (Profile.from_dict(read_json(p)) for p in paths)
    label = f"{row.task} ({plots.group_label(row.configuration, row.variant)}, seed {row.seed})"
    what = plots.line_share_name(before, after)
    caption = f"{label}: each hot line's {what}, original (left) and best candidate (right, status {row.status})."
    stem = "stalls" if plots.has_stalls(before, after) else "cost"
    return [Figure(f"{stem}_{_file_stem(row.task)}_{_file_stem(row.configuration)}", caption,
                   plots.stall_comparison(before, after, task=label))]


def _file_stem(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", name).strip("._") or "unnamed"


# --- formatting


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{100 * value:.0f}%"


def _num(value: float | None, digits: int) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def _speedup_at(speedup: float | None, config: str) -> str:
    return "-" if speedup is None else f"{speedup:.2f}x ({config})"


def render_markdown(blocks: Sequence[Block]) -> str:
    parts = []
    for block in blocks:
        if isinstance(block, Heading):
            parts.append(f"{'#' * block.level} {block.text}")
        elif isinstance(block, Paragraph):
            parts.append(block.text)
        elif isinstance(block, Table):
            parts.append(_markdown_table(block))
        else:
            parts.append(f"![{block.name}]({FIGURES_DIR}/{block.name}.png)\n\n*{block.caption}*")
    return "\n\n".join(parts) + "\n"


def _markdown_table(table: Table) -> str:
    def line(cells: list[str]) -> str:
        return "| " + " | ".join(c.replace("|", "\\|").replace("\n", " ") for c in cells) + " |"

    return "\n".join([line(table.headers), line(["---"] * len(table.headers)), *(line(r) for r in table.rows)])


def render_html(blocks: Sequence[Block], title: str) -> str:
    body = "\n".join(_html_block(b) for b in blocks)
    return (f'<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n<title>{html.escape(title)}'
            f"</title>\n<style>{CSS}</style>\n</head>\n<body>\n{body}\n</body>\n</html>\n")


def _breakable(text: str) -> str:
    """text escaped, with a break opportunity after each ';' and '/' (a variant such as
    sources=all;candidates=4;rounds=2 would otherwise be one unbreakable word as wide as three columns)."""
    return re.sub(r"([;/])", r"\1<wbr>", html.escape(text, quote=False))


def _html_block(block: Block) -> str:
    if isinstance(block, Heading):
        return f"<h{block.level}>{html.escape(block.text)}</h{block.level}>"
    if isinstance(block, Paragraph):
        return f"<p>{html.escape(block.text)}</p>"
    if isinstance(block, Table):
        head = "".join(f"<th>{_breakable(h)}</th>" for h in block.headers)
        body = "\n".join("<tr>" + "".join(f"<td>{_breakable(c)}</td>" for c in row) + "</tr>" for row in block.rows)
        return (f'<div class="table"><table>\n<thead><tr>{head}</tr></thead>\n<tbody>\n{body}\n</tbody>\n</table>'
                "</div>")
    data = base64.b64encode(block.png).decode("ascii")
    caption = html.escape(block.caption)
    return (f'<figure><img alt="{caption}" src="data:image/png;base64,{data}">'
            f"<figcaption>{caption}</figcaption></figure>")
