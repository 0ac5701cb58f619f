"""What a Python candidate may import and reach, read from its syntax tree (the Python side of binary_policy.py).

A Python candidate runs in an interpreter it can rewrite, so the judge's timing and checks live in another process
(profiling/served.py) and the kernel-level fences (Landlock, seccomp) hold whatever the code does. This is the
first filter in front of them, and it reads what the interpreter will run rather than words:

- imports: only the modules a kernel needs (ALLOWED_MODULES, each with its reason); the ninth red team reached
  the process and the file system through modules a deny-list did not name (`pydoc.locate("os")`, `import posix`,
  `_thread`, `marshal`, `operator.attrgetter` for attributes by string);
- dunder attributes: `x.__class__.__mro__`, `__dict__` and their kind walk from any object to the interpreter's
  internals (a `match` class pattern reads them as keywords: `case C(__dict__=d)`); only `__init__` (a module's
  `super().__init__()`) and `__name__` are allowed;
- aliases: `from torch import sum as s` or `import torch.nn.functional as F` hide a library routine's name from
  the library check, so `qualified_names` writes the tree out with every imported alias spelled in full.
"""

from __future__ import annotations

import ast
import functools

# module (a dotted prefix: its submodules too) -> why a kernel needs it
ALLOWED_MODULES = {
    "__future__": "annotations and other language switches",
    "math": "scalar maths in a kernel's set-up (grid sizes, scales)",
    "torch": "the tensors a kernel is handed and its launch (torch.utils.cpp_extension for inline CUDA)",
    "triton": "the Triton language and its launcher",
    "numpy": "array set-up on the host",
    "functools": "caching a compiled kernel or a launch configuration",
    "itertools": "enumerating tile shapes",
    "typing": "type hints",
    "dataclasses": "a launch configuration as a record",
    "collections": "named tuples and ordered records of configurations",
    "enum": "kernel variants as an enum",
    "warnings": "a warning when a shape falls back to a slower path",
    "copy": "copying a configuration",
    "random": "a seeded choice among configurations",
}
# dunder names a candidate may use as attributes or names: a module class's constructor and call, names, versions
# and declarations that read or declare, never reach (the tenth red team found honest answers refused for each)
ALLOWED_DUNDERS = frozenset({"__init__", "__call__", "__repr__", "__name__", "__qualname__", "__class__",
                             "__version__", "__all__", "__slots__"})
# builtins that reach any attribute, namespace or code by a string: refused wherever read, not only called (`g =
# getattr; g(torch, "o" + "s")` is the os module)
REFLECTIVE_BUILTINS = frozenset({"getattr", "setattr", "delattr", "eval", "exec", "compile", "vars", "globals",
                                 "locals", "__import__", "breakpoint", "open", "input"})
# attributes of the allowed packages that reach files, native code or the interpreter's machinery (torch, numpy
# and triton re-export them; the tenth red team read a file with torch.from_file and reached os through
# numpy.ctypeslib)
DENIED_ATTRIBUTES = frozenset({"os", "sys", "subprocess", "builtins", "ctypes", "ctypeslib", "f2py", "from_file",
                               "serialization", "hub", "package", "load_library", "npyio", "fromregex", "fromfile",
                               "memmap", "DataSource", "_dynamo", "_C"})
# (receiver, attribute) pairs refused where the attribute alone is innocent (tl.load is Triton's; triton.testing's
# do_bench is a benchmark, numpy.testing builds C extensions)
DENIED_PAIRS = frozenset({("jit", "load"), ("jit", "save"), ("rec", "fromfile"), ("numpy", "testing"),
                          ("np", "testing")})


def _denied_path(dotted: str) -> str | None:
    """The part of a dotted module path that DENIED_ATTRIBUTES or DENIED_PAIRS refuse (`numpy.ctypeslib`,
    `numpy.testing.extbuild`), or None."""
    parts = dotted.split(".")
    for index, part in enumerate(parts):
        if part in DENIED_ATTRIBUTES or (index and (parts[index - 1], part) in DENIED_PAIRS):
            return ".".join(parts[:index + 1])
    return None


def _allowed_module(name: str) -> bool:
    return any(name == allowed or name.startswith(allowed + ".") for allowed in ALLOWED_MODULES)


def _dunder(name: str) -> bool:
    return len(name) > 4 and name.startswith("__") and name.endswith("__")


@functools.lru_cache(maxsize=8)
def _parsed(code: str) -> ast.Module | None:
    """The code's syntax tree, parsed once for the checks that read it (never mutated here); None when it does not
    parse (the `parses` check says so)."""
    try:
        return ast.parse(code)
    except (SyntaxError, ValueError, RecursionError):
        return None


def policy_problems(code: str) -> list[tuple[int, str]]:
    """(line, message) for every import outside ALLOWED_MODULES and every dunder attribute or name outside
    ALLOWED_DUNDERS; nothing when the code does not parse."""
    tree = _parsed(code)
    if tree is None:
        return []
    problems = []
    allowed = ", ".join(sorted(ALLOWED_MODULES))
    for node in ast.walk(tree):
        line = getattr(node, "lineno", 0)
        if isinstance(node, ast.Import):
            problems += [(line, f"imports {alias.name}: a kernel may import only {allowed}")
                         for alias in node.names if not _allowed_module(alias.name)]
            problems += _denied_imports(line, [alias.name for alias in node.names])
        elif isinstance(node, ast.ImportFrom):
            module = "." * node.level + (node.module or "")
            if node.level or not _allowed_module(module):
                problems.append((line, f"imports from {module}: a kernel may import only {allowed}"))
            problems += _denied_imports(line, [f"{module}.{alias.name}" for alias in node.names])
        elif isinstance(node, ast.Attribute):
            problems += _attribute_problems(node)
        elif isinstance(node, ast.Name) and node.id in REFLECTIVE_BUILTINS:
            problems.append((line, f"uses {node.id}, which reaches code or attributes by a string"))
        elif isinstance(node, ast.Name) and _dunder(node.id) and node.id not in ALLOWED_DUNDERS:
            problems.append((line, f"uses the interpreter's {node.id}"))
        elif isinstance(node, ast.MatchClass):
            problems += [(line, f"reaches the interpreter's internals through a pattern's {name}")
                         for name in node.kwd_attrs if _dunder(name)]
    return problems


def _denied_imports(line: int, dotted_names: list[str]) -> list[tuple[int, str]]:
    denied = (_denied_path(name) for name in dotted_names)
    return [(line, f"imports {path}, which reaches files or native code") for path in denied if path]


def _attribute_problems(node: ast.Attribute) -> list[tuple[int, str]]:
    line, name = node.lineno, node.attr
    if _dunder(name) and name not in ALLOWED_DUNDERS:
        return [(line, f"reaches the interpreter's internals through .{name}")]
    if name in DENIED_ATTRIBUTES:
        return [(line, f"reaches files, native code or the interpreter through .{name}")]
    if isinstance(node.value, ast.Attribute | ast.Name) and (_last_name(node.value), name) in DENIED_PAIRS:
        return [(line, f"reaches files through .{_last_name(node.value)}.{name}")]
    if name in ("format", "format_map") and not isinstance(node.value, ast.Constant):
        # "{0.os}".format(torch) walks attributes named in the string: only a literal's fields are read here
        return [(line, f"formats a string built at run time with .{name} (its fields can walk attributes)")]
    return []


def _last_name(node: ast.expr) -> str:
    return node.attr if isinstance(node, ast.Attribute) else node.id if isinstance(node, ast.Name) else ""


def host_library_uses(code: str, methods: frozenset[str], matmul_operator: bool) -> list[tuple[int, str]]:
    """(line, message) for every library routine in `methods` that host code (anything outside a function
    decorated with a Triton jit) reads as an attribute, whatever the receiver, and every `@` where
    `matmul_operator`; nothing when the code does not parse. Inside a Triton kernel `x.sum` is Triton's."""
    tree = _parsed(code)
    if tree is None:
        return []
    problems: list[tuple[int, str]] = []
    pending: list[ast.AST] = [tree]
    namespaces: set[int] = set()  # attributes read only to reach another (torch.backends.cuda.matmul.allow_tf32)
    while pending:
        node = pending.pop()
        if isinstance(node, ast.FunctionDef) and any(_triton_decorator(d) for d in node.decorator_list):
            continue  # a Triton kernel: its reductions and dots are the kernel's own
        if isinstance(node, ast.Attribute):
            namespaces.add(id(node.value))
            # a module's own member (self.linear, built in __init__) is its business; a routine stored there
            # was read where it was stored
            own = isinstance(node.value, ast.Name) and node.value.id == "self"
            if node.attr in methods and not own and id(node) not in namespaces:
                problems.append((node.lineno, f"uses library routine .{node.attr} in host code"))
        elif matmul_operator and isinstance(node, ast.BinOp | ast.AugAssign) and isinstance(node.op, ast.MatMult):
            problems.append((node.lineno, "multiplies matrices with @ in host code"))
        pending.extend(ast.iter_child_nodes(node))
    return problems


# a decorator written bare in the source may be Triton's (`from triton import jit`); the library check also reads
# the tree with imported names in full, where one imported from elsewhere (`from torch.jit import script as jit`)
# no longer is
_BARE_TRITON_DECORATORS = frozenset({"jit", "autotune", "heuristics"})


def _triton_decorator(decorator: ast.expr) -> bool:
    """Whether a decorator (or the call a decorator factory makes) is Triton's: a dotted name under `triton`. Any
    other (`@torch.jit.script`, whose body PyTorch runs on the host) leaves the function host code."""
    target = decorator.func if isinstance(decorator, ast.Call) else decorator
    parts: list[str] = []
    while isinstance(target, ast.Attribute):
        parts.insert(0, target.attr)
        target = target.value
    if not isinstance(target, ast.Name):
        return False
    return target.id == "triton" or (not parts and target.id in _BARE_TRITON_DECORATORS)


class _Qualify(ast.NodeTransformer):
    """Names bound by imports written as the dotted names they stand for (`s` -> `torch.sum`)."""

    def __init__(self, aliases: dict[str, str]) -> None:
        self.aliases = aliases

    def visit_Name(self, node: ast.Name) -> ast.AST:
        full = self.aliases.get(node.id)
        if full is None or not isinstance(node.ctx, ast.Load):
            return node
        qualified: ast.expr = ast.Name(full.split(".")[0], ast.Load())
        for part in full.split(".")[1:]:
            qualified = ast.Attribute(qualified, part, ast.Load())
        return ast.copy_location(qualified, node)


def qualified_names(tree: ast.Module) -> ast.Module:
    """The tree with every name an import bound under another name (`import torch.nn.functional as F`, `from torch
    import sum as s`, `from torch import matmul`) written in full where it is read."""
    aliases: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            aliases.update({alias.asname: alias.name for alias in node.names if alias.asname})
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            aliases.update({alias.asname or alias.name: f"{node.module}.{alias.name}"
                            for alias in node.names if alias.name != "*"})
    aliases = {name: full for name, full in aliases.items() if name != full}
    return _Qualify(aliases).visit(tree) if aliases else tree
