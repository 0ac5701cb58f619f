"""The roofline point of a launch from its ncu raw-page metrics (and the machine's measured copy bandwidth).

Achieved FLOP are counted as ncu's roofline section counts them: add + mul + 2 * fma thread instructions, per
precision (fp32, fp64, fp16), from the `.sum.per_cycle_elapsed` rates times the SMSP clock. Bytes are DRAM bytes
read plus written. The compute peak is that of the precision with most FLOP: 2 * its FMA peak (thread
instructions per SM cycle, whole GPU) times the SM clock during the launch. The bandwidth peak is the measured
device-to-device copy bandwidth when given (what a kernel can reach), else ncu's DRAM peak (bytes per DRAM cycle
times the DRAM clock), which is the datasheet figure and about 10% above what copies reach.
"""

from __future__ import annotations

from perfforge.records import RooflinePoint
from profiling.cuda import metrics as m
from profiling.cuda.raw_csv import KernelLaunch


def flop_per_second(launch: KernelLaunch) -> dict[str, float]:
    """Achieved FLOP/s per precision."""
    clock_hz = launch.value(m.SMSP_CYCLES_PER_SECOND) or 0.0
    rates = {}
    for precision, (add, mul, fma) in m.FLOP_RATES.items():
        per_cycle = (launch.value(add) or 0.0) + (launch.value(mul) or 0.0) + 2.0 * (launch.value(fma) or 0.0)
        rates[precision] = per_cycle * clock_hz
    return rates


def peak_flop_per_second(launch: KernelLaunch, precision: str) -> float:
    return 2.0 * (launch.value(m.FMA_PEAKS[precision]) or 0.0) * (launch.value(m.SM_CYCLES_PER_SECOND) or 0.0)


def dram_bytes(launch: KernelLaunch) -> float:
    return (launch.value(m.DRAM_BYTES_READ) or 0.0) + (launch.value(m.DRAM_BYTES_WRITE) or 0.0)


def ncu_dram_peak_byte_per_second(launch: KernelLaunch) -> float:
    return (launch.value(m.DRAM_PEAK_BYTES_PER_CYCLE) or 0.0) * (launch.value(m.DRAM_CYCLES_PER_SECOND) or 0.0)


def roofline_point(launch: KernelLaunch, copy_gbyte_per_s: float | None = None) -> RooflinePoint | None:
    """The launch's roofline point; None when the page lacks its duration."""
    duration_ns = launch.value(m.DURATION)
    if not duration_ns:
        return None
    rates = flop_per_second(launch)
    precision = max(rates, key=lambda p: rates[p]) if any(rates.values()) else "fp32"
    flops = sum(rates.values()) * duration_ns * 1e-9
    moved_bytes = dram_bytes(launch)
    peak_gbyte_per_s = copy_gbyte_per_s or ncu_dram_peak_byte_per_second(launch) / 1e9
    return RooflinePoint(
        arithmetic_intensity_flop_per_byte=flops / moved_bytes if moved_bytes else 0.0,
        achieved_gflop_per_s=sum(rates.values()) / 1e9,
        achieved_gbyte_per_s=moved_bytes / duration_ns,
        peak_gflop_per_s=peak_flop_per_second(launch, precision) / 1e9,
        peak_gbyte_per_s=peak_gbyte_per_s)
