"""perfforge_harness.py, the Python twin of perfforge_harness.h: same protocol, same files, same inputs.

Harness scripts run as the build runs them: `python harness.py MODE ...` with the runtime directory on
PYTHONPATH. The kernels are plain torch CPU code, and the two Triton example tasks run under Triton's
interpreter (TRITON_INTERPRET=1) on the CPU.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch")

REPO = Path(__file__).resolve().parents[2]
RUNTIME_DIR = REPO / "profiling" / "runtime"
TRITON_TASKS = REPO / "examples" / "tasks" / "triton"
sys.path.insert(0, str(RUNTIME_DIR))
import perfforge_harness as pfh  # noqa: E402 (the runtime directory is not a package)

# Every dtype, an inout and two outputs, in the same order in both languages (the order is part of the seed).
C_HARNESS = r"""
#include "perfforge_harness.h"
int main(int argc, char **argv) {
    pf_run r;
    pf_init(&r, argc, argv);
    int n = (int)pf_param_int(&r, "n", 1000);
    pf_buf *a = pf_input(&r, "a", PF_F32, (size_t)n, -1.0, 1.0);
    pf_buf *b = pf_input(&r, "b", PF_F32, (size_t)n, -1.0, 1.0);
    pf_input(&r, "d", PF_F64, (size_t)n, -3.0, 5.0);
    pf_input(&r, "h", PF_F16, (size_t)n, -4.0, 4.0);
    pf_input(&r, "bf", PF_BF16, (size_t)n, -2.0, 2.0);
    pf_input(&r, "i32", PF_I32, (size_t)n, -100.0, 100.0);
    pf_input(&r, "i64", PF_I64, (size_t)n, -1e12, 1e12);
    pf_input(&r, "u8", PF_U8, (size_t)n, 0.0, 256.0);
    pf_buf *io = pf_inout(&r, "io", PF_F32, (size_t)n, 0.0, 1.0);
    pf_buf *out = pf_output(&r, "out", PF_F32, (size_t)n);
    pf_output(&r, "untouched", PF_I32, (size_t)n);
    while (pf_begin(&r)) {
        float *pa = pf_ptr(a), *pb = pf_ptr(b), *po = pf_ptr(out), *pio = pf_ptr(io);
        for (int i = 0; i < n; i++) { po[i] = pa[i] + pb[i]; pio[i] = pio[i] * 2.0f; }
        pf_end(&r);
    }
    return pf_finish(&r);
}
"""

PY_HARNESS = """
import torch
from perfforge_harness import Run

r = Run()
n = r.param_int("n", 1000)
a = r.input("a", "float32", n, -1.0, 1.0)
b = r.input("b", "float32", n, -1.0, 1.0)
r.input("d", "float64", n, -3.0, 5.0)
r.input("h", "float16", n, -4.0, 4.0)
r.input("bf", "bfloat16", n, -2.0, 2.0)
r.input("i32", "int32", n, -100.0, 100.0)
r.input("i64", "int64", n, -1e12, 1e12)
r.input("u8", "uint8", n, 0.0, 256.0)
io = r.inout("io", "float32", n, 0.0, 1.0)
out = r.output("out", "float32", n)
r.output("untouched", "int32", n)
calls = 0
while r.begin():
    torch.add(a, b, out=out)
    io.mul_(2.0)
    calls += 1
    r.end()
(r.options.out_dir / "calls.txt").write_text(str(calls))
raise SystemExit(r.finish())
"""

# A kernel that writes one element outside `out` ("after" past its end, "before" before its start), or only the
# first half of it ("half"), or adds one to a fixed buffer ("fixed").
MISBEHAVING_HARNESS = """
import sys
import torch
from perfforge_harness import Run

r = Run()
n = r.param_int("n", 64)
how = r.param("how")
x = r.input("x", "float32", n, -1.0, 1.0)
table = r.fixed("table", "int32", n)
table.copy_(torch.arange(n, dtype=torch.int32))
out = r.output("out", "float32", n)
for _ in r.calls():
    if how == "after":
        torch.as_strided(out, (n + 1,), (1,), out.storage_offset())[n] = 1.0
    elif how == "before":
        torch.as_strided(out, (1,), (1,), out.storage_offset() - 1)[0] = 1.0
    elif how == "half":
        out[: n // 2] = x[: n // 2]
    elif how == "fixed":
        table.add_(1)
        out.copy_(x)
raise SystemExit(r.finish())
"""


def run_harness(script: Path, mode: str, out_dir: Path, *args: str, interpret: bool = False,
                seed: int = 7) -> subprocess.CompletedProcess[str]:
    out_dir.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "PYTHONPATH": str(RUNTIME_DIR), "PYTHONDONTWRITEBYTECODE": "1", "CUDA_VISIBLE_DEVICES": ""}
    if interpret:
        env["TRITON_INTERPRET"] = "1"
    return subprocess.run([sys.executable, str(script), mode, "--seed", str(seed), "--out", str(out_dir), *args],
                          capture_output=True, text=True, env=env, timeout=300)


def write_script(tmp_path: Path, text: str, name: str = "harness.py") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def test_python_and_c_harnesses_draw_byte_identical_inputs_and_write_identical_files(tmp_path: Path) -> None:
    """Same seed, same call, same buffer index: the same bytes, for every dtype, call after call; the .npy files
    (headers included) and the poisoned, untouched output are identical too."""
    gcc = shutil.which("gcc")
    if gcc is None:
        pytest.skip("no gcc to build the C harness with")
    (tmp_path / "harness.c").write_text(C_HARNESS)
    binary = tmp_path / "c_harness"
    # -O3 -march=native: the draw must not depend on the build (no fused multiply-add in pf_fill)
    subprocess.run([gcc, "-O3", "-march=native", f"-I{RUNTIME_DIR}", str(tmp_path / "harness.c"), "-o", str(binary)],
                   check=True, capture_output=True)
    c_out, py_out = tmp_path / "c", tmp_path / "py"
    c_out.mkdir()
    subprocess.run([str(binary), "check", "--seed", "11", "--out", str(c_out), "--calls", "3", "--dump-inputs",
                    "n=50000"], check=True)
    result = run_harness(write_script(tmp_path, PY_HARNESS), "check", py_out, "--calls", "3", "--dump-inputs",
                         "n=50000", seed=11)
    assert result.returncode == 0, result.stderr
    c_files = sorted(p.name for p in c_out.iterdir())
    assert len([name for name in c_files if name.endswith(".npy")]) == 11 * 3
    assert any(name.endswith(".digest") for name in c_files)  # inputs also by digest, the same in both languages
    assert sorted(p.name for p in py_out.iterdir() if p.suffix in (".npy", ".digest")) == c_files
    different = [name for name in c_files if (c_out / name).read_bytes() != (py_out / name).read_bytes()]
    assert different == []
    untouched = np.load(py_out / "untouched.2.npy")
    assert (untouched == -1).all()  # 0xFF bytes, not zeros
    assert not np.array_equal(np.load(py_out / "a.0.npy"), np.load(py_out / "a.1.npy"))  # fresh inputs per call
    assert not np.array_equal(np.load(py_out / "a.0.npy"), np.load(py_out / "b.0.npy"))  # and per buffer


def test_half_and_bfloat16_follow_the_header_not_numpy() -> None:
    """The header truncates bfloat16, flushes half's subnormals to zero and rounds half's ties up; the twin must
    copy those choices, not numpy's round-to-nearest-even."""
    tie = np.array([1.0 + 2.0**-11], dtype=np.float64)  # exactly between two halves: the header rounds up
    assert pfh.convert(tie, "float16").view(np.uint16)[0] == 0x3C01
    assert np.float16(tie[0]).view(np.uint16) == 0x3C00  # numpy rounds to even
    assert pfh.convert(np.array([1e-6]), "float16").view(np.uint16)[0] == 0  # below half's normal range
    assert pfh.convert(np.array([1.0 + 2.0**-9]), "bfloat16")[0] == 0x3F80  # truncated, not rounded
    assert pfh.convert(np.array([-0.5]), "int32")[0] == -1  # floor, not truncation


def test_outputs_are_poisoned_before_every_call(tmp_path: Path) -> None:
    result = run_harness(write_script(tmp_path, MISBEHAVING_HARNESS), "check", tmp_path / "out", "--dump-inputs",
                         "how=half", "n=64")
    assert result.returncode == 0, result.stderr
    for call in (0, 1):
        out = np.load(tmp_path / "out" / f"out.{call}.npy")
        x = np.load(tmp_path / "out" / f"x.{call}.npy")
        assert np.array_equal(out[:32], x[:32])
        assert np.isnan(out[32:]).all()


@pytest.mark.parametrize(("how", "where"), [("after", "past its end"), ("before", "before its start")])
def test_an_out_of_bounds_write_exits_3_naming_the_buffer(tmp_path: Path, how: str, where: str) -> None:
    result = run_harness(write_script(tmp_path, MISBEHAVING_HARNESS), "check", tmp_path / "out", f"how={how}")
    assert result.returncode == pfh.EXIT_OUT_OF_BOUNDS
    assert f"buffer 'out' was written out of bounds: {where} (call 0)" in result.stderr


def test_a_fixed_buffer_is_restored_before_every_checked_call(tmp_path: Path) -> None:
    result = run_harness(write_script(tmp_path, MISBEHAVING_HARNESS), "check", tmp_path / "out", "--dump-inputs",
                         "how=fixed",
                         "--calls", "3")
    assert result.returncode == 0, result.stderr
    for call in range(3):  # the kernel adds one each call; each call starts from the harness's table again
        assert np.array_equal(np.load(tmp_path / "out" / f"table.{call}.npy"), np.arange(64) + 1)


def test_time_mode_writes_timing_json_with_flush_size(tmp_path: Path) -> None:
    script = write_script(tmp_path, PY_HARNESS)
    result = run_harness(script, "time", tmp_path / "flushed", "--warmup", "2", "--trials", "5", "n=1000")
    assert result.returncode == 0, result.stderr
    timing = json.loads((tmp_path / "flushed" / "timing.json").read_text())
    assert timing["method"] == "monotonic_clock"
    assert len(timing["times_ms"]) == 5 and all(t > 0 for t in timing["times_ms"])
    assert 0 < timing["flush_bytes"] <= pfh.CPU_FLUSH_CAP_BYTES
    assert (tmp_path / "flushed" / "calls.txt").read_text() == "7"  # warm-up calls run but are not recorded
    assert not list((tmp_path / "flushed").glob("*.npy")) and timing["saved_calls"] == []
    # --save-call: those calls' outputs are written; timed calls alternate between the inputs of checked calls 0
    # and 1, outputs poisoned, so timed call k's outputs equal checked call k % 2's
    saved = run_harness(script, "time", tmp_path / "saved", "--warmup", "2", "--trials", "5", "--save-call", "3",
                        "--save-call", "6", "n=1000")
    assert saved.returncode == 0, saved.stderr
    assert json.loads((tmp_path / "saved" / "timing.json").read_text())["saved_calls"] == [3, 6]
    assert sorted(p.name for p in (tmp_path / "saved").glob("*.npy")) == [
        "io.3.npy", "io.6.npy", "out.3.npy", "out.6.npy", "untouched.3.npy", "untouched.6.npy"]
    assert run_harness(script, "check", tmp_path / "checked", "--calls", "2", "n=1000").returncode == 0
    for name in ("io", "out", "untouched"):
        for call in (3, 6):
            assert np.array_equal(np.load(tmp_path / "saved" / f"{name}.{call}.npy"),
                                  np.load(tmp_path / "checked" / f"{name}.{call % 2}.npy"), equal_nan=True)
    run_harness(script, "time", tmp_path / "unflushed", "--trials", "3", "--no-flush", "n=1000")
    assert json.loads((tmp_path / "unflushed" / "timing.json").read_text())["flush_bytes"] == 0


def test_every_timed_call_finds_its_outputs_poisoned_and_other_inputs_than_the_last(tmp_path: Path) -> None:
    """What a kernel sees at the start of a timed call is what it sees at the start of a checked one: it cannot tell
    that it is being timed (and skip work) from its buffers, nor answer from the result of the call before."""
    script = write_script(tmp_path, """
import torch
from perfforge_harness import Run

r = Run()
x = r.input("x", "float32", 64, -1.0, 1.0)
io = r.inout("io", "float32", 64, 0.0, 1.0)
out = r.output("out", "float32", 64)
last_x, last_io = x.clone(), io.clone() * 2
seen = []
while r.begin():
    fresh = r.iter == 0 or not (torch.equal(x, last_x) or torch.equal(io, last_io))
    seen.append(bool(torch.isnan(out).all()) and fresh)
    last_x = x.clone()
    out.copy_(x)
    io.mul_(2.0)
    last_io = io.clone()
    r.end()
(r.options.out_dir / "seen.txt").write_text(" ".join(map(str, seen)))
raise SystemExit(r.finish())
""")
    for mode in ("time", "profile"):
        result = run_harness(script, mode, tmp_path / mode, "--warmup", "2", "--trials", "4")
        assert result.returncode == 0, result.stderr
        seen = (tmp_path / mode / "seen.txt").read_text().split()
        assert seen == ["True"] * len(seen) and len(seen) == (6 if mode == "time" else 2)


def test_profile_mode_makes_one_warm_up_and_one_profiled_call(tmp_path: Path) -> None:
    result = run_harness(write_script(tmp_path, PY_HARNESS), "profile", tmp_path / "out", "--trials", "9", "n=100")
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "out" / "calls.txt").read_text() == "2"
    assert len(json.loads((tmp_path / "out" / "timing.json").read_text())["times_ms"]) == 1


@pytest.mark.parametrize("args", [["bogus"], ["check", "--calls"], ["check", "--frobnicate"],
                                  ["time", "--trials", "0"], ["check", "--calls", "0"]])
def test_bad_arguments_exit_2(args: list[str]) -> None:
    with pytest.raises(SystemExit) as stopped:
        pfh.parse_args(["harness.py", *args])
    assert stopped.value.code == pfh.EXIT_BAD_ARGS


def test_parameters_read_like_strtol_and_the_first_occurrence_wins() -> None:
    opts = pfh.parse_args(["h", "check", "--seed", "3", "n=1024.0", "alpha=0.25", "n=7"])
    run = pfh.Run(["h", "check", "--seed", "3", "n=1024.0", "alpha=0.25", "n=7"], device="cpu")
    assert opts.seed == 3 and opts.calls == 2
    assert run.param_int("n", 0) == 1024
    assert run.param_float("alpha", 1.0) == 0.25
    assert run.param_int("missing", 42) == 42


def test_a_missing_output_directory_exits_5(tmp_path: Path) -> None:
    script = write_script(tmp_path, PY_HARNESS)
    result = subprocess.run([sys.executable, str(script), "check", "--out", str(tmp_path / "absent")],
                            capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(RUNTIME_DIR)})
    assert result.returncode == pfh.EXIT_IO
    assert "cannot write" in result.stderr


# ---------------------------------------------------------------------------------------------------- Triton


def stage(task: str, version: str, directory: Path) -> Path:
    """The task's harness with `version` saved as kernel.py, as the build stages it."""
    directory.mkdir(parents=True)
    shutil.copy2(TRITON_TASKS / task / "harness.py", directory / "harness.py")
    shutil.copy2(TRITON_TASKS / task / version, directory / "kernel.py")
    return directory / "harness.py"


def run_triton_task(tmp_path: Path, task: str, version: str, *params: str) -> Path:
    pytest.importorskip("triton")
    out_dir = tmp_path / f"{task}-{version}-out"
    result = run_harness(stage(task, version, tmp_path / f"{task}-{version}"), "check", out_dir, "--dump-inputs",
                         "--calls", "2",
                         *params, interpret=True)
    assert result.returncode == 0, result.stderr
    return out_dir


@pytest.mark.parametrize("version", ["kernel.py", "fast.py"])
def test_row_sum_task_matches_numpy_under_the_interpreter(tmp_path: Path, version: str) -> None:
    out_dir = run_triton_task(tmp_path, "row_sum_strided", version, "m=64", "n=256")
    for call in (0, 1):
        x = np.load(out_dir / f"x.{call}.npy").reshape(64, 256)
        out = np.load(out_dir / f"out.{call}.npy")
        np.testing.assert_allclose(out, x.astype(np.float64).sum(axis=1), rtol=1e-5)


@pytest.mark.parametrize("version", ["kernel.py", "fast.py"])
def test_scale_bias_relu_task_matches_numpy_under_the_interpreter(tmp_path: Path, version: str) -> None:
    out_dir = run_triton_task(tmp_path, "scale_bias_relu_unfused", version, "n=5000")
    for call in (0, 1):
        x, bias = (np.load(out_dir / f"{name}.{call}.npy") for name in ("x", "bias"))
        expected = np.maximum(x * np.float32(1.5) + bias, np.float32(0.0))
        np.testing.assert_allclose(np.load(out_dir / f"out.{call}.npy"), expected, rtol=1e-6, atol=1e-7)
        assert 0.3 < (expected == 0).mean() < 0.7  # not a degenerate test: about half the outputs are clipped


def test_a_triton_store_without_its_mask_lands_in_the_guard_zone(tmp_path: Path) -> None:
    """The interpreter writes through real pointers, so a dropped mask is caught exactly as under the header."""
    pytest.importorskip("triton")
    staged = stage("scale_bias_relu_unfused", "fast.py", tmp_path / "maskless")
    kernel = staged.with_name("kernel.py")
    source = kernel.read_text()
    unmasked = source.replace("tl.store(out_ptr + offs, tl.maximum(y, 0.0), mask=mask)",
                              "tl.store(out_ptr + offs, tl.maximum(y, 0.0))")
    assert unmasked != source
    kernel.write_text(unmasked)
    result = run_harness(staged, "check", tmp_path / "out", "n=5100", interpret=True)  # 20 floats over: in the guard
    assert result.returncode == pfh.EXIT_OUT_OF_BOUNDS
    assert "buffer 'out' was written out of bounds: past its end" in result.stderr


def test_triton_tasks_load_as_tasks() -> None:
    from perfforge.task import load_task

    for name in ("row_sum_strided", "scale_bias_relu_unfused"):
        task = load_task(TRITON_TASKS / name)
        assert (task.target, task.language, task.source, task.reference) == ("triton", "python", "kernel.py", "fast.py")
        flops, moved_bytes = task.work.evaluate(task.config().params)
        assert flops and moved_bytes and moved_bytes > 0


def test_the_judges_words_name_the_poison_both_harnesses_know() -> None:
    """A staged process poisons its outputs on the device, so the judge's word for the call carries the byte it drew
    for the call ("call 3c", "stage a5"; plain for 0xFF). Before, a staged process always wrote 0xFF, and a
    candidate that left unwritten the outputs the original fills with -1 (every byte 0xFF) passed every call."""
    from profiling.correctness import JUDGE_POISON_BYTES, POISON_BYTE
    from profiling.served import _poisoning

    assert _poisoning(b"call", POISON_BYTE) == b"call" and _poisoning(b"stage", 0xA5) == b"stage a5"
    assert _poisoning(b"call", 0x0F) == b"call 0f"
    with pytest.raises(ValueError, match="one byte"):
        _poisoning(b"call", 0x100)
    for word in ("call", "stage"):  # the Python harness reads every byte the judge may send
        for byte in JUDGE_POISON_BYTES:
            assert pfh.poison_of(_poisoning(word.encode(), byte).decode(), word) == byte
    assert pfh.poison_of("call a5", "stage") is None and pfh.poison_of("call 0", "call") is None
    assert pfh.poison_of("call A5", "call") is None and pfh.poison_of("call a5x", "call") is None
