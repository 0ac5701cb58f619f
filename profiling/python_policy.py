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
  the library check, so `qualified_names` writes the tree out with every imported alias spelled in full;
- code in strings: `typing.get_type_hints` evaluates string annotations with eval, where no check reads them (the
  seventeenth red team reached `os` through `"object.__getattribute__"` and `"torch.serialization.load"`): the
  evaluators are refused (STRING_EVALUATORS), and a string annotation must read as a type (a name, a dotted name, a
  subscript of them) that passes every check here as if written as code;
- private members of modules (`typing._eval_type`, `warnings._setoption`, which imports a module by a string): a
  kernel uses a library's public names;
- host code of a Triton candidate (`triton_host_problems`): an allow-list of what it may do with torch, numpy and
  tensors (allocate, read shapes, launch), where a deny-list of library routines missed `torch.addmv`,
  `functools.reduce(torch.add, ...)`, `np.add.reduce` and a `+=` over `unbind(1)`.
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
# what evaluates a string as code: typing's evaluation of annotations and forward references (a candidate reads its
# annotations as types without them), and TorchScript's compilation of source strings
STRING_EVALUATORS = frozenset({"get_type_hints", "ForwardRef", "get_annotations", "evaluate_forward_ref",
                               "eval_type", "_eval_type", "_evaluate", "evaluate", "CompilationUnit",
                               "annotationlib"})
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
    """(line, message) for every import outside ALLOWED_MODULES, every dunder attribute or name outside
    ALLOWED_DUNDERS, every string evaluator and private member of a module, and every string annotation that does
    not read as a type or whose code fails these checks; nothing when the code does not parse."""
    tree = _parsed(code)
    if tree is None:
        return []
    problems: list[tuple[int, str]] = []
    modules = _module_names(tree)
    for line, text, parsed in string_annotations(tree):
        if parsed is None:
            problems.append((line, f"annotates with the string {text[:60]!r}, which does not read as a type "
                                   "(typing evaluates string annotations as code)"))
        else:  # what eval would run, checked as code (its nodes carry the string's own line numbers)
            problems += [(line, message) for _, message in _node_problems(parsed, modules)]
    return problems + _node_problems(tree, modules)


def _node_problems(tree: ast.AST, modules: frozenset[str]) -> list[tuple[int, str]]:
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
            problems += [(line, f"imports {module}.{alias.name}, a private member of a module")
                         for alias in node.names if _private(alias.name)]
            problems += [(line, f"imports {alias.name}, which evaluates strings as code")
                         for alias in node.names if alias.name in STRING_EVALUATORS]
        elif isinstance(node, ast.Attribute):
            problems += _attribute_problems(node, modules)
        elif isinstance(node, ast.Name) and node.id in REFLECTIVE_BUILTINS:
            problems.append((line, f"uses {node.id}, which reaches code or attributes by a string"))
        elif isinstance(node, ast.Name) and node.id in STRING_EVALUATORS:
            problems.append((line, f"uses {node.id}, which evaluates strings as code"))
        elif isinstance(node, ast.Name) and _dunder(node.id) and node.id not in ALLOWED_DUNDERS:
            problems.append((line, f"uses the interpreter's {node.id}"))
        elif isinstance(node, ast.MatchClass):
            problems += [(line, f"reaches the interpreter's internals through a pattern's {name}")
                         for name in node.kwd_attrs if _dunder(name)]
    return problems


def _private(name: str) -> bool:
    return name.startswith("_") and not _dunder(name)


def _module_names(tree: ast.AST) -> frozenset[str]:
    """The names `import` statements bind (`torch`, `np`, `tl`): a private attribute read from one is a module's
    private member."""
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.asname or alias.name.split(".")[0] for alias in node.names)
    return frozenset(names)


# what a string annotation may be made of: names, dotted names, subscripts of them, `X | Y`, and constants (None,
# `...`, a nested string, checked the same way)
_TYPE_NODES = (ast.Expression, ast.Name, ast.Attribute, ast.Subscript, ast.Tuple, ast.List, ast.BinOp, ast.BitOr,
               ast.Constant, ast.Load)


def string_annotations(tree: ast.AST) -> list[tuple[int, str, ast.Expression | None]]:
    """(line, text, parsed) for every string in an annotation (of an argument, a return or a variable, nested
    strings too, but not a Literal's values): parsed is the string read as an expression when it reads as a type,
    else None."""
    found: list[tuple[int, str, ast.Expression | None]] = []
    pending: list[ast.expr] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
            arguments = node.args
            every = [*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs, arguments.vararg, arguments.kwarg]
            pending += [argument.annotation for argument in every if argument is not None and argument.annotation]
            if not isinstance(node, ast.Lambda) and node.returns is not None:
                pending.append(node.returns)
        elif isinstance(node, ast.AnnAssign):
            pending.append(node.annotation)
    while pending:
        annotation = pending.pop()
        strings = [n for n in _outside_literals(annotation) if isinstance(n, ast.Constant) and isinstance(n.value, str)]
        for string in strings:
            parsed = _as_type(string.value)
            found.append((string.lineno, string.value, parsed))
            if parsed is not None:
                pending.append(parsed.body)
    return found


def _outside_literals(annotation: ast.AST) -> list[ast.AST]:
    """The annotation's nodes, less the values of a `Literal[...]` (typing does not evaluate those)."""
    nodes, pending = [], [annotation]
    while pending:
        node = pending.pop()
        nodes.append(node)
        if isinstance(node, ast.Subscript) and _last_name(node.value) == "Literal":
            pending.append(node.value)
            continue
        pending.extend(ast.iter_child_nodes(node))
    return nodes


def _as_type(text: str) -> ast.Expression | None:
    try:
        parsed = ast.parse(text.strip(), mode="eval")
    except (SyntaxError, ValueError, RecursionError):
        return None
    for node in ast.walk(parsed):
        if not isinstance(node, _TYPE_NODES) or (isinstance(node, ast.BinOp) and not isinstance(node.op, ast.BitOr)):
            return None
    return parsed


def _denied_imports(line: int, dotted_names: list[str]) -> list[tuple[int, str]]:
    denied = (_denied_path(name) for name in dotted_names)
    return [(line, f"imports {path}, which reaches files or native code") for path in denied if path]


def _attribute_problems(node: ast.Attribute, modules: frozenset[str]) -> list[tuple[int, str]]:
    line, name = node.lineno, node.attr
    if _dunder(name) and name not in ALLOWED_DUNDERS:
        return [(line, f"reaches the interpreter's internals through .{name}")]
    if name in STRING_EVALUATORS:
        return [(line, f"uses .{name}, which evaluates strings as code")]
    if _private(name) and root_name(node.value) in modules:
        return [(line, f"reaches .{name}, a private member of a module")]
    if name in DENIED_ATTRIBUTES:
        return [(line, f"reaches files, native code or the interpreter through .{name}")]
    if isinstance(node.value, ast.Attribute | ast.Name) and (_last_name(node.value), name) in DENIED_PAIRS:
        return [(line, f"reaches files through .{_last_name(node.value)}.{name}")]
    if name in ("format", "format_map") and not isinstance(node.value, ast.Constant):
        # "{0.os}".format(torch) walks attributes named in the string: only a literal's fields are read here
        return [(line, f"formats a string built at run time with .{name} (its fields can walk attributes)")]
    return []


def root_name(node: ast.expr) -> str:
    """The name an attribute chain starts from (`torch` for torch.cuda.current_stream), or ""."""
    return (dotted_name(node) or "").partition(".")[0]


def _last_name(node: ast.expr) -> str:
    return node.attr if isinstance(node, ast.Attribute) else node.id if isinstance(node, ast.Name) else ""


def host_library_uses(code: str, methods: frozenset[str], matmul_operator: bool,
                      host_allowlist: bool = False) -> list[tuple[int, str]]:
    """(line, message) for every library routine in `methods` that host code (anything outside a function
    decorated with a Triton jit) reads as an attribute, whatever the receiver, and every `@` where
    `matmul_operator`; nothing when the code does not parse. Inside a Triton kernel `x.sum` is Triton's.
    host_allowlist: also triton_host_problems, the allow-list of a Triton candidate's host code (the target's
    TargetSpec.host_allowlist: Triton's host code is launch glue, where a torch target's ModelNew may compute with
    PyTorch's element-wise operators)."""
    tree = _parsed(code)
    if tree is None:
        return []
    problems: list[tuple[int, str]] = []
    if host_allowlist:
        problems += triton_host_problems(code)
    pending: list[ast.AST] = [tree]
    namespaces: set[int] = set()  # attributes read only to reach another (torch.backends.cuda.matmul.allow_tf32)
    while pending:
        node = pending.pop()
        if _triton_kernel(node):
            # a Triton kernel: its body's reductions and dots are the kernel's own; its decorators, defaults and
            # annotations run on the host
            pending.extend(_kernel_host_parts(node))
            continue
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


def _triton_kernel(node: ast.AST) -> bool:
    """Whether a function is a Triton kernel: one of its decorators is Triton's jit (`@triton.jit`,
    `@triton.jit(...)`, a bare `@jit`). Triton's autotune or heuristics alone do not make a body Triton's."""
    return isinstance(node, ast.FunctionDef) and any(_triton_decorator(d) and _last_name(
        d.func if isinstance(d, ast.Call) else d) == "jit" for d in node.decorator_list)


def _kernel_host_parts(node: ast.FunctionDef) -> list[ast.AST]:
    """What of a Triton kernel's definition the interpreter runs on the host: its decorators (with their lambdas,
    `triton.Config(..., pre_hook=...)`, `triton.heuristics({...})`), its default values, its annotations and type
    parameters. Only the body is Triton's (the second red team's h9 did the row sum in a heuristics lambda)."""
    arguments = node.args
    every = [*arguments.posonlyargs, *arguments.args, arguments.vararg, *arguments.kwonlyargs, arguments.kwarg]
    parts: list[ast.AST] = [*node.decorator_list, *arguments.defaults,
                            *(d for d in arguments.kw_defaults if d is not None),
                            *(a.annotation for a in every if a is not None and a.annotation is not None),
                            *getattr(node, "type_params", [])]
    if node.returns is not None:
        parts.append(node.returns)
    return parts


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
    aliases = _aliases(tree)
    return _Qualify(aliases).visit(tree) if aliases else tree


def _aliases(tree: ast.AST) -> dict[str, str]:
    """Each name an import bound under another name -> the dotted name it stands for."""
    aliases: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            aliases.update({alias.asname: alias.name for alias in node.names if alias.asname})
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            aliases.update({alias.asname or alias.name: f"{node.module}.{alias.name}"
                            for alias in node.names if alias.name != "*"})
    return {name: full for name, full in aliases.items() if name != full}


# ------------------------------------------------------------------------------------- a Triton candidate's host code

# What host code (outside the @triton.jit kernels) may reach of torch, numpy and triton: allocation, types, the
# device's description and the launch. Anything else of theirs (torch.addmv, torch.add passed to functools.reduce,
# numpy.add.reduce, torch.jit.CompilationUnit, torch.ops, torch.library) does the task's work on the host, or
# compiles code the checks cannot read. A dotted path is allowed when it is one of these, never a member of one
# (`torch.backends.cudnn.torch.addmv` reached torch again), but for torch.Tensor's and numpy.ndarray's members in
# HOST_TENSOR_ATTRIBUTES (`torch.Tensor.sum` is not) and a version string's methods.
# torch.backends: only BACKEND_SWITCHES; torch.nn.Module: a candidate's own module class
_DTYPES = ("float16", "float32", "float64", "bfloat16", "half", "float", "double", "int8", "int16", "int32", "int64",
           "uint8", "uint16", "uint32", "uint64", "bool", "bool_", "long", "int", "short", "float8_e4m3fn",
           "float8_e5m2", "float8_e4m3fnuz", "float8_e5m2fnuz")
# Hopper's TMA descriptors (triton.tools.tensor_descriptor): they hold the tensor they describe
_TENSOR_DESCRIPTORS = ("triton.tools.tensor_descriptor.TensorDescriptor",
                       "triton.tools.tensor_descriptor.TensorDescriptor.from_tensor")
# torch.backends: only its documented switches, read or set to a constant (`torch.backends.cudnn.torch.addmv` is
# torch again: every torch.backends submodule holds `torch`, the second red team's h5)
BACKEND_SWITCHES = frozenset({
    "torch.backends.cuda.matmul.allow_tf32", "torch.backends.cuda.matmul.allow_fp16_reduced_precision_reduction",
    "torch.backends.cuda.matmul.allow_bf16_reduced_precision_reduction", "torch.backends.cuda.matmul.fp32_precision",
    "torch.backends.cudnn.allow_tf32", "torch.backends.cudnn.benchmark", "torch.backends.cudnn.deterministic",
    "torch.backends.cudnn.enabled", "torch.backends.cudnn.fp32_precision", "torch.backends.fp32_precision",
    "torch.backends.cudnn.flags",  # the documented context manager of cudnn's switches: `with ...flags(...)`
})
# where a dotted path may go on past an allowed one: a version string's methods (`triton.__version__.split`)
_STRING_PATHS = frozenset({"torch.__version__", "triton.__version__", "numpy.__version__"})
HOST_MODULE_PATHS = frozenset({
    *(f"torch.{name}" for name in ("empty", "empty_like", "empty_strided", "zeros", "zeros_like", "full",
                                   "full_like", "ones", "ones_like", "arange", "Tensor", "Size", "device", "dtype",
                                   "finfo", "iinfo", "is_tensor", "no_grad", "inference_mode", "__version__",
                                   "nn.Module", "nn.Module.__init__", *_DTYPES)),
    *(f"torch.cuda.{name}" for name in ("current_device", "get_device_properties", "get_device_capability",
                                        "get_device_name", "device_count", "is_available", "device",
                                        "current_stream")),
    *(f"triton.{name}" for name in ("jit", "autotune", "heuristics", "Config", "cdiv", "next_power_of_2",
                                    "set_allocator", "language.constexpr", "language.dtype", "language.tensor",
                                    "language.pointer_type", "__version__", *(f"language.{d}" for d in _DTYPES))),
    *(f"triton.runtime.driver.active.{name}" for name in ("get_current_device", "utils.get_device_properties",
                                                          "get_active_torch_device", "get_current_target")),
    *_TENSOR_DESCRIPTORS,
    *(f"numpy.{name}" for name in ("ndarray", "dtype", "__version__", *_DTYPES)),
})
# the classes of tensors and arrays: what follows them in a dotted path is one of their methods (`torch.Tensor.sum`)
_TENSOR_CLASSES = frozenset({"torch.Tensor", "numpy.ndarray"})
_STRING_METHODS = frozenset(name for name in dir(str) if not name.startswith("_"))
HOST_MODULES = frozenset({"torch", "numpy", "triton"})
# views of a tensor (zero-copy, or a copy at most, as contiguous() is): a transposed operand handed to a kernel.
# as_strided too: a view of the same storage, through which no operator may then compute
_VIEWS = ("t", "T", "mT", "permute", "transpose", "flatten", "unsqueeze", "squeeze", "expand", "expand_as",
          "as_strided")
# what host code may read or call on a tensor or an array: its shape, layout and type, a view of it, its address,
# and an allocation or a fill like it
HOST_TENSOR_ATTRIBUTES = frozenset({
    "shape", "size", "numel", "dim", "ndim", "dtype", "device", "stride", "strides", "data_ptr", "is_contiguous",
    "element_size", "itemsize", "nbytes", "is_cuda", "view", "view_as", "reshape", "contiguous", "new_empty",
    "new_zeros", "new_full", "new_ones", "zero_", "fill_", "values", *_VIEWS,
})
# calls on a tensor (or with a tensor) whose result is a tensor: what the operator check follows
# builtins that hand back what a container holds (or the container again): a tensor in, a tensor out
_UNWRAPPING = frozenset({"iter", "next", "list", "tuple", "reversed", "sorted", "dict", "zip", "enumerate", "map",
                         "filter"})
_TENSOR_RESULTS = frozenset({"view", "view_as", "reshape", "contiguous", "new_empty", "new_zeros", "new_full",
                             "new_ones", "zero_", "fill_", *_VIEWS})
# what a tensor's device and dtype answer (`x.device.type`, `x.device.index`, `x.dtype.is_floating_point`): fields
# of a description, never a tensor; only these (an object of the candidate's may hold a tensor in a `.device`)
_DESCRIPTIONS = {"device": frozenset({"type", "index"}),
                 "dtype": frozenset({"is_floating_point", "is_complex", "is_signed", "itemsize"})}
# builtins that compute over what they are given (sum over a tensor's rows, map of a lambda over its columns)
_COMPUTING_BUILTINS = frozenset({"sum", "min", "max", "abs", "round", "pow", "divmod", "sorted", "map", "filter",
                                 "reversed", "iter", "next", "list", "tuple", "zip", "enumerate", "any", "all",
                                 "float", "int", "bool", "complex", "set", "dict"})


@functools.lru_cache(maxsize=1)
def _library_attribute_names() -> frozenset[str]:
    """Every attribute of a torch tensor and a numpy array (the judge has both: it runs the harness with them)."""
    names: set[str] = set()
    for module, kind in (("numpy", "ndarray"), ("torch", "Tensor")):
        try:
            names |= set(dir(getattr(__import__(module), kind)))
        except ImportError:
            continue
    return frozenset(name for name in names if not _dunder(name))


def triton_host_problems(code: str) -> list[tuple[int, str]]:
    """(line, message) for what a Triton candidate's host code does beyond allocating, describing and launching:
    any member of torch, numpy or triton outside HOST_MODULE_PATHS (read, called or passed on), any attribute of a
    tensor outside HOST_TENSOR_ATTRIBUTES, and arithmetic, iteration, a store or a computing builtin on a value the
    code got from a tensor (a view, an element, a row). Nothing when the code does not parse."""
    tree = _parsed(code)
    if tree is None:
        return []
    tree = qualified_names(ast.parse(code))  # a fresh tree: qualified_names rewrites it
    host = _HostCode(tree)
    return host.problems


class _HostCode:
    """The host-code reading of triton_host_problems: the nodes outside Triton kernels, which names hold tensors
    (followed to a fixed point: assigned from a view, a loop over one, a parameter used as a tensor or handed one),
    and what is done with them."""

    def __init__(self, tree: ast.Module) -> None:
        self.nodes = _host_nodes(tree)
        self.library = _library_attribute_names()
        self.problems: list[tuple[int, str]] = []
        self.tensors: set[str] = set()
        self.containers: set[str] = set()  # names bound to a dict, list, tuple or set display holding a tensor
        functions = {node.name: node for node in self.nodes if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)}
        self.parameters = {arg.arg for f in functions.values() for arg in _arguments(f.args)}
        self.own_classes = {node.name for node in self.nodes if isinstance(node, ast.ClassDef)
                            and not any(dotted_name(base) in _TENSOR_CLASSES for base in node.bases)}
        # names the code binds itself (`math = x.view(m, n)` is no longer the module)
        self.bound = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and not isinstance(n.ctx, ast.Load)}
        self.bound |= {n.arg for n in ast.walk(tree) if isinstance(n, ast.arg)}
        self.bound |= {n.name for n in ast.walk(tree) if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef
                                                                     | ast.ClassDef)}
        # names only ever bound to an instance of one of its own classes (`plan = Plan(n)`)
        values: dict[str, list[ast.expr]] = {}
        for node in self.nodes:
            if isinstance(node, ast.Assign):
                for target in node.targets:
                    for name in (n for n in ast.walk(target) if isinstance(n, ast.Name)):
                        values.setdefault(name.id, []).append(node.value if target is name else target)
        self.instances = {name for name, bound in values.items() if name not in self.parameters and all(
            isinstance(v, ast.Call) and isinstance(v.func, ast.Name) and v.func.id in self.own_classes for v in bound)}
        # names bound once, by an assignment, to a description: a device (`DEVICE = triton.runtime.driver.active.
        # get_active_torch_device()`, `dev = x.device`), a dtype, device properties: no tensor
        stores: dict[str, int] = {}
        for name in ast.walk(tree):
            if isinstance(name, ast.Name) and not isinstance(name.ctx, ast.Load):
                stores[name.id] = stores.get(name.id, 0) + 1
        arguments = {n.arg for n in ast.walk(tree) if isinstance(n, ast.arg)}
        self.descriptions = {name for name, bound in values.items() if name not in arguments and
                             stores.get(name) == len(bound) and all(self._a_description(v) for v in bound)}
        for node in self.nodes:  # parameters used as tensors or annotated as them (`values` is a dict's too)
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.attr in self.library \
                    and node.attr != "values" and node.value.id not in self.instances | self.descriptions:
                self.tensors.add(node.value.id)
            elif isinstance(node, ast.arg) and node.annotation is not None and \
                    ast.unparse(node.annotation).strip("'\"") in ("torch.Tensor", "numpy.ndarray"):
                self.tensors.add(node.arg)
        self.tensors &= self.parameters | self._assigned_names()
        for _ in range(20):  # to a fixed point: each round adds names, and there are finitely many
            before = len(self.tensors)
            self._follow(functions)
            if len(self.tensors) == before:
                break
        for node in self.nodes:
            self._check(node)
        aliases = _aliases(tree)
        for line, text, parsed in string_annotations(tree):  # what typing would evaluate, as host code
            if parsed is None:
                continue
            qualified = _Qualify(aliases).visit(parsed) if aliases else parsed
            for node in _host_nodes(qualified):
                if isinstance(node, ast.Attribute | ast.Name) and (problem := self.path_problem(node)):
                    self.problems.append((line, f"{problem} (the annotation {text[:60]!r})"))

    def _assigned_names(self) -> set[str]:
        return {target.id for node in self.nodes if isinstance(node, ast.Assign | ast.AnnAssign | ast.For)
                for target in ast.walk(node.target if not isinstance(node, ast.Assign) else ast.Tuple(node.targets))
                if isinstance(target, ast.Name)}

    def _follow(self, functions: dict[str, ast.FunctionDef | ast.AsyncFunctionDef]) -> None:
        for node in self.nodes:
            if isinstance(node, ast.Assign) and self.tensor_valued(node.value):
                self.tensors.update(n.id for t in node.targets for n in ast.walk(t) if isinstance(n, ast.Name))
                if _container(node.value):
                    self.containers.update(n.id for t in node.targets for n in ast.walk(t) if isinstance(n, ast.Name))
            elif isinstance(node, ast.AnnAssign | ast.AugAssign) and node.value is not None and \
                    self.tensor_valued(node.value) and isinstance(node.target, ast.Name):
                self.tensors.add(node.target.id)
            elif isinstance(node, ast.For | ast.comprehension) and self.tensor_valued(node.iter):
                self.tensors.update(n.id for n in ast.walk(node.target) if isinstance(n, ast.Name))
            elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in functions:
                # one of its own functions handed a tensor: that parameter holds one
                params = _arguments(functions[node.func.id].args)
                for index, value in enumerate(node.args):
                    if index < len(params) and self.tensor_valued(value):
                        self.tensors.add(params[index].arg)
                for keyword in node.keywords:
                    if keyword.arg and self.tensor_valued(keyword.value):
                        self.tensors.add(keyword.arg)

    def tensor_valued(self, node: ast.AST | None) -> bool:
        """Whether the expression is (or holds) a tensor as far as the syntax shows."""
        if isinstance(node, ast.Call) and (
                isinstance(node.func, ast.Attribute) and isinstance(node.func.value, ast.Name)
                and node.func.value.id in self.containers  # box.get("c"), box.values(), box.pop(...)
                or isinstance(node.func, ast.Name) and node.func.id in _UNWRAPPING
                and any(self.tensor_valued(arg) for arg in node.args)):  # next(iter(...)), list(...)
            return True
        if isinstance(node, ast.Name):
            return node.id in self.tensors
        if isinstance(node, ast.Subscript | ast.Starred):
            return self.tensor_valued(node.value)
        if isinstance(node, ast.Attribute):  # x.T, x.mT
            return node.attr in _VIEWS
        if isinstance(node, ast.Call):
            func = node.func
            if isinstance(func, ast.Attribute) and func.attr in _TENSOR_RESULTS:
                return True
            path = dotted_name(func)
            if path in ("torch.Tensor", *_TENSOR_DESCRIPTORS):  # torch.Tensor(x) aliases x; a descriptor holds it
                return True
            return path is not None and path.split(".")[0] == "torch" and path in HOST_MODULE_PATHS and \
                path.split(".")[1] in ("empty", "empty_like", "empty_strided", "zeros", "zeros_like", "full",
                                       "full_like", "ones", "ones_like", "arange")
        if isinstance(node, ast.List | ast.Tuple | ast.Set):
            return any(self.tensor_valued(element) for element in node.elts)
        # a dict holding a tensor, and what comes out of a container that holds one (eighteenth red team: `box =
        # {"c": x.view(m, n).T}; sum(box["c"])` summed rows on the host, read correct; box.get("c"), box.values()
        # and next(iter(...)) take it out as well)
        if isinstance(node, ast.Dict):
            return any(self.tensor_valued(value) for value in node.values)
        if isinstance(node, ast.DictComp):
            return self.tensor_valued(node.value) or any(self.tensor_valued(g.iter) for g in node.generators)

        if isinstance(node, ast.ListComp | ast.GeneratorExp | ast.SetComp):
            return self.tensor_valued(node.elt) or any(self.tensor_valued(g.iter) for g in node.generators)
        if isinstance(node, ast.IfExp):
            return self.tensor_valued(node.body) or self.tensor_valued(node.orelse)
        if isinstance(node, ast.BinOp):
            return self.tensor_valued(node.left) or self.tensor_valued(node.right)
        if isinstance(node, ast.UnaryOp):
            return self.tensor_valued(node.operand)
        return False

    def _check(self, node: ast.AST) -> None:
        line = getattr(node, "lineno", 0)
        if isinstance(node, ast.Attribute | ast.Name):
            problem = self.path_problem(node)
            if problem:
                self.problems.append((line, problem))
        elif isinstance(node, ast.BinOp) and (self.tensor_valued(node.left) or self.tensor_valued(node.right)):
            self.problems.append((line, "computes with a tensor in host code (an operator on it): host code may "
                                        "only allocate, describe and launch"))
        elif isinstance(node, ast.UnaryOp) and self.tensor_valued(node.operand):
            self.problems.append((line, "computes with a tensor in host code (an operator on it)"))
        elif isinstance(node, ast.Compare) and not all(isinstance(op, ast.Is | ast.IsNot) for op in node.ops) and \
                any(self.tensor_valued(value) for value in (node.left, *node.comparators)):
            self.problems.append((line, "compares a tensor's values in host code"))
        elif isinstance(node, ast.AugAssign) and (self.tensor_valued(node.target) or self.tensor_valued(node.value)
                                                  or root_name(_subscripted(node.target)) in self.parameters):
            self.problems.append((line, "updates a tensor or a parameter in place in host code (an augmented "
                                        "assignment)"))
        elif isinstance(node, ast.Assign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if any(dotted_name(t) in BACKEND_SWITCHES for t in targets) and not isinstance(node.value, ast.Constant):
                self.problems.append((line, "sets a torch.backends switch to something other than a constant"))
            # into a tensor, or into a parameter (`out[:] = ...`: what the harness handed in is a tensor)
            if any(isinstance(t, ast.Subscript) and (self.tensor_valued(t.value)
                                                    or root_name(_subscripted(t)) in self.parameters)
                   for t in targets):
                self.problems.append((line, "writes into a tensor or a parameter in host code"))
        elif isinstance(node, ast.For | ast.comprehension) and self.tensor_valued(node.iter):
            self.problems.append((getattr(node.iter, "lineno", line), "iterates over a tensor in host code"))
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name | ast.Attribute) and \
                _computing_callee(node.func) and \
                any(self.tensor_valued(arg) for arg in (*node.args, *(k.value for k in node.keywords))):
            self.problems.append((line, f"hands a tensor to {ast.unparse(node.func)} in host code"))

    def path_problem(self, node: ast.Attribute | ast.Name) -> str | None:
        """What is wrong with one name or attribute of host code (its parent set): a member of torch, numpy or
        triton outside HOST_MODULE_PATHS, read where its dotted path ends (`torch.add` passed on counts as much
        as called), or any other receiver's tensor attribute outside HOST_TENSOR_ATTRIBUTES."""
        parent = getattr(node, "parent", None)
        whole = not (isinstance(parent, ast.Attribute) and parent.value is node)  # the end of a dotted path
        path = dotted_name(node)
        if path is not None and path.split(".")[0] in HOST_MODULES:
            if not whole:
                return None
            # an allowed path itself, never a member of one (every torch.backends submodule holds `torch`), but
            # for a tensor class's own view and shape methods and a version string's methods
            if path in HOST_MODULE_PATHS or path in BACKEND_SWITCHES:
                return None
            prefix = next((p for p in _TENSOR_CLASSES | _STRING_PATHS if path.startswith(p + ".")), None)
            rest = path[len(prefix) + 1:].split(".") if prefix is not None else []
            if prefix in _TENSOR_CLASSES and all(part in HOST_TENSOR_ATTRIBUTES for part in rest):
                return None
            if prefix in _STRING_PATHS and len(rest) == 1 and rest[0] in _STRING_METHODS:
                return None
            return (f"uses {path} in host code: host code may only allocate (torch.empty, ...), describe "
                    "tensors and launch kernels")
        if path is not None and path.split(".")[0] in ALLOWED_MODULES and path.split(".")[0] not in self.bound:
            return None  # math.log2, functools.lru_cache: the standard modules' own (handed a tensor: _check)
        if isinstance(node, ast.Attribute) and node.attr in self.library and node.attr not in HOST_TENSOR_ATTRIBUTES \
                and not self._described(node.value):
            return (f"uses .{node.attr} of a tensor in host code: host code may only read a tensor's shape, layout "
                    "and address, view it and launch kernels on it")
        return None


    def _a_description(self, value: ast.expr) -> bool:
        """Whether a value assigned is a description (`x.device`, `x.dtype`, what an allowed path other than an
        allocation answers), as its syntax shows."""
        if isinstance(value, ast.Attribute):
            return value.attr in _DESCRIPTIONS
        if isinstance(value, ast.Call):
            path = dotted_name(value.func)
            return path is not None and path in HOST_MODULE_PATHS and not self.tensor_valued(value)
        return False

    def _described(self, receiver: ast.expr) -> bool:
        """Whether a receiver is known to be no tensor: what an allowed torch path answers (torch.finfo(...),
        torch.cuda.get_device_properties(...)), one of the candidate's own classes or an instance made there, or
        `self` in one of their methods (classes that derive from a tensor's or an array's class excepted)."""
        if isinstance(receiver, ast.Attribute) and receiver.attr in _DESCRIPTIONS:
            # x.device.type, x.device.index, x.dtype.is_floating_point
            parent = getattr(receiver, "parent", None)
            return isinstance(parent, ast.Attribute) and parent.attr in _DESCRIPTIONS[receiver.attr]
        if isinstance(receiver, ast.Call):
            path = dotted_name(receiver.func)
            if path is not None and path in HOST_MODULE_PATHS and not self.tensor_valued(receiver):
                return True
            receiver = receiver.func
            return isinstance(receiver, ast.Name) and receiver.id in self.own_classes
        if not isinstance(receiver, ast.Name):
            return False
        if receiver.id in self.own_classes or (receiver.id in self.instances | self.descriptions
                                               and receiver.id not in self.tensors):
            return True
        method = getattr(receiver, "parent", None)
        while method is not None and not isinstance(method, ast.FunctionDef | ast.AsyncFunctionDef):
            method = getattr(method, "parent", None)
        if method is None or not (arguments := _arguments(method.args)) or arguments[0].arg != receiver.id:
            return False
        owner = getattr(method, "parent", None)
        rebound = any(isinstance(n, ast.Name) and n.id == receiver.id and not isinstance(n.ctx, ast.Load)
                      for n in ast.walk(method))
        return isinstance(owner, ast.ClassDef) and owner.name in self.own_classes and not rebound


def _subscripted(node: ast.expr) -> ast.expr:
    """What a (chain of) subscripts indexes (`out` for out[0][1])."""
    while isinstance(node, ast.Subscript):
        node = node.value
    return node


def _computing_callee(func: ast.Name | ast.Attribute) -> bool:
    """A builtin that computes over what it is given, or any function of a standard module (functools.reduce,
    itertools.accumulate, math.fsum): what a candidate's own functions are not."""
    if isinstance(func, ast.Name):
        return func.id in _COMPUTING_BUILTINS
    root = root_name(func)
    return bool(root) and root in ALLOWED_MODULES and root not in HOST_MODULES


def dotted_name(node: ast.AST) -> str | None:
    """`torch.cuda.current_stream` for that attribute chain; None when it does not start from a name."""
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.insert(0, node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    return ".".join([node.id, *parts])


def _arguments(arguments: ast.arguments) -> list[ast.arg]:
    every = [*arguments.posonlyargs, *arguments.args, arguments.vararg, *arguments.kwonlyargs, arguments.kwarg]
    return [argument for argument in every if argument is not None]


def _host_nodes(tree: ast.AST) -> list[ast.AST]:
    """Every node outside a Triton kernel's body (its decorators, defaults and annotations included), each with
    its parent set (`node.parent`)."""
    nodes: list[ast.AST] = []
    pending: list[ast.AST] = [tree]
    while pending:
        node = pending.pop()
        if isinstance(node, ast.FunctionDef) and _triton_kernel(node):
            children = _kernel_host_parts(node)  # the body is Triton's, the rest the host's
        else:
            nodes.append(node)
            children = list(ast.iter_child_nodes(node))
        for child in children:
            child.parent = node  # type: ignore[attr-defined]
            pending.append(child)
    return nodes


def _container(node: ast.AST) -> bool:
    """A dict, list, tuple or set display, or a comprehension making one."""
    return isinstance(node, ast.Dict | ast.DictComp | ast.List | ast.ListComp | ast.Tuple | ast.Set | ast.SetComp)
