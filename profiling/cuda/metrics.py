"""The ncu metrics perfforge reads, with their meaning and unit (ncu 2025.3, Hopper; names as on the raw page).

`RAW_METRICS` is what the fixtures' raw pages are cut to (`ncu --import R --page raw --metrics ...`) and what
the diagnoses in profiling/diagnoses/cuda.py may read; a rule that reads a metric not listed here reads nothing.
Units are those of `--print-units base`.
"""

from __future__ import annotations

DURATION = "gpu__time_duration.sum"  # ns: the launch's duration on the GPU (under replay: one pass)

# Speed of light: achieved throughput of a unit as % of its peak over the elapsed cycles (ncu's SOL section).
SM_THROUGHPUT_PCT = "sm__throughput.avg.pct_of_peak_sustained_elapsed"  # %: busiest SM sub-unit (issue, pipes)
MEMORY_THROUGHPUT_PCT = "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed"  # %: busiest memory unit
DRAM_THROUGHPUT_PCT = "gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed"  # %: DRAM bandwidth used
L1_THROUGHPUT_PCT = "l1tex__throughput.avg.pct_of_peak_sustained_active"  # %: L1/TEX/shared (busiest sub-unit)
L2_THROUGHPUT_PCT = "lts__throughput.avg.pct_of_peak_sustained_elapsed"  # %: L2 slices (busiest sub-unit)
ISSUE_ACTIVE_PCT = "smsp__issue_active.avg.pct_of_peak_sustained_active"  # %: cycles a scheduler issued
FMA_PIPE_PCT = "sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_active"  # %: FP32/IMAD pipe busy

# DRAM traffic and peak (for the roofline).
DRAM_BYTES_READ = "dram__bytes_read.sum"  # byte
DRAM_BYTES_WRITE = "dram__bytes_write.sum"  # byte
DRAM_PEAK_BYTES_PER_CYCLE = "dram__bytes.sum.peak_sustained"  # byte/cycle, all DRAM channels together
DRAM_CYCLES_PER_SECOND = "dram__cycles_elapsed.avg.per_second"  # hz: DRAM clock during the launch
SM_CYCLES_PER_SECOND = "sm__cycles_elapsed.avg.per_second"  # hz: SM clock during the launch
SMSP_CYCLES_PER_SECOND = "smsp__cycles_elapsed.avg.per_second"  # hz: the per_cycle_elapsed rates' clock

# Floating-point work: thread-level instructions per elapsed SMSP cycle, summed over the GPU (inst/cycle);
# FLOP/s = (add + mul + 2 * fma) * smsp cycles per second. Peaks: thread instructions per SM cycle, whole GPU.
FLOP_RATES = {
    "fp32": ("smsp__sass_thread_inst_executed_op_fadd_pred_on.sum.per_cycle_elapsed",
             "smsp__sass_thread_inst_executed_op_fmul_pred_on.sum.per_cycle_elapsed",
             "smsp__sass_thread_inst_executed_op_ffma_pred_on.sum.per_cycle_elapsed"),
    "fp64": ("smsp__sass_thread_inst_executed_op_dadd_pred_on.sum.per_cycle_elapsed",
             "smsp__sass_thread_inst_executed_op_dmul_pred_on.sum.per_cycle_elapsed",
             "smsp__sass_thread_inst_executed_op_dfma_pred_on.sum.per_cycle_elapsed"),
    "fp16": ("smsp__sass_thread_inst_executed_op_hadd_pred_on.sum.per_cycle_elapsed",
             "smsp__sass_thread_inst_executed_op_hmul_pred_on.sum.per_cycle_elapsed",
             "smsp__sass_thread_inst_executed_op_hfma_pred_on.sum.per_cycle_elapsed"),
}
FMA_PEAKS = {  # inst/cycle: FMA thread instructions the whole GPU can retire per SM cycle
    "fp32": "sm__sass_thread_inst_executed_op_ffma_pred_on.sum.peak_sustained",
    "fp64": "sm__sass_thread_inst_executed_op_dfma_pred_on.sum.peak_sustained",
    "fp16": "sm__sass_thread_inst_executed_op_hfma_pred_on.sum.peak_sustained",
}

# Occupancy and launch.
ACHIEVED_OCCUPANCY_PCT = "sm__warps_active.avg.pct_of_peak_sustained_active"  # %: resident warps / max warps
THEORETICAL_OCCUPANCY_PCT = "sm__maximum_warps_per_active_cycle_pct"  # %: the launch's resource limit
OCCUPANCY_LIMITS = {  # block: resident blocks per SM each resource allows (the smallest is the limit)
    "registers": "launch__occupancy_limit_registers",
    "shared memory": "launch__occupancy_limit_shared_mem",
    "block size (warps)": "launch__occupancy_limit_warps",
    "blocks per SM": "launch__occupancy_limit_blocks",
    "barriers": "launch__occupancy_limit_barriers",
}
REGISTERS_PER_THREAD = "launch__registers_per_thread"  # register/thread
BLOCK_SIZE = "launch__block_size"  # threads per block
GRID_SIZE = "launch__grid_size"  # blocks
SHARED_MEM_PER_BLOCK = "launch__shared_mem_per_block"  # byte/block: static + dynamic + driver reserve
WAVES_PER_SM = "launch__waves_per_multiprocessor"  # grid size over the blocks resident at once on all SMs
SM_COUNT = "launch__sm_count"  # SM
MAX_WARPS_PER_SM = "device__attribute_max_warps_per_multiprocessor"  # warp
ELIGIBLE_WARPS = "smsp__warps_eligible.avg.per_cycle_active"  # warp: warps ready to issue, per scheduler cycle

# Global memory access pattern.
GLOBAL_LD_BYTES_PER_SECTOR = "smsp__sass_average_data_bytes_per_sector_mem_global_op_ld.ratio"  # byte/sector, 32 best
GLOBAL_ST_BYTES_PER_SECTOR = "smsp__sass_average_data_bytes_per_sector_mem_global_op_st.ratio"  # byte/sector, 32 best
GLOBAL_EXCESSIVE_SECTORS = "derived__memory_l2_theoretical_sectors_global_excessive"  # sector: beyond coalesced
GLOBAL_LD_SECTORS = "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum"  # sector: 32-byte sectors loaded
GLOBAL_ST_SECTORS = "l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum"  # sector: 32-byte sectors stored
GLOBAL_LD_REQUESTS = "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum"  # request: one per warp-level load
GLOBAL_ST_REQUESTS = "l1tex__t_requests_pipe_lsu_mem_global_op_st.sum"  # request: one per warp-level store

# Shared memory.
SHARED_BANK_CONFLICTS = "l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum"  # cycle: extra data-bank cycles
SHARED_WAVEFRONTS = "l1tex__data_pipe_lsu_wavefronts_mem_shared.sum"  # wavefront: shared-memory passes
SHARED_EXCESSIVE_WAVEFRONTS = "derived__memory_l1_wavefronts_shared_excessive"  # wavefront: beyond the ideal

# Atomics: warp-level requests from the SMs, and the 32-byte sector operations the L2 performed for them.
GLOBAL_ATOM_REQUESTS = "l1tex__t_requests_pipe_lsu_mem_global_op_atom.sum"  # request: atomics with a result
GLOBAL_RED_REQUESTS = "l1tex__t_requests_pipe_lsu_mem_global_op_red.sum"  # request: reductions (result unused)
L2_ATOM_SECTORS = "lts__t_sectors_srcunit_tex_op_atom.sum"  # sector: L2 atomic operations
L2_RED_SECTORS = "lts__t_sectors_srcunit_tex_op_red.sum"  # sector: L2 reduction operations

# Divergence.
THREADS_PER_INST = "smsp__thread_inst_executed_per_inst_executed.ratio"  # thread: active lanes per warp inst, 32 max
# thread: lanes per warp instruction that were active and not predicated off (32 max); ncu counts a lane whose
# predicate is false as active in THREADS_PER_INST, so a short if-body nvcc turned into predicated instructions
# shows only here
THREADS_PER_INST_PRED_ON = "smsp__thread_inst_executed_pred_on_per_inst_executed.ratio"
UNIFORM_BRANCH_PCT = "smsp__sass_average_branch_targets_threads_uniform.pct"  # %: branches all lanes took alike
DIVERGENT_BRANCHES = "smsp__sass_branch_targets_threads_divergent.sum"  # branch: branch targets that split a warp

# Local memory (register spills and dynamically indexed arrays).
SPILL_REQUESTS = "derived__local_spilling_requests"  # request: local-memory requests the compiler made for spills
SPILL_REQUESTS_PCT = "derived__local_spilling_requests_pct"  # %: spill requests among all L1 requests
LOCAL_LD_INST = "smsp__sass_inst_executed_op_local_ld.sum"  # inst: warp-level local loads
LOCAL_ST_INST = "smsp__sass_inst_executed_op_local_st.sum"  # inst: warp-level local stores
LOCAL_LD_SECTORS = "l1tex__t_sectors_pipe_lsu_mem_local_op_ld.sum"  # sector
LOCAL_ST_SECTORS = "l1tex__t_sectors_pipe_lsu_mem_local_op_st.sum"  # sector

# Caches.
L1_HIT_RATE_PCT = "l1tex__t_sector_hit_rate.pct"  # %: L1 sector hits among lookups
L2_HIT_RATE_PCT = "lts__t_sector_hit_rate.pct"  # %: L2 sector hits among lookups

# PC sampling (SourceCounters section): samples of warps per stall reason over the whole kernel (warp).
PC_SAMPLE_COUNT = "smsp__pcsamp_sample_count"  # sample: all samples taken
STALL_PREFIX = "smsp__pcsamp_warps_issue_stalled_"  # + reason: samples of warps in that state
STALL_REASONS = ("barrier", "branch_resolving", "dispatch_stall", "drain", "imc_miss", "lg_throttle",
                 "long_scoreboard", "math_pipe_throttle", "membar", "mio_throttle", "misc", "no_instructions",
                 "not_selected", "selected", "short_scoreboard", "sleeping", "tex_throttle", "wait",
                 "warpgroup_arrive")


def _flat() -> tuple[str, ...]:
    names = [value for key, value in globals().items() if key.isupper() and isinstance(value, str)
             and "__" in value]
    for group in (FLOP_RATES, FMA_PEAKS, OCCUPANCY_LIMITS):
        for value in group.values():
            names.extend(value if isinstance(value, tuple) else (value,))
    names.extend(STALL_PREFIX + reason for reason in STALL_REASONS)
    return tuple(dict.fromkeys(name for name in names if name != STALL_PREFIX))


RAW_METRICS: tuple[str, ...] = _flat()
# Read since the example tasks' raw-page fixtures were cut to RAW_METRICS (tests/fixtures): their captures lack
# these, so no rule decides on them; they only add to a diagnosis' evidence where a profile has them.
SINCE_FIXTURES: tuple[str, ...] = (THREADS_PER_INST_PRED_ON,)

if __name__ == "__main__":
    print(",".join(RAW_METRICS))
