"""The record: one row per before/after pair, and the commit rows mining keeps.

Fields are grouped by the stage that fills them (provenance and code from mining or synthesis, the perf
classification from mining, profiles from profiling/). Every row carries SCHEMA_VERSION; a reader that meets
another major version refuses it instead of guessing. Each field carries its documentation
(`field_docs`), from which docs/records.md and the data cards' field tables are generated.

Closed sets are enums whose values are the strings stored in parquet.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import asdict, dataclass, field, fields
from enum import StrEnum
from typing import Any

# Bump the minor version for added nullable fields, the major version for renamed or removed ones.
# 1.1: profiles carry target, kernel and per-line metrics; diagnoses carry structured findings and a hint.
# 1.2: pairs carry the synthetic pattern they instantiate and the pipeline's verified speedup.
# 1.3: attempt records (one per candidate the optimisation loop judged).
# 1.4: evaluation records (one per task, configuration, variant and seed of `perfforge eval`).
# 2.0: the commit column is `commit` everywhere (commit and judgement records said `sha`, pairs `commit`);
#      diagnoses carry their preconditions apart from their evidence.
# 2.1: pairs carry how their before and after code were matched (pairing) and, for a launch-configuration change,
#      the kernels launched with another configuration (launched_kernels).
SCHEMA_VERSION = "2.1"


class Category(StrEnum):
    """What kind of performance change a commit or pair is (the optimisation technique that dominates)."""

    MEMORY_ACCESS = "memory_access"  # coalescing, access patterns, strides
    SHARED_MEMORY = "shared_memory"  # staging through shared memory, bank conflicts
    ATOMICS = "atomics"  # atomic contention, reductions replacing atomics
    PARALLELISM = "parallelism"  # launch configuration, occupancy, streams, OpenMP, more parallel work
    VECTORIZATION = "vectorization"  # float4 / x128 / SIMD intrinsics / vector types
    TILING = "tiling"  # blocking, tile sizes
    FUSION = "fusion"  # fusing kernels or operations
    ALGORITHMIC = "algorithmic"  # better algorithm, less redundant work, faster library routine
    PRECISION = "precision"  # lower-precision types for speed
    REGISTER_PRESSURE = "register_pressure"  # registers, spills, launch bounds
    BRANCH_DIVERGENCE = "branch_divergence"
    CACHING = "caching"  # reuse, avoiding recomputation, copies, allocations; memory footprint
    OTHER = "other"  # autotune tables, compiler flags, anything else performance-related
    NONE = "none"  # not a performance change


class KernelKind(StrEnum):
    """What the changed function is, as tree-sitter sees it."""

    CUDA_KERNEL = "cuda_kernel"  # __global__ function (CUDA or HIP)
    DEVICE_FUNCTION = "device_function"  # __device__ (not __global__) function
    TRITON_KERNEL = "triton_kernel"  # Python function decorated with @triton.jit (or a triton decorator)
    OPENMP_REGION = "openmp_region"  # C/C++/Fortran function containing an OpenMP pragma
    HOST_FUNCTION = "host_function"  # any other C, C++, CUDA host or Fortran function
    PYTHON_FUNCTION = "python_function"  # any other Python function
    OPENCL_KERNEL = "opencl_kernel"  # __kernel function in OpenCL C


class Target(StrEnum):
    """Where the code runs; decides which profiler and validator apply."""

    CUDA = "cuda"
    TRITON = "triton"
    TORCH = "torch"  # a PyTorch module whose answer defines its own kernels (KernelBench's format)
    CPU = "cpu"
    HIP = "hip"
    OPENCL = "opencl"
    METAL = "metal"


class FoundBy(StrEnum):
    """How a record entered the dataset."""

    MINED_RULES = "mined:rules"  # the rule classifier decided alone
    MINED_LLM_JUDGE = "mined:llm-judge"  # the rule score was uncertain and the LLM judge decided
    SYNTHETIC_PATTERN = "synthetic:pattern"  # generated from the pattern catalogue
    SYNTHETIC_COMMIT = "synthetic:commit"  # a runnable task synthesised from a mined commit
    RECIPE = "recipe"  # a user's build-and-benchmark recipe, profiled at a commit and at its parent


class Pairing(StrEnum):
    """How the before and after code of a pair were matched (mining/kernel_pairing.py finds all but the first)."""

    SAME_NAME = "same_name"  # one function of the same name on both sides (mining.functions.changed_functions)
    RENAMED = "renamed"  # one kernel replaced by a new kernel of another name in the launches of a function
    FUSED = "fused"  # several kernels replaced by one new kernel
    LAUNCH_CONFIG = "launch_config"  # a launcher launching an unchanged kernel with another configuration


class Belief(StrEnum):
    """Whether a candidate's measurement confirmed the model's stated hypothesis (the belief trace)."""

    CONFIRMED = "confirmed"  # correct, faster, and the targeted bottleneck shrank (or no profile was taken)
    PARTLY = "partly"  # correct and faster, but the targeted bottleneck did not shrink: the gain came from elsewhere
    REFUTED = "refuted"  # correct, but not faster: the edit did not remove a bottleneck that costs time
    UNTESTED = "untested"  # no correct candidate to measure (unparsable, build failure, wrong output, crash, ...)
    UNVERIFIED = "unverified"  # faster beyond plausibility (held for review): not a confirmation until reviewed


def _doc(text: str, **default: Any) -> Any:
    """A dataclass field with its documentation (the README's field table and data cards read it)."""
    if "factory" in default:
        return field(default_factory=default["factory"], metadata={"doc": text})
    if "default" in default:
        return field(default=default["default"], metadata={"doc": text})
    return field(metadata={"doc": text})


@dataclass
class CommitRecord:
    """One commit that passed the prefilter (commits.parquet)."""

    repo: str = _doc("repository: owner/name for URLs, the directory name for local repositories")
    commit: str = _doc("commit id (40 hex digits)")
    parent: str = _doc("first parent's id; empty for a root commit")
    date: str = _doc("author date, ISO 8601, UTC")
    message: str = _doc("full commit message")
    files: list[str] = _doc("every path the commit changed")
    kernel_files: list[str] = _doc("the changed paths that hold kernels: the prefilter's reason to keep the commit")
    is_perf: bool = _doc("perf_score reached the run's perf_threshold")
    perf_score: float = _doc("classifier score in [0, 1]: the probability-like weight of the evidence")
    category: str = _doc("Category value: the dominant optimisation technique; none when not is_perf")
    evidence: list[str] = _doc("the signals that decided score and category, strongest first")
    found_by: str = _doc("FoundBy value: mined:rules, or mined:llm-judge when the LLM judge decided")
    n_pairs: int = _doc("function-level pairs kept from this commit after deduplication")
    schema_version: str = _doc("record schema version (perfforge.records.SCHEMA_VERSION)", default=SCHEMA_VERSION)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> CommitRecord:
        return _from_dict(cls, data)


@dataclass
class Timing:
    """Timing statistics of one measured run."""

    median_ms: float = _doc("median duration of one call, milliseconds")
    p10_ms: float = _doc("10th percentile, milliseconds")
    p90_ms: float = _doc("90th percentile, milliseconds")
    trials: int = _doc("timed calls after warm-up")
    method: str = _doc("how it was timed: cuda_events, monotonic_clock, ...")


@dataclass
class CounterValue:
    """One hardware or simulator counter."""

    name: str = _doc("the tool's metric name, e.g. ncu dram__throughput.avg.pct_of_peak_sustained_elapsed")
    value: float = _doc("the value, in unit")
    unit: str = _doc("unit as the tool reports it: %, byte, cycle, inst, ...")


@dataclass
class Stall:
    """Share of sampled warp stalls with one reason."""

    reason: str = _doc("stall reason, e.g. long_scoreboard, mio_throttle, barrier")
    share: float = _doc("fraction of sampled warp stalls, in [0, 1]")


@dataclass
class RooflinePoint:
    """Where the kernel sits against the machine's measured peaks."""

    arithmetic_intensity_flop_per_byte: float = _doc("FLOP per byte of DRAM traffic")
    achieved_gflop_per_s: float = _doc("achieved GFLOP/s")
    achieved_gbyte_per_s: float = _doc("achieved DRAM GB/s")
    peak_gflop_per_s: float = _doc("the machine's peak GFLOP/s for the kernel's precision")
    peak_gbyte_per_s: float = _doc("the machine's peak DRAM GB/s")


@dataclass
class HotLine:
    """A source line that costs the most."""

    line: int = _doc("1-based line in the edited source file")
    code: str = _doc("the line's text")
    share: float = _doc("fraction of samples (GPU) or of cost (CPU) on this line, in [0, 1]")
    dominant_stall: str = _doc("the stall reason with most samples on the line; empty on the CPU")
    metrics: list[CounterValue] = _doc("per-line counters: stall samples, shared-memory conflicts, excess sectors, "
                                       "simulated cache misses, branch mispredictions", factory=list)

    def metric(self, name: str) -> float | None:
        return next((m.value for m in self.metrics if m.name == name), None)


@dataclass
class Finding:
    """One measured fact behind a diagnosis: a metric against the threshold it crossed."""

    metric: str = _doc("the counter or derived metric, e.g. smsp__sass_average_data_bytes_per_sector_mem_global")
    value: float = _doc("its measured value, in unit")
    threshold: float = _doc("the threshold it crossed (thresholds are data: profiling/diagnoses/thresholds/)")
    comparison: str = _doc("how value relates to threshold: >, >=, <, <=")
    unit: str = _doc("unit of value and threshold")
    lines: list[int] = _doc("source lines involved, 1-based; empty when the finding is kernel-wide", factory=list)


@dataclass
class Diagnosis:
    """A bottleneck found in a profile."""

    name: str = _doc("registry name of the bottleneck, e.g. shared_memory_bank_conflicts")
    severity: float = _doc("in [0, 1]; diagnoses are ranked by it")
    evidence: list[str] = _doc("metric = value against threshold, and the source lines involved")
    findings: list[Finding] = _doc("the same evidence, structured", factory=list)
    hint: str = _doc("what usually fixes this bottleneck, one sentence", default="")
    preconditions: list[str] = _doc("what let the rule run (enough cores, no pragma yet), in the evidence's form; "
                                    "not evidence of the bottleneck", factory=list)


@dataclass
class Profile:
    """A measured profile of one version of a kernel, with the machine it was measured on."""

    machine: str = _doc("GPU or CPU model, clocks where readable")
    tool_versions: str = _doc("driver, compiler, profiler versions")
    timing: Timing = _doc("timing statistics")
    counters: list[CounterValue] = _doc("hardware or simulator counters", factory=list)
    stalls: list[Stall] = _doc("warp-state stall breakdown", factory=list)
    roofline: RooflinePoint | None = _doc("roofline point; None where the target has none", default=None)
    hot_lines: list[HotLine] = _doc("costliest source lines", factory=list)
    diagnoses: list[Diagnosis] = _doc("bottlenecks, most severe first", factory=list)
    unmeasured: list[str] = _doc("diagnoses that could not judge the profile, each with the counters it lacked "
                                 "('not measured' is not 'not found')", factory=list)
    target: str = _doc("Target value of the profiled code: cpu, cuda, triton, hip", default="")
    kernel: str = _doc("the profiled kernel or function", default="")
    source_file: str = _doc("the source file hot_lines refer to", default="")

    def counter(self, name: str) -> float | None:
        """The value of a counter by its tool name, or None when the profile lacks it."""
        return next((c.value for c in self.counters if c.name == name), None)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Profile:
        """The inverse of to_dict (profile.json files, parquet rows)."""
        return _from_dict(cls, data)


@dataclass
class PairRecord:
    """One function-level before/after pair (pairs.parquet)."""

    # provenance: mining or synthesis
    repo: str = _doc("repository: owner/name for URLs, the directory name for local repositories")
    repo_url: str = _doc("where the repository was read from (URL or absolute path)")
    commit: str = _doc("the commit that made the change")
    parent: str = _doc("its first parent: the before side")
    date: str = _doc("author date of the commit, ISO 8601, UTC")
    path: str = _doc("the changed file's path")
    licence: str = _doc("SPDX id of the repository's licence at the mined revision; NOASSERTION when unknown")
    found_by: str = _doc("FoundBy value: mined:rules, mined:llm-judge, synthetic:pattern, synthetic:commit, "
                         "recipe")
    # what the code is
    language: str = _doc("source language: cuda, c, cpp, opencl, python, fortran")
    target: str = _doc("Target value: where it runs (cuda, triton, cpu, hip, opencl, metal)")
    kernel_name: str = _doc("the function's qualified name (Class::method, Class.method)")
    kernel_kind: str = _doc("KernelKind value: cuda_kernel, device_function, triton_kernel, openmp_region, ...")
    # the code
    function_before: str = _doc("the function's source at the parent")
    function_after: str = _doc("the function's source at the commit")
    file_before: str = _doc("the whole file at the parent")
    file_after: str = _doc("the whole file at the commit")
    diff: str = _doc("unified diff of the whole file")
    code_hash: str = _doc("formatting-blind hash of (function_before, function_after), for deduplication")
    # the classification: mining
    perf_score: float = _doc("the commit's classifier score in [0, 1]")
    category: str = _doc("Category value: the commit's dominant optimisation technique")
    evidence: list[str] = _doc("the signals that decided score and category, strongest first; a pair not matched "
                               "by name ends with what the launches showed (pairing_<pairing>: ...)")
    message: str = _doc("the commit message")
    # how before and after were matched: mining (synthetic and recipe pairs are same_name)
    pairing: str = _doc("Pairing value: same_name (the function of this name on both sides), renamed (a kernel "
                        "replaced by a new kernel of another name, launched in its place), fused (several kernels "
                        "replaced by one new kernel; function_before joins them in file order), launch_config (a "
                        "launcher launching an unchanged kernel with another configuration)",
                        default=Pairing.SAME_NAME.value)
    launched_kernels: list[str] = _doc("launch_config pairs: the kernels, their code unchanged (it is in file_before "
                                       "and file_after), that the launcher launches with another configuration, in "
                                       "launch order; empty for other pairings", factory=list)
    # measured later by profiling/; None until then
    profile_before: Profile | None = _doc("profile of the before version; None until profiled", default=None)
    profile_after: Profile | None = _doc("profile of the after version; None until profiled", default=None)
    verified_speedup: float | None = _doc("before/after median time ratio from a passing perfforge validate verdict; "
                                          "None until validated", default=None)
    # synthesis only
    pattern: str = _doc("the synth catalogue pattern (target/name) a synthetic pair instantiates; empty when mined, "
                        "so evaluation can hold whole patterns out", default="")
    schema_version: str = _doc("record schema version (perfforge.records.SCHEMA_VERSION)", default=SCHEMA_VERSION)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> PairRecord:
        if "pairing" not in data:  # written before schema 2.1
            data = {**data, **_pairing_before_2_1(data.get("evidence") or [])}
        return _from_dict(cls, data)


# Before schema 2.1 a pair's Pairing had no field: miner v2 appended it to the evidence, as
# `pairing_<value>: <detail>`, a launch_config detail reading `<launcher> launches <kernel>, ... with another
# configuration; ...`. Records of 2.0 are read through these, records without such an entry as same_name. Delete them
# with the next major version, whose readers refuse 2.x records anyway.
_PAIRING_EVIDENCE_2_0_RE = re.compile(r"pairing_(renamed|fused|launch_config): (.*)", re.DOTALL)
_LAUNCHED_EVIDENCE_2_0_RE = re.compile(r".*? launches (.+?) with another configuration;", re.DOTALL)


def _pairing_before_2_1(evidence: list[str]) -> dict[str, Any]:
    """pairing and launched_kernels of a pair written before they were fields, from its evidence; {} (the
    defaults: same_name, none) when the evidence names no pairing."""
    for entry in evidence:
        match = _PAIRING_EVIDENCE_2_0_RE.fullmatch(entry)
        if match:
            launched = _LAUNCHED_EVIDENCE_2_0_RE.match(match[2]) if match[1] == Pairing.LAUNCH_CONFIG else None
            return {"pairing": match[1], "launched_kernels": launched[1].split(", ") if launched else []}
    return {}


@dataclass
class CounterDelta:
    """One counter before (the original) and after (a candidate)."""

    name: str = _doc("the tool's metric name")
    unit: str = _doc("unit as the tool reports it")
    before: float = _doc("the original's value")
    after: float = _doc("the candidate's value")


@dataclass
class AttemptRecord:
    """One candidate the optimisation loop judged (attempts.parquet): the prompt, the model's answer, the verdict.
    Training reads these: correct faster candidates are targets, and pairs of a better over a worse candidate for
    the same prompt are preference data."""

    # --- the task
    task: str = _doc("the task's name")
    target: str = _doc("Target value: cuda, triton, cpu, hip")
    language: str = _doc("the edited file's language: c, cpp, cuda, python, hip")
    kernel: str = _doc("the kernel or function being optimised")
    pattern: str = _doc("the synth catalogue pattern of a pattern task; empty otherwise")
    bottleneck: str = _doc("the bottleneck the prompt targeted (a diagnosis name); empty when none")
    # --- the prompt and the answer
    model: str = _doc("the backend and model that answered, e.g. openai:SmolLM2-135M-Instruct@http://...")
    prompt_version: str = _doc("perfforge.prompt.PROMPT_VERSION of the prompt's text")
    sources: str = _doc("insight sources of the prompt's profile summary, comma-separated")
    system: str = _doc("the system message")
    prompt: str = _doc("the user message: task, diagnosis, feedback of earlier attempts, code")
    completion: str = _doc("the model's whole answer")
    code: str = _doc("the candidate file read from the answer; empty when none could be read")
    round: int = _doc("the loop's round, from 1")
    candidate: int = _doc("the candidate's number within its round, from 1")
    prompt_tokens: int = _doc("tokens of the prompt as the backend counted them")
    completion_tokens: int = _doc("tokens of this answer")
    finish_reason: str = _doc("stop, or length when max_tokens cut the answer")
    # --- the verdict
    status: str = _doc("perfforge.verdict.Status value, or unparsable when no code could be read")
    reason: str = _doc("the verdict's reason: compiler errors, first mismatch, timing with its spread")
    speedup: float | None = _doc("original median time / candidate median time; None when not timed",
                                 default=None)
    speedup_ci_low: float | None = _doc("95% confidence interval of the speedup, low end", default=None)
    speedup_ci_high: float | None = _doc("95% confidence interval of the speedup, high end", default=None)
    baseline_ms: float | None = _doc("the original's median time in the same interleaved run", default=None)
    candidate_ms: float | None = _doc("the candidate's median time", default=None)
    # --- the belief trace
    hypothesis: str = _doc("the model's stated hypothesis for its edit", default="")
    evidence: str = _doc("the diagnostic evidence the model said it relied on", default="")
    cited: list[str] = _doc("diagnoses, counters and hot lines of the prompt that the answer names", factory=list)
    belief: str = _doc("Belief value: whether the measurement confirmed the hypothesis", default="")
    belief_detail: str = _doc("why that belief value: speedup, and the targeted diagnosis before and after",
                              default="")
    counter_deltas: list[CounterDelta] = _doc("key counters of the original and of the candidate (improved "
                                              "candidates that were profiled)", factory=list)
    diagnoses_after: list[str] = _doc("the candidate's diagnoses with severities, when profiled", factory=list)
    machine: str = _doc("where the verdict was measured", default="")
    schema_version: str = _doc("record schema version (perfforge.records.SCHEMA_VERSION)", default=SCHEMA_VERSION)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> AttemptRecord:
        return _from_dict(cls, data)


@dataclass
class JudgementRecord:
    """One labelled commit as a training example of the mining judge (judgements.parquet, written by
    bench/judge_examples.py from bench/labels): the judge's own prompt and the labelled answer in its format."""

    repo: str = _doc("owner/name of the commit's repository")
    commit: str = _doc("the commit id (40 hex digits)")
    is_perf: bool = _doc("the label: a performance change or not")
    category: str = _doc("the label's Category value (none when not a performance change)")
    system: str = _doc("the judge's instructions (mining.judge.judge_prompt)")
    prompt: str = _doc("the user message: commit message and the kernel files' diff, cut to the judge's limit")
    completion: str = _doc("the labelled answer as the judge writes it: JSON with is_perf, category and reason")
    schema_version: str = _doc("record schema version (perfforge.records.SCHEMA_VERSION)", default=SCHEMA_VERSION)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> JudgementRecord:
        return _from_dict(cls, data)


@dataclass
class EvalRecord:
    """One evaluated (task, configuration, variant, seed) of `perfforge eval` (results.parquet): what the model (or
    the human-optimised reference) achieved against the task's original. The table is keyed by suite, task,
    configuration, variant and seed; every metric of eval/metrics.py is computed from these rows."""

    # --- the key
    suite: str = _doc("where the task came from: catalogue (held-out pattern instances), mined (a mined commit's "
                      "task), tasks (a user's directory)")
    task: str = _doc("the task's name")
    configuration: str = _doc("human (the task's reference fast version) or a model configuration's name (base, "
                              "a LoRA adapter's name, an endpoint's name)")
    variant: str = _doc("the loop settings that vary in an ablation, e.g. sources=all;candidates=4;rounds=2; "
                        "empty for the human reference")
    seed: int = _doc("the loop's sampling seed (0 for the human reference)")
    # --- the task
    target: str = _doc("Target value: cuda, triton, cpu, hip")
    language: str = _doc("the edited file's language")
    kernel: str = _doc("the kernel or function optimised")
    pattern: str = _doc("the catalogue pattern of a pattern task; empty otherwise")
    split: str = _doc("held_out_pattern, held_out_instance (of a trained pattern), or empty outside the catalogue")
    bottleneck: str = _doc("the diagnosis the loop targeted (the original's most severe); empty when none")
    # --- the configuration
    kind: str = _doc("reference (a human-optimised version) or model")
    model: str = _doc("the backend and model that answered; empty for the reference")
    sources: str = _doc("insight sources of the prompt, comma-separated; empty for the reference")
    candidates: int = _doc("candidates sampled per round (0 for the reference)")
    rounds: int = _doc("most rounds the loop could run (0 for the reference)")
    temperature: float = _doc("sampling temperature (0 for the reference)")
    # --- the outcome
    status: str = _doc("the furthest any attempt got, in the order improved, needs_review, no_change, slower, "
                       "correct, incorrect, crashed, timeout, build_failed, rejected (by the static checks, before "
                       "any build), task_invalid, unparsable (speedup comes from trusted verdicts only: never from "
                       "needs_review)")
    correct: bool = _doc("at least one candidate was judged correct")
    speedup: float | None = _doc("the best trusted correct candidate's speedup over the original (original median "
                                 "/ candidate median), or the reference's; None when nothing correct was timed. A "
                                 "reference held for review keeps its figure, but status needs_review means no "
                                 "metric counts it", default=None)
    speedup_ci_low: float | None = _doc("95% confidence interval of that speedup, low end", default=None)
    speedup_ci_high: float | None = _doc("95% confidence interval of that speedup, high end", default=None)
    baseline_ms: float | None = _doc("the original's median time in that measurement", default=None)
    best_ms: float | None = _doc("the best correct candidate's median time", default=None)
    held_for_review: int = _doc("candidates whose speedup was held for review (implausible; never counted as "
                                "faster)", default=0)
    # --- the cost
    attempts: int = _doc("candidates judged", default=0)
    compiled: int = _doc("candidates that built (reached the correctness check)", default=0)
    correct_candidates: int = _doc("candidates judged correct", default=0)
    improved_candidates: int = _doc("candidates judged correct and faster", default=0)
    prompt_tokens: int = _doc("prompt tokens over every round", default=0)
    completion_tokens: int = _doc("completion tokens over every candidate", default=0)
    # --- every attempt, in order (the rounds and candidates ablations are computed from these)
    attempt_rounds: list[int] = _doc("each attempt's round", factory=list)
    attempt_candidates: list[int] = _doc("each attempt's number within its round", factory=list)
    attempt_statuses: list[str] = _doc("each attempt's status", factory=list)
    attempt_speedups: list[float | None] = _doc("each attempt's speedup (None when not timed)", factory=list)
    attempt_tokens: list[int] = _doc("each attempt's completion tokens", factory=list)
    # --- against the hardware, and across input sizes
    roofline_before: RooflinePoint | None = _doc("the original's roofline point (targets that give one)",
                                                 default=None)
    roofline_after: RooflinePoint | None = _doc("the best candidate's roofline point", default=None)
    config_names: list[str] = _doc("the task's input configurations the best candidate was re-measured on",
                                   factory=list)
    config_speedups: list[float | None] = _doc("its speedup on each of them (None where that measurement failed)",
                                               factory=list)
    default_config: str = _doc("the configuration the loop's verdicts are timed on", default="")
    belief: str = _doc("the best candidate's Belief value", default="")
    # --- where to look
    run_dir: str = _doc("the loop's output directory, relative to the evaluation's", default="")
    profile_before: str = _doc("the original's profile.json, relative to the evaluation's directory", default="")
    profile_after: str = _doc("the best candidate's profile.json, relative to the evaluation's directory "
                              "(empty when it was not profiled)", default="")
    machine: str = _doc("where the verdicts were measured", default="")
    schema_version: str = _doc("record schema version (perfforge.records.SCHEMA_VERSION)", default=SCHEMA_VERSION)

    @property
    def key(self) -> tuple[str, str, str, str, int]:
        return (self.suite, self.task, self.configuration, self.variant, self.seed)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> EvalRecord:
        return _from_dict(cls, data)


def _from_dict(cls: type, data: dict[str, Any]) -> Any:
    """A record dataclass from its asdict() form; unknown keys are an error, missing ones take defaults."""
    hints = {f.name: str(f.type).replace(" | None", "") for f in fields(cls)}
    unknown = set(data) - set(hints)
    if unknown:
        raise ValueError(f"{cls.__name__} has no field(s) {sorted(unknown)}")
    kwargs: dict[str, Any] = {}
    for name, value in data.items():
        kind = hints[name]
        if value is not None and kind in _NESTED:
            value = _from_dict(_NESTED[kind], value)
        elif value is not None and kind.startswith("list[") and kind[5:-1] in _NESTED:
            value = [_from_dict(_NESTED[kind[5:-1]], item) for item in value]
        kwargs[name] = value
    return cls(**kwargs)


def _features_of(cls: type) -> dict[str, Any]:
    return {f.name: _feature_for(f.type) for f in fields(cls)}


_SCALARS = {"str": "string", "float": "float64", "int": "int64", "bool": "bool"}
_NESTED = {cls.__name__: cls for cls in (Timing, CounterValue, Stall, RooflinePoint, HotLine, Finding, Diagnosis,
                                         Profile, CounterDelta)}


def _feature_for(annotation: str) -> Any:
    """datasets feature for a dataclass field annotation (annotations are strings under __future__)."""
    import datasets

    annotation = annotation.replace(" | None", "")
    if annotation in _SCALARS:
        return datasets.Value(_SCALARS[annotation])
    if annotation.startswith("list["):
        return datasets.List(_feature_for(annotation[5:-1]))
    if annotation in _NESTED:
        return _features_of(_NESTED[annotation])
    raise TypeError(f"no datasets feature for annotation {annotation!r}")


def __getattr__(name: str) -> Any:
    """COMMIT_FEATURES and PAIR_FEATURES, built on first use: `datasets` is a heavy import, and profiling/ reads
    these records on GPU machines that do not have it."""
    if name not in ("COMMIT_FEATURES", "PAIR_FEATURES", "ATTEMPT_FEATURES", "EVAL_FEATURES", "JUDGEMENT_FEATURES"):
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import datasets

    if name == "COMMIT_FEATURES":
        return datasets.Features(_features_of(CommitRecord))
    if name == "ATTEMPT_FEATURES":
        return datasets.Features(_features_of(AttemptRecord))
    if name == "EVAL_FEATURES":
        return datasets.Features(_features_of(EvalRecord))
    if name == "JUDGEMENT_FEATURES":
        return datasets.Features(_features_of(JudgementRecord))
    return datasets.Features(_features_of(PairRecord))


def field_docs(cls: type) -> list[tuple[str, str, str]]:
    """(name, type, documentation) of every field of a record class."""
    return [(f.name, str(f.type), f.metadata.get("doc", "")) for f in fields(cls)]


# Every record class, in the order the documentation presents them.
RECORD_CLASSES = (CommitRecord, PairRecord, Profile, Timing, CounterValue, Stall, RooflinePoint, HotLine, Diagnosis,
                  Finding, AttemptRecord, CounterDelta, EvalRecord, JudgementRecord)


def as_row(record: CommitRecord | PairRecord | AttemptRecord | EvalRecord | JudgementRecord) -> dict[str, Any]:
    """Plain dict for datasets (nested dataclasses become dicts, None stays None)."""
    return asdict(record)


def check_schema_version(path: object, rows: list[dict[str, Any]]) -> None:
    """Refuse rows written under another major schema version (a renamed or removed field) with one error line."""
    from perfforge.errors import DatasetError

    major = SCHEMA_VERSION.split(".")[0]
    found = {str(row.get("schema_version", "")) for row in rows}
    other = sorted(v for v in found if v.split(".")[0] != major)
    if other:
        raise DatasetError(f"{path} holds records of schema version {other[0]}, this perfforge reads {SCHEMA_VERSION}"
                           "; write it again with this version (mine, synth or optimize)")


def read_records(path: object, cls: type) -> list[Any]:
    """The records of one parquet file as objects of `cls`, its schema version checked first."""
    import pyarrow.parquet as pq

    rows = pq.read_table(str(path)).to_pylist()
    check_schema_version(path, rows)
    return [cls.from_dict(row) for row in rows]


# Each matches a string literal (group 1, kept: `"http://a"` and `"#"` are code) or a comment (dropped).
_QUOTED = r"""("(?:\\.|[^"\\\n])*"|'(?:\\.|[^'\\\n])*')"""
_C_COMMENT_RE = re.compile(_QUOTED + r"|//[^\n]*|/\*.*?\*/", re.DOTALL)
_HASH_COMMENT_RE = re.compile(_QUOTED + r"|#[^\n]*")  # Python comments
# `!` comments, keeping `!$omp` directives; Fortran doubles a quote inside a string instead of escaping it
_FORTRAN_COMMENT_RE = re.compile(r"""('(?:''|[^'\n])*'|"(?:""|[^"\n])*")|![^$\n][^\n]*|!$""", re.MULTILINE)
_SPACE_RE = re.compile(r"\s+")
_NOT_NEWLINE_RE = re.compile(r"[^\n]")


def _strip_comments(pattern: re.Pattern[str], code: str) -> str:
    return pattern.sub(lambda match: match.group(1) or "", code)


def blank_comments(code: str, language: str = "c") -> str:
    """Code with every comment's characters replaced by spaces (newlines kept, so line numbers still hold) and
    string literals left alone: what the static checks read. language as normalise_code's (hip and other C-like
    languages read as C)."""
    comments = {"python": _HASH_COMMENT_RE, "fortran": _FORTRAN_COMMENT_RE}.get(language, _C_COMMENT_RE)
    return comments.sub(lambda match: match.group(1) or _NOT_NEWLINE_RE.sub(" ", match.group(0)), code)


def normalise_code(code: str, language: str = "c") -> str:
    """Code with comments and all white space removed, so that formatting-only differences vanish.

    language is a mining language name (c, cpp, cuda, python, fortran); C-like languages keep their
    preprocessor lines, pragmas included, because they change what the code does. Python keeps each line's
    indentation depth, which is part of its syntax.
    """
    if language == "python":  # indentation is syntax: keep each line's depth, drop the rest of the spacing
        lines = (_strip_comments(_HASH_COMMENT_RE, line).rstrip() for line in code.expandtabs(8).splitlines())
        return "\n".join(f"{len(line) - len(line.lstrip())}:{_SPACE_RE.sub('', line)}" for line in lines if line)
    comments = _FORTRAN_COMMENT_RE if language == "fortran" else _C_COMMENT_RE
    return _SPACE_RE.sub("", _strip_comments(comments, code))


def function_hash(code: str, language: str = "c") -> str:
    """Formatting-blind identity of one function (near-duplicates of a function share a training split)."""
    return hashlib.sha256(normalise_code(code, language).encode("utf-8", "surrogatepass")).hexdigest()[:32]


def code_hash(function_before: str, function_after: str, language: str = "c") -> str:
    """Formatting-blind identity of a pair, for exact deduplication."""
    payload = normalise_code(function_before, language) + "\0" + normalise_code(function_after, language)
    return hashlib.sha256(payload.encode("utf-8", "surrogatepass")).hexdigest()[:32]
