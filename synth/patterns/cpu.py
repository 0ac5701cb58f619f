"""CPU (C and OpenMP) patterns of the catalogue. Each generator varies sizes, element type, names and the code
around the hot loop; the slow and fast versions keep the same interface and compute the same values (the
tolerances say how exactly).

Build flags: -mno-avx512f because valgrind 3.19 (callgrind, the CPU profiler) stops with SIGILL on AVX-512
instructions that -march=native emits on AVX-512 machines; -g for callgrind's per-line costs.
"""

from __future__ import annotations

from typing import Any

from perfforge.records import Category
from synth.instance import Instance
from synth.patterns import Generation, pattern
from synth.variation import Buffer, c_harness, header_comment, literal

CPU_BUILD = {"compiler": "gcc", "flags": ["-O3", "-march=native", "-mno-avx512f", "-g"], "link": ["-lm"]}
# Relative tolerance per element type when both versions sum the same terms in the same order (the results
# agree to the last bit unless the compiler contracts differently): a margin for that, far inside 1e-3.
SAME_ORDER_RTOL = {"float32": 1e-5, "float64": 1e-12}
# Tolerance of a product's n-term dot products (n 1024-2048 here) when a fair fix sums them in another order (vector
# lanes, blocks of k: every BLAS does): a red team's 8-lane float32 dot product differed from the i-j-k order by up
# to 2.5e-5 on elements near 0.007 (45 of 9,216 beyond the same-order 1e-5) while nearer the exact product than the
# original; both orders' errors are about sqrt(n) * eps * |terms| (1e-5 rms), 2e-4 leaves a margin of 3 over the
# largest difference seen, and a dropped or repeated term (|a * b| about 0.25) still fails.
REORDERED_RTOL = {"float32": 2e-4, "float64": 1e-10}


@pattern("cpu/loop_order", bottleneck="cache_miss_bound", category=Category.MEMORY_ACCESS,
         summary="matrix product in i-j-k order walks B by columns (a cache line per element); i-k-j walks rows")
def loop_order(g: Generation) -> Instance:
    """C (m x p) = A (m x n) * B (n x p) with a long inner dimension: the column of B that the i-j-k loop walks
    spans n >= 1024 cache lines, more than any L1 holds, so every element of it misses L1 (a square product small
    enough to profile under callgrind can keep its column in L1 for some sizes and cache geometries)."""
    dtype = g.choice(["float32", "float64"])
    ctype = {"float32": "float", "float64": "double"}[dtype]
    fn = g.choice(["matmul", "gemm_nn", "mat_mul", "multiply", "dense_product"])
    a, b, c = g.choice([("a", "b", "c"), ("lhs", "rhs", "out"), ("x", "w", "y"), ("A", "B", "C")])
    scaled = g.rng.random() < 0.5  # C = alpha * A * B
    alpha = literal(g.choice([0.5, 2.0, 0.25, 1.5]), dtype)
    m, n, p = g.choice([48, 64, 80, 96]), g.choice([1024, 1536, 2048]), g.choice([48, 64, 96, 128])
    index = g.choice(["row_major", "inline"])

    def at(matrix: str, row: str, col: str, cols: str) -> str:
        return f"{matrix}[idx({row}, {col}, {cols})]" if index == "row_major" else f"{matrix}[{row} * {cols} + {col}]"

    helper = ("static inline long idx(int row, int col, int cols) { return (long)row * cols + col; }\n\n"
              if index == "row_major" else "")
    signature = f"void {fn}(const {ctype} *{a}, const {ctype} *{b}, {ctype} *{c}, int m, int n, int p)"
    store = f"{alpha} * sum" if scaled else "sum"
    shapes = f"{c} (m x p) = {'alpha * ' if scaled else ''}{a} (m x n) * {b} (n x p), row-major"
    slow = (header_comment(f"{shapes}.") + helper
            + f"{signature} {{\n"
            f"    for (int i = 0; i < m; i++) {{\n"
            f"        for (int j = 0; j < p; j++) {{\n"
            f"            {ctype} sum = 0;\n"
            f"            for (int k = 0; k < n; k++) {{\n"
            f"                sum += {at(a, 'i', 'k', 'n')} * {at(b, 'k', 'j', 'p')};\n"
            f"            }}\n"
            f"            {at(c, 'i', 'j', 'p')} = {store};\n"
            f"        }}\n"
            f"    }}\n"
            f"}}\n")
    finish = (f"        for (int j = 0; j < p; j++) {{\n            crow[j] *= {alpha};\n        }}\n"
              if scaled else "")
    fast = (header_comment(f"{shapes}, in i-k-j order: the inner loop walks rows of {b} and {c}\ncontiguously, "
                           f"and each {c}[i][j] still sums over k in order.") + helper
            + f"{signature} {{\n"
            f"    for (int i = 0; i < m; i++) {{\n"
            f"        {ctype} *crow = {c} + (long)i * p;\n"
            f"        for (int j = 0; j < p; j++) {{\n"
            f"            crow[j] = 0;\n"
            f"        }}\n"
            f"        for (int k = 0; k < n; k++) {{\n"
            f"            {ctype} aik = {at(a, 'i', 'k', 'n')};\n"
            f"            const {ctype} *brow = {b} + (long)k * p;\n"
            f"            for (int j = 0; j < p; j++) {{\n"
            f"                crow[j] += aik * brow[j];\n"
            f"            }}\n"
            f"        }}\n"
            f"{finish}"
            f"    }}\n"
            f"}}\n")
    buffers = [Buffer(a, dtype, "m * n"), Buffer(b, dtype, "n * p"), Buffer(c, dtype, "m * p", role="out")]
    rtol = REORDERED_RTOL[dtype]
    size = 8 if dtype == "float64" else 4
    return g.instance(
        language="c", kernel=fn,
        description=f"{m}x{n} by {n}x{p} {dtype} matrix product in i-j-k order: the inner loop strides {b} by p "
                    f"elements down a column of {n} cache lines",
        slow=slow, fast=fast,
        harness=c_harness([("m", "int", m), ("n", "int", n), ("p", "int", p)], buffers, fn, ("m", "n", "p")),
        outputs=[{"name": c, "dtype": dtype, "rtol": rtol, "atol": rtol}],
        configs=[{"name": "small", "params": {"m": m // 4, "n": n // 4, "p": p // 2}},
                 {"name": "default", "params": {"m": m, "n": n, "p": p}, "default": True}],
        # -ffp-contract=off: gcc fuses the multiply-add into an FMA in one loop order and not always in the other;
        # with neither fused, both versions round the same n terms in the same order.
        build={**CPU_BUILD, "flags": [*CPU_BUILD["flags"], "-ffp-contract=off"]},
        work={"flops": "2 * m * n * p", "bytes": f"{size} * (m * n + n * p + m * p)"},
        message=g.choice([f"{fn}: swap the j and k loops so the inner loop is unit-stride",
                          f"Reorder loops in {fn} for cache friendliness", f"speed up {fn}", "loop interchange",
                          f"{fn}: i-k-j ordering"]),
        params={"m": m, "n": n, "p": p, "dtype": dtype, "scaled": scaled, "index": index})


# ---- what the patterns below share ----------------------------------------------------------------------------------

C_TYPE = {"float32": "float", "float64": "double"}
ELEMENT_BYTES = {"float32": 4, "float64": 8}
# libm names per element type: expf for float, exp for double.
MATH_SUFFIX = {"float32": "f", "float64": ""}


def tolerance(name: str, dtype: str) -> dict[str, Any]:
    """An [[outputs]] entry with the same-order tolerance of the element type."""
    rtol = SAME_ORDER_RTOL[dtype]
    return {"name": name, "dtype": dtype, "rtol": rtol, "atol": rtol}


def openmp_build() -> dict[str, Any]:
    return {**CPU_BUILD, "openmp": True}


def wrap_call(opening: str, args: list[str], closing: str, width: int = 110) -> str:
    """`opening` + the comma-separated args + `closing`, wrapped at `width` columns under the first argument."""
    text, indent = opening, " " * len(opening)
    for k, arg in enumerate(args):
        piece = arg + (", " if k < len(args) - 1 else closing)
        if len(text.rsplit("\n", 1)[-1]) + len(piece.rstrip()) > width:
            text = text.rstrip() + "\n" + indent
        text += piece
    return text


def rows_of(name: str, ctype: str, row: str, cols: str, const: bool = True) -> str:
    """A row pointer declaration: `const float *xr = x + (long)i * m;`."""
    return f"{'const ' if const else ''}{ctype} *{name}_row = {name} + (long){row} * {cols};"


def _rename(text: str, names: dict[str, str]) -> str:
    for old, new in names.items():
        text = text.replace(old, new)
    return text


# ---- loop-invariant work --------------------------------------------------------------------------------------------

@pattern("cpu/row_invariant_call", bottleneck="loop_invariant_work", category=Category.ALGORITHMIC,
         summary="a libm call whose argument depends on the row only is repeated for every element; once per row")
def row_invariant_call(g: Generation) -> Instance:
    dtype = g.choice(["float32", "float64"])
    ct, f = C_TYPE[dtype], MATH_SUFFIX[dtype]
    shape = g.choice(["decay", "normalise", "gain", "rotate", "log_weight"])
    n = g.choice([256, 320, 384, 448, 512])
    m = g.choice([192, 256, 320, 384])
    scalars: list[tuple[str, str, int | float]] = [("n", "int", n), ("m", "int", m)]
    if shape == "decay":
        fn = g.choice(["decay", "damp_rows", "attenuate", "apply_decay"])
        x, key, out = g.choice([("x", "t", "out"), ("signal", "stamp", "damped"), ("src", "age", "dst")])
        rate = g.choice([0.5, 0.75, 1.25])
        scalars.append(("rate", ct, rate))
        inputs = [Buffer(x, dtype, "n * m"), Buffer(key, dtype, "n", low=0.0, high=4.0)]
        factors = [("factor", f"exp{f}(-rate * {key}[i])")]
        element = "{x} * {0}"
        doc = f"{out}[i][j] = {x}[i][j] * e^(-rate {key}[i]): every row decays by the factor of its own time stamp"
        invariant = f"e^(-rate {key}[i])"
    elif shape == "normalise":
        fn = g.choice(["normalise_rows", "scale_by_norm", "unit_rows", "row_norm"])
        x, key, out = g.choice([("x", "gx", "out"), ("frames", "px", "normed"), ("a", "sx", "y")])
        key2 = key[:-1] + "y"
        inputs = [Buffer(x, dtype, "n * m"), Buffer(key, dtype, "n", low=0.5, high=2.0),
                  Buffer(key2, dtype, "n", low=0.5, high=2.0)]
        factors = [("norm", f"hypot{f}({key}[i], {key2}[i])")]
        element = "{x} / {0}"
        doc = (f"{out}[i][j] = {x}[i][j] / |({key}[i], {key2}[i])|: every row divided by the length of its "
               "scale vector")
        invariant = f"hypot({key}[i], {key2}[i])"
    elif shape == "gain":
        fn = g.choice(["apply_gain", "gamma_scale", "boost_rows", "tone_map"])
        x, key, out = g.choice([("x", "gain", "out"), ("pixels", "level", "mapped"), ("v", "g", "w")])
        scalars.append(("gamma", ct, g.choice([1.8, 2.2, 2.4, 0.45])))
        inputs = [Buffer(x, dtype, "n * m"), Buffer(key, dtype, "n", low=0.5, high=2.0)]
        factors = [("scale", f"pow{f}({key}[i], gamma)")]
        element = "{x} * {0}"
        doc = f"{out}[i][j] = {x}[i][j] * {key}[i]^gamma: every row scaled by its gain raised to gamma"
        invariant = f"{key}[i]^gamma"
    elif shape == "rotate":
        fn = g.choice(["rotate_rows", "phase_shift", "rotate_pairs", "apply_phase"])
        x, key, out = g.choice([("re", "theta", "out"), ("u", "angle", "rot"), ("x", "phase", "y")])
        other = {"re": "im", "u": "v", "x": "z"}[x]
        inputs = [Buffer(x, dtype, "n * m"), Buffer(other, dtype, "n * m"),
                  Buffer(key, dtype, "n", low=-3.14159, high=3.14159)]
        factors = [("c", f"cos{f}({key}[i])"), ("s", f"sin{f}({key}[i])")]
        element = "{x} * {0} - {o} * {1}"
        doc = (f"{out}[i][j] = {x}[i][j] cos({key}[i]) - {other}[i][j] sin({key}[i]): the real part of each row's "
               "samples rotated by the row's phase")
        invariant = f"cos({key}[i]) and sin({key}[i])"
    else:
        fn = g.choice(["log_weight", "weight_rows", "apply_log_weight", "soft_weight"])
        x, key, out = g.choice([("x", "w", "out"), ("counts", "weight", "scored"), ("p", "q", "r")])
        inputs = [Buffer(x, dtype, "n * m"), Buffer(key, dtype, "n", low=0.0, high=3.0)]
        factors = [("lw", f"log1p{f}({key}[i])")]
        element = "{x} * {0}"
        doc = f"{out}[i][j] = {x}[i][j] * log(1 + {key}[i]): every row weighted by the log of its weight"
        invariant = f"log(1 + {key}[i])"
    other_name = inputs[1].name if shape == "rotate" else ""
    bias = g.rng.random() < 0.4
    if bias:
        bias_name = g.choice(["bias", "offset", "shift"])
        inputs.append(Buffer(bias_name, dtype, "m"))
        element += f" + {bias_name}[j]"
        doc += f", plus a per-column {bias_name}"
    alpha = literal(g.choice([0.5, 2.0, 1.5, 0.25]), dtype) if g.rng.random() < 0.4 else ""
    rowptr = g.rng.random() < 0.5
    buffers = [*inputs, Buffer(out, dtype, "n * m", role="out")]
    floats = [name for name, ctype, _ in scalars if ctype != "int"]
    params = [f"{ct} {name}" for name in floats]
    signature = (f"void {fn}({', '.join([f'const {ct} *{b.name}' for b in inputs] + [f'{ct} *{out}'])}, "
                 f"int n, int m{''.join(', ' + p for p in params)})")

    def at(name: str) -> str:
        return f"{name}_row[j]" if rowptr else f"{name}[i * m + j]"

    def body(values: list[str]) -> str:
        xv = f"{alpha} * {at(x)}" if alpha else at(x)
        return element.format(*values, x=xv, o=at(other_name) if other_name else "")

    row_decls = ("".join(f"        {rows_of(b.name, ct, 'i', 'm')}\n" for b in inputs if b.count == "n * m")
                 + f"        {rows_of(out, ct, 'i', 'm', const=False)}\n") if rowptr else ""
    slow = (header_comment(doc + ".") + f"#include <math.h>\n\n{signature} {{\n"
            f"    for (int i = 0; i < n; i++) {{\n{row_decls}"
            f"        for (int j = 0; j < m; j++) {{\n"
            f"            {at(out)} = {body([call for _, call in factors])};\n"
            f"        }}\n    }}\n}}\n")
    helper = g.rng.random() < 0.35 and len(factors) == 1
    if helper:
        var, call = factors[0]
        keys = [b.name for b in inputs if b.count == "n"]
        helper_text = (f"/* The row's factor, computed once per row. */\nstatic {ct} row_{var}("
                       f"{', '.join(f'{ct} {s}' for s in [*(k + '_i' for k in keys), *floats])}) {{\n"
                       f"    return {_rename(call, {f'{k}[i]': f'{k}_i' for k in keys})};\n}}\n\n")
        hoisted = f"        const {ct} {var} = row_{var}({', '.join([f'{k}[i]' for k in keys] + floats)});\n"
    else:
        helper_text = ""
        hoisted = "".join(f"        const {ct} {var} = {call};\n" for var, call in factors)
    fast = (header_comment(doc + f".\n{invariant} depends on the row only: it is computed once per row, "
                           "outside the inner loop,\nwhich then vectorises.") + f"#include <math.h>\n\n{helper_text}"
            f"{signature} {{\n"
            f"    for (int i = 0; i < n; i++) {{\n{hoisted}{row_decls}"
            f"        for (int j = 0; j < m; j++) {{\n"
            f"            {at(out)} = {body([var for var, _ in factors])};\n"
            f"        }}\n    }}\n}}\n")
    size = ELEMENT_BYTES[dtype]
    small = {"n": n // 8, "m": m // 4 + 3, **{name: value for name, _, value in scalars[2:]}}
    default = {"n": n, "m": m, **{name: value for name, _, value in scalars[2:]}}
    reads = sum(1 for b in inputs if b.count == "n * m")
    return g.instance(
        language="c", kernel=fn,
        description=f"{n}x{m} {dtype} rows scaled by {invariant}, called once per element instead of once per row",
        slow=slow, fast=fast, harness=c_harness(scalars, buffers, fn, tuple(name for name, _, _ in scalars)),
        outputs=[tolerance(out, dtype)],
        configs=[{"name": "small", "params": small}, {"name": "default", "params": default, "default": True}],
        build=CPU_BUILD, work={"flops": "3 * n * m", "bytes": f"{size} * ({reads + 1} * n * m + n)"},
        message=g.choice([f"{fn}: hoist the per-row {invariant.split(' and ')[0]} out of the inner loop",
                          f"compute the row factor once per row in {fn}",
                          f"{fn}: move invariant math out of the j loop",
                          f"speed up {fn}", "hoist loop invariant", f"{fn} perf"]),
        params={"n": n, "m": m, "dtype": dtype, "shape": shape, "bias": bias, "alpha": bool(alpha),
                "rowptr": rowptr, "helper": helper})


# ---- missing OpenMP parallelism -------------------------------------------------------------------------------------

@pattern("cpu/serial_elementwise", bottleneck="missing_parallelism", category=Category.PARALLELISM,
         summary="independent, libm-heavy iterations run on one core; #pragma omp parallel for shares them out")
def serial_elementwise(g: Generation) -> Instance:
    dtype = g.choice(["float32", "float64"])
    ct, f = C_TYPE[dtype], MATH_SUFFIX[dtype]
    shape = g.choice(["modes", "gaussian", "softplus", "polar", "field"])
    n = g.choice([65536, 98304, 131072]) if dtype == "float32" else g.choice([49152, 65536, 98304])
    scalars: list[tuple[str, str, int | float]] = [("n", "int", n)]
    two_d = shape == "field"
    lit = lambda v: literal(v, dtype)  # noqa: E731
    if shape == "modes":
        fn = g.choice(["modes", "displacement", "ringdown", "evaluate_modes"])
        a, d, w, p, out = g.choice([("a", "d", "w", "p", "out"), ("amp", "damp", "freq", "phase", "y"),
                                    ("ampl", "decay", "omega", "phi", "disp")])
        scalars.append(("t", ct, g.choice([1.5, 2.5, 0.75])))
        inputs = [Buffer(a, dtype, "n", low=0.5, high=2.0), Buffer(d, dtype, "n", low=0.0, high=1.0),
                  Buffer(w, dtype, "n", low=1.0, high=50.0), Buffer(p, dtype, "n", low=-3.14159, high=3.14159)]
        outputs = [out]
        body = [f"{out}[i] = {a}[i] * exp{f}(-{d}[i] * t) * cos{f}({w}[i] * t + {p}[i]);"]
        doc = (f"displacement of n independent damped modes at time t: "
               f"{out}[i] = {a}[i] e^(-{d}[i] t) cos({w}[i] t + {p}[i])")
    elif shape == "gaussian":
        fn = g.choice(["gaussian_pdf", "normal_density", "likelihood", "gauss_weights"])
        x, mu, s, w, out = g.choice([("x", "mu", "sigma", "w", "out"), ("obs", "mean", "sd", "weight", "pdf"),
                                     ("v", "c", "s", "k", "dens")])
        inputs = [Buffer(x, dtype, "n", low=-3.0, high=3.0), Buffer(mu, dtype, "n"),
                  Buffer(s, dtype, "n", low=0.5, high=2.0),
                  Buffer(w, dtype, "n", low=0.0, high=1.0)]
        outputs = [out]
        body = [f"{ct} z = ({x}[i] - {mu}[i]) / {s}[i];",
                f"{out}[i] = {w}[i] * exp{f}({lit(-0.5)} * z * z) / ({lit(2.5066282746310002)} * {s}[i]);"]
        doc = f"weighted normal densities of n independent observations: {out}[i] = {w}[i] N({x}[i]; {mu}[i], {s}[i])"
    elif shape == "softplus":
        fn = g.choice(["softplus", "smooth_relu", "log_sum_exp_zero", "softplus_scaled"])
        x, k, out = g.choice([("x", "beta", "out"), ("z", "k", "y"), ("act", "sharp", "res")])
        inputs = [Buffer(x, dtype, "n", low=-4.0, high=4.0), Buffer(k, dtype, "n", low=0.5, high=2.0)]
        outputs = [out]
        body = [f"{out}[i] = log1p{f}(exp{f}({k}[i] * {x}[i])) / {k}[i];"]
        doc = f"softplus with a per-element sharpness: {out}[i] = log(1 + e^({k}[i] {x}[i])) / {k}[i]"
    elif shape == "polar":
        fn = g.choice(["to_polar", "cart2pol", "polar_form", "magnitude_phase"])
        x, y, mag, ang = g.choice([("x", "y", "r", "theta"), ("re", "im", "mag", "arg"), ("u", "v", "len", "dir")])
        inputs = [Buffer(x, dtype, "n"), Buffer(y, dtype, "n")]
        outputs = [mag, ang]
        body = [f"{mag}[i] = hypot{f}({x}[i], {y}[i]);", f"{ang}[i] = atan2{f}({y}[i], {x}[i]);"]
        doc = f"polar form of n points: {mag}[i] = |({x}[i], {y}[i])|, {ang}[i] = atan2({y}[i], {x}[i])"
    else:
        fn = g.choice(["plane_waves", "wave_field", "standing_wave", "mode_shape"])
        xs, ys, kx, out = g.choice([("xs", "ys", "k", "field"), ("px", "py", "wn", "amp"), ("u", "v", "kk", "psi")])
        n = n // 256 * 2
        m = g.choice([128, 192, 256]) if dtype == "float32" else g.choice([128, 160, 192])
        scalars = [("n", "int", n), ("m", "int", m)]
        inputs = [Buffer(xs, dtype, "n", low=-2.0, high=2.0), Buffer(ys, dtype, "n", low=-2.0, high=2.0),
                  Buffer(kx, dtype, "m", low=0.5, high=8.0)]
        outputs = [out]
        body = [f"{out}[i * m + j] = sin{f}({kx}[j] * {xs}[i]) * cos{f}({kx}[j] * {ys}[i]);"]
        doc = f"an n x m field of standing waves: {out}[i][j] = sin({kx}[j] {xs}[i]) cos({kx}[j] {ys}[i])"
    count = "n * m" if two_d else "n"
    buffers = [*inputs, *(Buffer(o, dtype, count, role="out") for o in outputs)]
    ints = [name for name, ctype, _ in scalars if ctype == "int"]
    floats = [name for name, ctype, _ in scalars if ctype != "int"]
    signature = (f"void {fn}({', '.join([f'const {ct} *{b.name}' for b in inputs] + [f'{ct} *{o}' for o in outputs])}"
                 f"{''.join(f', int {i}' for i in ints)}{''.join(f', {ct} {x}' for x in floats)})")
    pragma = g.choice(["#pragma omp parallel for", "#pragma omp parallel for schedule(static)"])
    if two_d:
        loops = ["for (int i = 0; i < n; i++) {", "    for (int j = 0; j < m; j++) {"]
        indent = "        "
        if g.rng.random() < 0.5:
            pragma = pragma.replace("parallel for", "parallel for collapse(2)")
    else:
        loops = ["for (int i = 0; i < n; i++) {"]
        indent = "    "
    close = "".join(f"    {'    ' * k}}}\n" for k in reversed(range(len(loops))))

    def kernel(with_pragma: bool, note: str) -> str:
        return (header_comment(doc[0].upper() + doc[1:] + "." + note) + "#include <math.h>\n\n" + f"{signature} {{\n"
                + (f"{pragma}\n" if with_pragma else "")
                + "".join(f"    {'    ' * k}{line[4 * k:] if k else line}\n" for k, line in enumerate(loops))
                + "".join(f"    {indent}{line}\n" for line in body) + close + "}\n")

    slow = kernel(False, "")
    fast = kernel(True, "\nThe iterations are independent: the loop is shared among the cores.")
    size = ELEMENT_BYTES[dtype]
    calls = sum(line.count("(") for line in body)
    small = {k: (max(v // 16, 8) if isinstance(v, int) else v) for k, v in ((s[0], s[2]) for s in scalars)}
    default = {name: value for name, _, value in scalars}
    return g.instance(
        language="c", kernel=fn,
        description=f"{count.replace(' * ', ' x ')} independent {dtype} evaluations with libm calls on one core "
                    "of a multi-core machine",
        slow=slow, fast=fast, harness=c_harness(scalars, buffers, fn, tuple(ints + floats)),
        outputs=[tolerance(o, dtype) for o in outputs],
        configs=[{"name": "small", "params": small}, {"name": "default", "params": default, "default": True}],
        build=openmp_build(),
        work={"flops": f"{4 * calls} * {count}",
              "bytes": f"{size} * ({len(outputs) + (0 if two_d else len(inputs))} * {count}"
                       f"{' + 2 * n + m' if two_d else ''})"},
        message=g.choice([f"{fn}: parallelise the loop with OpenMP", f"OpenMP for {fn}", f"use all cores in {fn}",
                          f"{fn}: add omp parallel for", "parallelize", f"faster {fn} on multicore machines"]),
        params={"n": n, "dtype": dtype, "shape": shape, "pragma": pragma})


# ---- aliasing blocks vectorisation ----------------------------------------------------------------------------------

# Time-stepping shapes: (state arrays updated in place, read-only coefficient arrays, their input ranges, loop body
# over {name} placeholders (state and coefficients by role), what it models). Each has at least 4 written arrays
# and 2 read-only ones, so gcc needs more run-time overlap checks than its limit (10) and leaves the loop scalar.
ALIAS_SHAPES = {
    "particles": (("x", "y", "z", "vx", "vy", "vz"), ("q", "mass"), ((-1.0, 1.0),) * 6 + ((-2.0, 2.0), (0.5, 4.0)),
                  ["{T} qm = {q}[i] / {mass}[i];",
                   "{vx}[i] += dt * (qm * {ex} - {drag} * {vx}[i]);",
                   "{vy}[i] += dt * (qm * {ey} - {drag} * {vy}[i]);",
                   "{vz}[i] += dt * (qm * {ez} - {drag} * {vz}[i]);",
                   "{x}[i] += dt * {vx}[i];", "{y}[i] += dt * {vy}[i];", "{z}[i] += dt * {vz}[i];"],
                  "charged particles in a uniform electric field with linear drag"),
    "kinetics": (("a", "b", "c", "d"), ("k1", "k2"), ((0.0, 1.0),) * 4 + ((0.1, 2.0), (0.1, 2.0)),
                 ["{T} r1 = {k1}[i] * {a}[i] * {b}[i];", "{T} r2 = {k2}[i] * {c}[i];",
                  "{a}[i] -= dt * r1;", "{b}[i] -= dt * r1;", "{c}[i] += dt * (r1 - r2);", "{d}[i] += dt * r2;"],
                 "the reactions A + B -> C -> D in independent cells"),
    "oscillators": (("x", "y", "vx", "vy"), ("k", "damping"), ((-1.0, 1.0),) * 4 + ((0.5, 4.0), (0.0, 0.5)),
                    ["{vx}[i] += dt * (-{k}[i] * {x}[i] - {damping}[i] * {vx}[i]);",
                     "{vy}[i] += dt * (-{k}[i] * {y}[i] - {damping}[i] * {vy}[i]);",
                     "{x}[i] += dt * {vx}[i];", "{y}[i] += dt * {vy}[i];"],
                    "damped two-dimensional oscillators"),
    "epidemic": (("s", "inf", "rec", "dead"), ("beta", "gamma", "mu"), ((0.0, 1.0),) * 4 + ((0.1, 1.0),) * 3,
                 ["{T} new_inf = {beta}[i] * {s}[i] * {inf}[i];", "{T} out = ({gamma}[i] + {mu}[i]) * {inf}[i];",
                  "{s}[i] -= dt * new_inf;", "{inf}[i] += dt * (new_inf - out);",
                  "{rec}[i] += dt * {gamma}[i] * {inf}[i];", "{dead}[i] += dt * {mu}[i] * {inf}[i];"],
                 "an SIR epidemic with deaths in independent regions"),
}
ALIAS_RENAMES = {"x": ["x", "px", "pos_x"], "y": ["y", "py", "pos_y"], "z": ["z", "pz", "pos_z"],
                 "vx": ["vx", "ux", "vel_x"], "vy": ["vy", "uy", "vel_y"], "vz": ["vz", "uz", "vel_z"],
                 "q": ["q", "charge"], "mass": ["mass", "m"], "a": ["a", "ca"], "b": ["b", "cb"], "c": ["c", "cc"],
                 "d": ["d", "cd"], "k1": ["k1", "kf"], "k2": ["k2", "kd"], "k": ["k", "stiff"],
                 "damping": ["damping", "gam"], "s": ["sus", "susceptible"], "inf": ["inf", "infected"],
                 "rec": ["rec", "recovered"], "dead": ["dead", "deaths"], "beta": ["beta", "contact"],
                 "gamma": ["gamma", "recovery"], "mu": ["mu", "mortality"]}


@pattern("cpu/aliasing_update", bottleneck="missed_vectorization", category=Category.VECTORIZATION,
         summary="an in-place update over many pointers that may alias stays scalar; restrict lets gcc vectorise it")
def aliasing_update(g: Generation) -> Instance:
    dtype = g.choice(["float32", "float64"])
    ct = C_TYPE[dtype]
    shape = g.choice(sorted(ALIAS_SHAPES))
    state, coefs, ranges, body, what = ALIAS_SHAPES[shape]
    style = g.randint(0, 2)  # one naming style for all arrays: x, px or pos_x
    names = {role: ALIAS_RENAMES[role][min(style, len(ALIAS_RENAMES[role]) - 1)] for role in (*state, *coefs)}
    fn = g.choice({"particles": ["advance", "push_particles", "step_particles"],
                   "kinetics": ["react", "integrate_cells", "kinetics_step"],
                   "oscillators": ["advance_oscillators", "integrate", "step_springs"],
                   "epidemic": ["sir_step", "spread", "advance_regions"]}[shape])
    # The arrays stay in the first-level cache (at most 24 KiB together) across the steps: the loop is compute
    # bound, so vectorising it pays, and no cache misses compete with the planted diagnosis.
    arrays = len(state) + len(coefs)
    n = g.choice([c for c in (256, 320, 384, 512, 640, 768) if c * arrays * ELEMENT_BYTES[dtype] <= 24576])
    steps = g.choice([16, 24, 32])
    dt = g.choice([0.01, 0.005, 0.02])
    constants = {"ex": literal(g.choice([0.3, 0.5, 0.4]), dtype), "ey": literal(g.choice([0.2, 0.1]), dtype),
                 "ez": literal(g.choice([0.1, 0.25]), dtype), "drag": literal(g.choice([0.05, 0.1]), dtype)}
    index = g.choice(["i", "p", "k"]) if shape != "oscillators" else g.choice(["i", "p"])
    lines = [line.format(T=ct, **names, **constants).replace("[i]", f"[{index}]") for line in body]
    buffers = [Buffer(names[role], dtype, "n", role="inout" if role in state else "in", low=lo, high=hi)
               for role, (lo, hi) in zip((*state, *coefs), ranges, strict=True)]
    scalars: list[tuple[str, str, int | float]] = [("n", "int", n), ("steps", "int", steps), ("dt", ct, dt)]

    step = g.choice(["s", "step", "it"])

    def signature(qualifier: str) -> str:
        params = [f"{'const ' if b.role == 'in' else ''}{ct} *{qualifier}{b.name}" for b in buffers]
        return wrap_call(f"void {fn}(", [*params, "int n", "int steps", f"{ct} dt"], ")")

    doc = f"Advances {what}\n`steps` explicit steps of dt; the state arrays are updated in place."
    loop = (f"    for (int {step} = 0; {step} < steps; {step}++) {{\n"
            f"        for (int {index} = 0; {index} < n; {index}++) {{\n"
            + "".join(f"            {line}\n" for line in lines) + "        }\n    }\n}\n")
    slow = header_comment(doc) + f"{signature('')} {{\n" + loop
    fast = (header_comment(doc + f"\nrestrict promises that the {len(buffers)} arrays do not overlap, so the compiler "
                                 "vectorises the inner loop\nwithout the run-time overlap checks it gives up on.")
            + f"{signature('restrict ')} {{\n" + loop)
    size = ELEMENT_BYTES[dtype]
    return g.instance(
        language="c", kernel=fn,
        description=f"{what}: an in-place update over {len(buffers)} {dtype} arrays that may alias, which gcc "
                    "leaves scalar",
        slow=slow, fast=fast, harness=c_harness(scalars, buffers, fn, ("n", "steps", "dt")),
        outputs=[tolerance(names[role], dtype) for role in state],
        configs=[{"name": "small", "params": {"n": n // 4 + 5, "steps": 3, "dt": dt}},
                 {"name": "default", "params": {"n": n, "steps": steps, "dt": dt}, "default": True}],
        build=CPU_BUILD,
        work={"flops": f"{4 * len(lines)} * n * steps", "bytes": f"{size} * {2 * len(state) + len(coefs)} * n"},
        message=g.choice([f"{fn}: mark the arrays restrict so the loop vectorises", f"add restrict to {fn}",
                          f"{fn}: no aliasing between the state arrays", "restrict pointers", f"vectorize {fn}",
                          f"speed up {fn}"]),
        params={"n": n, "steps": steps, "dtype": dtype, "shape": shape, "index": index})


# ---- array of structures --------------------------------------------------------------------------------------------

# Fields the hot loop does not touch, by what the structure stands for (kept as the rest of an application would).
AOS_KINDS = {
    "particle": ["charge", "radius", "temperature", "id", "flags", "age", "energy", "density", "pressure", "tag",
                 "lifetime", "species", "weight", "emissivity", "drag_coef", "spin_rate", "birth", "cell", "owner",
                 "opacity", "cooling", "heating", "mu", "potential", "last_step"],
    "body": ["density", "pressure", "energy", "id", "group", "age", "potential", "last_hit", "owner", "restitution",
             "friction", "radius", "inertia", "torque", "omega", "angle", "sleep_timer", "layer", "material",
             "contacts", "bounce", "volume", "heat", "charge", "flags"],
    "agent": ["health", "speed_limit", "heading", "id", "state", "timer", "energy", "group", "score", "hunger",
              "fear", "target", "path_len", "cooldown", "vision", "armour", "level", "team", "stamina", "morale",
              "ammo", "fuel", "rank", "flags", "seed"],
}
AOS_ARRAYS = {"particle": ["spin[3]", "colour[4]"], "body": ["accel[3]", "colour[4]"],
              "agent": ["goal[3]", "memory[4]"]}
LINE_BYTES = 64
# Update rules per axis a: (velocity line, what it models), over {v} {x} {dt} {k} {mass} placeholders.
AOS_RULES = {
    "trap": ("{v} -= dt * k * {mass} * {x};", "a harmonic trap"),
    "spring": ("{v} -= dt * (k * {x} + {c} * {v}) * {mass};", "damped springs to the origin"),
    "drag": ("{v} += dt * ({acc} - {c} * {mass} * {v});", "a uniform field with linear drag"),
}


@pattern("cpu/aos_fields", bottleneck="poor_data_layout", category=Category.MEMORY_ACCESS,
         summary="a time-step loop over an array of large structures uses a few of their fields; structure of arrays")
def aos_fields(g: Generation) -> Instance:
    # float32 only: with doubles gcc leaves the loop over structures scalar, and on the 2-core EPYC machine its
    # three-line structures streamed from L3 as fast as the vectorised structure-of-arrays loop (4 of 5 double
    # instances measured no speed-up), while float32 instances measured 3x and more.
    dtype = "float32"
    ct, size = C_TYPE[dtype], ELEMENT_BYTES[dtype]
    kind = g.choice(sorted(AOS_KINDS))
    dims = g.choice([2, 3])
    axes = ["x", "y", "z"][:dims]
    used = [*axes, *(f"v{a}" for a in axes), "inv_mass"]
    # The structure spans whole cache lines with the used fields spread over all of them (position, velocity and
    # mass are far apart, as fields grouped by meaning are), so every step fetches every line of every structure:
    # at least three times the bytes the step uses.
    used_bytes = len(used) * size
    lines = next(k for k in (1, 2, 3, 4) if k * LINE_BYTES >= 3 * used_bytes)
    width = lines * LINE_BYTES // size
    members = _spread_layout(g, width, lines, [axes, [f"v{a}" for a in axes], ["inv_mass"]], kind)
    rule = g.choice(sorted(AOS_RULES))
    line, what = AOS_RULES[rule]
    tname = g.choice({"particle": ["particle", "particle_t", "Particle"], "body": ["body", "body_t", "Body"],
                      "agent": ["agent", "agent_t", "Agent"]}[kind])
    fn = g.choice({"trap": ["trap", "oscillate", "step_trap"], "spring": ["relax", "spring_step", "settle"],
                   "drag": ["drift", "fall", "advance_drag"]}[rule])
    struct_bytes = width * size
    # 3-4 MiB of structures stream from L3 every step (beyond the 1 MiB second-level cache per core); the
    # structure-of-arrays copy of the used fields is under a third of that.
    n = int(g.choice([3.0, 3.5, 4.0]) * 2**20 / (width * size)) // 256 * 256
    steps = g.choice([12, 16, 24])
    k_value, c_value = g.choice([2.0, 3.0, 4.0]), g.choice([0.1, 0.2, 0.05])
    acc = {a: literal(v, dtype) for a, v in zip(axes, g.choice([(0.0, -9.8, 0.5), (0.3, -1.0, 2.0)]), strict=False)}
    pointer = g.rng.random() < 0.5  # p->x through a pointer to the element, or state[i].x
    scalars: list[tuple[str, str, int | float]] = [("n", "int", n), ("steps", "int", steps), ("dt", ct, 0.01),
                                                   ("k", ct, k_value)]
    records = g.choice(["records", "items", "state_buf"])

    def update(get: dict[str, str]) -> list[str]:
        lines = [line.format(v=get["v" + a], x=get[a], k="k", c=literal(c_value, dtype), mass=get["inv_mass"],
                             acc=acc[a]) for a in axes]
        return lines + [f"{get[a]} += dt * {get['v' + a]};" for a in axes]

    decl = "typedef struct {\n" + "".join(f"    {ct} {f};\n" for f in members) + f"}} {tname};\n"
    sig = f"void {fn}({ct} *{records}, int n, int steps, {ct} dt, {ct} k)"
    if pointer:
        access = {f: f"p->{f}" for f in used}
        loop_head = f"            {tname} *p = &state[i];\n"
    else:
        access = {f: f"state[i].{f}" for f in used}
        loop_head = ""
    body = "".join(f"            {text}\n" for text in update(access))
    plural = {"body": "bodies"}.get(kind, kind + "s")
    doc = (f"Moves n {plural} `steps` explicit steps in {what}, in place:\n{records} holds them as n consecutive "
           f"{width}-{ct} records, of which the motion reads and writes {len(used)}.")
    slow = (header_comment(doc) + f"/* One {kind} as the rest of the application stores it: {width} {ct}s, "
            f"{struct_bytes} bytes. */\n" + decl + "\n" + f"{sig} {{\n"
            f"    {tname} *state = ({tname} *){records};\n"
            f"    for (int s = 0; s < steps; s++) {{\n        for (int i = 0; i < n; i++) {{\n{loop_head}{body}"
            f"        }}\n    }}\n}}\n")
    offsets = {f: k for k, f in enumerate(_flat_members(members))}
    arrays = [f"{ct} *restrict {f}" for f in used[:-1]] + [f"const {ct} *restrict inv_mass"]
    step_body = "".join(f"        {text}\n" for text in update({f: f"{f}[i]" for f in used}))
    copies_in = "".join(f"        {f}[i] = r[{offsets[f]}];\n" for f in used)
    copies_out = "".join(f"        r[{offsets[f]}] = {f}[i];\n" for f in used[:-1])
    pointers = "".join(f"    {ct} *{f} = soa + {k} * (size_t)n;\n" for k, f in enumerate(used))
    fast = (header_comment(doc) + "#include <stdlib.h>\n\n"
            + f"/* One step over the structure-of-arrays copy; restrict: the {len(used)} arrays do not overlap. */\n"
            + wrap_call("static void step(", [*arrays, "int n", f"{ct} dt", f"{ct} k"], ") {\n")
            + "    for (int i = 0; i < n; i++) {\n" + step_body + "    }\n}\n\n"
            + header_comment(f"The same motion with the {len(used)} fields the steps touch copied once into separate "
                             f"arrays (structure of\narrays): each step streams {len(used) * size} bytes per {kind} "
                             f"instead of a {struct_bytes}-byte record.")
            + f"{sig} {{\n    {ct} *soa = malloc((size_t)n * {len(used)} * sizeof({ct}));\n{pointers}"
            f"    for (int i = 0; i < n; i++) {{\n        const {ct} *r = {records} + (size_t)i * {width};\n"
            f"{copies_in}    }}\n    for (int s = 0; s < steps; s++) {{\n"
            f"        step({', '.join(used)}, n, dt, k);\n    }}\n"
            f"    for (int i = 0; i < n; i++) {{\n        {ct} *r = {records} + (size_t)i * {width};\n{copies_out}"
            f"    }}\n    free(soa);\n}}\n")
    buffers = [Buffer(records, dtype, f"n * {width}", role="inout", low=0.5, high=2.0)]
    return g.instance(
        language="c", kernel=fn,
        description=f"{plural} stepped in place as an array of {struct_bytes}-byte structures although each step "
                    f"reads and writes {len(used)} of their {width} fields",
        slow=slow, fast=fast, harness=c_harness(scalars, buffers, fn, ("n", "steps", "dt", "k")),
        outputs=[tolerance(records, dtype)],
        configs=[{"name": "small", "params": {"n": 1000, "steps": 2, "dt": 0.01, "k": k_value}},
                 {"name": "default", "params": {"n": n, "steps": steps, "dt": 0.01, "k": k_value}, "default": True}],
        build=CPU_BUILD,
        work={"flops": f"{5 * dims} * n * steps", "bytes": f"{size} * 2 * {width} * n"},
        message=g.choice([f"{fn}: step a structure-of-arrays copy of the hot fields",
                          f"SoA layout for the {kind} update in {fn}", f"{fn}: AoS -> SoA",
                          "convert particle loop to structure of arrays", f"speed up {fn}",
                          f"{fn}: only stream the fields the step touches"]),
        params={"n": n, "steps": steps, "dtype": dtype, "kind": kind, "dims": dims, "width": width, "rule": rule,
                "pointer": pointer})


def _spread_layout(g: Generation, width: int, lines: int, groups: list[list[str]], kind: str) -> list[str]:
    """Member declarations of a structure of `width` scalars over `lines` cache lines: each group of used fields
    lies within one line, the groups spread over all lines (the first in the first line, the next ones in later
    lines), the gaps filled with the kind's other fields."""
    per_line = width // lines
    slots: list[str | None] = [None] * width
    for k, group in enumerate(groups):
        line = min(k, lines - 1) if lines > 1 else 0
        free = [start for start in range(line * per_line, (line + 1) * per_line - len(group) + 1)
                if all(slots[start + d] is None for d in range(len(group)))]
        start = g.choice(free)
        for d, name in enumerate(group):
            slots[start + d] = name
    names = AOS_KINDS[kind][:]
    g.rng.shuffle(names)
    arrays = AOS_ARRAYS[kind][:]
    members: list[str] = []
    k = 0
    while k < width:
        if slots[k] is not None:
            members.append(slots[k])
            k += 1
            continue
        gap = next((e for e in range(k, width) if slots[e] is not None), width) - k
        fitting = [a for a in arrays if _field_count(a) <= gap]
        if fitting and g.rng.random() < 0.4:
            chosen = g.choice(fitting)
            arrays.remove(chosen)
            members.append(chosen)
            k += _field_count(chosen)
        else:
            members.append(names.pop())
            k += 1
    return members


def _field_count(declaration: str) -> int:
    """Scalars in a field declaration: 3 for spin[3]."""
    return int(declaration.split("[")[1].rstrip("]")) if "[" in declaration else 1


def _flat_members(members: list[str]) -> list[str]:
    """Member names per scalar slot, in declaration order (spin[3] takes three)."""
    return [m.split("[")[0] for m in members for _ in range(_field_count(m))]


# ---- branchy inner loop ---------------------------------------------------------------------------------------------

@pattern("cpu/branchy_select", bottleneck="branch_mispredictions", category=Category.BRANCH_DIVERGENCE,
         summary="stream compaction with an if per element mispredicts on random data; the branch-free version "
                 "stores every element and advances the slot by the comparison")
def branchy_select(g: Generation) -> Instance:
    # Two compaction passes (a partition written as two filters, or two arrays filtered), each an if per element:
    # neither loop nest holds half of the cycles, so the serial kernel is not a single dominant nest to share out
    # among cores, and the mispredictions of both passes together are the largest cost.
    dtype = g.choice(["float32", "float64"])
    ct, f = C_TYPE[dtype], MATH_SUFFIX[dtype]
    shape = g.choice(["partition", "indices", "pair"])
    n = g.choice([131072, 196608, 262144])
    threshold = g.choice([0.0, 0.1, -0.1, 0.2, -0.2])
    scalars: list[tuple[str, str, int | float]] = [("n", "int", n), ("threshold", ct, threshold)]
    x = g.choice(["x", "values", "samples", "data"]) if shape != "pair" else g.choice(["a", "lhs", "first"])
    zero = literal(0.0, dtype)
    band = g.rng.random() < 0.35
    if band:
        scalars.append(("width", ct, g.choice([0.5, 0.6, 0.4])))
        test = g.choice([(f"fabs{f}({{x}}[i] - threshold) < width", f"fabs{f}(v - threshold) < width"),
                         ("{x}[i] > threshold - width && {x}[i] < threshold + width",
                          "(v > threshold - width) & (v < threshold + width)")])
    else:
        op = g.choice([">=", ">", "<", "<="])
        test = (f"{{x}}[i] {op} threshold", f"v {op} threshold")
    negate = {">=": "<", ">": "<=", "<": ">=", "<=": ">"}
    if band:
        not_test = (f"!({test[0]})", f"!({test[1]})")
    else:
        not_test = (test[0].replace(op, negate[op]), test[1].replace(op, negate[op]))
    if shape == "pair":
        y = {"a": "b", "lhs": "rhs", "first": "second"}[x]
        fn = g.choice(["select_both", "filter_pair", "compact_two"])
        outs = [(f"{x}_sel", x, test), (f"{y}_sel", y, test)]
        what = f"the elements of {x} and of {y} that pass the test to the front of {x}_sel and {y}_sel"
        fill = zero
        store = "{src}[i]"
    else:
        hi, lo = g.choice([("passed", "failed"), ("hits", "misses"), ("keep", "rest")])
        outs = [(hi, x, test), (lo, x, not_test)]
        if shape == "indices":
            fn = g.choice(["split_indices", "where_split", "partition_positions"])
            what = f"the positions of the elements of {x} that pass the test to {hi}, of the others to {lo}"
            fill, store = "-1", "i"
        else:
            fn = g.choice(["partition", "split_by_threshold", "stable_partition"])
            what = f"the elements of {x} that pass the test to the front of {hi}, the others to the front of {lo}"
            fill, store = zero, "{src}[i]"
    out_type = "int" if shape == "indices" else ct
    out_dtype = "int32" if shape == "indices" else dtype
    inputs = [x] if shape != "pair" else [x, outs[1][1]]
    doc = (f"Stream compaction: copies\n{what},\nin order; the rest of each output is "
           f"{'-1' if fill == '-1' else 'zeroed'} and counts holds how many each got. "
           f"The test: {test[0].format(x='x').replace('[i]', '')}.")
    signature = wrap_call(f"void {fn}(", [*(f"const {ct} *{name}" for name in inputs),
                                          *(f"{out_type} *{o}" for o, _, _ in outs), "int *counts", "int n",
                                          *(f"{ct} {name}" for name, _, _ in scalars[1:])], ")")
    includes = "#include <math.h>\n\n" if "fabs" in test[0] else ""
    slow_passes = "".join(
        f"    int n{k} = 0;\n    for (int i = 0; i < n; i++) {{\n        if ({t[0].format(x=src)}) {{\n"
        f"            {o}[n{k}++] = {store.format(src=src)};\n        }}\n    }}\n"
        for k, (o, src, t) in enumerate(outs))
    tail = "".join(f"    counts[{k}] = n{k};\n" for k in range(2)) + "".join(
        f"    for (int i = n{k}; i < n; i++) {{\n        {o}[i] = {fill};\n    }}\n"
        for k, (o, _, _) in enumerate(outs))
    if shape == "pair":
        fast_passes = "".join(
            f"    int n{k} = 0;\n    for (int i = 0; i < n; i++) {{\n        {ct} v = {src}[i];\n"
            f"        {o}[n{k}] = v;\n        n{k} += {t[1]};\n    }}\n" for k, (o, src, t) in enumerate(outs))
        note = ("Each element is written at the next free slot, and the slot advances only when the element passes "
                "(a compare\nturned into an add), so random data costs no mispredictions; the slot after the last "
                "kept element is\noverwritten by the fill or lies past the end.")
    else:
        value = "v" if store != "i" else "i"
        fast_passes = (f"    int n0 = 0, n1 = 0;\n    for (int i = 0; i < n; i++) {{\n        {ct} v = {x}[i];\n"
                       f"        int take = {test[1]};\n        {outs[0][0]}[n0] = {value};\n"
                       f"        {outs[1][0]}[n1] = {value};\n        n0 += take;\n        n1 += 1 - take;\n    }}\n")
        note = ("One pass without a branch: every element is written to both outputs at their next free slots, and "
                "only the\nslot of the side it belongs to advances (a compare turned into an add); the other write "
                "is overwritten\nby a later element or by the fill.")
    slow = header_comment(doc) + includes + f"{signature} {{\n" + slow_passes + tail + "}\n"
    fast = header_comment(doc + "\n" + note) + includes + f"{signature} {{\n" + fast_passes + tail + "}\n"
    buffers = [*(Buffer(name, dtype, "n") for name in inputs),
               *(Buffer(o, out_dtype, "n", role="out") for o, _, _ in outs),
               Buffer("counts", "int32", "2", role="out")]
    size = ELEMENT_BYTES[dtype]
    small = {"n": 1000, **{name: value for name, _, value in scalars[1:]}}
    default = {"n": n, **{name: value for name, _, value in scalars[1:]}}
    exact = {"rtol": 0.0, "atol": 0.0}  # copies: bit-identical
    return g.instance(
        language="c", kernel=fn,
        description=f"two compaction passes over {n} random {dtype} values with an if per element: the branch goes "
                    "either way unpredictably",
        slow=slow, fast=fast, harness=c_harness(scalars, buffers, fn, tuple(name for name, _, _ in scalars)),
        outputs=[{"name": o, "dtype": out_dtype, **(exact if out_dtype != "int32" else {})} for o, _, _ in outs]
        + [{"name": "counts", "dtype": "int32"}],
        configs=[{"name": "small", "params": small}, {"name": "default", "params": default, "default": True}],
        build=CPU_BUILD,
        work={"flops": "2 * n", "bytes": f"{size} * {len(inputs) + 2} * n"},
        message=g.choice([f"{fn}: branchless compaction", f"remove the data-dependent branches in {fn}",
                          f"{fn}: avoid branch mispredictions on random input", "branch-free filter",
                          f"speed up {fn}", f"{fn}: predicated stores"]),
        params={"n": n, "dtype": dtype, "shape": shape, "band": band, "test": test[0].format(x=x)})


# ---- column-wise reduction walking a row-major matrix by columns ----------------------------------------------------

@pattern("cpu/column_reduce", bottleneck="cache_miss_bound", category=Category.MEMORY_ACCESS,
         summary="per-column reductions of a row-major matrix walk each column (a cache line per element); "
                 "accumulating all columns row by row reads the matrix contiguously")
def column_reduce(g: Generation) -> Instance:
    dtype = g.choice(["float32", "float64"])
    ct = C_TYPE[dtype]
    op = g.choice(["sum", "mean", "max", "sumsq"])
    fn = g.choice({"sum": ["column_sums", "col_sum", "sum_columns"],
                   "mean": ["column_means", "col_mean", "feature_means"],
                   "max": ["column_max", "col_max", "peak_per_column"],
                   "sumsq": ["column_energy", "col_sumsq", "column_power"]}[op])
    a, out = g.choice([("a", "out"), ("mat", "result"), ("data", "stats"), ("samples", "summary")])
    rows = g.choice([1024, 1536, 2048])
    cols = g.choice([256, 320, 384, 512]) if dtype == "float32" else g.choice([192, 256, 320])
    r, c = g.choice([("rows", "cols"), ("n", "m"), ("nrows", "ncols")])
    term = {"sumsq": "{v} * {v}"}.get(op, "{v}")
    init = {"max": f"{a}[{{j}}]"}.get(op, literal(0.0, dtype))
    start = "1" if op == "max" else "0"

    def combine(acc: str, v: str) -> str:
        if op == "max":
            return f"{acc} = {v} > {acc} ? {v} : {acc};"
        return f"{acc} += {term.format(v=v)};"

    finish = {"mean": f" / {r}"}.get(op, "")
    slow = (header_comment(f"{out}[j] = {op} over i of {a}[i][j] for a {r} x {c} row-major matrix.")
            + f"void {fn}(const {ct} *{a}, {ct} *{out}, int {r}, int {c}) {{\n"
            f"    for (int j = 0; j < {c}; j++) {{\n"
            f"        {ct} acc = {init.format(j='j')};\n"
            f"        for (int i = {start}; i < {r}; i++) {{\n"
            f"            {combine('acc', f'{a}[i * {c} + j]')}\n"
            f"        }}\n"
            f"        {out}[j] = acc{finish};\n"
            f"    }}\n}}\n")
    fin = (f"    for (int j = 0; j < {c}; j++) {{\n        {out}[j] = {out}[j]{finish};\n    }}\n" if finish else "")
    fast = (header_comment(f"{out}[j] = {op} over i of {a}[i][j] for a {r} x {c} row-major matrix.\nAll columns "
                           f"are accumulated together, row by row: the matrix is read contiguously, and every\n"
                           f"column still combines its elements in row order.")
            + f"void {fn}(const {ct} *{a}, {ct} *{out}, int {r}, int {c}) {{\n"
            f"    for (int j = 0; j < {c}; j++) {{\n        {out}[j] = {init.format(j='j')};\n    }}\n"
            f"    for (int i = {start}; i < {r}; i++) {{\n"
            f"        const {ct} *row = {a} + (long)i * {c};\n"
            f"        for (int j = 0; j < {c}; j++) {{\n"
            f"            {combine(f'{out}[j]', 'row[j]')}\n"
            f"        }}\n    }}\n{fin}}}\n")
    size = ELEMENT_BYTES[dtype]
    buffers = [Buffer(a, dtype, f"{r} * {c}"), Buffer(out, dtype, c, role="out")]
    return g.instance(
        language="c", kernel=fn,
        description=f"per-column {op} of a {rows}x{cols} {dtype} row-major matrix, one column at a time: the inner "
                    f"loop strides by {c} elements",
        slow=slow, fast=fast,
        harness=c_harness([(r, "int", rows), (c, "int", cols)], buffers, fn, (r, c)),
        outputs=[tolerance(out, dtype)],
        configs=[{"name": "small", "params": {r: 100, c: 37}},
                 {"name": "default", "params": {r: rows, c: cols}, "default": True}],
        build=CPU_BUILD, work={"flops": f"2 * {r} * {c}", "bytes": f"{size} * ({r} * {c} + {c})"},
        message=g.choice([f"{fn}: traverse the matrix row by row", f"cache-friendly {fn}",
                          f"{fn}: accumulate all columns per row instead of one column at a time", f"faster {fn}",
                          "fix strided access", f"{fn}: row-major traversal"]),
        params={"rows": rows, "cols": cols, "dtype": dtype, "op": op})
