"""CUDA patterns of the catalogue (H100, sm_90). Each generator varies sizes, element type, names, block shapes and
the code around the kernel; the slow and fast versions keep the same launcher and differ only in the planted
problem, so that no other diagnosis outranks it.

The eight patterns with a rule from the start are built on the example tasks of examples/tasks/cuda (each measured
on an H100 with its planted bottleneck as the top diagnosis, docs/gpu_run.md) and vary conservatively around them.
Sizes keep a call between about 50 us and 5 ms at the default configuration and every output at or below 64 MiB.
Tolerances are 0 where both versions do the same operations on each element in the same order (explicit fmaf and
__fmul_rn/__fadd_rn, which the compiler may not contract differently), and justified where the order differs.
"""

from __future__ import annotations

from string import Template

from perfforge.records import Category
from synth.instance import Instance
from synth.patterns import Generation, pattern
from synth.variation import Buffer, c_harness, header_comment, literal

CUDA_BUILD = {"compiler": "nvcc", "flags": ["-O3", "-lineinfo", "-arch=sm_90"]}
CTYPE = {"float32": "float", "float64": "double", "int32": "int", "uint8": "unsigned char"}
SIZE = {"float32": 4, "float64": 8, "int32": 4, "uint8": 1}
FMA = {"float32": "fmaf", "float64": "fma"}
EXACT = {"rtol": 0.0, "atol": 0.0}
MIB = 1 << 20


def code(template: str, **fields: object) -> str:
    """CUDA text from a template with $name fields (CUDA braces need no escaping)."""
    return Template(template).substitute({k: str(v) for k, v in fields.items()})


def zero(dtype: str) -> str:
    return {"float32": "0.0f", "float64": "0.0", "int32": "0"}[dtype]


def input_range(dtype: str) -> tuple[float, float]:
    return (-1000.0, 1000.0) if dtype == "int32" else (-1.0, 1.0)


# ----------------------------------------------------------------------------------------------------------------
# Transposes: uncoalesced writes, and bank conflicts of an unpadded shared tile.

TILED_TRANSPOSE = """#define TILE 32
#define ROWS $rows

__global__ void $fn(const $t *$src, $t *$dst, int n) {
    __shared__ $t tile[TILE][TILE$pad];
    int x = blockIdx.x * TILE + threadIdx.x;
    int y = blockIdx.y * TILE + threadIdx.y;
    for (int j = 0; j < TILE; j += ROWS) {
        if (x < n && y + j < n) $store_tile = $src[(size_t)(y + j) * n + x];
    }
    __syncthreads();
    x = blockIdx.y * TILE + threadIdx.x;
    y = blockIdx.x * TILE + threadIdx.y;
    for (int j = 0; j < TILE; j += ROWS) {
        if (x < n && y + j < n) $dst[(size_t)(y + j) * n + x] = $value;
    }
}

void launch_$fn(const $t *$src, $t *$dst, int n) {
    dim3 block(TILE, ROWS);
    dim3 grid((n + TILE - 1) / TILE, (n + TILE - 1) / TILE);
    $fn<<<grid, block>>>($src, $dst, n);
}
"""


def _transpose_names(g: Generation) -> tuple[str, str, str]:
    fn = g.choice(["transpose", "transpose2d", "mat_transpose", "swap_axes", "flip_layout"])
    src, dst = g.choice([("in", "out"), ("src", "dst"), ("a", "at"), ("mat", "mat_t"), ("input", "output")])
    return fn, src, dst


def _transpose_task(g: Generation, *, fn: str, src: str, dst: str, dtype: str, n: int, slow: str, fast: str,
                    description: str, message: str, params: dict[str, object]) -> Instance:
    low, high = input_range(dtype)
    buffers = [Buffer(src, dtype, "n * n", low=low, high=high), Buffer(dst, dtype, "n * n", role="out")]
    return g.instance(
        language="cuda", kernel=fn, description=description, slow=slow, fast=fast,
        harness=c_harness([("n", "int", n)], buffers, f"launch_{fn}", ("n",)),
        outputs=[{"name": dst, "dtype": dtype, **EXACT}],
        configs=[{"name": "small", "params": {"n": 1024}}, {"name": "default", "params": {"n": n}, "default": True}],
        build=CUDA_BUILD, work={"flops": "0", "bytes": f"2 * {SIZE[dtype]} * n * n"}, message=message,
        params={"n": n, "dtype": dtype, **params})


@pattern("cuda/uncoalesced_global_access", bottleneck="uncoalesced_global_access", category=Category.MEMORY_ACCESS,
         summary="naive transpose writes down columns (a sector per element); a padded shared tile writes rows")
def uncoalesced_transpose(g: Generation) -> Instance:
    dtype = g.choice(["float32", "float32", "int32", "float64"])
    t = CTYPE[dtype]
    n = g.choice([2560, 2816]) if dtype == "float64" else g.choice([3072, 3584, 4096])
    fn, src, dst = _transpose_names(g)
    by = g.choice([8, 4, 16])
    rows = g.choice([8, 4])
    index = g.choice(["inline", "macro"])
    at = (lambda r, c: f"AT({r}, {c})") if index == "macro" else (lambda r, c: f"(size_t){r} * n + {c}")
    macro = "#define AT(r, c) ((size_t)(r) * n + (c))\n\n" if index == "macro" else ""
    slow = (header_comment(f"Naive {t} transpose: reads {src} along rows (coalesced) but writes {dst} down columns, "
                           f"so\neach warp's 32 stores land in 32 different sectors, n elements apart.")
            + "#include <cuda_runtime.h>\n\n" + macro + code("""__global__ void $fn(const $t *$src, $t *$dst, int n) {
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    int row = blockIdx.y * blockDim.y + threadIdx.y;
    if (row < n && col < n) {
        $dst[$w] = $src[$r];
    }
}

void launch_$fn(const $t *$src, $t *$dst, int n) {
    dim3 block(32, $by);
    dim3 grid((n + 31) / 32, (n + $by - 1) / $by);
    $fn<<<grid, block>>>($src, $dst, n);
}
""", fn=fn, t=t, src=src, dst=dst, w=at("col", "row"), r=at("row", "col"), by=by))
    fast = (header_comment(f"Tiled transpose: a 32x32 tile of {src} is read along rows into shared memory and "
                           f"written to {dst}\nalong rows, so global reads and writes are both coalesced; the tile "
                           "row is padded by one element\nso that the column reads from shared memory hit "
                           "different banks.")
            + "#include <cuda_runtime.h>\n\n"
            + code(TILED_TRANSPOSE, rows=rows, fn=fn, t=t, src=src, dst=dst, pad=" + 1",
                   store_tile="tile[threadIdx.y + j][threadIdx.x]", value="tile[threadIdx.x][threadIdx.y + j]"))
    return _transpose_task(
        g, fn=fn, src=src, dst=dst, dtype=dtype, n=n, slow=slow, fast=fast,
        description=f"naive {dtype} transpose of {n}x{n}: coalesced reads, writes strided by n (a sector per thread)",
        message=g.choice([f"{fn}: stage through a shared-memory tile so writes are coalesced",
                          f"Use a tiled transpose in {fn}", "transpose: coalesce the output writes",
                          f"speed up {fn} (shared-memory tiling)", f"{fn}: 32x32 tiles, padded"]),
        params={"block_y": by, "rows": rows, "index": index})


@pattern("cuda/shared_memory_bank_conflicts", bottleneck="shared_memory_bank_conflicts",
         category=Category.SHARED_MEMORY,
         summary="tiled transpose through an unpadded 32x32 shared tile (32-way conflicts); pad rows by one element")
def bank_conflict_transpose(g: Generation) -> Instance:
    dtype = g.choice(["float32", "float32", "int32"])  # 4-byte elements: one bank each, 32-way conflicts
    t = CTYPE[dtype]
    n = g.choice([3072, 3584, 4096])
    fn, src, dst = _transpose_names(g)
    rows = g.choice([8, 4, 16])
    side = g.choice(["read", "write"])  # which shared-memory access walks a column of the tile
    if side == "read":
        store_tile, value = "tile[threadIdx.y + j][threadIdx.x]", "tile[threadIdx.x][threadIdx.y + j]"
    else:
        store_tile, value = "tile[threadIdx.x][threadIdx.y + j]", "tile[threadIdx.y + j][threadIdx.x]"
    what = "reading" if side == "read" else "writing"
    slow = (header_comment(f"Shared-memory transpose without padding: the tile is 32 elements wide, so {what} a "
                           f"column of it\nsends all 32 lanes of a warp to the same bank: a 32-way bank conflict.")
            + "#include <cuda_runtime.h>\n\n"
            + code(TILED_TRANSPOSE, rows=rows, fn=fn, t=t, src=src, dst=dst, pad="", store_tile=store_tile,
                   value=value))
    fast = (header_comment(f"Shared-memory transpose with the tile row padded by one element: {what} a column "
                           "of the tile\nnow touches 32 different banks (row r starts at bank r).")
            + "#include <cuda_runtime.h>\n\n"
            + code(TILED_TRANSPOSE, rows=rows, fn=fn, t=t, src=src, dst=dst, pad=" + 1", store_tile=store_tile,
                   value=value))
    return _transpose_task(
        g, fn=fn, src=src, dst=dst, dtype=dtype, n=n, slow=slow, fast=fast,
        description=f"tiled {dtype} transpose of {n}x{n}, 32x32 shared tile without padding: 32-way bank conflicts "
                    f"on column {side}s",
        message=g.choice([f"{fn}: pad the shared tile to avoid bank conflicts", "Pad smem tile by one column",
                          f"fix bank conflicts in {fn}", "transpose: TILE + 1 padding",
                          f"{fn}: conflict-free shared-memory layout"]),
        params={"rows": rows, "conflict_side": side})


# ----------------------------------------------------------------------------------------------------------------
# Atomics.

@pattern("cuda/atomic_contention", bottleneck="atomic_contention", category=Category.ATOMICS,
         summary="segment sums with one global atomicAdd per element; a block reduction makes one per block")
def atomic_sums(g: Generation) -> Instance:
    dtype = g.choice(["float32", "float32", "float64"])
    t = CTYPE[dtype]
    segments = g.choice([1, 1, 2, 4, 8])
    total = g.choice([1 << 20, 3 << 19, 1 << 21])
    length = total // segments
    fn = g.choice(["segment_sum", "sum_rows", "accumulate", "reduce_sum", "sum_all"])
    x, out = g.choice([("x", "sums"), ("values", "totals"), ("in", "out"), ("data", "acc")])
    threads = g.choice([256, 128, 512])
    slow = (header_comment(f"Sums of {t} segments into doubles with one global atomicAdd per element: every lane "
                           f"of a warp\nadds into the same address, so the L2 slice that owns it serialises the "
                           f"atomics one by one.")
            + "#include <cuda_runtime.h>\n\n" + code("""#define THREADS $threads

__global__ void $fn(const $t *$x, double *$out, int segments, int len) {
    long i = (long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < (long)segments * len) {
        atomicAdd(&$out[i / len], (double)$x[i]);
    }
}

void launch_$fn(const $t *$x, double *$out, int segments, int len) {
    long total = (long)segments * len;
    cudaMemsetAsync($out, 0, (size_t)segments * sizeof(double));
    $fn<<<(unsigned)((total + THREADS - 1) / THREADS), THREADS>>>($x, $out, segments, len);
}
""", fn=fn, t=t, x=x, out=out, threads=threads))
    fast = (header_comment("Block reduction: each thread sums a grid-stride slice of its segment in registers, the "
                           "block reduces\nwith warp shuffles and shared memory, and one thread per block adds the "
                           "partial sum: one atomic per block.")
            + "#include <cuda_runtime.h>\n\n" + code("""#define THREADS $threads

__global__ void $fn(const $t *$x, double *$out, int segments, int len) {
    __shared__ double warp_sums[THREADS / 32];
    const $t *seg = $x + (size_t)blockIdx.y * len;
    double v = 0.0;
    for (int i = blockIdx.x * THREADS + threadIdx.x; i < len; i += gridDim.x * THREADS) v += (double)seg[i];
    for (int offset = 16; offset > 0; offset /= 2) v += __shfl_down_sync(0xffffffffu, v, offset);
    if ((threadIdx.x & 31) == 0) warp_sums[threadIdx.x / 32] = v;
    __syncthreads();
    if (threadIdx.x < 32) {
        v = threadIdx.x < THREADS / 32 ? warp_sums[threadIdx.x] : 0.0;
        for (int offset = 16; offset > 0; offset /= 2) v += __shfl_down_sync(0xffffffffu, v, offset);
        if (threadIdx.x == 0) atomicAdd(&$out[blockIdx.y], v);
    }
}

void launch_$fn(const $t *$x, double *$out, int segments, int len) {
    int device = 0, sms = 0;
    cudaGetDevice(&device);
    cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device);
    int per_segment = (len + THREADS - 1) / THREADS;
    int cap = (8 * sms + segments - 1) / segments;
    if (per_segment > cap) per_segment = cap;
    cudaMemsetAsync($out, 0, (size_t)segments * sizeof(double));
    $fn<<<dim3(per_segment, segments), THREADS>>>($x, $out, segments, len);
}
""", fn=fn, t=t, x=x, out=out, threads=threads))
    buffers = [Buffer(x, dtype, "(size_t)segments * len", low=0.0, high=1.0),
               Buffer(out, "float64", "segments", role="out")]
    return g.instance(
        language="cuda", kernel=fn,
        description=f"{segments} segment sum(s) of {length} {dtype} values into doubles, one global atomicAdd per "
                    "element (a warp's 32 lanes on one address)",
        slow=slow, fast=fast,
        harness=c_harness([("segments", "int", segments), ("len", "int", length)],
                          buffers, f"launch_{fn}", ("segments", "len")),
        # Double accumulation of values in [0, 1): any summation order agrees to ~1e-12 relative.
        outputs=[{"name": out, "dtype": "float64", "rtol": 1e-9, "atol": 1e-9}],
        configs=[{"name": "small", "params": {"segments": segments, "len": length // 8}},
                 {"name": "default", "params": {"segments": segments, "len": length}, "default": True}],
        build=CUDA_BUILD, work={"flops": "segments * len", "bytes": f"{SIZE[dtype]} * segments * len + 8 * segments"},
        message=g.choice([f"{fn}: block-level reduction before the atomic", "Reduce in shared memory, one atomic "
                          "per block", f"avoid per-element atomics in {fn}", "use warp shuffles for the sum",
                          f"{fn}: fewer atomics"]),
        params={"segments": segments, "len": length, "dtype": dtype, "threads": threads})


# ----------------------------------------------------------------------------------------------------------------
# Divergence.

@pattern("cuda/branch_divergence", bottleneck="branch_divergence", category=Category.BRANCH_DIVERGENCE,
         summary="two iterative maps picked by element parity (every warp runs both); remap so warps are uniform")
def parity_divergence(g: Generation) -> Instance:
    dtype = g.choice(["float32", "float32", "float64"])
    t, fma = CTYPE[dtype], FMA[dtype]
    n = g.choice([1 << 23, 12 << 20, 1 << 24]) if dtype == "float32" else g.choice([1 << 22, 6 << 20, 1 << 23])
    steps = g.choice([128, 192, 256]) if dtype == "float32" else g.choice([96, 128])
    fn = g.choice(["parity_maps", "alternate_update", "two_maps", "even_odd_iterate", "split_dynamics"])
    first, second = g.choice([("decay", "growth"), ("damp", "relax"), ("shrink", "settle")])
    a = literal(g.choice([0.001, 0.002, 0.0005]), dtype)
    b, c = g.choice([(0.999, 0.0004), (0.998, 0.001), (0.9995, 0.0003)])
    b, c = literal(b, dtype), literal(c, dtype)
    x, y = g.choice([("x", "y"), ("state", "next"), ("u", "u_out")])
    cond = g.choice(["i % 2 == 0", "(i & 1) == 0"])
    maps = code("""#define STEPS $steps

__device__ $t ${first}_map($t v) {
    for (int s = 0; s < STEPS; s++) v = $fma(-$a * v, v, v);
    return v;
}

__device__ $t ${second}_map($t v) {
    for (int s = 0; s < STEPS; s++) v = $fma(v, $b, ($c * v) * v);
    return v;
}
""", steps=steps, t=t, first=first, second=second, fma=fma, a=a, b=b, c=c)
    slow = (header_comment("Two iterative maps chosen by the parity of the element index: neighbouring lanes of "
                           "every warp take\ndifferent branches, so each warp runs both loops one after the other "
                           "with half of its lanes idle.")
            + "#include <cuda_runtime.h>\n\n" + maps + code("""
__global__ void $fn(const $t *$x, $t *$y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    $t v = $x[i];
    if ($cond) {
        v = ${first}_map(v);
    } else {
        v = ${second}_map(v);
    }
    $y[i] = v;
}

void launch_$fn(const $t *$x, $t *$y, int n) {
    $fn<<<(n + 255) / 256, 256>>>($x, $y, n);
}
""", fn=fn, t=t, x=x, y=y, cond=cond, first=first, second=second))
    fast = (header_comment("Warp-uniform branches: thread t of warp w takes element 64 * (w / 2) + 2 * lane + "
                           "(w % 2), so all lanes\nof a warp share the parity of their elements and each warp runs "
                           "one of the two loops. n must be even.")
            + "#include <cuda_runtime.h>\n\n" + maps + code("""
__global__ void $fn(const $t *$x, $t *$y, int n) {
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    int warp = t / 32, lane = t % 32;
    int i = 64 * (warp / 2) + 2 * lane + (warp % 2);
    if (i >= n) return;
    $t v = $x[i];
    if (warp % 2 == 0) {
        v = ${first}_map(v);
    } else {
        v = ${second}_map(v);
    }
    $y[i] = v;
}

void launch_$fn(const $t *$x, $t *$y, int n) {
    $fn<<<(n + 255) / 256, 256>>>($x, $y, n);
}
""", fn=fn, t=t, x=x, y=y, first=first, second=second))
    buffers = [Buffer(x, dtype, "n", low=0.05, high=0.95), Buffer(y, dtype, "n", role="out")]
    return g.instance(
        language="cuda", kernel=fn,
        description=f"two {steps}-step iterative {dtype} maps picked by index parity: every warp diverges and runs "
                    "both loops",
        slow=slow, fast=fast, harness=c_harness([("n", "int", n)], buffers, f"launch_{fn}", ("n",)),
        outputs=[{"name": y, "dtype": dtype, **EXACT}],  # the same explicit fma chain per element in both
        configs=[{"name": "small", "params": {"n": 1 << 20}}, {"name": "default", "params": {"n": n}, "default": True}],
        build=CUDA_BUILD, work={"flops": f"n * {steps} * 3.5", "bytes": f"2 * {SIZE[dtype]} * n"},
        message=g.choice([f"{fn}: make branches warp-uniform", "Remap elements so each warp takes one branch",
                          f"avoid divergence in {fn}", "group even and odd elements by warp",
                          f"{fn}: warp-level parity split"]),
        params={"n": n, "dtype": dtype, "steps": steps, "cond": cond})


# ----------------------------------------------------------------------------------------------------------------
# Occupancy.

@pattern("cuda/low_occupancy", bottleneck="low_occupancy", category=Category.PARALLELISM,
         summary="3-point stencil staging a ~190 KiB shared tile per small block (one block per SM); small tiles")
def big_tile_stencil(g: Generation) -> Instance:
    dtype = g.choice(["float32", "float32", "float64"])
    t, fma = CTYPE[dtype], FMA[dtype]
    tile = g.choice([40, 44, 48]) * 1024 // (SIZE[dtype] // 4)  # elements: 160-192 KiB
    n = g.choice([12 << 20, 1 << 24]) if dtype == "float32" else g.choice([6 << 20, 1 << 23])
    threads = g.choice([128, 64, 128])
    fn = g.choice(["stencil3", "smooth3", "blur1d", "three_point", "filter3"])
    x, y = g.choice([("x", "y"), ("in", "out"), ("signal", "smoothed"), ("src", "dst")])
    c0, c1, c2 = (literal(v, dtype) for v in g.choice([(0.25, 0.5, 0.25), (0.2, 0.6, 0.2), (0.3, 0.4, 0.3)]))
    z = zero(dtype)
    slow = (header_comment(f"3-point stencil staged through an oversized shared-memory tile: each {threads}-thread "
                           f"block stages {tile}\n{t}s ({tile * SIZE[dtype] // 1024} KiB), so only one block "
                           f"({threads // 32} warps) fits on an SM and too few loads are in flight.")
            + "#include <cuda_runtime.h>\n\n" + code("""#define THREADS $threads
#define TILE $tile

__global__ void $fn(const $t *$x, $t *$y, int n) {
    extern __shared__ $t tile[];  /* TILE + 2 elements: the block's and one halo on each side */
    long start = (long)blockIdx.x * TILE;
    for (int j = threadIdx.x; j < TILE + 2; j += THREADS) {
        long g = start + j - 1;
        tile[j] = (g >= 0 && g < n) ? $x[g] : $z;
    }
    __syncthreads();
    for (int j = threadIdx.x; j < TILE; j += THREADS) {
        long g = start + j;
        if (g < n) $y[g] = $fma($c0, tile[j], $fma($c1, tile[j + 1], $c2 * tile[j + 2]));
    }
}

void launch_$fn(const $t *$x, $t *$y, int n) {
    size_t smem_bytes = (TILE + 2) * sizeof($t);
    cudaFuncSetAttribute($fn, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem_bytes);
    $fn<<<(n + TILE - 1) / TILE, THREADS, smem_bytes>>>($x, $y, n);
}
""", threads=threads, tile=tile, fn=fn, t=t, x=x, y=y, z=z, fma=fma, c0=c0, c1=c1, c2=c2))
    fast = (header_comment(f"3-point stencil with a small tile: 256 threads stage 256 {t}s plus halo, so eight "
                           "blocks (64 warps)\nfit on an SM and enough loads are in flight to keep DRAM busy.")
            + "#include <cuda_runtime.h>\n\n" + code("""#define THREADS 256

__global__ void $fn(const $t *$x, $t *$y, int n) {
    __shared__ $t tile[THREADS + 2];
    long g = (long)blockIdx.x * THREADS + threadIdx.x;
    tile[threadIdx.x + 1] = g < n ? $x[g] : $z;
    if (threadIdx.x == 0) tile[0] = g > 0 && g - 1 < n ? $x[g - 1] : $z;
    if (threadIdx.x == THREADS - 1) tile[THREADS + 1] = g + 1 < n ? $x[g + 1] : $z;
    __syncthreads();
    int j = threadIdx.x;
    if (g < n) $y[g] = $fma($c0, tile[j], $fma($c1, tile[j + 1], $c2 * tile[j + 2]));
}

void launch_$fn(const $t *$x, $t *$y, int n) {
    $fn<<<(n + THREADS - 1) / THREADS, THREADS>>>($x, $y, n);
}
""", fn=fn, t=t, x=x, y=y, z=z, fma=fma, c0=c0, c1=c1, c2=c2))
    buffers = [Buffer(x, dtype, "n"), Buffer(y, dtype, "n", role="out")]
    return g.instance(
        language="cuda", kernel=fn,
        description=f"3-point {dtype} stencil staging a {tile * SIZE[dtype] // 1024} KiB shared tile per "
                    f"{threads}-thread block: one block ({threads // 32} warps) per SM",
        slow=slow, fast=fast, harness=c_harness([("n", "int", n)], buffers, f"launch_{fn}", ("n",)),
        outputs=[{"name": y, "dtype": dtype, **EXACT}],  # the same fma chain on the same three values
        configs=[{"name": "small", "params": {"n": 1 << 22}}, {"name": "default", "params": {"n": n}, "default": True}],
        build=CUDA_BUILD, work={"flops": "5 * n", "bytes": f"2 * {SIZE[dtype]} * n"},
        message=g.choice([f"{fn}: use a small per-block tile to raise occupancy", "Shrink the shared-memory tile",
                          f"{fn}: 256-thread blocks, 1 KiB of shared memory", "fix occupancy of the stencil",
                          f"increase occupancy in {fn}"]),
        params={"n": n, "dtype": dtype, "tile": tile, "threads": threads})


# ----------------------------------------------------------------------------------------------------------------
# Register spills.

@pattern("cuda/register_spills", bottleneck="register_spills", category=Category.REGISTER_PRESSURE,
         summary="8x8 matrix products per thread under __launch_bounds__ capping registers at 32 (spills); uncap")
def capped_registers(g: Generation) -> Instance:
    threads, min_blocks = g.choice([(256, 8), (128, 16)])
    op = g.choice(["square", "gram", "tgram"])
    left, right = {"square": ("m[r * 8 + k]", "m[k * 8 + col]"), "gram": ("m[r * 8 + k]", "m[col * 8 + k]"),
                   "tgram": ("m[k * 8 + r]", "m[k * 8 + col]")}[op]
    what = {"square": "A A", "gram": "A A^T", "tgram": "A^T A"}[op]
    n = g.choice([3 << 16, 1 << 18])  # 64 floats per matrix: 48-64 MiB of output
    fn = g.choice(["square8", "batched_product8", "small_gemm8", "mat8_products", "tiny_matmul"])
    a, c = g.choice([("a", "c"), ("mats", "prods"), ("in", "out"), ("batch", "result")])
    body = code("""__global__ void $bounds $fn(const float *$a, float *$c, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float m[64];
#pragma unroll
    for (int k = 0; k < 64; k++) m[k] = $a[(size_t)k * n + i];
#pragma unroll
    for (int r = 0; r < 8; r++) {
#pragma unroll
        for (int col = 0; col < 8; col++) {
            float s = 0.0f;
#pragma unroll
            for (int k = 0; k < 8; k++) s = fmaf($left, $right, s);
            $c[(size_t)(r * 8 + col) * n + i] = s;
        }
    }
}

void launch_$fn(const float *$a, float *$c, int n) {
    $fn<<<(n + THREADS - 1) / THREADS, THREADS>>>($a, $c, n);
}
""", fn=fn, a=a, c=c, left=left, right=right, bounds="$bounds")
    layout = (f"Batched 8x8 products {what}, one matrix per thread (structure-of-arrays layout: element k of "
              f"matrix i is at\n{a}[k * n + i], so loads are coalesced).")
    slow = (header_comment(layout + f" __launch_bounds__({threads}, {min_blocks}) asks for {min_blocks} resident "
                           "blocks\nper SM, which caps the kernel at 32 registers per thread; the 64 matrix elements "
                           "each thread keeps\nlive do not fit, and the compiler spills them to local memory.")
            + f"#include <cuda_runtime.h>\n\n#define THREADS {threads}\n\n"
            + body.replace("$bounds", f"__launch_bounds__(THREADS, {min_blocks})"))
    fast = (header_comment(layout + " __launch_bounds__(THREADS) leaves the compiler free to give each\nthread the "
                           "registers the 64 live elements need: no spills, at a lower but sufficient occupancy.")
            + f"#include <cuda_runtime.h>\n\n#define THREADS {threads}\n\n"
            + body.replace("$bounds", "__launch_bounds__(THREADS)"))
    buffers = [Buffer(a, "float32", "(size_t)64 * n"), Buffer(c, "float32", "(size_t)64 * n", role="out")]
    return g.instance(
        language="cuda", kernel=fn,
        description=f"n independent 8x8 products {what}, one per thread; __launch_bounds__({threads}, {min_blocks}) "
                    "caps registers at 32 and spills",
        slow=slow, fast=fast, harness=c_harness([("n", "int", n)], buffers, f"launch_{fn}", ("n",)),
        outputs=[{"name": c, "dtype": "float32", **EXACT}],  # the same fmaf chain: only register allocation differs
        configs=[{"name": "small", "params": {"n": 1 << 16}}, {"name": "default", "params": {"n": n}, "default": True}],
        build=CUDA_BUILD, work={"flops": "2 * 512 * n", "bytes": "2 * 4 * 64 * n"},
        message=g.choice([f"{fn}: drop the min-blocks launch bound (it forced spills)", "Remove register cap",
                          f"fix register spills in {fn}", "__launch_bounds__: let the compiler use more registers",
                          f"{fn}: no local-memory spills"]),
        params={"n": n, "threads": threads, "min_blocks": min_blocks, "op": op})


# ----------------------------------------------------------------------------------------------------------------
# Cache locality: the naive matrix product.

TILED_MATMUL = """#define BM 64
#define BN 64
#define BK 16
#define TM 4
#define TN 4
#define THREADS ((BM / TM) * (BN / TN))

__global__ void __launch_bounds__(THREADS) $fn(const float *$a, const float *$b, float *$c, int n) {
    __shared__ __align__(16) float as[BK][BM + 4];  /* tile of $a, transposed: as[k][m] */
    __shared__ __align__(16) float bs[BK][BN];
    int tid = threadIdx.x;
    int tr = tid / (BN / TN), tc = tid % (BN / TN);
    int row0 = blockIdx.y * BM, col0 = blockIdx.x * BN;
    float acc[TM][TN] = {};
    for (int k0 = 0; k0 < n; k0 += BK) {
        for (int l = 0; l < BM * BK / THREADS; l++) {
            int idx = tid + l * THREADS;
            as[idx % BK][idx / BK] = $a[(size_t)(row0 + idx / BK) * n + k0 + idx % BK];
            bs[idx / BN][idx % BN] = $b[(size_t)(k0 + idx / BN) * n + col0 + idx % BN];
        }
        __syncthreads();
#pragma unroll
        for (int k = 0; k < BK; k++) {
            float4 av = *reinterpret_cast<const float4 *>(&as[k][tr * TM]);
            float4 bv = *reinterpret_cast<const float4 *>(&bs[k][tc * TN]);
            float ar[TM] = {av.x, av.y, av.z, av.w};
            float br[TN] = {bv.x, bv.y, bv.z, bv.w};
#pragma unroll
            for (int i = 0; i < TM; i++)
#pragma unroll
                for (int j = 0; j < TN; j++) acc[i][j] = fmaf(ar[i], br[j], acc[i][j]);
        }
        __syncthreads();
    }
#pragma unroll
    for (int i = 0; i < TM; i++) {
        float4 v = make_float4($s0, $s1, $s2, $s3);
        *reinterpret_cast<float4 *>(&$c[(size_t)(row0 + tr * TM + i) * n + col0 + tc * TN]) = v;
    }
}

void launch_$fn(const float *$a, const float *$b, float *$c, int n) {
    dim3 grid(n / BN, n / BM);
    $fn<<<grid, THREADS>>>($a, $b, $c, n);
}
"""


@pattern("cuda/poor_cache_locality", bottleneck="poor_cache_locality", category=Category.TILING,
         summary="naive matrix product re-reads every operand through L1/L2 for each use; 64x64 shared tiles")
def naive_matmul(g: Generation) -> Instance:
    n = g.choice([1024, 1536, 2048])
    bx, by = g.choice([(16, 16), (32, 8)])
    fn = g.choice(["matmul", "sgemm_nn", "mat_mul", "dense_product", "gemm"])
    a, b, c = g.choice([("a", "b", "c"), ("lhs", "rhs", "out"), ("x", "w", "y"), ("A", "B", "C")])
    scaled = g.rng.random() < 0.5
    alpha = literal(g.choice([0.5, 2.0, 0.25, 1.5]), "float32")
    store = f"{alpha} * acc" if scaled else "acc"
    slow = (header_comment(f"Naive matrix product {c} = {'alpha * ' if scaled else ''}{a} {b} (n x n, row-major): "
                           f"each thread computes one\nelement of {c} from a full row of {a} and a full column of "
                           f"{b}; nothing is kept in shared memory or\nregisters, so every operand is re-read from "
                           "L1/L2 for each of its n uses.")
            + "#include <cuda_runtime.h>\n\n" + code("""__global__ void $fn(const float *$a, const float *$b, float *$c,
                    int n) {
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    int row = blockIdx.y * blockDim.y + threadIdx.y;
    if (row >= n || col >= n) return;
    float acc = 0.0f;
    for (int k = 0; k < n; k++) {
        acc = fmaf($a[(size_t)row * n + k], $b[(size_t)k * n + col], acc);
    }
    $c[(size_t)row * n + col] = $store;
}

void launch_$fn(const float *$a, const float *$b, float *$c, int n) {
    dim3 block($bx, $by);
    dim3 grid((n + $bx - 1) / $bx, (n + $by - 1) / $by);
    $fn<<<grid, block>>>($a, $b, $c, n);
}
""", fn=fn, a=a, b=b, c=c, store=store, bx=bx, by=by))
    scale = (lambda e: f"{alpha} * {e}") if scaled else (lambda e: e)
    fast = (header_comment(f"Tiled matrix product: each 256-thread block computes a 64x64 tile of {c}; 64x16 tiles "
                           f"of {a} and 16x64 tiles\nof {b} are staged in shared memory and each thread keeps a 4x4 "
                           "block in registers, so every element\nfetched from global memory is used 64 times; each "
                           "output still sums over k in order. n % 64 == 0.")
            + "#include <cuda_runtime.h>\n\n"
            + code(TILED_MATMUL, fn=fn, a=a, b=b, c=c,
                   **{f"s{j}": scale(f"acc[i][{j}]") for j in range(4)}))
    buffers = [Buffer(a, "float32", "n * n"), Buffer(b, "float32", "n * n"), Buffer(c, "float32", "n * n", role="out")]
    return g.instance(
        language="cuda", kernel=fn,
        description=f"naive fp32 {n}x{n} matrix product, one output per thread, every operand re-fetched from "
                    "L1/L2 for each use (no tiling)",
        slow=slow, fast=fast, harness=c_harness([("n", "int", n)], buffers, f"launch_{fn}", ("n",)),
        outputs=[{"name": c, "dtype": "float32", **EXACT}],  # both: one fmaf chain over k = 0..n-1 per element
        configs=[{"name": "small", "params": {"n": 512}}, {"name": "default", "params": {"n": n}, "default": True}],
        build=CUDA_BUILD, work={"flops": "2 * n ** 3", "bytes": "3 * 4 * n * n"},
        message=g.choice([f"{fn}: shared-memory tiling with 4x4 register blocking", "Tile the matmul",
                          f"speed up {fn} with 64x64 block tiles", "matmul: reuse operands from shared memory",
                          f"{fn}: tiled kernel"]),
        params={"n": n, "block": [bx, by], "scaled": scaled})


# ----------------------------------------------------------------------------------------------------------------
# Launch overhead.

@pattern("cuda/launch_overhead", bottleneck="launch_overhead", category=Category.FUSION,
         summary="row statistics as two tiny kernels launched per row; one launch with a block per row")
def per_row_launches(g: Generation) -> Instance:
    rows = g.choice([256, 384, 512])
    cols = g.choice([16384, 32768])
    kind = g.choice(["l2", "rms", "centre"])
    threads = g.choice([256, 128])
    prefix = g.choice(["rownorm", "row_scale", "normalize_rows", "rowstat", "per_row"])
    x, y, stat = g.choice([("x", "y", "norms"), ("in", "out", "stats"), ("rows_in", "rows_out", "row_stat")])
    square = kind != "centre"
    term = "v * v" if square else "v"
    apply = {"l2": "@X * rsqrtf(@S + EPS)", "rms": "@X * rsqrtf(@S / cols + EPS)", "centre": "@X - @S / cols"}[kind]
    what = {"l2": "L2 normalisation", "rms": "RMS normalisation", "centre": "mean centring"}[kind]

    def transform(x_: str, s_: str) -> str:
        return apply.replace("@X", x_).replace("@S", s_)

    head = f"#include <cuda_runtime.h>\n\n#define THREADS {threads}\n#define EPS 1e-6f\n\n"
    slow = (header_comment(f"Row {what} written as two small kernels launched once per row: 2 * rows launches "
                           "per call,\neach moving only one row, so the GPU spends its time between launches rather "
                           "than in them.")
            + head + code("""__global__ void ${prefix}_reduce(const float *$x, float *$stat, int row, int cols) {
    __shared__ float partial[THREADS / 32];
    int j = blockIdx.x * blockDim.x + threadIdx.x;
    float v = j < cols ? $x[(size_t)row * cols + j] : 0.0f;
    v = $term;
    for (int offset = 16; offset > 0; offset /= 2) v += __shfl_down_sync(0xffffffffu, v, offset);
    if ((threadIdx.x & 31) == 0) partial[threadIdx.x / 32] = v;
    __syncthreads();
    if (threadIdx.x == 0) {
        float s = 0.0f;
        for (int w = 0; w < THREADS / 32; w++) s += partial[w];
        atomicAdd(&$stat[row], s);
    }
}

__global__ void ${prefix}_apply(const float *$x, float *$y, const float *$stat, int row, int cols) {
    int j = blockIdx.x * blockDim.x + threadIdx.x;
    if (j < cols) $y[(size_t)row * cols + j] = $apply;
}

void launch_$prefix(const float *$x, float *$y, float *$stat, int rows, int cols) {
    int blocks = (cols + THREADS - 1) / THREADS;
    cudaMemsetAsync($stat, 0, (size_t)rows * sizeof(float));
    for (int r = 0; r < rows; r++) {
        ${prefix}_reduce<<<blocks, THREADS>>>($x, $stat, r, cols);
        ${prefix}_apply<<<blocks, THREADS>>>($x, $y, $stat, r, cols);
    }
}
""", prefix=prefix, x=x, y=y, stat=stat, term=term,
                apply=transform(f"{x}[(size_t)row * cols + j]", f"{stat}[row]")))
    fast = (header_comment(f"Row {what} in one launch: one block per row reduces its row (grid-stride over the "
                           "columns, warp\nshuffles, shared memory), then transforms the row: one launch per call.")
            + head + code("""__global__ void $prefix(const float *$x, float *$y, float *$stat, int cols) {
    __shared__ float partial[THREADS / 32];
    __shared__ float total;
    const float *xr = $x + (size_t)blockIdx.x * cols;
    float *yr = $y + (size_t)blockIdx.x * cols;
    float acc = 0.0f;
    for (int j = threadIdx.x; j < cols; j += THREADS) {
        float v = xr[j];
        acc += $term;
    }
    for (int offset = 16; offset > 0; offset /= 2) acc += __shfl_down_sync(0xffffffffu, acc, offset);
    if ((threadIdx.x & 31) == 0) partial[threadIdx.x / 32] = acc;
    __syncthreads();
    if (threadIdx.x == 0) {
        float s = 0.0f;
        for (int w = 0; w < THREADS / 32; w++) s += partial[w];
        $stat[blockIdx.x] = s;
        total = s;
    }
    __syncthreads();
    float s = total;
    for (int j = threadIdx.x; j < cols; j += THREADS) yr[j] = $apply;
}

void launch_$prefix(const float *$x, float *$y, float *$stat, int rows, int cols) {
    $prefix<<<rows, THREADS>>>($x, $y, $stat, cols);
}
""", prefix=prefix, x=x, y=y, stat=stat, term=term, apply=transform("xr[j]", "s")))
    buffers = [Buffer(x, "float32", "(size_t)rows * cols"), Buffer(y, "float32", "(size_t)rows * cols", role="out"),
               Buffer(stat, "float32", "rows", role="out")]
    # Row sums of up to 32768 terms in two summation orders (block partials added atomically vs one block per
    # row): ~1e-6 relative for sums of squares; sums of signed values near 0 need an absolute margin (~1e-4).
    outputs = [{"name": y, "dtype": "float32", "rtol": 1e-4, "atol": 1e-5},
               {"name": stat, "dtype": "float32", "rtol": 1e-4, "atol": 1e-5 if square else 1e-3}]
    return g.instance(
        language="cuda", kernel=prefix,
        description=f"row {what} of a {rows}x{cols} fp32 matrix as two tiny kernels launched per row "
                    f"({2 * rows} launches of one row each)",
        slow=slow, fast=fast,
        harness=c_harness([("rows", "int", rows), ("cols", "int", cols)],
                          buffers, f"launch_{prefix}", ("rows", "cols")),
        outputs=outputs,
        configs=[{"name": "small", "params": {"rows": 64, "cols": 8192}},
                 {"name": "default", "params": {"rows": rows, "cols": cols}, "default": True}],
        build=CUDA_BUILD, work={"flops": "3 * rows * cols", "bytes": "2 * 4 * rows * cols + 4 * rows"},
        message=g.choice([f"{prefix}: one launch with a block per row", "Fuse per-row launches into one kernel",
                          f"{prefix}: stop launching kernels in a loop over rows", "launch once per call, not per row",
                          f"reduce launch overhead in {prefix}"]),
        params={"rows": rows, "cols": cols, "kind": kind, "threads": threads})


# ----------------------------------------------------------------------------------------------------------------
# Patterns of the three rules added with the catalogue (calibration on the H100 pending).

BYTE_OPS = {  # name: (C expression of v, the byte, in unsigned arithmetic; description)
    "invert": ("255u - v", "invert"),
    "threshold": ("v > $k ? 255u : 0u", "binarise at $k"),
    "brighten": ("v + $k > 255u ? 255u : v + $k", "brighten by $k (saturating)"),
    "darken": ("v > $k ? v - $k : 0u", "darken by $k (saturating)"),
    "gain": ("(v * $k) >> 4 > 255u ? 255u : (v * $k) >> 4", "scale by $k/16 (saturating)"),
}


@pattern("cuda/scalar_global_loads", bottleneck="scalar_global_loads", category=Category.VECTORIZATION,
         summary="per-byte image kernel loading one uint8 per thread (32 bytes per warp request); 16-byte vectors")
def byte_image_kernel(g: Generation) -> Instance:
    """One byte per thread: every warp-level load moves one 32-byte sector, so the load/store unit and the issue
    slots (index arithmetic, bounds check, load, store per byte) limit the kernel before DRAM does. Loading a
    uint4 (or uint2) per thread moves 16 (8) bytes per lane, 512 (256) bytes per request, and the per-byte work
    runs on registers. fp32 scalar loads would not do: on an H100 they already reach DRAM bandwidth."""
    op = g.choice(sorted(BYTE_OPS))
    k = g.choice([32, 64, 96, 128]) if op != "gain" else g.choice([12, 20, 24])
    expr, doc = Template(BYTE_OPS[op][0]).substitute(k=f"{k}u"), Template(BYTE_OPS[op][1]).substitute(k=k)
    vec = g.choice([16, 16, 8])
    vtype, words = {16: ("uint4", ("x", "y", "z", "w")), 8: ("uint2", ("x", "y"))}[vec]
    n = g.choice([48, 56, 64]) * MIB
    threads = g.choice([256, 512, 128])
    fn = g.choice(["adjust_pixels", f"{op}_image", "map_bytes", "pixel_op", f"u8_{op}"])
    src, dst = g.choice([("src", "dst"), ("pixels", "result"), ("in", "out"), ("image", "mapped")])
    head = (f"#include <cuda_runtime.h>\n\n#define THREADS {threads}\n\n"
            f"__device__ __forceinline__ unsigned int pixel(unsigned int v) {{ return {expr}; }}\n\n")
    slow = (header_comment(f"Per-pixel {doc} of an 8-bit image, one byte per thread: each warp-level load moves "
                           "a single\n32-byte sector, so load requests and per-byte instructions, not DRAM, set "
                           "the pace.")
            + head + code("""__global__ void $fn(const unsigned char *$src, unsigned char *$dst, int n) {
    int i = blockIdx.x * THREADS + threadIdx.x;
    if (i < n) $dst[i] = (unsigned char)pixel($src[i]);
}

void launch_$fn(const unsigned char *$src, unsigned char *$dst, int n) {
    $fn<<<(n + THREADS - 1) / THREADS, THREADS>>>($src, $dst, n);
}
""", fn=fn, src=src, dst=dst))
    word_ops = "\n".join(f"        w.{c} = pixel4(w.{c});" for c in words)
    fast = (header_comment(f"Per-pixel {doc} of an 8-bit image, {vec} bytes per thread: one {vtype} load and "
                           f"store per thread\n({32 * vec} bytes per warp request), the bytes unpacked in registers; "
                           "a scalar loop covers a tail.")
            + head + code("""__device__ __forceinline__ unsigned int pixel4(unsigned int w) {
    unsigned int r = 0;
#pragma unroll
    for (int b = 0; b < 4; b++) r |= pixel((w >> (8 * b)) & 0xffu) << (8 * b);
    return r;
}

__global__ void $fn(const unsigned char *$src, unsigned char *$dst, int n) {
    int v = blockIdx.x * THREADS + threadIdx.x;
    int vectors = n / $vec;
    if (v < vectors) {
        $vtype w = reinterpret_cast<const $vtype *>($src)[v];
$word_ops
        reinterpret_cast<$vtype *>($dst)[v] = w;
    }
    int tail = vectors * $vec + v;
    if (v < n - vectors * $vec) $dst[tail] = (unsigned char)pixel($src[tail]);
}

void launch_$fn(const unsigned char *$src, unsigned char *$dst, int n) {
    int vectors = n / $vec + 1;
    $fn<<<(vectors + THREADS - 1) / THREADS, THREADS>>>($src, $dst, n);
}
""", fn=fn, src=src, dst=dst, vec=vec, vtype=vtype, word_ops=word_ops))
    buffers = [Buffer(src, "uint8", "n", low=0.0, high=256.0), Buffer(dst, "uint8", "n", role="out")]
    return g.instance(
        language="cuda", kernel=fn,
        description=f"per-pixel {doc} of {n // MIB} Mi 8-bit pixels, one byte loaded per thread (a sector per warp "
                    "request)",
        slow=slow, fast=fast, harness=c_harness([("n", "int", n)], buffers, f"launch_{fn}", ("n",)),
        outputs=[{"name": dst, "dtype": "uint8", **EXACT}],
        configs=[{"name": "small", "params": {"n": 4 * MIB + 7}}, {"name": "default", "params": {"n": n},
                                                                     "default": True}],
        build=CUDA_BUILD, work={"flops": "0", "bytes": "2 * n"},
        message=g.choice([f"{fn}: process {vec} pixels per thread with {vtype} loads", "Vectorise the byte kernel",
                          f"use {vtype} loads/stores in {fn}", "load 16 bytes per thread" if vec == 16 else
                          "load 8 bytes per thread", f"{fn}: vectorized memory access"]),
        params={"n": n, "op": op, "k": k, "vec": vec, "threads": threads})


CHAIN_OPS = {  # name: (statement on v for float / double, uses the residual input)
    "scale": ("v = __fmul_rn(v, $a);", "v = __dmul_rn(v, $a);", False),
    "shift": ("v = __fadd_rn(v, $b);", "v = __dadd_rn(v, $b);", False),
    "relu": ("v = fmaxf(v, 0.0f);", "v = fmax(v, 0.0);", False),
    "clamp": ("v = fminf(fmaxf(v, -$c), $c);", "v = fmin(fmax(v, -$c), $c);", False),
    "square": ("v = __fmul_rn(v, v);", "v = __dmul_rn(v, v);", False),
    "residual": ("v = __fadd_rn(v, $r[i]);", "v = __dadd_rn(v, $r[i]);", True),
    "leaky": ("v = v > 0.0f ? v : __fmul_rn(v, $s);", "v = v > 0.0 ? v : __dmul_rn(v, $s);", False),
}


@pattern("cuda/unfused_elementwise_chain", bottleneck="unfused_elementwise_chain", category=Category.FUSION,
         summary="2-4 element-wise kernels in a row, each streaming the tensor through DRAM; one fused kernel")
def elementwise_chain(g: Generation) -> Instance:
    """Each kernel of the chain reads and writes the whole tensor (in place on the output after the first), so a
    chain of k kernels moves about k times the bytes of the fused kernel; every op is written with the _rn
    intrinsics (never contracted into an fma), so both versions round the same way."""
    dtype = g.choice(["float32", "float32", "float64"])
    t = CTYPE[dtype]
    k = g.choice([2, 3, 3, 4])
    ops = g.rng.sample(sorted(CHAIN_OPS), k)
    n = g.choice([8 << 20, 12 << 20, 1 << 24]) if dtype == "float32" else g.choice([4 << 20, 6 << 20, 1 << 23])
    threads = g.choice([256, 512, 128])
    prefix = g.choice(["act", "epilogue", "pointwise", "post", "ew"])
    x, r, y = g.choice([("x", "res", "y"), ("in", "skip", "out"), ("h", "h0", "z")])
    consts = {"a": literal(g.choice([0.5, 1.5, 2.0, 0.75]), dtype), "b": literal(g.choice([0.125, -0.25, 0.5]), dtype),
              "c": literal(g.choice([0.75, 1.0, 2.0]), dtype), "s": literal(g.choice([0.01, 0.1, 0.2]), dtype), "r": r}
    column = 0 if dtype == "float32" else 1
    stmt = {op: Template(CHAIN_OPS[op][column]).substitute(consts) for op in ops}
    uses_residual = any(CHAIN_OPS[op][2] for op in ops)
    inputs = f"const {t} *{x}" + (f", const {t} *{r}" if uses_residual else "")
    call_inputs = x + (f", {r}" if uses_residual else "")
    head = f"#include <cuda_runtime.h>\n\n#define THREADS {threads}\n\n"
    kernels, launches = [], []
    for step, op in enumerate(ops):
        source = x if step == 0 else y
        residual = f", const {t} *{r}" if CHAIN_OPS[op][2] else ""
        kernels.append(code("""__global__ void ${prefix}_$op(const $t *$source$residual, $t *$y, int n) {
    int i = blockIdx.x * THREADS + threadIdx.x;
    if (i >= n) return;
    $t v = $source[i];
    $stmt
    $y[i] = v;
}
""", prefix=prefix, op=op, t=t, source=f"{source}_in" if step else source, residual=residual, y=y, stmt=stmt[op]))
        launches.append(f"    {prefix}_{op}<<<blocks, THREADS>>>({source}{f', {r}' if CHAIN_OPS[op][2] else ''}, "
                        f"{y}, n);")
    chain = " -> ".join(ops)
    slow = (header_comment(f"Element-wise chain {chain} as {k} kernels: each reads the whole tensor from DRAM and "
                           f"writes it back\n(in place on {y} after the first), so a call streams the data {k} "
                           "times.")
            + head + "\n".join(kernels) + "\n" + code("""void launch_$prefix($inputs, $t *$y, int n) {
    int blocks = (n + THREADS - 1) / THREADS;
$launches
}
""", prefix=prefix, inputs=inputs, t=t, y=y, launches="\n".join(launches)))
    body = "\n".join(f"    {stmt[op]}" for op in ops)
    fast = (header_comment(f"Element-wise chain {chain} fused into one kernel: each element is read once, goes "
                           "through every\nstep in registers (the same rounding steps as the separate kernels) and "
                           "is written once.")
            + head + code("""__global__ void ${prefix}_fused($inputs, $t *$y, int n) {
    int i = blockIdx.x * THREADS + threadIdx.x;
    if (i >= n) return;
    $t v = $x[i];
$body
    $y[i] = v;
}

void launch_$prefix($inputs, $t *$y, int n) {
    ${prefix}_fused<<<(n + THREADS - 1) / THREADS, THREADS>>>($call_inputs, $y, n);
}
""", prefix=prefix, inputs=inputs, t=t, x=x, y=y, body=body, call_inputs=call_inputs))
    buffers = [Buffer(x, dtype, "n")] + ([Buffer(r, dtype, "n")] if uses_residual else []) + [
        Buffer(y, dtype, "n", role="out")]
    passes = 2 * k + sum(CHAIN_OPS[op][2] for op in ops)
    return g.instance(
        language="cuda", kernel=prefix,
        description=f"element-wise {dtype} chain {chain} over {n // MIB} Mi elements as {k} separate kernels, each "
                    "streaming the tensor through DRAM",
        slow=slow, fast=fast, harness=c_harness([("n", "int", n)], buffers, f"launch_{prefix}", ("n",)),
        outputs=[{"name": y, "dtype": dtype, **EXACT}],
        configs=[{"name": "small", "params": {"n": 1 << 20}}, {"name": "default", "params": {"n": n}, "default": True}],
        build=CUDA_BUILD, work={"flops": f"{k} * n", "bytes": f"{SIZE[dtype]} * n * {2 + uses_residual}"},
        message=g.choice([f"{prefix}: fuse the {k} element-wise kernels", "Fuse pointwise ops into one kernel",
                          f"fuse {chain}", f"{prefix}: single pass over the tensor", "kernel fusion for the epilogue"]),
        params={"n": n, "dtype": dtype, "ops": ops, "threads": threads, "slow_passes": passes})


@pattern("cuda/redundant_global_loads", bottleneck="redundant_global_loads", category=Category.SHARED_MEMORY,
         summary="wide 1-D stencil loading all 2r+1 neighbours from global memory per output; a shared tile")
def wide_stencil(g: Generation) -> Instance:
    """Why a new rule rather than poor_cache_locality: that rule describes data re-read for a whole matrix
    dimension while DRAM idles (below 30% of peak; the naive matmul re-loads each sector ~1000 times). A stencil
    re-loads each sector 2r + 1 times (about 20 here, more with misaligned sectors) and still streams its input
    from DRAM at a good share of the bandwidth, so DRAM need not be idle: redundant_global_loads reads the ratio
    of global load sectors to DRAM sectors (3 to 64) with L1 busy, and leaves larger ratios to
    poor_cache_locality. The fix stages each block's inputs plus a halo in shared memory once."""
    dtype = g.choice(["float32", "float32", "float64"])
    t, fma = CTYPE[dtype], FMA[dtype]
    radius = g.choice([8, 10, 12, 16])
    n = g.choice([8 << 20, 12 << 20, 1 << 24]) if dtype == "float32" else g.choice([4 << 20, 6 << 20, 1 << 23])
    threads = g.choice([256, 512, 128])
    fn = g.choice(["stencil1d", "wide_blur", "fir_filter", "smooth_wide", "convolve1d"])
    x, y, w = g.choice([("x", "y", "w"), ("in", "out", "taps"), ("signal", "filtered", "coef")])
    shape = g.choice(["triangle", "flat"])
    raw = [radius + 1 - abs(k) if shape == "triangle" else 1 for k in range(-radius, radius + 1)]
    weights = ", ".join(literal(round(v / sum(raw), 8), dtype) for v in raw)
    z = zero(dtype)
    head = (f"#include <cuda_runtime.h>\n\n#define R {radius}\n#define THREADS {threads}\n\n"
            f"__constant__ {t} {w}[2 * R + 1] = {{{weights}}};\n\n")
    slow = (header_comment(f"Radius-{radius} 1-D stencil ({2 * radius + 1} taps, zero outside): every thread loads "
                           f"all {2 * radius + 1} neighbours from\nglobal memory, so each input element is loaded "
                           f"{2 * radius + 1} times by neighbouring threads through L1.")
            + head + code("""__global__ void $fn(const $t *$x, $t *$y, int n) {
    int i = blockIdx.x * THREADS + threadIdx.x;
    if (i >= n) return;
    $t acc = $z;
#pragma unroll
    for (int k = -R; k <= R; k++) {
        int j = i + k;
        $t v = (j >= 0 && j < n) ? $x[j] : $z;
        acc = $fma($w[k + R], v, acc);
    }
    $y[i] = acc;
}

void launch_$fn(const $t *$x, $t *$y, int n) {
    $fn<<<(n + THREADS - 1) / THREADS, THREADS>>>($x, $y, n);
}
""", fn=fn, t=t, x=x, y=y, w=w, z=z, fma=fma))
    fast = (header_comment(f"Radius-{radius} 1-D stencil through shared memory: each block loads its THREADS "
                           "inputs plus a halo of R\non each side once, then every thread reads its neighbours from "
                           "the tile (same taps, same order).")
            + head + code("""__global__ void $fn(const $t *$x, $t *$y, int n) {
    __shared__ $t tile[THREADS + 2 * R];
    int i = blockIdx.x * THREADS + threadIdx.x;
    int base = blockIdx.x * THREADS - R;
    for (int s = threadIdx.x; s < THREADS + 2 * R; s += THREADS) {
        int j = base + s;
        tile[s] = (j >= 0 && j < n) ? $x[j] : $z;
    }
    __syncthreads();
    if (i >= n) return;
    $t acc = $z;
#pragma unroll
    for (int k = 0; k <= 2 * R; k++) acc = $fma($w[k], tile[threadIdx.x + k], acc);
    $y[i] = acc;
}

void launch_$fn(const $t *$x, $t *$y, int n) {
    $fn<<<(n + THREADS - 1) / THREADS, THREADS>>>($x, $y, n);
}
""", fn=fn, t=t, x=x, y=y, w=w, z=z, fma=fma))
    buffers = [Buffer(x, dtype, "n"), Buffer(y, dtype, "n", role="out")]
    return g.instance(
        language="cuda", kernel=fn,
        description=f"radius-{radius} 1-D {dtype} stencil over {n // MIB} Mi elements loading all {2 * radius + 1} "
                    "neighbours from global memory per output",
        slow=slow, fast=fast, harness=c_harness([("n", "int", n)], buffers, f"launch_{fn}", ("n",)),
        outputs=[{"name": y, "dtype": dtype, **EXACT}],  # the same taps, fma chain k = 0..2R in both
        configs=[{"name": "small", "params": {"n": 1 << 20}}, {"name": "default", "params": {"n": n}, "default": True}],
        build=CUDA_BUILD, work={"flops": f"2 * {2 * radius + 1} * n", "bytes": f"2 * {SIZE[dtype]} * n"},
        message=g.choice([f"{fn}: stage inputs in shared memory", "Use a shared-memory tile with halo",
                          f"{fn}: load each input once per block", "stencil: avoid redundant global loads",
                          f"speed up {fn} via smem tiling"]),
        params={"n": n, "dtype": dtype, "radius": radius, "threads": threads, "shape": shape})
