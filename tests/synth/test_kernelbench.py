"""`perfforge import kernelbench` and the torch target, on problems written here in KernelBench's format (a Model,
get_inputs, get_init_inputs; nothing downloaded). Candidates run on the CPU, their Triton kernels under Triton's
interpreter, through the served judge: correctness only (validate(timing=False))."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from perfforge.cli import main
from perfforge.task import load_task
from perfforge.verdict import Status
from profiling.validate import validate

pytest.importorskip("triton")

RELU = '''
import torch
import torch.nn as nn


class Model(nn.Module):
    """Simple model that performs a ReLU activation."""

    def __init__(self):
        super(Model, self).__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(x)


batch_size = 16
dim = 96


def get_inputs():
    x = torch.randn(batch_size, dim)
    return [x]


def get_init_inputs():
    return []
'''

LINEAR_RELU = '''
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x):
        return torch.relu(self.linear(x))


def get_inputs():
    return [torch.randn(8, 32)]


def get_init_inputs():
    return [32, 24]
'''

TWO_OUTPUTS = '''
import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        return x * 2, x + 1


def get_inputs():
    return [torch.randn(4, 4)]


def get_init_inputs():
    return []
'''

NO_INPUTS = '''
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        return x
'''

TRITON_RELU = '''
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def relu_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    x = tl.load(x_ptr + offsets, mask=mask)
    tl.store(out_ptr + offsets, tl.maximum(x, 0.0), mask=mask)


def relu(x):
    out = torch.empty_like(x)
    n = x.numel()
    relu_kernel[(triton.cdiv(n, 256),)](x, out, n, BLOCK=256)
    return out
'''


@pytest.fixture
def checkout(tmp_path: Path) -> Path:
    root = tmp_path / "KernelBench-checkout"
    for level, name, text in ((1, "19_ReLU.py", RELU), (1, "7_Broken.py", NO_INPUTS),
                              (2, "3_Linear_ReLU.py", LINEAR_RELU), (2, "8_TwoOutputs.py", TWO_OUTPUTS)):
        directory = root / "KernelBench" / f"level{level}"
        directory.mkdir(parents=True, exist_ok=True)
        (directory / name).write_text(text)
    return root


@pytest.fixture
def tasks(checkout: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    out = tmp_path / "tasks"
    assert main(["import", "kernelbench", str(checkout), "--out", str(out), "--level", "1", "2"]) == 0
    return out


def judge(task_dir: Path, tmp_path: Path, source: str) -> tuple[Status, str]:
    candidate = tmp_path / "model_new_candidate.py"
    candidate.write_text(textwrap.dedent(source))
    verdict = validate(load_task(task_dir), candidate, tmp_path / "work", timing=False)
    return verdict.status, verdict.reason


def test_every_problem_with_the_three_names_becomes_a_task(checkout: Path, tmp_path: Path,
                                                          capsys: pytest.CaptureFixture) -> None:
    tasks = tmp_path / "imported"
    assert main(["import", "kernelbench", str(checkout), "--out", str(tasks), "--level", "1", "2"]) == 0
    names = sorted(p.name for p in tasks.iterdir())
    assert names == ["kb_l1_019_re_lu", "kb_l2_003_linear_re_lu", "kb_l2_008_two_outputs"]
    task = load_task(tasks / "kb_l1_019_re_lu")
    assert (task.target, task.language, task.source, task.kernel) == ("torch", "python", "model_new.py", "forward")
    assert "class ModelNew" in (task.root / "model_new.py").read_text()
    assert "skipped 7_Broken.py: no def get_inputs, def get_init_inputs" in capsys.readouterr().err


def test_a_triton_answer_is_correct(tasks: Path, tmp_path: Path) -> None:
    status, reason = judge(tasks / "kb_l1_019_re_lu", tmp_path, TRITON_RELU + '''

class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return relu(x)
''')
    assert status is Status.CORRECT, reason


def test_the_weights_are_the_references_when_built_in_the_same_order(tasks: Path, tmp_path: Path) -> None:
    """KernelBench seeds torch before building either model: an answer that makes the same nn.Linear in __init__
    gets the reference's weights, and its own ReLU kernel on top is correct."""
    status, reason = judge(tasks / "kb_l2_003_linear_re_lu", tmp_path, TRITON_RELU + '''

class ModelNew(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x):
        return relu(self.linear(x))
''')
    assert status is Status.CORRECT, reason


def test_a_wrong_answer_is_incorrect(tasks: Path, tmp_path: Path) -> None:
    status, reason = judge(tasks / "kb_l1_019_re_lu", tmp_path, TRITON_RELU + '''

class ModelNew(nn.Module):
    def forward(self, x):
        return relu(x) + 1e-3
''')
    assert status is Status.INCORRECT, reason


def test_pytorch_operators_alone_are_not_an_answer(tasks: Path, tmp_path: Path) -> None:
    """Attack: ModelNew is the reference itself (torch.relu); KernelBench asks for custom kernels."""
    status, reason = judge(tasks / "kb_l1_019_re_lu", tmp_path, '''
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, x):
        return torch.relu(x)
''')
    assert status is Status.REJECTED and "defines no custom kernel" in reason, reason


def test_handing_the_work_to_the_reference_or_a_library_is_rejected(tasks: Path, tmp_path: Path) -> None:
    """Attack: launch a token Triton kernel and let the problem's own Model (or F.linear) do the work."""
    for body in ("from problem import Model\n", "import torch.nn.functional as F\nF.linear(torch.ones(1, 1), "
                                                "torch.ones(1, 1))\n"):
        status, reason = judge(tasks / "kb_l1_019_re_lu", tmp_path, TRITON_RELU + body + '''

class ModelNew(nn.Module):
    def forward(self, x):
        return relu(x)
''')
        assert status is Status.REJECTED and "calls library routine" in reason, reason


def test_an_output_the_task_does_not_list_fails_closed(tasks: Path, tmp_path: Path) -> None:
    """The importer lists one output; a problem whose forward returns two makes the harness declare both, and the
    judge refuses the task rather than leave the second output uncompared."""
    status, reason = judge(tasks / "kb_l2_008_two_outputs", tmp_path, TRITON_RELU + '''

class ModelNew(nn.Module):
    def forward(self, x):
        return relu(x) * 0 + x * 2, x + 1
''')
    assert status is Status.TASK_INVALID and "out1" in reason and "does not list" in reason, reason


@pytest.mark.parametrize(("args", "message"), [
    (["/nonexistent/kb"], "not a directory"),
    (["{root}", "--level", "4"], "--level 4"),
    (["{root}", "--level", "3"], "no KernelBench/level3/ directory"),
    (["{root}", "--problems", "999"], "no problem files"),
])
def test_bad_input_is_one_error_line(checkout: Path, tmp_path: Path, capsys: pytest.CaptureFixture,
                                     args: list[str], message: str) -> None:
    argv = ["import", "kernelbench", *[a.format(root=checkout) for a in args], "--out", str(tmp_path / "o")]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and message in err[0], err


def test_the_kernelbench_suite_imports_once_and_resumes(checkout: Path, tmp_path: Path) -> None:
    from eval.suites import collect

    def suite() -> list[str]:
        return [item.key for item in collect([f"kernelbench:{checkout}"], tmp_path / "eval", target="cpu",
                                             patterns=[], instances=1, seed_base=1, trained={})]

    first = suite()
    assert first == ["kernelbench/kb_l1_019_re_lu", "kernelbench/kb_l2_003_linear_re_lu",
                     "kernelbench/kb_l2_008_two_outputs"]
    marker = tmp_path / "eval" / "suites" / "kernelbench" / "kb_l1_019_re_lu" / "model_new.py"
    marker.write_text(marker.read_text() + "\n# kept\n")
    assert suite() == first and marker.read_text().endswith("# kept\n")  # not imported again
    only = collect([f"kernelbench:{checkout}"], tmp_path / "eval", target="cpu", patterns=[], instances=1,
                   seed_base=1, trained={}, kernelbench_problems=["2/3", "1/19"])
    assert [item.key for item in only] == first[:2]


@pytest.mark.parametrize(("problems", "message"), [(["1-19"], "write LEVEL/ID"), (["3/1"], "none of")])
def test_a_bad_problem_selection_is_one_clear_error(checkout: Path, tmp_path: Path, problems: list[str],
                                                    message: str) -> None:
    from eval.suites import collect
    from perfforge.errors import ConfigError

    with pytest.raises(ConfigError, match=message):
        collect([f"kernelbench:{checkout}"], tmp_path / "eval", target="cpu", patterns=[], instances=1, seed_base=1,
                trained={}, kernelbench_problems=problems)


def test_eval_rows_export_in_kernelbench_layout(tmp_path: Path) -> None:
    """eval_results.json per run and level, keyed by problem id in problem order, runtime -1.0 unless correct."""
    import json

    from eval.kernelbench_export import write_answers, write_eval_results
    from perfforge.records import EvalRecord

    def row(task: str, correct: bool, best_ms: float | None, suite: str = "kernelbench") -> EvalRecord:
        return EvalRecord(suite=suite, task=task, configuration="base", variant="", seed=0, target="torch",
                          language="python", kernel="forward", pattern="", split="", bottleneck="", kind="model",
                          model="m", sources="", candidates=1, rounds=1, temperature=0.0,
                          status="improved" if correct else "incorrect", correct=correct, speedup=2.0 if correct
                          else None, best_ms=best_ms, compiled=1)

    rows = [row("kb_l1_010_b", True, 0.5), row("kb_l1_002_a", False, None), row("kb_l2_001_c", True, 1.25),
            row("own_task", True, 1.0, "tasks")]
    paths = write_eval_results(tmp_path, rows)
    assert sorted(p.relative_to(tmp_path).as_posix() for p in paths) == [
        "kernelbench/base/level1/eval_results.json", "kernelbench/base/level2/eval_results.json"]
    level1 = json.loads((tmp_path / "kernelbench/base/level1/eval_results.json").read_text())
    assert list(level1) == ["2", "10"]  # problem order, not string order
    assert level1["2"]["correctness"] is False and level1["2"]["runtime"] == -1.0
    assert level1["10"] == {"sample_id": 0, "compiled": True, "correctness": True, "runtime": 0.5,
                            "runtime_stats": {"median": 0.5}, "metadata": level1["10"]["metadata"]}
    # the winner of a run (the loop keeps only a proven improvement in optimized/) as KernelBench's sample file
    rows[0].run_dir = "runs/base/kb_l1_010_b"
    rows[2].run_dir = "runs/base/kb_l2_001_c"  # no optimized/ there: nothing proven, nothing written
    (tmp_path / rows[0].run_dir / "optimized").mkdir(parents=True)
    (tmp_path / rows[0].run_dir / "optimized" / "model_new.py").write_text("class ModelNew: ...\n")
    answers = write_answers(tmp_path, rows)
    assert [p.relative_to(tmp_path).as_posix() for p in answers] == [
        "kernelbench/base/level1/level_1_problem_10_sample_0_kernel.py"]
    assert answers[0].read_text() == "class ModelNew: ...\n"


def test_the_eager_baseline_is_written_in_kernelbench_layout(checkout: Path, tmp_path: Path) -> None:
    """Timed here on the CPU (the GPU machine times with CUDA events); problems in problem order, a failing one
    reported and left out."""
    import json

    tasks = tmp_path / "tasks"
    assert main(["import", "kernelbench", str(checkout), "--out", str(tasks), "--level", "1", "2"]) == 0
    (tasks / "kb_l2_008_two_outputs" / "problem.py").write_text("raise SystemExit('broken problem')\n")
    out = tmp_path / "baseline.json"
    assert main(["baseline", "kernelbench", str(tasks), "--out", str(out), "--trials", "3", "--warmup", "1"]) == 0
    timings = json.loads(out.read_text())
    assert list(timings) == ["level1", "level2"]
    assert list(timings["level1"]) == ["19_ReLU.py"] and list(timings["level2"]) == ["3_Linear_ReLU.py"]
    relu = timings["level1"]["19_ReLU.py"]
    assert relu["num_trials"] == 3 and relu["device"] == "cpu" and 0 < relu["min"] <= relu["mean"] <= relu["max"]


def test_a_baseline_prepares_problems_at_once_and_resumes(checkout: Path, tmp_path: Path) -> None:
    """--jobs 2 prepares two problems at once (their timed forwards take the lock alone) and writes the same layout;
    --resume keeps what the file holds (a sentinel here) and measures only the rest; a file that is not a baseline
    is refused with one line."""
    import json

    tasks = tmp_path / "tasks"
    assert main(["import", "kernelbench", str(checkout), "--out", str(tasks), "--level", "1", "2"]) == 0
    (tasks / "kb_l2_008_two_outputs" / "problem.py").write_text("raise SystemExit('broken problem')\n")
    out = tmp_path / "baseline.json"
    out.write_text(json.dumps({"level1": {"19_ReLU.py": {"mean": -7.0}}}))
    assert main(["baseline", "kernelbench", str(tasks), "--out", str(out), "--trials", "2", "--warmup", "1",
                 "--jobs", "2", "--resume"]) == 0
    timings = json.loads(out.read_text())
    assert timings["level1"]["19_ReLU.py"] == {"mean": -7.0}  # kept, not measured again
    assert list(timings["level2"]) == ["3_Linear_ReLU.py"] and timings["level2"]["3_Linear_ReLU.py"]["num_trials"] == 2
    out.write_text("[1, 2]")
    assert main(["baseline", "kernelbench", str(tasks), "--out", str(out), "--resume"]) != 0
