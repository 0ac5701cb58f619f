"""CPU (C and OpenMP) patterns of the catalogue. Each generator varies sizes, element type, names and the code
around the hot loop; the slow and fast versions keep the same interface and compute the same values (the
tolerances say how exactly).

Build flags: -mno-avx512f because valgrind 3.19 (callgrind, the CPU profiler) stops with SIGILL on AVX-512
instructions that -march=native emits on AVX-512 machines; -g for callgrind's per-line costs.
"""

from __future__ import annotations

from perfforge.records import Category
from synth.instance import Instance
from synth.patterns import Generation, pattern
from synth.variation import Buffer, c_harness, header_comment, literal

CPU_BUILD = {"compiler": "gcc", "flags": ["-O3", "-march=native", "-mno-avx512f", "-g"], "link": ["-lm"]}
# Relative tolerance per element type when both versions sum the same terms in the same order (the results
# agree to the last bit unless the compiler contracts differently): a margin for that, far inside 1e-3.
SAME_ORDER_RTOL = {"float32": 1e-5, "float64": 1e-12}


@pattern("cpu/loop_order", bottleneck="cache_miss_bound", category=Category.MEMORY_ACCESS,
         summary="matrix product in i-j-k order walks B by columns (a cache line per element); i-k-j walks rows")
def loop_order(g: Generation) -> Instance:
    dtype = g.choice(["float32", "float64"])
    ctype = {"float32": "float", "float64": "double"}[dtype]
    fn = g.choice(["matmul", "gemm_nn", "mat_mul", "multiply", "dense_product"])
    a, b, c = g.choice([("a", "b", "c"), ("lhs", "rhs", "out"), ("x", "w", "y"), ("A", "B", "C")])
    scaled = g.rng.random() < 0.5  # C = alpha * A * B
    alpha = literal(g.choice([0.5, 2.0, 0.25, 1.5]), dtype)
    n = g.choice([192, 224, 256, 288]) if dtype == "float32" else g.choice([160, 192, 224])
    index = g.choice(["row_major", "inline"])

    def at(matrix: str, row: str, col: str) -> str:
        return f"{matrix}[idx({row}, {col}, n)]" if index == "row_major" else f"{matrix}[{row} * n + {col}]"

    helper = ("static inline long idx(int row, int col, int n) { return (long)row * n + col; }\n\n"
              if index == "row_major" else "")
    signature = f"void {fn}(const {ctype} *{a}, const {ctype} *{b}, {ctype} *{c}, int n)"
    store = f"{alpha} * sum" if scaled else "sum"
    slow = (header_comment(f"{c} = {'alpha * ' if scaled else ''}{a} * {b} for n x n row-major matrices.") + helper
            + f"{signature} {{\n"
            f"    for (int i = 0; i < n; i++) {{\n"
            f"        for (int j = 0; j < n; j++) {{\n"
            f"            {ctype} sum = 0;\n"
            f"            for (int k = 0; k < n; k++) {{\n"
            f"                sum += {at(a, 'i', 'k')} * {at(b, 'k', 'j')};\n"
            f"            }}\n"
            f"            {at(c, 'i', 'j')} = {store};\n"
            f"        }}\n"
            f"    }}\n"
            f"}}\n")
    finish = (f"        for (int j = 0; j < n; j++) {{\n            crow[j] *= {alpha};\n        }}\n" if scaled else "")
    fast = (header_comment(f"{c} = {'alpha * ' if scaled else ''}{a} * {b} in i-k-j order: the inner loop walks rows "
                           f"of {b} and {c}\ncontiguously, and each {c}[i][j] still sums over k in order.") + helper
            + f"{signature} {{\n"
            f"    for (int i = 0; i < n; i++) {{\n"
            f"        {ctype} *crow = {c} + (long)i * n;\n"
            f"        for (int j = 0; j < n; j++) {{\n"
            f"            crow[j] = 0;\n"
            f"        }}\n"
            f"        for (int k = 0; k < n; k++) {{\n"
            f"            {ctype} aik = {at(a, 'i', 'k')};\n"
            f"            const {ctype} *brow = {b} + (long)k * n;\n"
            f"            for (int j = 0; j < n; j++) {{\n"
            f"                crow[j] += aik * brow[j];\n"
            f"            }}\n"
            f"        }}\n"
            f"{finish}"
            f"    }}\n"
            f"}}\n")
    buffers = [Buffer(a, dtype, "n * n"), Buffer(b, dtype, "n * n"), Buffer(c, dtype, "n * n", output=True)]
    rtol = SAME_ORDER_RTOL[dtype]
    size = 8 if dtype == "float64" else 4
    return g.instance(
        language="c", kernel=fn,
        description=f"{n}x{n} {dtype} matrix product in i-j-k order: the inner loop strides {b} by n elements",
        slow=slow, fast=fast, harness=c_harness({"n": n}, buffers, fn, args=("n",)),
        outputs=[{"name": c, "dtype": dtype, "rtol": rtol, "atol": rtol}],
        configs=[{"name": "small", "params": {"n": n // 4}}, {"name": "default", "params": {"n": n}, "default": True}],
        build=CPU_BUILD, work={"flops": "2 * n * n * n", "bytes": f"3 * {size} * n * n"},
        message=g.choice([f"{fn}: swap the j and k loops so the inner loop is unit-stride",
                          f"Reorder loops in {fn} for cache friendliness", f"speed up {fn}", "loop interchange",
                          f"{fn}: i-k-j ordering"]),
        params={"n": n, "dtype": dtype, "scaled": scaled, "index": index})
