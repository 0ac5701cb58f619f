"""Fixtures of the training tests: small datasets written by hand with the real record classes and writer, and the
tiny chat model of tests/inference (built once per session, never downloaded).

pairs.parquet: 12 PairRecords, 8 synthetic ones in 4 patterns (2 each) and 4 mined ones in 2 repositories (pattern
""), short C before/after; half carry a hand-built profile with diagnoses, the others none.
attempts.parquet: AttemptRecords of two prompts (two tasks): improved candidates with different speedups, and
incorrect, build_failed, unparsable ones.

`write_pairs` and `write_attempts` are plain functions as well, for other test packages (tests/inference).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from perfforge import prompt
from perfforge.io import write_parquet
from perfforge.records import AttemptRecord, Diagnosis, PairRecord, Profile, Timing, as_row

PATTERNS = ("cpu/matvec_colwalk", "cpu/loop_interchange", "cpu/sum_unroll", "cpu/strided_copy")
REPOS = ("alice/blas", "bob/stencil")

# name of the kernel, C before, C after (short, each one different: they must not be near-duplicates)
_KERNELS = [
    ("matvec", """\
void matvec(int n, const float *m, const float *w, float *out) {
    for (int i = 0; i < n; i++) out[i] = 0.0f;
    for (int j = 0; j < n; j++)
        for (int i = 0; i < n; i++)
            out[i] += m[(long)i * n + j] * w[j];
}
""", """\
void matvec(int n, const float *m, const float *w, float *out) {
    for (int i = 0; i < n; i++) {
        float acc = 0.0f;
        for (int j = 0; j < n; j++) acc += m[(long)i * n + j] * w[j];
        out[i] = acc;
    }
}
"""),
    ("matmul", """\
void matmul(int n, const float *a, const float *b, float *c) {
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++)
            for (int k = 0; k < n; k++)
                c[(long)i * n + j] += a[(long)i * n + k] * b[(long)k * n + j];
}
""", """\
void matmul(int n, const float *a, const float *b, float *c) {
    for (int i = 0; i < n; i++)
        for (int k = 0; k < n; k++) {
            float aik = a[(long)i * n + k];
            for (int j = 0; j < n; j++) c[(long)i * n + j] += aik * b[(long)k * n + j];
        }
}
"""),
    ("sum", """\
float sum(int n, const float *x) {
    float s = 0.0f;
    for (int i = 0; i < n; i++) s += x[i];
    return s;
}
""", """\
float sum(int n, const float *x) {
    float s0 = 0.0f, s1 = 0.0f;
    int i = 0;
    for (; i + 1 < n; i += 2) { s0 += x[i]; s1 += x[i + 1]; }
    for (; i < n; i++) s0 += x[i];
    return s0 + s1;
}
"""),
    ("copy_rows", """\
void copy_rows(int rows, int cols, const double *src, double *dst) {
    for (int j = 0; j < cols; j++)
        for (int i = 0; i < rows; i++)
            dst[(size_t)i * cols + j] = src[(size_t)i * cols + j];
}
""", """\
void copy_rows(int rows, int cols, const double *src, double *dst) {
    for (int i = 0; i < rows; i++)
        for (int j = 0; j < cols; j++)
            dst[(size_t)i * cols + j] = src[(size_t)i * cols + j];
}
"""),
    ("scale", """\
void scale(int n, float a, float *x) {
    for (int i = 0; i < n; i++) x[i] = x[i] * a / 1.0f;
}
""", """\
void scale(int n, float a, float *restrict x) {
    for (int i = 0; i < n; i++) x[i] *= a;
}
"""),
    ("stencil", """\
void stencil(int n, const float *in, float *out) {
    for (int i = 1; i < n - 1; i++)
        out[i] = (in[i - 1] + in[i] + in[i + 1]) / 3.0f;
}
""", """\
void stencil(int n, const float *in, float *out) {
    const float third = 1.0f / 3.0f;
    for (int i = 1; i < n - 1; i++)
        out[i] = (in[i - 1] + in[i] + in[i + 1]) * third;
}
"""),
]

DIAGNOSES = [
    Diagnosis(name="cache_miss_bound", severity=0.52, evidence=["D1_miss_rate = 25 % (>= 10) at line 5"],
              hint="walk memory in the order it is laid out"),
    Diagnosis(name="missing_parallelism", severity=0.40,
              evidence=["loop_nest_share = 0.9 ratio (>= 0.5) at line 3"],
              preconditions=["cpu_cores = 2 core (>= 2)"], hint="share the iterations among the cores"),
]


def hand_profile(kernel: str) -> Profile:
    return Profile(machine="Test CPU", tool_versions="gcc 12",
                   timing=Timing(median_ms=6.5, p10_ms=6.3, p90_ms=7.0, trials=7, method="monotonic_clock"),
                   diagnoses=list(DIAGNOSES), target="cpu", kernel=kernel,
                   source_file="kernel.c")


def pair_record(index: int, *, pattern: str = "", repo: str = "local/synth", profiled: bool = False,
                before: str | None = None, after: str | None = None, message: str | None = None,
                file_before: str | None = None, file_after: str | None = None) -> PairRecord:
    """One pair: kernel `index % 6` of the table above, renamed per index; file = a header line + the function."""
    name, slow, fast = _KERNELS[index % len(_KERNELS)]
    kernel = f"{name}_{index}"
    function_before = before if before is not None else slow.replace(name + "(", kernel + "(")
    function_after = after if after is not None else fast.replace(name + "(", kernel + "(")
    header = f"#include <stddef.h>\n/* pair {index} */\n"
    return PairRecord(
        repo=repo, repo_url=f"https://example.com/{repo}", commit=f"{index:040x}", parent=f"{index + 100:040x}",
        date="2024-01-02T12:00:00+00:00", path=f"src/{name}/kernel_{index}.c", licence="MIT",
        found_by="synthetic:pattern" if pattern else "mined:rules", language="c", target="cpu", kernel_name=kernel,
        kernel_kind="host_function", function_before=function_before, function_after=function_after,
        file_before=file_before if file_before is not None else header + function_before,
        file_after=file_after if file_after is not None else header + function_after,
        diff="", code_hash=f"{index:032x}", perf_score=0.9, category="memory_access",
        evidence=["loop interchange", "stride-1 inner loop"],
        message=message if message is not None else f"speed up {kernel}: walk rows, not columns\n\nLonger body.",
        profile_before=hand_profile(kernel) if profiled else None, pattern=pattern)


def pair_records() -> list[PairRecord]:
    """12 pairs: 2 per pattern (the first profiled), 2 per mined repository (one profiled)."""
    records = []
    index = 0
    for pattern in PATTERNS:
        for k in range(2):
            records.append(pair_record(index, pattern=pattern, profiled=k == 0))
            index += 1
    for repo in REPOS:
        for k in range(2):
            records.append(pair_record(index, repo=repo, profiled=k == 1))
            index += 1
    return records


def write_pairs(path: Path, records: list[PairRecord] | None = None) -> Path:
    from perfforge.records import PAIR_FEATURES

    write_parquet(path, [as_row(r) for r in (pair_records() if records is None else records)], PAIR_FEATURES)
    return path


# --- attempts ------------------------------------------------------------------------------------------------------

PROMPT_A = "Target: cpu (c). File: kernel.c. Kernel: matvec.\n\nThe file kernel.c:\n```c\n" + _KERNELS[0][1] + "```"
PROMPT_B = "Target: cpu (c). File: kernel.c. Kernel: sum.\n\nThe file kernel.c:\n```c\n" + _KERNELS[2][1] + "```"


def attempt_record(*, task: str, pattern: str, user_prompt: str, status: str, candidate: int,
                   speedup: float | None = None, code: str = "") -> AttemptRecord:
    hypothesis = f"candidate {candidate} of {task} walks the rows"
    completion = (prompt.completion_text(code, language="c", hypothesis=hypothesis, evidence="cache_miss_bound")
                  if code else f"I cannot answer this one ({candidate}).")
    return AttemptRecord(
        task=task, target="cpu", language="c", kernel=task, pattern=pattern, bottleneck="cache_miss_bound",
        model="openai:test@http://127.0.0.1", prompt_version=prompt.PROMPT_VERSION, sources="all",
        system=prompt.SYSTEM_PROMPT, prompt=user_prompt, completion=completion, code=code, round=1,
        candidate=candidate, prompt_tokens=100, completion_tokens=40, finish_reason="stop", status=status,
        reason=f"{status} (test)", speedup=speedup, hypothesis=hypothesis if code else "",
        evidence="cache_miss_bound" if code else "")


def attempt_records() -> list[AttemptRecord]:
    """Prompt A (task matvec_colwalk, a pattern): improved 2.0x, 1.95x and 1.5x, incorrect, build_failed,
    unparsable. Prompt B (task sum_rows, no pattern): improved 1.3x, incorrect."""
    fast_a, fast_b = _KERNELS[0][2], _KERNELS[2][2]
    a = {"task": "matvec_colwalk", "pattern": "cpu/matvec_colwalk", "user_prompt": PROMPT_A}
    b = {"task": "sum_rows", "pattern": "", "user_prompt": PROMPT_B}
    return [
        attempt_record(**a, status="improved", candidate=1, speedup=2.0, code=fast_a),
        attempt_record(**a, status="improved", candidate=2, speedup=1.95, code=fast_a.replace("acc", "total")),
        attempt_record(**a, status="improved", candidate=3, speedup=1.5, code=fast_a.replace("acc", "s")),
        attempt_record(**a, status="incorrect", candidate=4, speedup=None, code=fast_a.replace("+=", "-=")),
        attempt_record(**a, status="build_failed", candidate=5, code=fast_a.replace(";", "", 1)),
        attempt_record(**a, status="unparsable", candidate=6),
        attempt_record(**b, status="improved", candidate=1, speedup=1.3, code=fast_b),
        attempt_record(**b, status="incorrect", candidate=2, code=fast_b.replace("s0 + s1", "s0")),
    ]


def write_attempts(path: Path, records: list[AttemptRecord] | None = None) -> Path:
    from perfforge.records import ATTEMPT_FEATURES

    write_parquet(path, [as_row(r) for r in (attempt_records() if records is None else records)],
                  ATTEMPT_FEATURES)
    return path


@pytest.fixture
def attempts_parquet(tmp_path: Path) -> Path:
    return write_attempts(tmp_path / "attempts" / "attempts.parquet")
