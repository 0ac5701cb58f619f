"""A static look at the kernel function's loops with tree-sitter (C and C++).

What it finds, with 1-based line numbers:
- loops (for, while, do), their nesting depth and span;
- loop-invariant work: calls to pure math/libc functions (sqrt, exp, pow, strlen, ...) and arithmetic whose
  identifiers are all not written inside the innermost loop around them. Memory reads (`t[i]`) count as
  invariant when the loop writes no element of that array and calls no unknown function; aliasing through
  another pointer is not ruled out (a static guess, confirmed by the profile's cost on that line);
- OpenMP pragmas, their schedule, and whether a work-shared loop is triangular (an inner loop's bounds use the
  shared loop's variable), which a static schedule balances badly;
- array-of-structures field accesses (`p[i].x`, `(p + i)->x`, `q->x` with `q = &p[i]`) per loop, with the
  bytes of the structure against the bytes of the fields the loop touches;
- scalars a `for` nest carries from one iteration to the next: declared outside the nest and updated from their
  own value inside it (`s += x[i]`, `kept++`). One that is only accumulated is a reduction (OpenMP's reduction
  clause handles it); one whose running value is also read in the nest (`out[kept++] = x[i]`, a compaction) needs a
  scan, and `#pragma omp parallel for` alone would race on it;
- linear searches: a loop that steps an index one element at a time and leaves early when an element of a table
  compares with a key the loop does not change (`while (b < n && x >= edges[b]) b++`, `if (t[k] == key) break`);
  its trip count grows with the table, where a direct computation, a binary search or a lookup table would not;
- recomputed work: a pure call or division inside an inner loop that depends only on the inner loops' indices and
  on values the enclosing loop never changes (`expf(-k * k * s)` inside `for i { for k { ... } }`): every iteration
  of the enclosing loop computes the same values again, which a table filled once before it would hold;
- hand-vectorised loops, accumulators in memory, pointer chases and per-thread slots written in a parallel region
  (dependences.py).
"""

from __future__ import annotations

import functools
import importlib
import re
from collections.abc import Sequence
from dataclasses import dataclass, field

import tree_sitter

from profiling.cpu import dependences

# Functions without side effects that compilers may not hoist on their own: libm functions set errno (so gcc keeps
# every call unless -fno-math-errno), and strlen reads memory the compiler often cannot prove unchanged.
PURE_FUNCTIONS = frozenset({
    "sqrt", "sqrtf", "cbrt", "cbrtf", "exp", "expf", "exp2", "exp2f", "expm1", "expm1f", "log", "logf", "log2",
    "log2f", "log10", "log10f", "log1p", "log1pf", "pow", "powf", "sin", "sinf", "cos", "cosf", "tan", "tanf", "asin",
    "asinf", "acos", "acosf", "atan", "atanf", "atan2", "atan2f", "sinh", "sinhf", "cosh", "coshf", "tanh", "tanhf",
    "erf", "erff", "erfc", "erfcf", "hypot", "hypotf", "fmod", "fmodf", "strlen", "strcmp", "strncmp", "memcmp", "abs",
    "labs", "fabs", "fabsf", "floor", "floorf", "ceil", "ceilf", "round", "roundf", "std::sqrt", "std::exp",
    "std::pow", "std::log", "std::sin", "std::cos", "std::abs",
})
# Scalar sizes for structure layouts; an unknown type (a nested struct, a typedef we did not see) counts as 8.
TYPE_BYTES = {"char": 1, "bool": 1, "_Bool": 1, "short": 2, "int": 4, "float": 4, "unsigned": 4, "long": 8,
              "double": 8, "size_t": 8, "int8_t": 1, "uint8_t": 1, "int16_t": 2, "uint16_t": 2, "int32_t": 4,
              "uint32_t": 4, "int64_t": 8, "uint64_t": 8}
_LOOP_TYPES = frozenset({"for_statement", "while_statement", "do_statement", "for_range_loop"})
_THREAD_RE = re.compile(r"\b(pthread_create|std::thread|std::async|std::jthread)\b")
_SCHEDULE_RE = re.compile(r"\bschedule\s*\(\s*(\w+)")


@dataclass(frozen=True)
class Loop:
    start_line: int
    end_line: int
    depth: int  # 1 for an outermost loop of the function
    kind: str  # for, while, do
    innermost: bool
    outer_line: int  # start line of the outermost loop of its nest (its own line at depth 1)


@dataclass(frozen=True)
class InvariantExpression:
    line: int
    text: str
    # "call" (a pure function), "arithmetic", or "call_on_written_memory": a pure call whose arguments the loop
    # does not change but which reads, through them, memory the loop writes (strlen(s) in the test of a loop that
    # writes s[i]): the compiler may not hoist it; the programmer may, where the writes never change what it reads
    kind: str
    loop_line: int  # the loop it is invariant in (the innermost loop around it)


@dataclass(frozen=True)
class OmpPragma:
    line: int
    text: str  # the pragma after "#pragma"
    schedule: str  # static, dynamic, guided, auto, runtime; "" when the pragma names none (libgomp: static)
    loop_line: int | None  # the loop it shares out (parallel for / for), None for other constructs
    triangular: bool  # the shared loop holds a loop whose bounds use the shared loop's variable


@dataclass(frozen=True)
class StructAccess:
    """Fields of an array of structures that one loop touches."""

    array: str
    type_name: str
    loop_line: int
    lines: tuple[int, ...]
    fields_used: tuple[str, ...]
    used_bytes: int
    struct_bytes: int

    @property
    def used_fraction(self) -> float:
        return self.used_bytes / self.struct_bytes if self.struct_bytes else 1.0


@dataclass(frozen=True)
class CarriedScalar:
    """A scalar declared outside a loop nest that the nest updates from its own previous value."""

    name: str
    loop_line: int  # the outermost loop of the nest that carries it
    line: int  # its first update in the nest
    kind: str  # "reduction" (only accumulated) or "scan" (its running value is read in the nest too)
    operator: str  # the reduction's operator (+ for kept++, * for p *= x); "" for a scan


@dataclass(frozen=True)
class LinearSearch:
    """A loop that scans a table element by element for the first one that compares with a key."""

    loop_line: int
    end_line: int
    exit_line: int  # the line of the comparison that ends the scan early
    table: str  # the array compared element by element
    key: str  # what each element is compared with (the loop does not change it)
    bound: str  # the loop's own bound on the index ("" when only the comparison ends it: a sentinel scan)
    # a call of the standard library's linear scans (`std::find(begin(v), end(v), x)`) inside a loop: the scan is
    # the call's, at loop_line..end_line (the call's lines), inside the loop starting at around_line
    algorithm: str = ""
    around_line: int = 0


@dataclass(frozen=True)
class RecomputedExpression:
    """A pure expression that varies only with inner loops' indices: each iteration of `outer_line`'s loop
    recomputes the same values."""

    line: int
    text: str
    kind: str  # "call" (a pure function) or "arithmetic"
    outer_line: int  # the outermost loop whose iterations all recompute it
    inner_line: int  # the innermost loop around it
    indices: tuple[str, ...]  # the inner loops' indices it depends on


@dataclass
class LoopAnalysis:
    function_found: bool
    loops: list[Loop] = field(default_factory=list)
    invariants: list[InvariantExpression] = field(default_factory=list)
    pragmas: list[OmpPragma] = field(default_factory=list)
    structs: list[StructAccess] = field(default_factory=list)
    carried: list[CarriedScalar] = field(default_factory=list)
    searches: list[LinearSearch] = field(default_factory=list)
    recomputed: list[RecomputedExpression] = field(default_factory=list)
    spawns_threads: bool = False  # pthread_create / std::thread in the function
    # dependences through memory and hand-written vector code (dependences.py)
    vector_loops: set[int] = field(default_factory=set)  # start lines of loops that use vector registers by hand
    accumulators: list[dependences.MemoryAccumulator] = field(default_factory=list)
    chases: list[dependences.PointerChase] = field(default_factory=list)
    recursive_chases: list[dependences.PointerChase] = field(default_factory=list)
    divisions: list[dependences.CarriedDivision] = field(default_factory=list)
    chains: list[dependences.ArithmeticChain] = field(default_factory=list)
    slot_writes: list[dependences.ThreadSlotWrite] = field(default_factory=list)
    indexed_updates: list[dependences.IndexedUpdate] = field(default_factory=list)

    @property
    def uses_openmp(self) -> bool:
        return bool(self.pragmas)

    def innermost_loop_at(self, line: int) -> Loop | None:
        """The deepest loop whose span holds line."""
        around = [loop for loop in self.loops if loop.start_line <= line <= loop.end_line]
        return max(around, key=lambda loop: loop.depth, default=None)


@functools.cache
def _parser(language: str) -> tree_sitter.Parser:
    module = importlib.import_module("tree_sitter_cpp" if language == "cpp" else "tree_sitter_c")
    return tree_sitter.Parser(tree_sitter.Language(module.language()))


# gcc's `restrict` on a C++ reference (`std::vector<float> &__restrict v`; C++ has no plain `restrict`): tree-sitter-cpp
# reads the whole function as an error and finds no definition there, which left its loops without static facts. On a
# reference the qualifier tells the analysis nothing (dependences.py reads it on pointers only): blanked, byte for byte.
_REFERENCE_RESTRICT_RE = re.compile(r"(?<=&)(\s*)(__restrict__|__restrict)\b")


def syntax_tree(source: str, language: str = "c") -> tree_sitter.Node:
    """The root of source's syntax tree (language c or cpp), at source's own byte offsets and line numbers."""
    if language == "cpp":
        source = _REFERENCE_RESTRICT_RE.sub(lambda m: m.group(1) + " " * len(m.group(2)), source)
    return _parser(language).parse(source.encode("utf-8")).root_node


def _text(node: tree_sitter.Node) -> str:
    return node.text.decode("utf-8", "replace") if node.text is not None else ""


def _line(node: tree_sitter.Node) -> int:
    return node.start_point.row + 1


def _walk(node: tree_sitter.Node):
    yield node
    for child in node.children:
        yield from _walk(child)


def analyze_loops(source: str, kernel: str, language: str = "c") -> LoopAnalysis:
    """The loops of the function named kernel in source (language c or cpp). Source the parser cannot read as a
    function with a body (a header it recovered from as an error), or nested deeper than the recursive walks go,
    gives no static facts rather than an exception: the profile stands without them."""
    try:
        return _analyze(source, kernel, language)
    except RecursionError:  # a thousand nested expressions or else-ifs
        return LoopAnalysis(function_found=False)


def _analyze(source: str, kernel: str, language: str) -> LoopAnalysis:
    root = syntax_tree(source, language)
    function = _find_function(root, kernel)
    body = function.child_by_field_name("body") if function is not None else None
    if body is None:
        return LoopAnalysis(function_found=False)
    analysis = LoopAnalysis(function_found=True, spawns_threads=bool(_THREAD_RE.search(_text(function))))
    loop_nodes = _loops(body, depth=1, outer=None, found=[])
    analysis.loops = [loop for _, loop in loop_nodes]
    for node, loop in loop_nodes:
        if loop.innermost or loop.kind == "for":
            analysis.invariants += _invariants(node, loop)
    analysis.pragmas = _pragmas(body)
    analysis.structs = _struct_accesses(root, function, loop_nodes)
    analysis.carried = [found for node, loop in loop_nodes if loop.depth == 1 and loop.kind == "for"
                        for found in _carried_scalars(node, loop)]
    analysis.searches = [found for node, loop in loop_nodes if loop.innermost
                         if (found := _linear_search(node, loop)) is not None]
    analysis.searches += _algorithm_searches(function, loop_nodes, _uses_std(root))
    analysis.recomputed = _recomputed(loop_nodes)
    analysis.vector_loops = dependences.hand_vectorized_loops(root, function, loop_nodes)
    analysis.accumulators = dependences.memory_accumulators(function, loop_nodes)
    analysis.chases = dependences.pointer_chases(loop_nodes)
    analysis.recursive_chases = dependences.recursive_chases(function)
    analysis.divisions = dependences.carried_divisions(function, loop_nodes)
    analysis.chains = dependences.arithmetic_chains(root, function, loop_nodes)
    analysis.slot_writes = dependences.thread_slot_writes(root, function)
    analysis.indexed_updates = dependences.indexed_updates(loop_nodes)
    return analysis


def function_at(source: str, line: int, language: str = "c") -> str | None:
    """The name of the innermost function definition whose span holds line (1-based), None outside every one:
    which function of a header a profiled function's hot code was inlined from."""
    return functions_at(source, [line], language)[line]


def functions_at(source: str, lines: Sequence[int], language: str = "c") -> dict[int, str | None]:
    """function_at for each of lines, from one parse of the source."""
    root = syntax_tree(source, language)
    definitions = [node for node in _walk(root) if node.type == "function_definition" and _function_name(node)]
    found: dict[int, str | None] = {}
    for line in lines:
        around = [node for node in definitions if node.start_point.row + 1 <= line <= node.end_point.row + 1]
        found[line] = _function_name(max(around, key=lambda node: node.start_byte)) if around else None
    return found


def _function_name(node: tree_sitter.Node) -> str:
    declarator = node.child_by_field_name("declarator")
    while declarator is not None and declarator.type != "function_declarator":
        declarator = declarator.child_by_field_name("declarator")
    inner = declarator.child_by_field_name("declarator") if declarator is not None else None
    return _text(inner) if inner is not None else ""


def declarations(source: str, function_name: str, language: str = "c") -> list[str]:
    """The declarations of the function named function_name in source, its parameters' first, each as one
    statement on one line (`const double *a;`, `double sum = 0;`): what a file included into its body sees."""
    root = syntax_tree(source, language)
    function = _find_function(root, function_name)
    if function is None:
        return []
    declarator = function.child_by_field_name("declarator")
    while declarator is not None and declarator.type != "function_declarator":
        declarator = declarator.child_by_field_name("declarator")
    parameters = declarator.child_by_field_name("parameters") if declarator is not None else None
    # its own parameters only (not those of a function-pointer parameter's type)
    found = [f"{_text(n)};" for n in (parameters.named_children if parameters is not None else [])
             if n.type == "parameter_declaration"]
    found += [_text(n) for n in _walk(function.child_by_field_name("body") or function) if n.type == "declaration"]
    return [" ".join(text.split()) for text in found]


def _find_function(root: tree_sitter.Node, name: str) -> tree_sitter.Node | None:
    for node in _walk(root):
        if node.type == "function_definition" and _function_name(node).split("::")[-1] == name.split("::")[-1]:
            return node
    return None


def _loops(node: tree_sitter.Node, depth: int, outer: int | None,
           found: list[tuple[tree_sitter.Node, Loop]]) -> list[tuple[tree_sitter.Node, Loop]]:
    for child in node.children:
        if child.type in _LOOP_TYPES:
            start = _line(child)
            nested = _loops(child, depth + 1, outer or start, [])
            kind = {"for_range_loop": "for"}.get(child.type, child.type.removesuffix("_statement"))
            found.append((child, Loop(start, child.end_point.row + 1, depth, kind, innermost=not nested,
                                      outer_line=outer or start)))
            found.extend(nested)
        else:
            _loops(child, depth, outer, found)
    return found


# ---- loop-invariant work ------------------------------------------------------------------------------------------

def _written(loop: tree_sitter.Node) -> tuple[set[str], set[str], bool]:
    """(scalars written, arrays/pointees written, calls an unknown function) inside a loop, header included."""
    scalars: set[str] = set()
    memory: set[str] = set()
    unknown_call = False
    for node in _walk(loop):
        if node.type == "assignment_expression":
            _record_target(node.child_by_field_name("left"), scalars, memory)
        elif node.type == "update_expression":
            _record_target(node.child_by_field_name("argument"), scalars, memory)
        elif node.type == "init_declarator":
            name = _declared_name(node.child_by_field_name("declarator"))
            if name:
                scalars.add(name)
        elif node.type == "call_expression":
            function = node.child_by_field_name("function")
            unknown_call = unknown_call or _text(function) not in PURE_FUNCTIONS
    return scalars, memory, unknown_call


def _record_target(target: tree_sitter.Node | None, scalars: set[str], memory: set[str]) -> None:
    if target is None:
        return
    if target.type == "identifier":
        scalars.add(_text(target))
        return
    base = _base_identifier(target)
    if base:
        memory.add(base)


def _base_identifier(node: tree_sitter.Node) -> str:
    """The array or pointer a subscript, field or dereference expression reaches memory through."""
    while node is not None and node.type in ("subscript_expression", "field_expression", "pointer_expression",
                                             "parenthesized_expression", "binary_expression"):
        node = node.child_by_field_name("argument") or node.child_by_field_name("left") or node.named_children[0]
    return _text(node) if node is not None and node.type == "identifier" else ""


def _declared_name(declarator: tree_sitter.Node | None) -> str:
    while declarator is not None and declarator.type != "identifier":
        inner = declarator.child_by_field_name("declarator")
        if inner is None and declarator.type == "reference_declarator":  # C++'s `&v`: no field names its child
            inner = declarator.named_children[-1] if declarator.named_children else None
        declarator = inner
    return _text(declarator) if declarator is not None else ""


def _reads_written_memory(expr: tree_sitter.Node, scalars: set[str], memory: set[str], unknown_call: bool) -> bool:
    """A pure call, not invariant as _is_invariant reads it, whose arguments are the loop's unchanged pointers (or
    constants), one of them a pointer the loop writes through: `strlen(s)` in `for (i = 0; i < strlen(s); i++)
    s[i] = tolower(s[i]);` (CS:APP's lower1), which runs the whole string's length every iteration."""
    arguments = expr.child_by_field_name("arguments")
    if expr.type != "call_expression" or arguments is None:
        return False
    names = set()
    for argument in arguments.named_children:
        if argument.type == "identifier":
            names.add(_text(argument))
        elif argument.type not in ("number_literal", "string_literal", "char_literal"):
            return False  # s + i, s[0], f(s): a value the loop may change, or one it reads
    return bool(names & memory) and not names & scalars and _is_invariant(expr, scalars, set(), unknown_call)


def _is_invariant(expr: tree_sitter.Node, scalars: set[str], memory: set[str], unknown_call: bool) -> bool:
    for node in _walk(expr):
        if node.type == "identifier" and _text(node) in scalars | memory:
            return False
        if node.type in ("subscript_expression", "pointer_expression") and unknown_call:
            return False
        if node.type in ("assignment_expression", "update_expression"):
            return False
        if node.type == "call_expression" and _text(node.child_by_field_name("function")) not in PURE_FUNCTIONS:
            return False
    return True


_EXPENSIVE_OPERATORS = frozenset({"/", "%"})


def _candidates(node: tree_sitter.Node) -> list[tuple[tree_sitter.Node, str]]:
    """Pure calls and divisions in node's subtree, outermost first (a candidate's parts are not reported again)."""
    found = []
    for child in node.children:
        if child.type in _LOOP_TYPES:
            continue  # judged against its own loop
        if child.type == "call_expression" and _text(child.child_by_field_name("function")) in PURE_FUNCTIONS:
            found.append((child, "call"))
        elif child.type == "binary_expression" and _text(child.child_by_field_name("operator")) in _EXPENSIVE_OPERATORS:
            found.append((child, "arithmetic"))
        found += _candidates(child)
    return found


def _invariants(loop_node: tree_sitter.Node, loop: Loop) -> list[InvariantExpression]:
    scalars, memory, unknown_call = _written(loop_node)
    found, covered = [], []
    parts = [loop_node.child_by_field_name("condition"), loop_node.child_by_field_name("body")]
    for part in (p for p in parts if p is not None and p.type not in _LOOP_TYPES):
        for node, kind in _candidates(part) if part.type != "call_expression" else [(part, "call")]:
            if any(c.start_byte <= node.start_byte and node.end_byte <= c.end_byte for c in covered):
                continue
            has_identifier = any(n.type == "identifier" for n in _walk(node))
            if has_identifier and _is_invariant(node, scalars, memory, unknown_call):
                covered.append(node)
                calls = any(n.type == "call_expression" for n in _walk(node))
                found.append(InvariantExpression(_line(node), _text(node), "call" if calls else kind, loop.start_line))
            elif _reads_written_memory(node, scalars, memory, unknown_call):
                covered.append(node)
                found.append(InvariantExpression(_line(node), _text(node), "call_on_written_memory",
                                                 loop.start_line))
    return found


# ---- linear searches ---------------------------------------------------------------------------------------------

_COMPARISONS = frozenset({"<", "<=", ">", ">=", "==", "!="})
# A loop whose own bound is a literal this small is a fixed short walk (a 4-wide neighbourhood), not a search whose
# cost grows with a table.
MAX_FIXED_TRIPS = 8


def _stepped(loop: tree_sitter.Node) -> set[str]:
    """Variables the loop steps by one (i++, ++i, i += 1, i--), and a for loop's own variable."""
    stepped = {_loop_variable(loop)} if loop.type == "for_statement" else set()
    for node in _walk(loop):
        target = None
        if node.type == "update_expression":
            target = node.child_by_field_name("argument")
        elif (node.type == "assignment_expression" and _text(node.child_by_field_name("operator")) in ("+=", "-=")
              and _text(node.child_by_field_name("right")).strip() == "1"):
            target = node.child_by_field_name("left")
        if target is not None and target.type == "identifier":
            stepped.add(_text(target))
    return stepped - {""}


def _conjuncts(node: tree_sitter.Node | None) -> list[tree_sitter.Node]:
    """The terms of a condition joined by && (parentheses dropped)."""
    while node is not None and node.type == "parenthesized_expression" and node.named_children:
        node = node.named_children[0]
    if node is None:
        return []
    if node.type == "binary_expression" and _text(node.child_by_field_name("operator")) == "&&":
        return _conjuncts(node.child_by_field_name("left")) + _conjuncts(node.child_by_field_name("right"))
    return [node]


def _element_comparison(term: tree_sitter.Node, index: str, scalars: set[str],
                        memory: set[str]) -> tuple[str, str] | None:
    """(table, key) when term compares an element table[..index..] with a key the loop does not change."""
    while term.type == "parenthesized_expression" and term.named_children:
        term = term.named_children[0]
    if term.type != "binary_expression" or _text(term.child_by_field_name("operator")) not in _COMPARISONS:
        return None
    sides = [term.child_by_field_name("left"), term.child_by_field_name("right")]
    for element, key in (sides, sides[::-1]):
        if element is None or key is None or element.type != "subscript_expression":
            continue
        index_node = element.child_by_field_name("index") or (element.named_children[-1]
                                                              if element.named_children else None)
        uses_index = index_node is not None and any(n.type == "identifier" and _text(n) == index
                                                    for n in _walk(index_node))
        key_names = {_text(n) for n in _walk(key) if n.type == "identifier"}
        # The key is a value (a variable or an element of another array), not a literal: a scan for a terminator
        # (s[i] != 0) walks the data once whatever is done about it.
        if uses_index and key_names and not key_names & (scalars | memory | {index}):
            return _base_identifier(element), _text(key)
    return None


def _early_exits(loop: tree_sitter.Node) -> list[tree_sitter.Node]:
    """Conditions of the ifs in the loop's body that leave it (break, return or goto in their branch)."""
    exits = []
    body = loop.child_by_field_name("body")
    for node in _walk(body) if body is not None else ():
        if node.type != "if_statement":
            continue
        branch = node.child_by_field_name("consequence")
        if branch is not None and any(n.type in ("break_statement", "return_statement", "goto_statement")
                                      for n in _walk(branch) if not _inside_inner_loop(n, loop)):
            exits.append(node.child_by_field_name("condition"))
    return [e for e in exits if e is not None]


def _inside_inner_loop(node: tree_sitter.Node, stop: tree_sitter.Node) -> bool:
    """Whether node sits in a loop (or switch) below stop, the loop searched: its break leaves that one."""
    parent = node.parent
    while parent is not None and parent != stop:
        if parent.type in _LOOP_TYPES or parent.type == "switch_statement":
            return True
        parent = parent.parent
    return False


def _linear_search(node: tree_sitter.Node, loop: Loop) -> LinearSearch | None:
    """The loop as a linear search, or None: it steps an index by one, writes no memory, and ends early on a
    comparison of the index's element of a table with a key it does not change."""
    scalars, memory, unknown_call = _written(node)
    if memory or unknown_call:
        return None  # a loop that stores or calls out is doing work per element, not looking for one
    condition = node.child_by_field_name("condition")
    terms = _conjuncts(condition)
    exits = [(term, term) for term in terms] + [(c, term) for c in _early_exits(node) for term in _conjuncts(c)]
    for index in sorted(_stepped(node)):
        for where, term in exits:
            found = _element_comparison(term, index, scalars, memory)
            if found is None:
                continue
            bound = next((_text(t) for t in terms if t is not term and _bounds_index(t, index)), "")
            if _fixed_short(bound):
                return None
            return LinearSearch(loop_line=loop.start_line, end_line=loop.end_line, exit_line=_line(where),
                                table=found[0], key=found[1], bound=bound)
    return None


# The standard library's linear scans: each call walks its range element by element (until a match, for the find
# family), so one inside a loop costs the range's length every iteration, where a hash set, a sorted range's binary
# search or a table indexed by the key would not.
_SCAN_ALGORITHMS = frozenset({"find", "find_if", "find_if_not", "find_first_of", "adjacent_find", "search", "count",
                              "count_if", "any_of", "all_of", "none_of"})
_STD_CALL_RE = re.compile(r"^(?:::)?std::(?:ranges::)?(\w+)$")


def _uses_std(root: tree_sitter.Node) -> set[str]:
    """The scan algorithms the file may call unqualified: all of them under `using namespace std;`, else those
    named by `using std::find;`, less any the file defines itself (a union-find's `find(parent, x)`)."""
    found: set[str] = set()
    for node in root.children:
        text = re.sub(r"\s+", "", _text(node))
        if node.type == "using_declaration" and text in ("usingnamespacestd;", "usingnamespace::std;"):
            found |= _SCAN_ALGORITHMS
        elif node.type == "using_declaration" and (match := re.fullmatch(r"using(?:::)?std::(\w+);", text)):
            found.add(match.group(1))
    defined = {_function_name(node) for node in _walk(root) if node.type == "function_definition"}
    return (found & _SCAN_ALGORITHMS) - defined


def _algorithm_searches(function: tree_sitter.Node, loop_nodes: list[tuple[tree_sitter.Node, Loop]],
                        unqualified: set[str]) -> list[LinearSearch]:
    """Calls of the standard library's linear scans inside a loop (the innermost loop holding each): `std::find`,
    `std::count_if`, `std::ranges::any_of`, ..., or the bare name where the file's using-declarations allow it (a
    function of the user's own called `find`, a union-find's, is not one), scanning the same range again each
    iteration. Not searches whose cost grows: a call in a `for`'s initialiser (it runs once); a range the loop moves
    or declares (`std::find(it + 1, v.end(), x)` resuming where the last one stopped, one pass in all;
    `std::count(w.begin(), w.end(), 'a')` over each word of a range-for, each scanned once); a range of a few elements
    fixed in the source (`std::find(a, a + 4, x)`, a `std::array<int, 4>` or `int a[4]`)."""
    innermost: dict[int, tuple[tree_sitter.Node, tree_sitter.Node, Loop]] = {}
    for node, loop in sorted(loop_nodes, key=lambda item: item[1].depth):  # a deeper loop overwrites its outer ones
        innermost |= {call.id: (call, node, loop) for call in _walk(node) if call.type == "call_expression"}
    sizes = _fixed_sizes(function)
    found = []
    for call, node, loop in innermost.values():
        name = _callee(call)
        qualified = _STD_CALL_RE.match(name)
        algorithm = qualified.group(1) if qualified else name
        if algorithm not in _SCAN_ALGORITHMS or (qualified is None and algorithm not in unqualified):
            continue
        arguments = call.child_by_field_name("arguments")
        # the scanned range: first and last (a ranges:: form takes the range alone; a predicate is no range)
        ranges = arguments.named_children[:1 if "ranges::" in name else 2] if arguments is not None else []
        texts = [_text(a) for a in arguments.named_children] if arguments is not None else []
        if qualified is None and len(texts) < 3:  # the iterator forms: first, last, and a value or a predicate
            continue
        initialiser = node.child_by_field_name("initializer")
        if initialiser is not None and initialiser.start_byte <= call.start_byte < initialiser.end_byte:
            continue
        names = {_text(n) for r in ranges for n in _walk(r) if n.type == "identifier"}
        if names & (_range_element(node) | _resumed(node)):
            continue
        fixed = re.search(r"\+\s*(\d+)\s*$", texts[1]) if len(texts) > 1 else None
        if (fixed and int(fixed.group(1)) <= MAX_FIXED_TRIPS) or any(sizes.get(n, 0) for n in names):
            continue
        found.append(LinearSearch(loop_line=_line(call), end_line=call.end_point.row + 1, exit_line=_line(call),
                                  table=texts[0] if texts else "", key=texts[-1] if texts else "", bound="",
                                  algorithm=name, around_line=loop.start_line))
    return sorted(found, key=lambda search: search.loop_line)


def _callee(call: tree_sitter.Node) -> str:
    """A call's function as written, without whitespace (`std :: find` -> `std::find`)."""
    return re.sub(r"\s+", "", _text(call.child_by_field_name("function")))


def _range_element(loop: tree_sitter.Node) -> set[str]:
    """A range-for's element variable (a new range each iteration when it is a container), or nothing."""
    name = _declared_name(loop.child_by_field_name("declarator")) if loop.type == "for_range_loop" else ""
    return {name} if name else set()


def _resumed(loop: tree_sitter.Node) -> set[str]:
    """Iterators the loop sets from a scan's result (`it = std::find(it + 1, v.end(), x)`): the next scan resumes
    where the last one stopped, one pass over the range in all."""
    found = set()
    for node in _walk(loop):
        if node.type == "assignment_expression" and any(
                n.type == "call_expression" and _STD_CALL_RE.match(_callee(n))
                for n in _walk(node.child_by_field_name("right"))):
            found.add(_text(node.child_by_field_name("left")))
    return found


def _fixed_sizes(function: tree_sitter.Node) -> dict[str, int]:
    """Arrays of the function of at most MAX_FIXED_TRIPS elements fixed in the source: `int a[4]`,
    `std::array<int, 4> a` (parameters and locals) -> their size."""
    sizes: dict[str, int] = {}
    for node in _walk(function):
        if node.type not in ("parameter_declaration", "declaration"):
            continue
        type_text = re.sub(r"\s+", "", _text(node.child_by_field_name("type") or node))
        declared = re.search(r"(?:^|::)array<[^,<>]+,(\d+)>$", type_text)
        for declarator in node.children_by_field_name("declarator"):
            target = declarator.child_by_field_name("declarator") if declarator.type == "init_declarator" \
                else declarator
            size = target.child_by_field_name("size") if target is not None and target.type == "array_declarator" \
                else None
            count = int(_text(size)) if size is not None and _text(size).isdigit() else (
                int(declared.group(1)) if declared else 0)
            if 0 < count <= MAX_FIXED_TRIPS:
                sizes[_declared_name(target)] = count
    return sizes


def _bounds_index(term: tree_sitter.Node, index: str) -> bool:
    return (term.type == "binary_expression" and _text(term.child_by_field_name("operator")) in _COMPARISONS
            and any(side is not None and side.type == "identifier" and _text(side) == index
                    for side in (term.child_by_field_name("left"), term.child_by_field_name("right"))))


def _fixed_short(bound: str) -> bool:
    """Whether the bound is a literal of at most MAX_FIXED_TRIPS trips (i < 4)."""
    literal = re.search(r"[<>]=?\s*(\d+)\s*$", bound)
    return literal is not None and int(literal.group(1)) <= MAX_FIXED_TRIPS


# ---- recomputed work -----------------------------------------------------------------------------------------------

def _recomputed(loop_nodes: list[tuple[tree_sitter.Node, Loop]]) -> list[RecomputedExpression]:
    """Pure calls and divisions in inner loops that depend on inner loops' indices and on nothing the enclosing
    loop changes: each reported against the outermost loop whose every iteration recomputes it."""
    found: dict[tuple[int, str], RecomputedExpression] = {}
    by_node = {node.id: (node, loop) for node, loop in loop_nodes}
    for outer_node, outer in loop_nodes:
        if outer.innermost or outer.kind != "for":
            continue
        scalars, memory, unknown_call = _written(outer_node)
        inner = [(n, lp) for n, lp in (by_node[x.id] for x in _walk(outer_node) if x.id in by_node)
                 if n.id != outer_node.id and lp.kind == "for"]
        indices = {_loop_variable(n) for n, _ in inner if _invariant_bounds(n, scalars, memory, unknown_call)}
        indices.discard("")
        for inner_node, inner_loop in inner:
            if not inner_loop.innermost:
                continue
            covered: list[tree_sitter.Node] = []
            for expr, kind in _candidates(inner_node.child_by_field_name("body") or inner_node):
                if any(c.start_byte <= expr.start_byte and expr.end_byte <= c.end_byte for c in covered):
                    continue  # a part of an expression already reported
                names = {_text(n) for n in _walk(expr) if n.type == "identifier"}
                used = tuple(sorted(names & indices))
                if not used or not _is_invariant(expr, (scalars - indices), memory, unknown_call):
                    continue
                covered.append(expr)
                key = (_line(expr), _text(expr))
                if key not in found or outer.depth < _depth_of(found[key].outer_line, loop_nodes):
                    calls = any(n.type == "call_expression" for n in _walk(expr))
                    found[key] = RecomputedExpression(_line(expr), _text(expr), "call" if calls else kind,
                                                      outer.start_line, inner_loop.start_line, used)
    return sorted(found.values(), key=lambda e: (e.line, e.text))


def _invariant_bounds(loop: tree_sitter.Node, scalars: set[str], memory: set[str], unknown_call: bool) -> bool:
    """Whether an inner for loop runs over the same indices in every iteration of the enclosing loop (its start and
    bound use nothing the enclosing loop writes but the inner loop's own variable)."""
    variable = _loop_variable(loop)
    parts = [loop.child_by_field_name(name) for name in ("initializer", "condition")]
    return all(part is None or _is_invariant(part, scalars - {variable}, memory, unknown_call)
               or _only_assigns(part, variable, scalars, memory, unknown_call) for part in parts)


def _only_assigns(init: tree_sitter.Node, variable: str, scalars: set[str], memory: set[str],
                  unknown_call: bool) -> bool:
    """A for initializer `k = e` / `int k = e` whose value e is invariant."""
    values = [n.child_by_field_name("value") or n.child_by_field_name("right") for n in _walk(init)
              if n.type in ("init_declarator", "assignment_expression")]
    return bool(values) and all(v is not None and _is_invariant(v, scalars - {variable}, memory, unknown_call)
                                for v in values)


def _depth_of(line: int, loop_nodes: list[tuple[tree_sitter.Node, Loop]]) -> int:
    return next((loop.depth for _, loop in loop_nodes if loop.start_line == line), 0)


# ---- OpenMP -------------------------------------------------------------------------------------------------------

def _pragmas(body: tree_sitter.Node) -> list[OmpPragma]:
    found = []
    for node in _walk(body):
        if node.type != "preproc_call" or _text(node.child_by_field_name("directive")) != "#pragma":
            continue
        text = _text(node.child_by_field_name("argument")).strip()
        if not text.startswith("omp"):
            continue
        loop = _next_loop(node) if re.search(r"\bfor\b", text) else None
        schedule = _SCHEDULE_RE.search(text)
        found.append(OmpPragma(line=_line(node), text=text, schedule=schedule.group(1) if schedule else "",
                               loop_line=_line(loop) if loop is not None else None,
                               triangular=loop is not None and _is_triangular(loop)))
    return found


def _next_loop(pragma: tree_sitter.Node) -> tree_sitter.Node | None:
    sibling = pragma.next_named_sibling
    while sibling is not None and sibling.type == "preproc_call":
        sibling = sibling.next_named_sibling
    return sibling if sibling is not None and sibling.type in _LOOP_TYPES else None


def _loop_variable(loop: tree_sitter.Node) -> str:
    init = loop.child_by_field_name("initializer")
    if init is None:
        return ""
    for node in _walk(init):
        if node.type == "init_declarator":
            return _declared_name(node.child_by_field_name("declarator"))
        if node.type == "assignment_expression":
            left = node.child_by_field_name("left")
            return _text(left) if left is not None and left.type == "identifier" else ""
    return ""


def _is_triangular(loop: tree_sitter.Node) -> bool:
    """Whether a loop nested in loop has an initializer or condition that uses loop's variable (j = i, j < i)."""
    variable = _loop_variable(loop)
    body = loop.child_by_field_name("body")
    if not variable or body is None:
        return False
    for inner in (n for n in _walk(body) if n.type in _LOOP_TYPES):
        bounds = [inner.child_by_field_name(name) for name in ("initializer", "condition")]
        if any(b is not None and any(n.type == "identifier" and _text(n) == variable for n in _walk(b))
               for b in bounds):
            return True
    return False


# ---- loop-carried scalars ----------------------------------------------------------------------------------------

# Compound assignments OpenMP's reduction clause covers, by the operator it names.
_REDUCTION_OPERATORS = {"+=": "+", "-=": "-", "*=": "*", "&=": "&", "|=": "|", "^=": "^"}


def _self_update(node: tree_sitter.Node) -> tuple[str, str] | None:
    """(name, reduction operator or "") when node updates a plain variable from its own value (x++, x += e,
    x = x + e), else None."""
    if node.type == "update_expression":
        target = node.child_by_field_name("argument")
        operator = "+" if "++" in _text(node) else "-"
    elif node.type == "assignment_expression":
        target = node.child_by_field_name("left")
        op = _text(node.child_by_field_name("operator"))
        right = node.child_by_field_name("right")
        if op == "=":
            first = right.child_by_field_name("left") if right is not None and right.type == "binary_expression" \
                else None
            if target is None or first is None or _text(first) != _text(target):
                return None
            operator = _text(right.child_by_field_name("operator"))
            operator = operator if operator in _REDUCTION_OPERATORS.values() else ""
        else:
            operator = _REDUCTION_OPERATORS.get(op, "")
    else:
        return None
    return (_text(target), operator) if target is not None and target.type == "identifier" else None


def _carried_scalars(nest: tree_sitter.Node, loop: Loop) -> list[CarriedScalar]:
    """Scalars the nest carries across iterations: declared outside it, updated from their own value inside it.
    Loop variables of the nest's for loops are not carried (each iteration's value is known from its index)."""
    local = {_declared_name(n.child_by_field_name("declarator")) for n in _walk(nest) if n.type == "init_declarator"}
    local |= {_declared_name(d) for n in _walk(nest) if n.type == "declaration"
              for d in n.children_by_field_name("declarator")}
    local |= {_loop_variable(n) for n in _walk(nest) if n.type == "for_statement"}
    updates: dict[str, list[tuple[tree_sitter.Node, str]]] = {}
    for node in _walk(nest):
        update = _self_update(node)
        if update is not None and update[0] not in local:
            updates.setdefault(update[0], []).append((node, update[1]))
    found = []
    for name, nodes in updates.items():
        operators = {operator for _, operator in nodes}
        # A reduction only accumulates: each update is a statement of its own, and the name appears nowhere
        # else in the nest (its running value is never read), with one operator OpenMP can combine.
        alone = all(node.parent is not None and node.parent.type == "expression_statement" for node, _ in nodes)
        uses = sum(1 for n in _walk(nest) if n.type == "identifier" and _text(n) == name)
        own = sum(1 for node, _ in nodes for n in _walk(node) if n.type == "identifier" and _text(n) == name)
        reduction = alone and uses == own and len(operators) == 1 and "" not in operators
        found.append(CarriedScalar(name=name, loop_line=loop.start_line, line=min(_line(n) for n, _ in nodes),
                                   kind="reduction" if reduction else "scan",
                                   operator=operators.pop() if reduction else ""))
    return found


# ---- arrays of structures -----------------------------------------------------------------------------------------

_STRUCT_TYPES = ("struct_specifier", "class_specifier")  # C++'s class lays its fields out as a struct does


def _struct_layouts(root: tree_sitter.Node) -> dict[str, list[tuple[str, int]]]:
    """Structures defined in the file: type name -> [(field, bytes)] (typedef names and struct tags)."""
    layouts: dict[str, list[tuple[str, int]]] = {}
    for node in _walk(root):
        if node.type not in _STRUCT_TYPES or node.child_by_field_name("body") is None:
            continue
        fields = [entry for decl in node.child_by_field_name("body").named_children
                  if decl.type == "field_declaration" for entry in _field_entries(decl)]
        tag = node.child_by_field_name("name")
        if tag is not None:
            layouts[_text(tag)] = fields
        if node.parent is not None and node.parent.type == "type_definition":
            for declarator in node.parent.children_by_field_name("declarator"):
                layouts[_text(declarator)] = fields
    return layouts


def _field_entries(declaration: tree_sitter.Node) -> list[tuple[str, int]]:
    type_text = _text(declaration.child_by_field_name("type")).split()[-1] if declaration.child_by_field_name(
        "type") is not None else ""
    scalar = TYPE_BYTES.get(type_text, 8)
    if any(c.type == "storage_class_specifier" and _text(c) == "static" for c in declaration.children):
        return []  # a static member is stored once, outside every instance
    entries = []
    for declarator in declaration.children_by_field_name("declarator"):
        if declarator.type == "function_declarator":
            continue  # a method declared in the body (`void drift(double dt);`) takes no room in an instance
        count, node = 1, declarator
        while node is not None and node.type == "array_declarator":
            size = node.child_by_field_name("size")
            count *= int(_text(size), 0) if size is not None and _text(size).isdigit() else 1
            node = node.child_by_field_name("declarator")
        is_pointer = node is not None and node.type == "pointer_declarator"
        name = _declared_name(node) if node is not None and node.type != "field_identifier" else _text(node)
        entries.append((name, count * (8 if is_pointer else scalar)))
    return entries


# C++ containers whose elements lie one after another in memory (an array of structures when they are structures)
_CONTIGUOUS_CONTAINERS = frozenset({"vector", "array", "span", "valarray"})


def _pointer_types(function: tree_sitter.Node) -> dict[str, str]:
    """Names declared as pointers, arrays or contiguous C++ containers (`std::vector<S> &v`, `std::array<S, 8>`;
    parameters and locals) -> their element type name."""
    types: dict[str, str] = {}
    for node in _walk(function):
        if node.type not in ("parameter_declaration", "declaration"):
            continue
        type_node = node.child_by_field_name("type")
        if type_node is None:
            continue
        type_name = _text(type_node.child_by_field_name("name") or type_node)
        element = _container_element(type_node)
        for declarator in node.children_by_field_name("declarator"):
            target = declarator
            if declarator.type == "init_declarator":
                target = declarator.child_by_field_name("declarator")
            if target is not None and target.type in ("pointer_declarator", "array_declarator"):
                types[_declared_name(target)] = type_name
            elif target is not None and element:
                types[_declared_name(target)] = element
    return types


def _container_element(type_node: tree_sitter.Node) -> str:
    """The element type of `std::vector<S>` (and the other contiguous containers), "" for any other type."""
    template = type_node if type_node.type == "template_type" else next(
        (n for n in type_node.named_children if n.type == "template_type"), None)
    if template is None or _text(template.child_by_field_name("name")) not in _CONTIGUOUS_CONTAINERS:
        return ""
    arguments = template.child_by_field_name("arguments")
    first = arguments.named_children[0] if arguments is not None and arguments.named_children else None
    return _text(first.child_by_field_name("type") or first).split()[-1] if first is not None else ""


def _element_aliases(loop: tree_sitter.Node) -> dict[str, str]:
    """Names of one element of an array inside the loop: pointers declared in it as one element (q = &p[i],
    q = p + i): q -> p; and a range-for's variable over an array or container (`for (auto &e : v)`): e -> v."""
    aliases = {}
    right = loop.child_by_field_name("right") if loop.type == "for_range_loop" else None
    if right is not None and right.type == "identifier":
        aliases |= {name: _text(right) for name in _range_element(loop)}
    for node in _walk(loop):
        if node.type == "init_declarator" and node.child_by_field_name("value") is not None:
            value = node.child_by_field_name("value")
            if value.type in ("pointer_expression", "binary_expression"):
                base = _base_identifier(value)
                if base:
                    aliases[_declared_name(node.child_by_field_name("declarator"))] = base
    return aliases


def _field_access_array(access: tree_sitter.Node, aliases: dict[str, str]) -> str:
    """The array a field access reads one element of, or "" (a plain struct variable, a scalar pointer)."""
    argument = access.child_by_field_name("argument")
    operator = _text(access.child_by_field_name("operator"))
    if argument is None:
        return ""
    if argument.type == "subscript_expression" and operator == ".":
        return _base_identifier(argument)
    if operator == "->" and argument.type == "parenthesized_expression":
        return _base_identifier(argument)
    if argument.type == "identifier":  # q->x through q = &p[i]; e.x through a range-for's element e
        return aliases.get(_text(argument), "")
    return ""


def _struct_accesses(root: tree_sitter.Node, function: tree_sitter.Node,
                     loop_nodes: list[tuple[tree_sitter.Node, Loop]]) -> list[StructAccess]:
    """Per innermost loop and array of structures: the fields its element accesses use (`p[i].x`, `q->x` with
    `q = &p[i]`, `e.x` for a range-for's element), a method called on the element counting the fields its body
    uses, at the body's lines (`e.update()`: inlined, its code runs at those lines)."""
    layouts, pointer_types = _struct_layouts(root), _pointer_types(function)
    found = []
    for node, loop in loop_nodes:
        if not loop.innermost:
            continue
        aliases = _element_aliases(node)
        used: dict[str, dict[str, set[int]]] = {}
        for access in (n for n in _walk(node) if n.type == "field_expression"):
            array = _field_access_array(access, aliases)
            if not array or pointer_types.get(array) not in layouts:
                continue
            name = _text(access.child_by_field_name("field"))
            fields = used.setdefault(array, {})
            if access.parent is not None and access.parent.type == "call_expression" \
                    and access.parent.child_by_field_name("function") == access:
                for field_name, lines in _method_fields(root, pointer_types[array], name, layouts).items():
                    fields.setdefault(field_name, set()).update(lines | {_line(access)})
            else:
                fields.setdefault(name, set()).add(_line(access))
        for array, fields in used.items():
            if not fields:
                continue
            type_name = pointer_types[array]
            layout = dict(layouts[type_name])
            found.append(StructAccess(
                array=array, type_name=type_name, loop_line=loop.start_line,
                lines=tuple(sorted({line for lines in fields.values() for line in lines})),
                fields_used=tuple(sorted(fields)), used_bytes=sum(layout.get(f, 8) for f in fields),
                struct_bytes=sum(layout.values())))
    return found


def _method_fields(root: tree_sitter.Node, type_name: str, method: str,
                   layouts: dict[str, list[tuple[str, int]]]) -> dict[str, set[int]]:
    """The fields of type_name that its method's body uses (`v0` or `this->v0`), with their lines: the method
    defined in the structure's body or out of it (`Type::method`); {} where the file does not define it."""
    fields = {name for name, _ in layouts.get(type_name, [])}
    used: dict[str, set[int]] = {}
    for node in _walk(root):
        if node.type != "function_definition" or _function_name(node) not in (method, f"{type_name}::{method}"):
            continue
        owner = node.parent.parent if node.parent is not None else None  # class body -> struct_specifier
        inside = owner is not None and owner.type in _STRUCT_TYPES and _text(owner.child_by_field_name("name")) \
            == type_name
        if not inside and _function_name(node) != f"{type_name}::{method}":
            continue
        body = node.child_by_field_name("body")
        for ident in (n for n in (_walk(body) if body is not None else []) if n.type in ("identifier",
                                                                                           "field_identifier")):
            if _text(ident) in fields:
                used.setdefault(_text(ident), set()).add(_line(ident))
    return used


# ---- per-line facts of avoidable work -------------------------------------------------------------------------------

def avoidable_work_facts(analysis: LoopAnalysis, line: int) -> list[tuple[str, float, str]]:
    """(metric, value, unit) facts of one source line about work a rewrite avoids, for a hot line's metrics:
    `static.linear_search_loop` (the start line of the linear search whose span holds the line; with
    `static.linear_search_call_loop`, the line of the loop around a standard library scan the line calls),
    `static.recomputed_exprs` (pure calls and divisions on the line that every iteration of an enclosing loop
    recomputes with the same values) and `static.recomputed_outer_loop` (the outermost such loop's line)."""
    facts: list[tuple[str, float, str]] = []
    search = next((s for s in analysis.searches if s.loop_line <= line <= s.end_line), None)
    if search is not None:
        facts.append(("static.linear_search_loop", float(search.loop_line), "line"))
        if search.algorithm:  # the scan is a library call's, inside the loop starting at around_line
            facts.append(("static.linear_search_call_loop", float(search.around_line), "line"))
    recomputed = [r for r in analysis.recomputed if r.line == line]
    if recomputed:
        facts += [("static.recomputed_exprs", float(len(recomputed)), "expr"),
                  ("static.recomputed_outer_loop", float(min(r.outer_line for r in recomputed)), "line")]
    return facts + dependence_facts(analysis, line)


def dependence_facts(analysis: LoopAnalysis, line: int) -> list[tuple[str, float, str]]:
    """(metric, value, unit) facts of one source line from dependences.py: `static.hand_vectorized` (its innermost
    loop uses vector registers by hand), `static.memory_accumulators` (updates on the line of a memory location
    at an address its loop does not change), `static.pointer_chase_loop` (the start line of the innermost loop
    around it that steps a variable to a value loaded through it, or, outside the function's loops, the function's
    first line when it recurses on a node loaded through a pointer), `static.carried_divisions` (integer divisions on
    the line whose result feeds the loop's next division), `static.carried_division_loop` (the start line of the
    loop of such a division whose span holds the line), `static.thread_slot_writes` (writes on the line, in a
    parallel region, to a shared array's element selected by the thread id) and, for the arithmetic chain of most
    latency with an update on the line or carried by the loop the line heads (a chain's own lines may hold no
    instruction callgrind gives them: `v = std::min(v, z)` runs as the header file's code), its estimated
    `static.chain_latency_cycles` (the latency of its dependent operations per iteration or call, by their kinds
    and its value's type: dependences.operation_latency), `static.chain_operations` (how many),
    `static.chain_reassociable` (its updates that add an independent term), `static.chain_line` (its first update's
    line, which names the chain: its lines share it) and `static.chain_loop_line` (the loop carrying it, 0 for the
    state a function keeps across calls); and `static.serial_chain_loop_latency_cycles` (the latency of the longest
    chain without such updates that the innermost loop around the line carries, its calls' state chains
    included); `static.indexed_updates` (updates on the line of an array element at an index
    its innermost loop loads: a histogram's `hist[x[i]]++`) and `static.indexed_update_loop` (the start line of the
    innermost loop holding such an update whose span holds the line)."""
    facts: list[tuple[str, float, str]] = []
    loop = analysis.innermost_loop_at(line)
    if loop is not None and loop.start_line in analysis.vector_loops:
        facts.append(("static.hand_vectorized", 1.0, "flag"))
    accumulators = [a for a in analysis.accumulators if a.line == line]
    if accumulators:
        facts.append(("static.memory_accumulators", float(len(accumulators)), "expr"))
    if loop is not None and any(c.loop_line == loop.start_line for c in analysis.chases):
        facts.append(("static.pointer_chase_loop", float(loop.start_line), "line"))
    elif loop is None and (recursion := next((c for c in analysis.recursive_chases
                                              if c.loop_line <= line <= c.end_line), None)) is not None:
        # outside the function's loops, a recursion down pointers is the loop: each call is an iteration
        facts.append(("static.pointer_chase_loop", float(recursion.loop_line), "line"))
    facts += _on_line_and_in_loop(analysis.divisions, line, "static.carried_divisions", "static.carried_division_loop")
    slots = [w for w in analysis.slot_writes if w.line == line]
    if slots:
        facts.append(("static.thread_slot_writes", float(len(slots)), "expr"))
    facts += _on_line_and_in_loop(analysis.indexed_updates, line, "static.indexed_updates",
                                  "static.indexed_update_loop")
    serial = [c.latency_cycles for c in analysis.chains if loop is not None and c.loop_line == loop.start_line
              and not c.reassociable]
    if serial:
        facts.append(("static.serial_chain_loop_latency_cycles", float(max(serial)), "cycle"))
    # a call's chain is the callee's lines
    chains = [c for c in analysis.chains if (line in c.lines or c.loop_line == line) and not c.callee]
    if chains:
        chain = max(chains, key=lambda c: (c.latency_cycles, c.operations))
        facts += [("static.chain_latency_cycles", chain.latency_cycles, "cycle"),
                  ("static.chain_operations", float(chain.operations), "op"),
                  ("static.chain_reassociable", float(chain.reassociable), "update"),
                  ("static.chain_line", float(chain.lines[0]), "line"),
                  ("static.chain_loop_line", float(chain.loop_line), "line")]
    return facts


def _on_line_and_in_loop(found: Sequence[dependences.CarriedDivision | dependences.IndexedUpdate], line: int,
                         count_fact: str, loop_fact: str) -> list[tuple[str, float, str]]:
    """How many of `found` are on `line` (count_fact), and the loop of the first whose loop holds it (loop_fact):
    the expressions a rule reports, and the loop whose lines it claims."""
    facts: list[tuple[str, float, str]] = []
    here = [item for item in found if item.line == line]
    if here:
        facts.append((count_fact, float(len(here)), "expr"))
    loop = next((item.loop_line for item in found if item.loop_line <= line <= item.end_line), None)
    if loop is not None:
        facts.append((loop_fact, float(loop), "line"))
    return facts
