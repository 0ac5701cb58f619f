"""What a measurement was taken on (VALIDATION.md rule 15), and the peaks results are checked against.

CPU: model and core count from /proc/cpuinfo, compiler version. GPU: the device the harness reported
(timing.json: name, SM count, L2, driver and runtime versions) and the peaks of known devices.
"""

from __future__ import annotations

import functools
import os
import platform
import subprocess
from dataclasses import dataclass

from profiling import sandbox


@dataclass(frozen=True)
class Peaks:
    """A device's ceilings: datasheet figures, and the copy bandwidth measured on this project's machines."""

    dram_gbyte_per_s: float
    fp32_gflop_per_s: float
    source: str


# Datasheet peaks (SXM parts). The copy figures measured here are lower (H100 ~3.0 TB/s, H200 ~4.3 TB/s in
# device-to-device copies, /work/.library/device/KINDS.md): the datasheet value is the one no kernel may exceed,
# so the plausibility gate uses it; roofline percentages use whichever the profile measured.
KNOWN_GPU_PEAKS = {
    "H100": Peaks(3350.0, 67_000.0, "NVIDIA H100 SXM datasheet: 3.35 TB/s HBM3, 67 TFLOP/s fp32"),
    "H200": Peaks(4800.0, 67_000.0, "NVIDIA H200 SXM datasheet: 4.8 TB/s HBM3e, 67 TFLOP/s fp32"),
    "A100": Peaks(2039.0, 19_500.0, "NVIDIA A100 80GB SXM datasheet: 2.04 TB/s, 19.5 TFLOP/s fp32"),
}


def gpu_peaks(device_name: str) -> Peaks | None:
    return next((peaks for key, peaks in KNOWN_GPU_PEAKS.items() if key in device_name), None)


@functools.cache
def cpu_model() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


@functools.cache
def tool_version(tool: str) -> str:
    """First line of `tool --version`, or 'not found'."""
    try:
        out = sandbox.run_trusted([tool, "--version"], timeout_s=20, text=True)
    except (OSError, subprocess.TimeoutExpired):
        return "not found"
    lines = [line for line in (out.stdout or out.stderr).splitlines() if line.strip()]
    return lines[-1].strip() if tool == "nvcc" and lines else (lines[0].strip() if lines else "not found")


def describe_machine(harness_context: dict | None = None) -> str:
    """One line: the processor or device, and the core count or device properties."""
    context = harness_context or {}
    if context.get("device"):
        return (f"{context['device']} ({context.get('sm_count', '?')} SMs, L2 {context.get('l2_bytes', 0) >> 20} MiB); "
                f"host {cpu_model()}")
    return f"{cpu_model()} ({os.cpu_count()} cores, {platform.system()} {platform.release()})"


def describe_tools(compiler: str, harness_context: dict | None = None) -> str:
    context = harness_context or {}
    parts = [f"{compiler}: {tool_version(compiler)}"]
    if context.get("cuda_driver"):
        parts.append(f"CUDA driver {context['cuda_driver']}, runtime {context.get('cuda_runtime')}")
    return "; ".join(parts)
