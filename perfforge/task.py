"""The task: a directory with a task.toml manifest, one editable source file and a harness (docs/tasks.md).

`load_task(path)` reads and checks the manifest; every problem is a TaskError naming the field and what to
write instead. Tolerances default per dtype and a loose float32 tolerance is refused (VALIDATION.md rule 4);
a task with no outputs cannot be validated and is refused (rule 10).
"""

from __future__ import annotations

import ast
import math
import operator
import re
import tomllib
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Any

from perfforge import targets
from perfforge.errors import PerfforgeError

MANIFEST = "task.toml"
TARGETS = targets.TARGETS.names()  # what a task may name: the target registry (perfforge/targets.py)
LANGUAGES = targets.languages()
DTYPES = ("float32", "float64", "float16", "bfloat16", "int32", "int64", "uint8")
FLOAT_DTYPES = ("float32", "float64", "float16", "bfloat16")

# (rtol, atol) per dtype when the manifest gives none. float32: 1e-4 relative absorbs reordered sums over
# millions of terms (KernelBench's fp32 tolerance); float64 the same for doubles; half types keep ~3 decimal
# digits, so 1e-2 (VALIDATION.md rule 4); integers compare exactly.
DEFAULT_TOLERANCE = {"float32": (1e-4, 1e-5), "float64": (1e-10, 1e-12), "float16": (1e-2, 1e-2),
                     "bfloat16": (2e-2, 2e-2), "int32": (0.0, 0.0), "int64": (0.0, 0.0), "uint8": (0.0, 0.0)}
# Above this a float32 tolerance no longer tells a right answer from a lower-precision one (fp16 is ~1e-3).
MAX_FLOAT32_RTOL = 1e-3
MIN_SEEDS = 5  # rule 1: at least five fresh input sets per verdict
MIN_CALLS = 2  # rule 5: every call of the kernel is checked, so a checked run makes at least two

LANGUAGE_OF_SUFFIX = targets.language_of_suffix()


class TaskError(PerfforgeError):
    """A task directory or its task.toml is malformed."""


@dataclass(frozen=True)
class OutputSpec:
    name: str
    dtype: str
    rtol: float
    atol: float


@dataclass(frozen=True)
class TaskConfig:
    """One input configuration: the harness's key=value arguments."""

    name: str
    params: dict[str, int | float]

    def args(self) -> list[str]:
        return [f"{key}={value}" for key, value in self.params.items()]


@dataclass(frozen=True)
class BuildSpec:
    compiler: str
    flags: tuple[str, ...]
    link: tuple[str, ...]
    openmp: bool


@dataclass(frozen=True)
class ValidateSpec:
    seeds: int = MIN_SEEDS
    calls: int = MIN_CALLS
    warmup: int = 3
    trials: int = 30
    rounds: int = 4
    timeout_s: float = 120.0
    distribution: Distribution = field(default_factory=lambda: Distribution.UNIFORM)


class Distribution(StrEnum):
    """How the judge draws a float input's values in each call (profiling/inputs.py; served targets only, where the
    judge draws: the other targets' harnesses draw uniformly themselves)."""

    UNIFORM = "uniform"  # uniform over the range the harness declares
    # per call and buffer one of KernelBench's pool (normal, uniform(-1, 1), laplace, exponential, lognormal), folded
    # to its absolute value where the declared range has no negatives; KernelBench tasks use it
    MIXED = "mixed"


@dataclass(frozen=True)
class WorkSpec:
    """Per-call work for the roofline: Python arithmetic over the config's params."""

    flops: str = ""
    bytes: str = ""

    def evaluate(self, params: dict[str, int | float]) -> tuple[float | None, float | None]:
        return (_eval_expression(self.flops, params) if self.flops else None,
                _eval_expression(self.bytes, params) if self.bytes else None)


@dataclass(frozen=True)
class Task:
    root: Path
    name: str
    target: str
    language: str
    source: str
    kernel: str
    harness: str
    outputs: tuple[OutputSpec, ...]
    configs: tuple[TaskConfig, ...]
    default_config: str
    build: BuildSpec
    validate: ValidateSpec = field(default_factory=ValidateSpec)
    work: WorkSpec = field(default_factory=WorkSpec)
    reference: str | None = None
    bottleneck: str | None = None
    description: str = ""
    pattern: str | None = None  # the synth catalogue pattern this task is an instance of (target/name)
    pattern_seed: int | None = None  # the seed that generated the instance

    @property
    def source_path(self) -> Path:
        return self.root / self.source

    @property
    def harness_path(self) -> Path:
        return self.root / self.harness

    @property
    def reference_path(self) -> Path | None:
        return self.root / self.reference if self.reference else None

    def config(self, name: str | None = None) -> TaskConfig:
        wanted = name or self.default_config
        for config in self.configs:
            if config.name == wanted:
                return config
        known = ", ".join(c.name for c in self.configs)
        raise TaskError(f"task {self.name} has no config {wanted!r}; configs: {known}")

    def output(self, name: str) -> OutputSpec | None:
        return next((o for o in self.outputs if o.name == name), None)


def load_task(path: Path | str) -> Task:
    """The task in directory `path` (or whose task.toml is `path`)."""
    path = Path(path)
    root = path.parent if path.name == MANIFEST else path
    manifest = root / MANIFEST
    if not root.is_dir():
        raise TaskError(f"task directory {root} does not exist; give a directory holding a {MANIFEST}")
    if not manifest.is_file():
        raise TaskError(f"{root} has no {MANIFEST}; a task is a directory with a {MANIFEST} (see docs/tasks.md)")
    try:
        data = tomllib.loads(manifest.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as exc:
        raise TaskError(f"{manifest} is not valid TOML: {exc}") from None
    return _parse(root.resolve(), data, manifest)


_TOP_LEVEL = {"name", "target", "language", "source", "kernel", "harness", "reference", "bottleneck", "description",
              "build", "outputs", "configs", "work", "validate", "pattern", "pattern_seed"}


def _parse(root: Path, data: dict[str, Any], manifest: Path) -> Task:
    where = str(manifest)
    _no_unknown(data, _TOP_LEVEL, where)
    target = _choice(data, "target", TARGETS, where)
    source = _string(data, "source", where)
    language = data.get("language") or LANGUAGE_OF_SUFFIX.get(Path(source).suffix)
    if language not in LANGUAGES:
        raise TaskError(f"{where}: field 'language' must be one of {', '.join(LANGUAGES)} (got {language!r})")
    for key in ("source", "harness", "reference"):
        if data.get(key) is not None and not (root / _string(data, key, where)).is_file():
            raise TaskError(f"{where}: field '{key}' names {data[key]!r}, which is not a file in {root}")
    kernel = _string(data, "kernel", where)
    _check_kernel_names(kernel, root / source, language, where)
    configs = _configs(data.get("configs"), where)
    validate = _validate(data.get("validate", {}), where)
    if validate.distribution is not Distribution.UNIFORM and not targets.target_spec(target).served:
        raise TaskError(f"{where}: [validate] distribution = {validate.distribution.value!r} needs a target whose "
                        f"inputs the judge draws (served); {target}'s harness draws its own uniformly: remove it")
    return Task(
        root=root, name=_string(data, "name", where), target=target, language=language, source=source,
        kernel=kernel, harness=_string(data, "harness", where),
        outputs=_outputs(data.get("outputs"), where), configs=configs, default_config=_default_config(data, configs),
        build=_build(data.get("build", {}), target, where), validate=validate,
        work=_work(data.get("work", {}), configs, where), reference=data.get("reference"),
        bottleneck=data.get("bottleneck"), description=str(data.get("description", "")),
        pattern=data.get("pattern"), pattern_seed=_pattern_seed(data, where))


def _check_kernel_names(kernel: str, source: Path, language: str, where: str) -> None:
    """Each name of `kernel` (a '|'-separated list where a task profiles several) must name a function of the
    source: a kernel, or in C++ and CUDA the host launcher that calls it. A misspelt name would otherwise pass
    loading and surface only as an empty profile or a harness that links against nothing. Read textually,
    comments blanked: a definition or declaration `name(` (templates `name<...>(`, qualified `ns::name`), Python's
    `def name(`. CUDA and HIP names are prefixes (the GPU profilers select kernels by name prefix:
    rownorm_launches' `rownorm` covers rownorm_sum_squares and rownorm_scale); C and C++ names are exact."""
    from perfforge.records import blank_comments

    python = language == "python"
    code = blank_comments(source.read_text(encoding="utf-8", errors="replace"), "python" if python else "c")
    for name in (part.strip() for part in kernel.split("|")):
        short = re.escape(name.split("::")[-1]) + (r"\w*" if language in ("cuda", "hip") else "")
        pattern = rf"\bdef\s+{short}\s*\(" if python else rf"\b{short}\s*(<[^;{{}}]*>)?\s*\("
        if not name or not re.search(pattern, code):
            raise TaskError(f"{where}: field 'kernel' names {name!r}, which is not a function in {source.name}; "
                            "name a kernel (or its launcher) defined there")


def _pattern_seed(data: dict[str, Any], where: str) -> int | None:
    seed = data.get("pattern_seed")
    if seed is not None and (not isinstance(seed, int) or isinstance(seed, bool) or seed < 0):
        raise TaskError(f"{where}: field 'pattern_seed' must be a non-negative integer (got {seed!r})")
    return seed


def _no_unknown(data: dict[str, Any], known: set[str], where: str) -> None:
    unknown = sorted(set(data) - known)
    if unknown:
        raise TaskError(f"{where}: unknown field(s) {', '.join(unknown)}; known fields: {', '.join(sorted(known))}")


def _string(data: dict[str, Any], key: str, where: str) -> str:
    value = data.get(key)
    if not isinstance(value, str) or not value:
        raise TaskError(f"{where}: field '{key}' is required and must be a non-empty string")
    return value


def _choice(data: dict[str, Any], key: str, choices: tuple[str, ...], where: str) -> str:
    value = data.get(key)
    if value not in choices:
        raise TaskError(f"{where}: field '{key}' must be one of {', '.join(choices)} (got {value!r})")
    return value


def _outputs(raw: Any, where: str) -> tuple[OutputSpec, ...]:
    if not isinstance(raw, list) or not raw:
        raise TaskError(f"{where}: [[outputs]] is required: name every buffer the kernel writes, with its dtype "
                        "(a task without outputs cannot be checked)")
    outputs = []
    for i, entry in enumerate(raw):
        at = f"{where}: outputs[{i}]"
        _no_unknown(entry, {"name", "dtype", "rtol", "atol"}, at)
        name = _string(entry, "name", at)
        dtype = _choice(entry, "dtype", DTYPES, at)
        rtol, atol = (float(entry.get(k, d)) for k, d in zip(("rtol", "atol"), DEFAULT_TOLERANCE[dtype], strict=True))
        if rtol < 0 or atol < 0 or math.isnan(rtol) or math.isnan(atol):
            raise TaskError(f"{at}: rtol and atol must be non-negative numbers")
        if dtype == "float32" and rtol > MAX_FLOAT32_RTOL:
            raise TaskError(f"{at}: rtol {rtol:g} is too loose for float32 (at most {MAX_FLOAT32_RTOL:g}): it would "
                            "accept half-precision results")
        outputs.append(OutputSpec(name, dtype, rtol, atol))
    if len({o.name for o in outputs}) != len(outputs):
        raise TaskError(f"{where}: two [[outputs]] have the same name")
    return tuple(outputs)


def _configs(raw: Any, where: str) -> tuple[TaskConfig, ...]:
    if raw is None:
        return (TaskConfig("default", {}),)
    if not isinstance(raw, list) or not raw:
        raise TaskError(f"{where}: [[configs]] must be a list of tables with name and params")
    configs = []
    for i, entry in enumerate(raw):
        at = f"{where}: configs[{i}]"
        _no_unknown(entry, {"name", "params", "default"}, at)
        params = entry.get("params", {})
        if not isinstance(params, dict) or not all(isinstance(v, int | float) and not isinstance(v, bool)
                                                   for v in params.values()):
            raise TaskError(f"{at}: params must be a table of numbers, e.g. params = {{ n = 1024 }}")
        configs.append(TaskConfig(_string(entry, "name", at), dict(params)))
    if len({c.name for c in configs}) != len(configs):
        raise TaskError(f"{where}: two [[configs]] have the same name")
    return tuple(configs)


def _default_config(data: dict[str, Any], configs: tuple[TaskConfig, ...]) -> str:
    marked = [entry["name"] for entry in data.get("configs") or [] if entry.get("default")]
    return marked[0] if marked else configs[-1].name


def _build(raw: dict[str, Any], target: str, where: str) -> BuildSpec:
    _no_unknown(raw, {"compiler", "flags", "link", "openmp"}, f"{where}: [build]")
    defaults = targets.target_spec(target)
    for key in ("flags", "link"):
        if key in raw and not (isinstance(raw[key], list) and all(isinstance(x, str) for x in raw[key])):
            raise TaskError(f"{where}: [build] {key} must be a list of strings")
    return BuildSpec(compiler=str(raw.get("compiler", defaults.compiler)),
                     flags=tuple(raw.get("flags", defaults.flags)), link=tuple(raw.get("link", [])),
                     openmp=bool(raw.get("openmp", False)))


def _validate(raw: dict[str, Any], where: str) -> ValidateSpec:
    at = f"{where}: [validate]"
    _no_unknown(raw, {"seeds", "calls", "warmup", "trials", "rounds", "timeout_s", "distribution"}, at)
    numbers = {k: type(getattr(ValidateSpec, k))(v) for k, v in raw.items() if k != "distribution"}
    try:
        distribution = Distribution(raw.get("distribution", Distribution.UNIFORM))
    except ValueError:
        raise TaskError(f"{at}: distribution {raw['distribution']!r} is not one of "
                        f"{', '.join(d.value for d in Distribution)}") from None
    spec = ValidateSpec(**numbers, distribution=distribution)
    if spec.seeds < MIN_SEEDS:
        raise TaskError(f"{at}: seeds must be at least {MIN_SEEDS} (got {spec.seeds}): one input set proves little")
    if spec.calls < MIN_CALLS:
        raise TaskError(f"{at}: calls must be at least {MIN_CALLS} (got {spec.calls}): later calls must be checked too")
    if spec.trials < 1 or spec.rounds < 2 or spec.warmup < 0 or spec.timeout_s <= 0:
        raise TaskError(f"{at}: trials >= 1, rounds >= 2 (the noise floor needs two), warmup >= 0, timeout_s > 0")
    return spec


def _work(raw: dict[str, Any], configs: tuple[TaskConfig, ...], where: str) -> WorkSpec:
    _no_unknown(raw, {"flops", "bytes"}, f"{where}: [work]")
    spec = WorkSpec(flops=str(raw.get("flops", "")), bytes=str(raw.get("bytes", "")))
    for config in configs:
        try:
            spec.evaluate(config.params)
        except (ValueError, KeyError, ZeroDivisionError) as exc:
            raise TaskError(f"{where}: [work] cannot be evaluated for config {config.name!r}: {exc}") from None
    return spec


_OPERATORS = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv,
              ast.FloorDiv: operator.floordiv, ast.Pow: operator.pow, ast.Mod: operator.mod}


def _eval_expression(text: str, params: dict[str, int | float]) -> float:
    """Arithmetic over the params, without eval(): numbers, names, + - * / // % ** and parentheses."""

    def value(node: ast.AST) -> float:
        if isinstance(node, ast.Constant) and isinstance(node.value, int | float):
            return node.value
        if isinstance(node, ast.Name):
            if node.id not in params:
                raise KeyError(f"unknown name {node.id!r} (params: {', '.join(params) or 'none'})")
            return params[node.id]
        if isinstance(node, ast.BinOp) and type(node.op) in _OPERATORS:
            return _OPERATORS[type(node.op)](value(node.left), value(node.right))
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            return -value(node.operand)
        raise ValueError(f"unsupported expression {ast.unparse(node)!r}")

    try:
        tree = ast.parse(text, mode="eval")
    except SyntaxError:
        raise ValueError(f"{text!r} is not an arithmetic expression") from None
    return float(value(tree.body))


# ---- writing and finding tasks ------------------------------------------------------------------------------------

def write_task_dir(directory: Path, files: dict[str, str], manifest: dict[str, Any]) -> Path:
    """Write a task directory: each file atomically, task.toml last, so a directory with a manifest is complete."""
    from perfforge.io import write_text

    directory.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        write_text(directory / name, text)
    write_text(directory / MANIFEST, dumps_toml(manifest))
    return directory


def find_tasks(directory: Path) -> list[Task]:
    """The tasks in `directory` (itself a task, or holding task directories at any depth), in path order."""
    if not directory.is_dir():
        raise TaskError(f"{directory} is not a directory of tasks")
    manifests = sorted(directory.rglob(MANIFEST))
    if not manifests:
        raise TaskError(f"{directory} holds no task directory (one with a {MANIFEST}); see docs/tasks.md")
    return [load_task(path.parent) for path in manifests]


def dumps_toml(data: dict[str, Any]) -> str:
    """TOML text of a manifest: scalars and inline tables at the top or in tables, lists of tables as [[...]].

    The task format needs nothing more, and the GPU machine, which runs the generators from the checkout, has
    no TOML writer installed.
    """
    scalars = [f"{key} = {_value(value)}" for key, value in data.items() if not _is_table(value)]
    blocks = ["\n".join(scalars)] if scalars else []
    for key, value in data.items():
        if isinstance(value, dict) and _is_table(value):
            blocks.append("\n".join([f"[{key}]", *(f"{k} = {_value(v)}" for k, v in value.items())]))
        elif isinstance(value, list) and _is_table(value):
            for entry in value:
                blocks.append("\n".join([f"[[{key}]]", *(f"{k} = {_value(v)}" for k, v in entry.items())]))
    return "\n\n".join(blocks) + "\n"


def _is_table(value: Any) -> bool:
    return (isinstance(value, dict) and bool(value)) or (
        isinstance(value, list) and bool(value) and all(isinstance(v, dict) for v in value))


def _value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError(f"TOML manifest value {value!r} is not finite")
        return repr(value)
    if isinstance(value, str):
        escaped = value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n").replace("\t", "\\t")
        return f'"{escaped}"'
    if isinstance(value, list):
        return "[" + ", ".join(_value(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{ " + ", ".join(f"{k} = {_value(v)}" for k, v in value.items()) + " }"
    raise TypeError(f"no TOML form for {type(value).__name__} value {value!r}")
