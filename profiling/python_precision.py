"""Lower precision in a Python candidate, read from its syntax tree rather than from words in its source.

A Python candidate (Triton, or a torch target's ModelNew) is compiled by Triton's JIT or by PyTorch at run time,
so there is no object for the binary policy to read. What its tree says is the next best thing, and unlike a
pattern on the text it knows what a name is bound to:

- an attribute of a module the candidate imported (any alias: `import torch as t; t.float16`, `import
  triton.language as lang; lang.bfloat16`, `numpy.float16`) named like a low-precision dtype;
- a name imported from such a module (`from torch import half as h`);
- a tensor method that converts (`x.half()`, `x.bfloat16()`, `x.type(torch.HalfTensor)`);
- a dtype spelled as a string (`x.astype("float16")`, `x.type("torch.HalfTensor")`);
- TF32 switched on (`... .allow_tf32 = True`, `set_float32_matmul_precision("high")`, `input_precision="tf32"`).

A variable, parameter or attribute of the candidate's own that happens to be named `half` is not any of these and
is never flagged (the old word check rejected a legitimate `half = n // 2`). What a tree cannot see (a dtype built
at run time from pieces) is the numeric check's to catch: an fp32 task's tolerance is tighter than half precision.
"""

from __future__ import annotations

import ast

from profiling.python_policy import root_name

# dtype names of 16 bits or fewer in torch, triton.language and numpy
LOW_DTYPES = frozenset({
    "float16", "half", "bfloat16", "float8", "float8e4nv", "float8e5", "float8e4b8", "float8e5b16", "float8e4b15",
    "float8_e4m3fn", "float8_e5m2", "float8_e4m3fnuz", "float8_e5m2fnuz", "float8_e8m0fnu", "HalfTensor",
    "BFloat16Tensor", "chalf", "complex32",
})
# the same as strings ("half" alone is too common a word in strings to be read as one)
LOW_DTYPE_STRINGS = LOW_DTYPES - {"half"}
# tensor methods that convert to a low precision when called without arguments
LOW_METHODS = frozenset({"half", "bfloat16"})
# modules whose attributes are dtypes (any submodule counts: torch.cuda.HalfTensor, triton.language.float16)
DTYPE_MODULES = ("torch", "triton", "numpy")
# calls that read a dtype's limits without computing in it
TYPE_QUERIES = frozenset({"finfo", "iinfo"})
# Triton's dot precisions that are TF32 (as strings anywhere: held in a variable they are still these words)
TF32_DOT_PRECISIONS = frozenset({"tf32", "tf32x3"})
# matmul precisions that allow TF32 (PyTorch's "high" and "medium")
TF32_PRECISIONS = frozenset({"high", "medium"})


def low_precision_uses(code: str) -> list[tuple[int, str]] | None:
    """(line, what) for each low-precision use the tree shows, or None when the code does not parse (the caller
    falls back to its text patterns; the run itself will fail on a syntax error)."""
    try:
        tree = ast.parse(code)
    except (SyntaxError, ValueError):
        return None
    modules, imported_low = _bindings(tree)
    # a comparison or a type-limit query reads a dtype without converting anything (`x.dtype == torch.float16`,
    # torch.finfo(torch.float16).max): innocent
    innocent = {id(child) for node in ast.walk(tree) if isinstance(node, ast.Compare) or _is_type_query(node)
                for child in ast.iter_child_nodes(node)}
    innocent |= {id(element) for node in ast.walk(tree) if isinstance(node, ast.Compare)
                 for side in node.comparators if isinstance(side, ast.Tuple | ast.List | ast.Set)
                 for element in side.elts}
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if id(node) in innocent:
            continue
        what = _low_precision(node, modules, imported_low)
        if what:
            found.append((node.lineno, what))
    return sorted(set(found))


def _is_dtype_module(name: str) -> bool:
    return name.split(".")[0] in DTYPE_MODULES


def _bindings(tree: ast.AST) -> tuple[set[str], set[str]]:
    """The local names bound to dtype modules, and those bound to low dtypes imported by name."""
    modules: set[str] = set()
    imported_low: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if _is_dtype_module(alias.name):
                    # `import triton.language` binds `triton`; `import triton.language as tl` binds `tl`
                    modules.add(alias.asname or alias.name.split(".")[0])
        elif isinstance(node, ast.ImportFrom) and node.module and _is_dtype_module(node.module):
            for alias in node.names:
                if alias.name in LOW_DTYPES:
                    imported_low.add(alias.asname or alias.name)
                else:  # `from triton import language as tl`, `from torch import cuda`
                    modules.add(alias.asname or alias.name)
    # names assigned from those (`T = torch`, `L = triton.language`, `h = torch.float16`), to a fixed point
    assignments = [node for node in ast.walk(tree) if isinstance(node, ast.Assign)]
    for _ in range(len(assignments)):
        grown = False
        for node in assignments:
            value = node.value
            is_low = (isinstance(value, ast.Attribute) and value.attr in LOW_DTYPES
                      and root_name(value.value) in modules
                      or isinstance(value, ast.Name) and value.id in imported_low)
            is_module = not is_low and isinstance(value, ast.Name | ast.Attribute) and root_name(value) in modules
            bound = imported_low if is_low else modules if is_module else None
            for target in node.targets if bound is not None else ():
                if isinstance(target, ast.Name) and target.id not in bound:
                    bound.add(target.id)
                    grown = True
        if not grown:
            break
    return modules, imported_low


def _is_type_query(node: ast.AST) -> bool:
    return (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute | ast.Name)
            and (node.func.attr if isinstance(node.func, ast.Attribute) else node.func.id) in TYPE_QUERIES)


def _low_precision(node: ast.AST, modules: set[str], imported_low: set[str]) -> str | None:
    if isinstance(node, ast.Attribute) and node.attr in LOW_DTYPES and root_name(node.value) in modules:
        return ast.unparse(node)
    if isinstance(node, ast.Name) and node.id in imported_low and isinstance(node.ctx, ast.Load):
        return node.id
    # a dtype by its string name (astype, np.dtype, Tensor.type); the last dotted part is the dtype
    if (isinstance(node, ast.Constant) and isinstance(node.value, str) and " " not in node.value
            and (node.value.rsplit(".", 1)[-1] in LOW_DTYPE_STRINGS or node.value in TF32_DOT_PRECISIONS)):
        return repr(node.value)
    if isinstance(node, ast.Call):
        return _low_precision_call(node)
    if isinstance(node, ast.Assign | ast.AugAssign | ast.AnnAssign):
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        if _truthy(node.value) and any(isinstance(t, ast.Attribute) and t.attr == "allow_tf32" for t in targets):
            return "allow_tf32 switched on"
    return None


def _low_precision_call(node: ast.Call) -> str | None:
    function = node.func
    name = function.attr if isinstance(function, ast.Attribute) else getattr(function, "id", None)
    if isinstance(function, ast.Attribute) and name in LOW_METHODS and not node.args and not node.keywords:
        return f".{name}()"
    if name == "set_float32_matmul_precision" and node.args:
        argument = node.args[0]
        if isinstance(argument, ast.Constant) and argument.value in TF32_PRECISIONS:
            return f"set_float32_matmul_precision({argument.value!r})"
    for keyword in node.keywords:
        value = keyword.value
        if keyword.arg == "allow_tf32" and _truthy(value):
            return "allow_tf32 switched on"
    return None


def _truthy(node: ast.expr | None) -> bool:
    """A constant that switches a flag on (True, 1, "yes"); a name or call is not known here."""
    return isinstance(node, ast.Constant) and bool(node.value)
