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
}
# dunder names a candidate may use as attributes or names: constructors of a module's class and a function's name
ALLOWED_DUNDERS = frozenset({"__init__", "__name__"})


def _allowed_module(name: str) -> bool:
    return any(name == allowed or name.startswith(allowed + ".") for allowed in ALLOWED_MODULES)


def _dunder(name: str) -> bool:
    return len(name) > 4 and name.startswith("__") and name.endswith("__")


def policy_problems(code: str) -> list[tuple[int, str]]:
    """(line, message) for every import outside ALLOWED_MODULES and every dunder attribute or name outside
    ALLOWED_DUNDERS; nothing when the code does not parse (the `parses` check says so)."""
    try:
        tree = ast.parse(code)
    except (SyntaxError, ValueError, RecursionError):
        return []
    problems = []
    allowed = ", ".join(sorted(ALLOWED_MODULES))
    for node in ast.walk(tree):
        line = getattr(node, "lineno", 0)
        if isinstance(node, ast.Import):
            problems += [(line, f"imports {alias.name}: a kernel may import only {allowed}")
                         for alias in node.names if not _allowed_module(alias.name)]
        elif isinstance(node, ast.ImportFrom):
            module = "." * node.level + (node.module or "")
            if node.level or not _allowed_module(module):
                problems.append((line, f"imports from {module}: a kernel may import only {allowed}"))
        elif isinstance(node, ast.Attribute) and _dunder(node.attr) and node.attr not in ALLOWED_DUNDERS:
            problems.append((line, f"reaches the interpreter's internals through .{node.attr}"))
        elif isinstance(node, ast.Name) and _dunder(node.id) and node.id not in ALLOWED_DUNDERS:
            problems.append((line, f"uses the interpreter's {node.id}"))
        elif isinstance(node, ast.MatchClass):
            problems += [(line, f"reaches the interpreter's internals through a pattern's {name}")
                         for name in node.kwd_attrs if _dunder(name)]
    return problems


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
