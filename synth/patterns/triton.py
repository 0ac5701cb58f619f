"""Triton patterns of the catalogue. The slow and fast versions launch the same grid with the same number of warps
and differ only in the planted problem, so a profile of the slow version shows that problem first and not a launch
configuration (an H100 profile of the hand-written row_sum_strided example named low occupancy first: its slow
version launched fewer programs with fewer busy lanes than its fast one).

The kernels run under Triton's interpreter on a CPU (TRITON_INTERPRET=1), which is how their correctness is
checked where no GPU is at hand; timing and profiles need a GPU.
"""

from __future__ import annotations

from typing import Any

from perfforge.records import Category
from synth.instance import Instance
from synth.patterns import Generation, pattern
from synth.variation import python_harness

TORCH_DTYPE = {"float32": "torch.float32", "float16": "torch.float16"}
ELEMENT_BYTES = {"float32": 4, "float16": 2}
# Same arithmetic per element on both sides: equal up to the compiler's contraction of a multiply and an add
# into one FMA, which both versions get alike (the expressions are the same); a float16 output carries one
# rounding of the float32 result, the same on both sides too.
SAME_ELEMENT_TOLERANCE = {"float32": (1e-6, 1e-6), "float16": (1e-3, 1e-3)}


def output(name: str, dtype: str, rtol: float | None = None, atol: float | None = None) -> dict[str, Any]:
    default_rtol, default_atol = SAME_ELEMENT_TOLERANCE[dtype]
    return {"name": name, "dtype": dtype, "rtol": default_rtol if rtol is None else rtol,
            "atol": default_atol if atol is None else atol}


MODULE_HEAD = '"""{doc}"""\n\nimport torch\nimport triton\nimport triton.language as tl\n\n'


# ---- uncoalesced access ---------------------------------------------------------------------------------------------

# Per-element bodies over the loaded x, the column's parameters p[j] and q[j] (loaded with the same mask), and
# what they compute.
COLUMN_OPS = {
    "affine": ("y = x * {p} + {q}", "x[i, j] * {p}[j] + {q}[j]", 2),
    "standardise": ("y = (x - {p}) * {q}", "(x[i, j] - {p}[j]) * {q}[j]", 2),
    "scale_relu": ("y = tl.maximum(x * {p}, 0.0)", "relu(x[i, j] * {p}[j])", 1),
    "clip": ("y = tl.minimum(tl.maximum(x, -{p}), {p})", "x[i, j] clipped to [-{p}[j], {p}[j]]", 1),
}


@pattern("triton/column_major_index", bottleneck="uncoalesced_global_access", category=Category.MEMORY_ACCESS,
         summary="an element-wise kernel over a row-major matrix numbers its elements column by column, so the "
                 "lanes of a warp touch addresses n elements apart; numbering them row by row coalesces")
def column_major_index(g: Generation) -> Instance:
    dtype = g.choice(["float32", "float32", "float16"])
    op = g.choice(sorted(COLUMN_OPS))
    body, what, nparams = COLUMN_OPS[op]
    p, q = g.choice([("scale", "shift"), ("gain", "offset"), ("w", "b")]) if op != "standardise" else g.choice(
        [("mean", "inv_std"), ("mu", "rstd"), ("centre", "inv_scale")])
    if op == "clip":
        p = g.choice(["limit", "bound", "cap"])
    params = [p, q][:nparams]
    x, out = g.choice([("x", "out"), ("src", "dst"), ("a", "y")])
    fn = g.choice({"affine": ["column_affine", "scale_shift_columns", "per_feature_affine"],
                   "standardise": ["standardise_columns", "normalise_features", "column_zscore"],
                   "scale_relu": ["scaled_relu", "column_scale_relu", "gain_relu"],
                   "clip": ["clip_columns", "column_clamp", "bounded_features"]}[op])
    kname = f"{fn}_kernel"
    block = g.choice([512, 1024, 2048])
    warps = g.choice([4, 8])
    m = g.choice([4096, 6144, 8192])
    n = g.choice([2048, 3072, 4096])
    extra_row_bias = g.rng.random() < 0.3  # a per-row term as well: + rb[i]
    doc = f"{out}[i, j] = {what.format(p=p, q=q)}" + (" + rb[i]" if extra_row_bias else "") + \
        f" over a row-major m x n {dtype} matrix."
    load_params = "".join(f"    {name} = tl.load({name}_ptr + col, mask=mask)\n" for name in params)
    row_bias = "    y += tl.load(rb_ptr + row, mask=mask)\n" if extra_row_bias else ""
    args = ", ".join([f"{x}_ptr", *(f"{name}_ptr" for name in params), *(["rb_ptr"] if extra_row_bias else []),
                      f"{out}_ptr", "m", "n"])
    cast = f".to({out}_ptr.dtype.element_ty)" if dtype != "float32" else ""
    names = [x, *params, *(["rb"] if extra_row_bias else []), out]  # the launcher's arguments

    def kernel(slow: bool) -> str:
        if slow:
            index = ("    # element k of the matrix taken column by column: consecutive k walk down a column\n"
                     "    row = k % m\n    col = k // m\n    offs = row * n + col\n")
        else:
            index = ("    # element k of the matrix taken row by row: consecutive k are consecutive addresses\n"
                     "    row = k // n\n    col = k % n\n    offs = k\n")
        compute = "x.to(tl.float32)" if dtype != "float32" else "x"
        return (MODULE_HEAD.format(doc=doc) + f"BLOCK = {block}\nNUM_WARPS = {warps}\n\n\n@triton.jit\n"
                f"def {kname}({args}, BLOCK: tl.constexpr):\n"
                f"    k = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)\n    mask = k < m * n\n{index}"
                f"    x = tl.load({x}_ptr + offs, mask=mask)\n"
                + (f"    x = {compute}\n" if compute != "x" else "")
                + load_params + f"    {body.format(p=p, q=q)}\n" + row_bias
                + f"    tl.store({out}_ptr + offs, y{cast}, mask=mask)\n\n\n"
                f"def {fn}({', '.join(names)}, m: int, n: int) -> None:\n"
                f"    grid = (triton.cdiv(m * n, BLOCK),)\n"
                f"    {kname}[grid]({', '.join(names)}, m, n, "
                f"BLOCK=BLOCK, num_warps=NUM_WARPS)\n")

    low_high = {"affine": (-1.0, 1.0), "standardise": (0.5, 2.0), "scale_relu": (-2.0, 2.0), "clip": (0.25, 0.75)}
    lo, hi = low_high[op]
    buffers = [(x, dtype, "(m, n)", -1.0, 1.0, False), *((name, "float32", "n", lo, hi, False) for name in params)]
    if extra_row_bias:
        buffers.append(("rb", "float32", "m", -1.0, 1.0, False))
    buffers.append((out, dtype, "(m, n)", 0.0, 0.0, True))
    call = f"kernel.{fn}({', '.join(names)}, m, n)"
    size = ELEMENT_BYTES[dtype]
    return g.instance(
        language="python", kernel=kname,
        description=f"element-wise {op} of an m x n {dtype} matrix whose programs take BLOCK elements in column "
                    "order: a warp's lanes read and write n elements apart",
        slow=kernel(True), fast=kernel(False),
        harness=python_harness({"m": m, "n": n}, {}, buffers, call, f"Harness of {fn}: x is m x n, the column "
                                                             f"parameters have n entries."),
        outputs=[output(out, dtype)],
        configs=[{"name": "small", "params": {"m": 37, "n": 45}},
                 {"name": "default", "params": {"m": m, "n": n}, "default": True}],
        work={"flops": f"{2 + nparams} * m * n", "bytes": f"2 * {size} * m * n + 4 * {nparams} * n"},
        message=g.choice([f"{fn}: index the matrix row by row so loads coalesce", f"coalesce memory access in {kname}",
                          f"{fn}: fix strided global loads", "coalesced indexing", f"speed up {fn}",
                          f"{kname}: walk rows, not columns"]),
        params={"m": m, "n": n, "dtype": dtype, "op": op, "block": block, "warps": warps,
                "row_bias": extra_row_bias})


# ---- unfused element-wise chain -------------------------------------------------------------------------------------

# Steps of a chain: (name, arguments beyond the running value, Triton expression over v, what it computes).
CHAIN_STEPS = {
    "scale": (["alpha"], "v * alpha", "alpha *"),
    "bias": (["bias"], "v + tl.load(bias_ptr + offs, mask=mask)", "+ bias"),
    "relu": ([], "tl.maximum(v, 0.0)", "relu"),
    "gate": (["gate"], "v * tl.load(gate_ptr + offs, mask=mask)", "* gate"),
    "sigmoid": ([], "1.0 / (1.0 + tl.exp(-v))", "sigmoid"),
    "clamp": (["limit"], "tl.minimum(tl.maximum(v, -limit), limit)", "clamp"),
    "residual": (["res"], "v + tl.load(res_ptr + offs, mask=mask)", "+ res"),
    "square": ([], "v * v", "square"),
}
SCALARS = {"alpha": (0.5, 2.0), "limit": (0.5, 1.5)}  # scalar arguments and the range they are drawn from


@pattern("triton/unfused_chain", bottleneck="unfused_elementwise_chain", category=Category.FUSION,
         summary="a chain of element-wise steps runs as one kernel per step with temporaries in global memory; one "
                 "kernel computes the chain in registers")
def unfused_chain(g: Generation) -> Instance:
    dtype = "float32"
    length = g.choice([2, 3, 3, 4])
    first = g.choice(["scale", "bias", "gate", "residual"])
    rest = [s for s in CHAIN_STEPS if s != first]
    g.rng.shuffle(rest)
    steps = [first, *rest[: length - 1]]
    scalars = {name: round(g.rng.uniform(*SCALARS[name]), 3) for step in steps for name in CHAIN_STEPS[step][0]
               if name in SCALARS}
    vectors = [name for step in steps for name in CHAIN_STEPS[step][0] if name not in SCALARS]
    x, out = g.choice([("x", "out"), ("inp", "y"), ("h", "act")])
    block = g.choice([512, 1024, 2048])
    warps = g.choice([4, 8])
    n = g.choice([8388608, 12582912, 16777216])
    fn = g.choice(["epilogue", "pointwise_chain", "activation", "post_process", "fused_ops"])
    doc = f"{out} = {' -> '.join(CHAIN_STEPS[s][2] for s in steps)} applied element-wise to {x} ({n} float32 values)."

    def params_of(step: str) -> list[str]:
        return [f"{a}_ptr" if a not in SCALARS else a for a in CHAIN_STEPS[step][0]]

    slow_kernels = []
    for step in steps:
        name = f"{step}_kernel"
        args = ", ".join(["in_ptr", *params_of(step), "out_ptr", "n"])
        slow_kernels.append(
            f"@triton.jit\ndef {name}({args}, BLOCK: tl.constexpr):\n"
            f"    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)\n    mask = offs < n\n"
            f"    v = tl.load(in_ptr + offs, mask=mask)\n"
            f"    tl.store(out_ptr + offs, {CHAIN_STEPS[step][1]}, mask=mask)\n")
    signature = f"def {fn}({', '.join([x, *vectors, out])}, n: int{''.join(f', {s}: float' for s in scalars)}) -> None:"
    temps = [f"t{k}" for k in range(len(steps) - 1)]
    launches = []
    for k, step in enumerate(steps):
        src = x if k == 0 else temps[k - 1]
        dst = out if k == len(steps) - 1 else temps[k]
        launches.append(f"    {step}_kernel[grid]({', '.join([src, *CHAIN_STEPS[step][0], dst])}, n, BLOCK=BLOCK, "
                        "num_warps=NUM_WARPS)")
    slow = (MODULE_HEAD.format(doc=doc) + f"BLOCK = {block}\nNUM_WARPS = {warps}\n\n\n"
            + "\n\n".join(slow_kernels) + "\n\n" + signature + "\n"
            + "".join(f"    {t} = torch.empty_like({x})\n" for t in temps)
            + "    grid = (triton.cdiv(n, BLOCK),)\n" + "\n".join(launches) + "\n")
    fused_name = f"{fn}_kernel"
    fused_args = ", ".join([f"{x}_ptr", *dict.fromkeys(a for s in steps for a in params_of(s)), f"{out}_ptr", "n"])
    body = "".join(f"    v = {CHAIN_STEPS[s][1]}\n" for s in steps)
    fast = (MODULE_HEAD.format(doc=doc + "\nOne kernel: the chain runs in registers, reading x once and writing "
                                         "out once.") + f"BLOCK = {block}\nNUM_WARPS = {warps}\n\n\n"
            f"@triton.jit\ndef {fused_name}({fused_args}, BLOCK: tl.constexpr):\n"
            f"    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)\n    mask = offs < n\n"
            f"    v = tl.load({x}_ptr + offs, mask=mask)\n{body}"
            f"    tl.store({out}_ptr + offs, v, mask=mask)\n\n\n{signature}\n"
            "    grid = (triton.cdiv(n, BLOCK),)\n"
            f"    {fused_name}[grid]({', '.join([x, *dict.fromkeys(a for s in steps for a in CHAIN_STEPS[s][0]), out])}"
            ", n, BLOCK=BLOCK, num_warps=NUM_WARPS)\n")
    buffers = [(x, dtype, "n", -1.0, 1.0, False), *((v, dtype, "n", -1.0, 1.0, False) for v in vectors),
               (out, dtype, "n", 0.0, 0.0, True)]
    call = f"kernel.{fn}({', '.join([x, *vectors, out])}, n{''.join(f', {s}' for s in scalars)})"
    # The unfused steps round every intermediate to float32 in memory, as the fused kernel rounds it in registers;
    # the fused kernel may contract a multiply and the following add into one FMA (one rounding fewer): at most half
    # an ulp of the product, under 1e-7 for these values in [-2, 2], which atol covers where the sum cancels.
    rtol, atol = 1e-5, 1e-6
    return g.instance(
        language="python", kernel="|".join(f"{s}_kernel" for s in steps),
        description=f"{length} element-wise steps ({', '.join(steps)}) as {length} kernels with {length - 1} "
                    "temporaries in global memory; one kernel suffices",
        slow=slow, fast=fast,
        harness=python_harness({"n": n}, scalars, buffers, call, f"Harness of {fn}: every array has n float32 values."),
        outputs=[output(out, dtype, rtol, atol)],
        configs=[{"name": "small", "params": {"n": 5000, **scalars}},
                 {"name": "default", "params": {"n": n, **scalars}, "default": True}],
        work={"flops": f"{length} * n", "bytes": f"4 * {2 + len(vectors)} * n"},
        message=g.choice([f"fuse the {fn} chain into one kernel", f"{fn}: single fused kernel",
                          f"Fuse {' + '.join(steps)}", "kernel fusion", f"speed up {fn}: no temporaries",
                          f"{fn}: one pass over memory"]),
        params={"n": n, "steps": steps, "block": block, "warps": warps})
