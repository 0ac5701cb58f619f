"""KernelBench problems as perfforge tasks of the `torch` target (`perfforge import kernelbench`).

A KernelBench problem (Stanford, MIT licence) is a Python file with a PyTorch `Model`, `get_inputs()` and
`get_init_inputs()`; an answer is a file whose `ModelNew` has the same signature and does the work in custom
kernels. Nothing is downloaded: the user points at a checkout of theirs. Each problem becomes one task directory:

    TASKS/kb_l1_019_relu/
      task.toml        target "torch", language "python", source model_new.py, harness harness.py
      problem.py       the problem file, verbatim: get_inputs and get_init_inputs come from here
      model_new.py     the editable source; the original is the problem's Model renamed ModelNew
      kernelbench.json the problem's level, id and file name (baselines and exports key by them)
      harness.py       builds ModelNew with KernelBench's seed before it (the same weights on both sides), declares
                       one input buffer per tensor get_inputs() returns and one output per tensor forward returns,
                       and calls forward once per call of the judge's protocol (perfforge_harness.Run)

The judge draws the inputs, so both sides see the same fresh inputs: float tensors from one of KernelBench's mixed
distributions per call (normal, uniform, laplace, exponential, lognormal; their absolute values where a sample of
get_inputs() has no negatives), integer tensors uniform over the range a sample spans, edge values every other
call; scalars get_inputs() returns are passed as they are. Tolerances
follow KernelBench: 1e-4 for fp32 outputs, 1e-2 for half types. Level 4 (whole Hugging Face models that download
weights) is not imported.
"""

from __future__ import annotations

import json
import re
import textwrap
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from perfforge.errors import ConfigError
from perfforge.io import atomic_dir

LEVELS = (1, 2, 3)  # level 4 downloads Hugging Face models: not imported
PROBLEM_NAME = re.compile(r"^(\d+)_(\w+)\.py$")  # "19_ReLU.py": the problem's number and name
REQUIRED_NAMES = ("class Model", "def get_inputs", "def get_init_inputs")
# KernelBench's tolerances per output dtype (its eval uses atol = rtol): fp32 1e-4, the half types 1e-2.
TOLERANCE = {"float32": 1e-4, "float64": 1e-4, "float16": 1e-2, "bfloat16": 1e-2}
INIT_SEED = 42  # KernelBench's set_seed before building Model and ModelNew
META_FILE = "kernelbench.json"  # beside task.toml: the problem's level, id and file name (baselines, exports)


@dataclass(frozen=True)
class Problem:
    level: int
    number: int
    name: str
    path: Path

    @property
    def task_name(self) -> str:
        return f"kb_l{self.level}_{self.number:03d}_{_snake(self.name)}"


@dataclass
class ImportResult:
    written: list[Path]
    skipped: list[tuple[Path, str]]  # (problem file, why)


def find_problems(checkout: Path, levels: Sequence[int], numbers: Sequence[int] = ()) -> list[Problem]:
    """The problem files of `levels` in a KernelBench checkout (its KernelBench/levelN/ directories, or levelN/
    directly under `checkout`), optionally only `numbers`."""
    if not checkout.is_dir():
        raise ConfigError(f"{checkout}: not a directory; pass the root of a KernelBench checkout")
    problems = []
    for level in levels:
        if level not in LEVELS:
            raise ConfigError(f"level {level} is not importable; expected one of {', '.join(map(str, LEVELS))} "
                              "(level 4 downloads Hugging Face models)")
        directory = next((d for d in (checkout / "KernelBench" / f"level{level}", checkout / f"level{level}")
                          if d.is_dir()), None)
        if directory is None:
            raise ConfigError(f"{checkout}: no KernelBench/level{level}/ directory; pass the root of a KernelBench "
                              "checkout")
        for path in sorted(directory.iterdir()):
            match = PROBLEM_NAME.match(path.name)
            if match and (not numbers or int(match.group(1)) in numbers):
                problems.append(Problem(level, int(match.group(1)), match.group(2), path))
    return problems


def import_problems(problems: Sequence[Problem], out_dir: Path, *,
                    log: Callable[[str], None] = lambda _: None) -> ImportResult:
    """One task directory per problem under out_dir, each written atomically; a problem that cannot be a task is
    skipped with its reason (and logged), the others are written."""
    result = ImportResult([], [])
    for problem in problems:
        source = problem.path.read_text(encoding="utf-8")
        missing = [name for name in REQUIRED_NAMES if not re.search(rf"^{name}\b", source, re.MULTILINE)]
        if missing:
            reason = f"no {', '.join(missing)} at the top level"
            result.skipped.append((problem.path, reason))
            log(f"skipped {problem.path.name}: {reason}")
            continue
        target = out_dir / problem.task_name
        with atomic_dir(target) as staging:
            staging.mkdir(parents=True)
            (staging / "problem.py").write_text(source, encoding="utf-8")
            (staging / "model_new.py").write_text(original_model_new(source), encoding="utf-8")
            (staging / "harness.py").write_text(HARNESS, encoding="utf-8")
            (staging / "task.toml").write_text(task_toml(problem), encoding="utf-8")
            (staging / META_FILE).write_text(json.dumps({"level": problem.level, "problem_id": problem.number,
                                                         "problem_file": problem.path.name}) + "\n",
                                             encoding="utf-8")
        result.written.append(target)
        log(f"wrote {target}")
    return result


def original_model_new(source: str) -> str:
    """The task's original version: the problem's Model, renamed ModelNew (every use of the name, so
    `super(Model, self)` follows)."""
    return re.sub(r"\bModel\b", "ModelNew", source)


def task_toml(problem: Problem) -> str:
    outputs = "\n".join(f'[[outputs]]\nname = "out{i}"\ndtype = "float32"\nrtol = {TOLERANCE["float32"]}\n'
                        f'atol = {TOLERANCE["float32"]}\n' for i in range(1))
    return textwrap.dedent(f'''\
        name = "{problem.task_name}"
        target = "torch"
        language = "python"
        source = "model_new.py"
        kernel = "forward"
        harness = "harness.py"
        description = "KernelBench level {problem.level} problem {problem.number}: {problem.name} ({problem.path.name})"

        [[configs]]
        name = "default"
        params = {{}}
        default = true

        [validate]
        distribution = "mixed"

        ''') + outputs


def _snake(name: str) -> str:
    return re.sub(r"[^0-9a-z]+", "_", re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", name).lower()).strip("_")


# The harness every imported task shares. It runs in the kernel process (untrusted: served Python), so it only
# declares buffers and calls forward; the judge draws, times and compares.
HARNESS = '''\
"""perfforge harness of a KernelBench problem: ModelNew from model_new.py on inputs shaped like get_inputs()."""

import torch

import model_new
import problem
from perfforge_harness import Run

INIT_SEED = 42  # KernelBench's seed before building the model: the same weights on both sides
SAMPLE_SEED = 0  # the sample of get_inputs() whose shapes, dtypes and range the buffers take
DTYPES = {torch.float32: "float32", torch.float64: "float64", torch.float16: "float16", torch.bfloat16: "bfloat16",
          torch.int32: "int32", torch.int64: "int64", torch.uint8: "uint8"}


def main() -> int:
    r = Run()
    torch.manual_seed(SAMPLE_SEED)
    sample = [v.to(r.device) if isinstance(v, torch.Tensor) else v for v in problem.get_inputs()]
    torch.manual_seed(INIT_SEED)
    model = model_new.ModelNew(*problem.get_init_inputs()).to(r.device).eval()
    args = []
    for index, value in enumerate(sample):
        if not isinstance(value, torch.Tensor):
            args.append(value)
            continue
        if value.dtype not in DTYPES:
            raise SystemExit(f"input {index}: dtype {value.dtype} is not one the judge draws")
        low, high = (float(value.min()), float(value.max())) if value.numel() else (0.0, 1.0)
        if value.dtype.is_floating_point:
            high = high if high > low else low + 1.0
        else:
            high = high + 1.0  # integers are drawn in [low, high)
        args.append(r.input(f"in{index}", DTYPES[value.dtype], tuple(value.shape), low, high))
    with torch.no_grad():
        result = model(*args)
    result = result if isinstance(result, (tuple, list)) else (result,)
    outs = [r.output(f"out{i}", DTYPES[t.dtype], tuple(t.shape)) for i, t in enumerate(result)]
    while r.begin():
        with torch.no_grad():
            got = model(*args)
        got = got if isinstance(got, (tuple, list)) else (got,)
        for out, value in zip(outs, got):
            out.copy_(value)
        r.end()
    return r.finish()


if __name__ == "__main__":
    raise SystemExit(main())
'''
