"""Static facts about dependences through memory and hand-written vector code in a function's loops, from the
tree-sitter parse loops.py makes (analyze_loops calls these and keeps what they find in its LoopAnalysis).

What it finds, with 1-based line numbers:
- hand-vectorised loops: loops whose code names vector types or intrinsics (`__m128d`, `_mm256_add_ps`, a type
  declared with `vector_size` or as a union/typedef holding a vector register, NEON `float32x4_t`). gcc's
  vectoriser reports such loops "not vectorized" (unsupported type: the vector registers are already there), which
  is no missed vectorisation;
- accumulators in memory: an innermost loop that updates, from its own value, a memory location whose address the
  loop does not change (`C(0, 1) += A(0, p) * B(p, 1)` over p, `out[i] += x[k]` over k, `acc->sum += v`). Unless
  the compiler proves that no other access of the loop aliases it, the location is loaded and stored back every
  iteration, and each iteration's load waits for the previous iteration's store (store-to-load forwarding) on the
  loop-carried chain. A local scalar (`float s`), a local array or structure that does not escape, which gcc
  promotes to registers, does not count;
- pointer chases: a loop that steps a variable to a value loaded through that same variable (`p = p->next`,
  `i = next[i]`, `p = *p`): the address of each iteration's loads is known only once the previous load returned, so
  their latencies add up instead of overlapping;
- divisions on a loop-carried chain: an integer division or remainder, in a loop, by a divisor that is a variable
  of the function (not a literal, macro or constant, which gcc turns into a multiplication), whose result flows back
  into the loop's next division (Euclid's `a %= b; swap(a, b)`, `h = (h * 31 + x[i]) % p`). An integer division
  takes 10-90 cycles of latency where an add takes one, and the chain makes every iteration wait for the last one's;
- arithmetic chains: a value an innermost loop updates from its own previous value, in the loop's body, in
  statements whose dependent operations take together at least two cycles of latency each iteration (xorshift's
  `x ^= x << 13; x ^= x >> 17; x ^= x << 5`, four `memory[0] += ...` a step, one floating-point add `s += a[i] *
  b[i]`, `v = std::min(v, x + y)` on floats, two multiplications `acc = (acc * d[i]) * d[i + 1]`), or the state a
  function keeps across calls (a member, a global, a static local, a parameter's field) updated the same way: each
  iteration (each call) waits for the last one's result, so the chain's latency is paid one step after another
  whatever the core's width. The latency is estimated from each operation's kind and the type of the value the chain
  carries (operation_latency: the declared type, through typedefs; an unknown type counts as an integer). Updates
  that add an independent term (`t += e`, `t = t * e`, `v = std::min(v, e)`: e not reading t) can be cut into that
  many partial results; the others only overlap with another, independent chain (a second generator, a second
  accumulator);
- writes to per-thread slots: inside an OpenMP parallel region, a loop writing an element of an array declared
  outside the region at an index derived from omp_get_thread_num() (directly, through a variable, or through a
  reference or pointer bound to that element), at an address an enclosing loop does not change; the same in a
  function started as a thread (std::thread, std::jthread, std::async, emplace_back into a vector of threads) inside
  a loop that passes it its own variable, the thread's index. Neighbouring threads' slots share a cache line unless
  the element type is aligned to one (alignas(64), _Alignas(64), aligned(64),
  hardware_destructive_interference_size), so every write invalidates the line in the other cores (false sharing);
- updates at a data-dependent index: an innermost loop updating, from its own value, an array element whose index is
  a value the loop loads (`hist[pixels[i]]++`, `count[v.key] += 1` over a range-for's elements, `y[col[k]] += a *
  x[k]`: a histogram or a scatter-add). Updates that hit the element one of the last few updates stored wait for
  that store (store-to-load forwarding, or a memory-ordering machine clear when the load was speculated ahead of the
  store), so runs of equal indices serialise the loop; and no vectoriser's loop: lanes with equal indices conflict.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Protocol

import tree_sitter


class Loop(Protocol):
    """What these facts read of profiling.cpu.loops.Loop (which imports this module: a protocol, not an import)."""

    start_line: int
    end_line: int
    depth: int
    innermost: bool

# Vector register types and intrinsics of x86 (SSE to AVX-512) and Arm NEON.
_VECTOR_TYPE_RE = re.compile(r"^(__m(64|128|256|512)[dhi]?|(u?int|float|poly|bfloat)(8|16|32|64)x\d+(x\d+)?_t)$")
_INTRINSIC_RE = re.compile(r"^(_mm(256|512)?_\w+|v\w+q?_[suf]\d+)$")
_VECTOR_DEFINITION_RE = re.compile(r"\bvector_size\b|\b__m(64|128|256|512)[dhi]?\b|\b(float|u?int)\d+x\d+_t\b")
_LINE_ALIGNED_RE = re.compile(r"(_A|a)lignas\s*\(\s*(6[4-9]|[7-9]\d|\d{3,}|std::hardware_destructive_interference_size)"
                              r"|aligned\s*\(\s*(6[4-9]|[7-9]\d|\d{3,})")
_COMPOUND = frozenset({"+=", "-=", "*=", "/=", "&=", "|=", "^=", "<<=", ">>=", "%="})
_MEMORY_TARGETS = frozenset({"subscript_expression", "field_expression", "pointer_expression", "call_expression"})
_LOOP_TYPES = frozenset({"for_statement", "while_statement", "do_statement", "for_range_loop"})
_THREAD_ID = "omp_get_thread_num"
_THREAD_LOCAL_RE = re.compile(r"\b(thread_local|_Thread_local|__thread)\b")

# Words of integer types (`unsigned long`, `std::size_t`, `uint32_t`); any other word makes a type not one.
_INTEGER_TYPE_WORDS = frozenset({
    "int", "long", "short", "char", "unsigned", "signed", "size_t", "ssize_t", "ptrdiff_t", "intptr_t", "uintptr_t",
    "int8_t", "int16_t", "int32_t", "int64_t", "uint8_t", "uint16_t", "uint32_t", "uint64_t", "std", "u32", "u64",
    "i32", "i64", "register",
})
_SWAPS = frozenset({"swap", "std::swap"})
# a cast to a floating type or a floating literal inside a division makes it a floating-point one
_FLOATING_RE = re.compile(r"\b(float|double)\b|(?<![\w.])(\d+\.\d*|\.\d)")

LoopNodes = Sequence[tuple[tree_sitter.Node, Loop]]


@dataclass(frozen=True)
class MemoryAccumulator:
    """A memory location an innermost loop updates from its own value at an address the loop does not change."""

    line: int
    loop_line: int
    target: str  # the location as written (`C( 0, 1 )`, `out[i]`)


@dataclass(frozen=True)
class PointerChase:
    """A loop stepping a variable to a value loaded through it."""

    line: int  # the stepping assignment
    loop_line: int
    end_line: int
    variable: str


@dataclass(frozen=True)
class ThreadSlotWrite:
    """A write, inside a loop of code that runs once per thread, to the element of a shared array a thread index
    selects."""

    line: int
    array: str
    region_line: int  # the `#pragma omp parallel` line, or the first line of a function started as a thread


@dataclass(frozen=True)
class ArithmeticChain:
    """A value updated from its own previous value in several dependent operations per iteration of a loop (or per
    call of a function, for state it keeps across calls)."""

    target: str  # as written: `val`, `memory[0]`
    loop_line: int  # the innermost loop carrying it; 0 for state the function keeps across calls
    lines: tuple[int, ...]  # the lines of its updates
    operations: int  # dependent operations on the chain per iteration (per call)
    reassociable: int  # updates adding an independent term (`t += e`, e not reading t): partial results it splits into
    callee: str = ""  # the function of the file whose state chain the loop's call (at lines) advances
    latency_cycles: float = 0.0  # the latency of its longest path per iteration (per call): operation_latency's sum


@dataclass(frozen=True)
class IndexedUpdate:
    """An update, in an innermost loop, of an array element from its own value at an index the loop loads."""

    line: int
    loop_line: int
    end_line: int
    target: str  # as written: `hist[image.data[i]]`


@dataclass(frozen=True)
class CarriedDivision:
    """An integer division whose result the loop feeds into its next division."""

    line: int
    loop_line: int
    end_line: int
    text: str  # the division as written (`a %= b`)


def _text(node: tree_sitter.Node | None) -> str:
    return node.text.decode("utf-8", "replace") if node is not None and node.text is not None else ""


def _line(node: tree_sitter.Node) -> int:
    return node.start_point.row + 1


def _walk(node: tree_sitter.Node) -> Iterator[tree_sitter.Node]:
    yield node
    for child in node.children:
        yield from _walk(child)


def _identifiers(node: tree_sitter.Node) -> set[str]:
    return {_text(n) for n in _walk(node) if n.type == "identifier"}


def _declared_name(declarator: tree_sitter.Node | None) -> str:
    while declarator is not None and declarator.type != "identifier":
        inner = declarator.child_by_field_name("declarator")
        if inner is None:  # C++ reference declarators hold their identifier as a plain child
            inner = next((c for c in declarator.named_children if c.type.endswith("declarator")
                          or c.type == "identifier"), None)
        declarator = inner
    return _text(declarator)


def _declarators(declaration: tree_sitter.Node) -> list[tree_sitter.Node]:
    return declaration.children_by_field_name("declarator")


# ---- hand-vectorised loops ------------------------------------------------------------------------------------------

def vector_type_names(root: tree_sitter.Node) -> set[str]:
    """Names of the types of the file that hold vector registers: typedefs, unions and structures whose definition
    names a vector type or vector_size (`typedef union { __m128d v; double d[2]; } v2df_t;`)."""
    names: set[str] = set()
    for node in _walk(root):
        if node.type == "type_definition" and _VECTOR_DEFINITION_RE.search(_text(node)):
            names |= {_declared_name(d) or _text(d) for d in _declarators(node)}
        elif node.type in ("struct_specifier", "union_specifier", "class_specifier") and \
                node.child_by_field_name("body") is not None and _VECTOR_DEFINITION_RE.search(_text(node)):
            names.add(_text(node.child_by_field_name("name")))
    return names - {""}


def hand_vectorized_loops(root: tree_sitter.Node, function: tree_sitter.Node, loop_nodes: LoopNodes) -> set[int]:
    """Start lines of the loops whose code uses vector registers: a vector type, an intrinsic, or a variable of the
    function declared with a vector type."""
    types = vector_type_names(root)
    variables = set()
    for node in _walk(function):
        if node.type in ("declaration", "parameter_declaration"):
            type_text = _text(node.child_by_field_name("type"))
            if type_text in types or _VECTOR_TYPE_RE.match(type_text):
                variables |= {_declared_name(d) for d in _declarators(node)}
    return {loop.start_line for node, loop in loop_nodes if _uses_vectors(node, types, variables - {""})}


def _uses_vectors(loop: tree_sitter.Node, types: set[str], variables: set[str]) -> bool:
    for node in _walk(loop):
        text = _text(node)
        if node.type in ("type_identifier", "primitive_type") and (text in types or _VECTOR_TYPE_RE.match(text)):
            return True
        if node.type == "identifier" and (text in variables or _VECTOR_TYPE_RE.match(text)):
            return True
        if node.type == "call_expression" and _INTRINSIC_RE.match(_text(node.child_by_field_name("function"))):
            return True
    return False


# ---- accumulators in memory -----------------------------------------------------------------------------------------

def _written_target(node: tree_sitter.Node) -> tree_sitter.Node | None:
    """What an assignment (`t = e`, `t op= e`) or an increment (`t++`) writes; None for any other node."""
    if node.type == "assignment_expression":
        return node.child_by_field_name("left")
    return node.child_by_field_name("argument") if node.type == "update_expression" else None


def _assigned_names(node: tree_sitter.Node) -> set[str]:
    """Plain variables assigned or incremented under node (a write into an element, `counts[t] += 1`, changes no
    variable)."""
    return {_text(target) for n in _walk(node) if (target := _written_target(n)) is not None
            and target.type == "identifier"}


def _written_names(loop: tree_sitter.Node) -> set[str]:
    """Names a loop changes: plain variables assigned, incremented or declared in it (its header included)."""
    names = _assigned_names(loop)
    for node in _walk(loop):
        if node.type == "init_declarator":
            names.add(_declared_name(node.child_by_field_name("declarator")))
        elif node.type == "for_range_loop":
            names.add(_declared_name(node.child_by_field_name("declarator")) or
                      _text(node.child_by_field_name("declarator")))
    return names - {""}


def _promotable_locals(function: tree_sitter.Node) -> set[str]:
    """Locals of the function the compiler keeps in registers when they do not escape: arrays and structures
    declared in it by value (not pointers, not references)."""
    found = set()
    body = function.child_by_field_name("body")
    for node in _walk(body) if body is not None else ():
        if node.type != "declaration":
            continue
        for declarator in _declarators(node):
            inner = declarator.child_by_field_name("declarator") if declarator.type == "init_declarator" else declarator
            if inner is not None and inner.type in ("array_declarator", "identifier"):
                found.add(_declared_name(inner))
    return found - {""}


_RESTRICT = {"restrict", "__restrict", "__restrict__"}


def _restrict_pointers(function: tree_sitter.Node) -> set[str]:
    """Parameters declared `T *restrict p`: nothing else in the function reaches their memory, so the compiler may
    keep an accumulator at a fixed address in a register (`out[i] += ...` over j is then not in memory)."""
    found = set()
    declarator = function.child_by_field_name("declarator")
    parameters = declarator.child_by_field_name("parameters") if declarator is not None else None
    for node in _walk(parameters) if parameters is not None else ():
        if node.type == "pointer_declarator" and any(
                child.type == "type_qualifier" and _text(child) in _RESTRICT for child in node.children):
            found.add(_declared_name(node))
    return found - {""}


def _self_updated_target(node: tree_sitter.Node) -> tree_sitter.Node | None:
    """The target of `t op= e`, `t++` or `t = t op e`, else None."""
    if node.type == "update_expression":
        return node.child_by_field_name("argument")
    if node.type != "assignment_expression":
        return None
    target, right = node.child_by_field_name("left"), node.child_by_field_name("right")
    operator = _text(node.child_by_field_name("operator"))
    if operator in _COMPOUND:
        return target
    if operator == "=" and right is not None and right.type == "binary_expression" and target is not None \
            and _text(right.child_by_field_name("left")) == _text(target):
        return target
    return None


def _base(node: tree_sitter.Node) -> str:
    """The variable a memory expression starts from (`out` of `out[i].x`, `C` of the macro call `C(0, 1)`)."""
    while node is not None and node.type in _MEMORY_TARGETS | {"parenthesized_expression"}:
        node = (node.child_by_field_name("argument") or node.child_by_field_name("function")
                or node.named_children[0] if node.named_children else None)
    return _text(node) if node is not None and node.type == "identifier" else ""


def memory_accumulators(function: tree_sitter.Node, loop_nodes: LoopNodes) -> list[MemoryAccumulator]:
    """Updates of a memory location at a loop-invariant address from its own value, in innermost loops (not of
    locals the compiler keeps in registers, nor through `restrict` parameters)."""
    locals_ = _promotable_locals(function) | _restrict_pointers(function)
    found = []
    for node, loop in loop_nodes:
        if not loop.innermost:
            continue
        changed = _written_names(node)
        for update in _walk(node):
            target = _self_updated_target(update)
            if target is None or target.type not in _MEMORY_TARGETS or _base(target) in locals_:
                continue
            if target.type == "pointer_expression" and _text(target).startswith("&"):
                continue
            if not _identifiers(target) & changed:
                found.append(MemoryAccumulator(_line(update), loop.start_line, _text(target)))
    return found


# ---- updates at a data-dependent index ----------------------------------------------------------------------------

def _subscript_index(node: tree_sitter.Node) -> tree_sitter.Node | None:
    """The index of a subscript (`index` in C's grammar, `indices` in C++'s)."""
    return node.child_by_field_name("index") or node.child_by_field_name("indices")


def _loaded_names(loop: tree_sitter.Node) -> set[str]:
    """Names the loop binds to a value it loads: a range-for's element, and variables assigned or initialised in the
    loop from an expression holding a load (`int b = x[i] >> 4;`), followed through one another."""
    names: set[str] = set()
    if loop.type == "for_range_loop":
        names.add(_declared_name(loop.child_by_field_name("declarator")) or
                  _text(loop.child_by_field_name("declarator")))
    bindings: list[tuple[str, tree_sitter.Node]] = []
    for node in _walk(loop):
        if node.type == "init_declarator" and node.child_by_field_name("value") is not None:
            bindings.append((_declared_name(node.child_by_field_name("declarator")),
                             node.child_by_field_name("value")))
        elif node.type == "assignment_expression" and _text(node.child_by_field_name("operator")) == "=":
            target = node.child_by_field_name("left")
            if target is not None and target.type == "identifier":
                bindings.append((_text(target), node.child_by_field_name("right")))
    changed = True
    while changed:
        changed = False
        for name, value in bindings:
            if name and name not in names and (_holds_load(value) or _identifiers(value) & names):
                names.add(name)
                changed = True
    return names - {""}


def _holds_load(expression: tree_sitter.Node | None) -> bool:
    """Whether the expression reads memory: an element (`x[i]`), a field through a pointer or of an element
    (`p->k`, `a[i].k`), or a dereference (`*p`)."""
    for node in _walk(expression) if expression is not None else ():
        if node.type == "subscript_expression":
            return True
        if node.type == "pointer_expression" and not _text(node).startswith("&"):
            return True
        if node.type == "field_expression" and (_text(node.child_by_field_name("operator")) == "->"
                                                or _holds_load(node.child_by_field_name("argument"))):
            return True
    return False


def indexed_updates(loop_nodes: LoopNodes) -> list[IndexedUpdate]:
    """Updates from their own value (`t op= e`, `t++`, `t = t op e`) of an array element whose index the innermost
    loop around them loads (a load in the index, or a name the loop binds to a loaded value: `hist[x[i]]++`,
    `cnt[v.i]++` over `for (auto& v : arr)`). An index computed from the loop's counters alone (`out[i] += ...`) is
    a stream, and one the loop does not change is an accumulator in memory (memory_accumulators)."""
    found = []
    for node, loop in loop_nodes:
        if not loop.innermost:
            continue
        loaded, changed = _loaded_names(node), _written_names(node)
        for update in _walk(node):
            target = _stripped(_self_updated_target(update))
            if target is None or target.type != "subscript_expression":
                continue
            index = _subscript_index(target)
            if index is None or not _identifiers(index) & changed:
                continue
            if _holds_load(index) or _identifiers(index) & loaded:
                found.append(IndexedUpdate(_line(update), loop.start_line, loop.end_line, _text(target)))
    return found


# ---- pointer chases -------------------------------------------------------------------------------------------------

def _stripped(node: tree_sitter.Node | None) -> tree_sitter.Node | None:
    """The expression inside any parentheses and casts (`(T *) (v->n)` gives `v->n`)."""
    while node is not None and node.type in ("parenthesized_expression", "cast_expression"):
        node = node.child_by_field_name("value") or (node.named_children[-1] if node.named_children else None)
    return node


def _loaded_through(expression: tree_sitter.Node | None, variable: str) -> bool:
    """Whether the expression is a load whose address uses variable (`v->next`, `next[v]`, `*v`, `(T *) v->n`)."""
    expression = _stripped(expression)
    if expression is None or expression.type not in ("field_expression", "subscript_expression",
                                                     "pointer_expression"):
        return False
    if expression.type == "pointer_expression" and _text(expression).startswith("&"):
        return False
    if expression.type == "field_expression" and _text(expression.child_by_field_name("operator")) == ".":
        return _loaded_through(expression.child_by_field_name("argument"), variable)
    return variable in _identifiers(expression)


def _in_inner_loop(line: int, loop: Loop, loop_nodes: LoopNodes) -> bool:
    """Whether `line` lies in a loop nested in `loop`: what is found there is reported for that inner loop."""
    return any(other.depth > loop.depth and loop.start_line <= other.start_line <= line <= other.end_line
               for _, other in loop_nodes)


def pointer_chases(loop_nodes: LoopNodes) -> list[PointerChase]:
    """Loops stepping a variable to a value loaded through it, or through a local the loop computes from it (a tree
    of nodes in an array: `node = base + id; id = node->left`); each chase is reported for its innermost loop."""
    found = []
    for node, loop in loop_nodes:
        computed = _computed_from(node, loop, loop_nodes)
        for update in _walk(node):
            if update.type != "assignment_expression" or _text(update.child_by_field_name("operator")) != "=":
                continue
            target = update.child_by_field_name("left")
            if target is None or target.type != "identifier":
                continue
            line = _line(update)
            if _in_inner_loop(line, loop, loop_nodes):
                continue  # an inner loop's chase
            right, variable = update.child_by_field_name("right"), _text(target)
            if _loaded_through(right, variable) or any(
                    _loaded_through(right, local) for local, sources in computed.items() if variable in sources):
                found.append(PointerChase(line, loop.start_line, loop.end_line, variable))
    return found


def _computed_from(node: tree_sitter.Node, loop: Loop, loop_nodes: LoopNodes) -> dict[str, set[str]]:
    """The locals a loop's body declares with an initial value, and the identifiers that value reads
    (`NodeType *node = (NodeType *) (base + current);` gives node: {NodeType, base, current}); not those of its
    inner loops, whose scope the loop's own updates do not see."""
    body = node.child_by_field_name("body")
    return {_declared_name(n.child_by_field_name("declarator")): _identifiers(n.child_by_field_name("value"))
            for n in _walk(body) if n.type == "init_declarator" and n.child_by_field_name("value") is not None
            and not _in_inner_loop(_line(n), loop, loop_nodes)} if body is not None else {}


def recursive_chases(function: tree_sitter.Node) -> list[PointerChase]:
    """Recursive calls on a node reached through a pointer the current call loads (`l->add(k, x)` in a member
    function, `l` a member; `visit(node->left)`, `walk(next[v])`): each call's loads wait for the address the last
    call loaded, a pointer chase down the structure whether gcc turns the recursion into a loop or not. Reported
    with the function's span as the loop (loop_line its first line)."""
    name = _definition_name(function)
    body = function.child_by_field_name("body")
    if not name or body is None:
        return []
    locals_ = _function_locals(function)
    parameters = _parameter_names(function)
    found = []
    for call in _walk(body):
        if call.type != "call_expression":
            continue
        callee = call.child_by_field_name("function")
        if callee is None or re.split(r"::|\.|->", _text(callee))[-1] != name:
            continue
        if callee.type == "field_expression":
            target = _stripped(callee.child_by_field_name("argument"))
            through = _text(callee.child_by_field_name("operator")) == "->" and target is not None and (
                (target.type == "identifier" and _text(target) not in locals_ | parameters)  # a member pointer
                or target.type in ("field_expression", "subscript_expression"))  # loaded here: `p->next->f()`
            variable = _text(target)
        else:
            arguments = (call.child_by_field_name("arguments") or call).named_children
            loaded = [a for a in arguments if any(_loaded_through(a, p) for p in parameters | {"this"})
                      or (_stripped(a) is not None and _stripped(a).type == "field_expression"
                          and _text(_stripped(a).child_by_field_name("operator")) == "->")]
            through, variable = bool(loaded), _text(loaded[0]) if loaded else ""
        if through:
            found.append(PointerChase(_line(call), _line(function), function.end_point.row + 1, variable))
    return found


def _parameter_names(function: tree_sitter.Node) -> set[str]:
    declarator = function.child_by_field_name("declarator")
    while declarator is not None and declarator.type != "function_declarator":
        declarator = declarator.child_by_field_name("declarator")
    parameters = declarator.child_by_field_name("parameters") if declarator is not None else None
    return {_declared_name(p.child_by_field_name("declarator")) for p in
            (parameters.named_children if parameters is not None else ())} - {""}


# ---- divisions on a loop-carried chain -----------------------------------------------------------------------------

def _integer_variables(function: tree_sitter.Node) -> tuple[set[str], set[str]]:
    """(integer scalars, every scalar) declared in the function, its parameters included, not `const`: what a
    division's operands must be for the division to be an integer one the compiler cannot strength-reduce (a
    `const` initialised from a literal folds into a multiplication, as a literal or a macro does)."""
    integers, scalars = set(), set()
    for node in _walk(function):
        if node.type not in ("declaration", "parameter_declaration"):
            continue
        if any(child.type == "type_qualifier" and _text(child) in ("const", "constexpr") for child in node.children):
            continue
        type_words = set(re.findall(r"[A-Za-z_]\w*", _text(node.child_by_field_name("type"))))
        for declarator in _declarators(node):
            inner = declarator.child_by_field_name("declarator") if declarator.type == "init_declarator" else declarator
            if inner is None or inner.type not in ("identifier", "reference_declarator"):
                continue  # pointers and arrays: their elements are loads, not a register chain
            name = _declared_name(inner)
            scalars.add(name)
            if type_words and type_words <= _INTEGER_TYPE_WORDS:
                integers.add(name)
    return integers - {""}, scalars - {""}


def _flows(loop: tree_sitter.Node) -> dict[str, set[str]]:
    """Which plain variables each variable's value flows into within one pass of the loop: `x = e(y)` and
    `x op= e(y)` send y (and x) to x, `T x = e(y)` y to x, `swap(x, y)` each into the other."""
    flows: dict[str, set[str]] = {}
    for node in _walk(loop):
        if node.type in ("assignment_expression", "init_declarator"):
            target = node.child_by_field_name("left") if node.type == "assignment_expression" else \
                node.child_by_field_name("declarator")
            source = node.child_by_field_name("right") if node.type == "assignment_expression" else \
                node.child_by_field_name("value")
            if target is None or target.type != "identifier" or source is None:
                continue
            sources = _identifiers(source)
            if node.type == "assignment_expression" and _text(node.child_by_field_name("operator")) != "=":
                sources.add(_text(target))
            for name in sources:
                flows.setdefault(name, set()).add(_text(target))
        elif node.type == "call_expression" and _text(node.child_by_field_name("function")) in _SWAPS:
            arguments = [_text(a) for a in (node.child_by_field_name("arguments") or node).named_children
                         if a.type == "identifier"]
            if len(arguments) == 2:
                flows.setdefault(arguments[0], set()).add(arguments[1])
                flows.setdefault(arguments[1], set()).add(arguments[0])
    return flows


def _reached(start: str, flows: dict[str, set[str]]) -> set[str]:
    reached, pending = {start}, [start]
    while pending:
        for name in flows.get(pending.pop(), set()) - reached:
            reached.add(name)
            pending.append(name)
    return reached


def _division_result(node: tree_sitter.Node) -> str:
    """The plain variable a division's value is stored in (`r` of `r %= b`, `t = a % b`, `int t = (a % b) + 1`),
    "" when it goes elsewhere (an element, a return, an argument)."""
    if node.type == "assignment_expression":
        target = node.child_by_field_name("left")
        return _text(target) if target is not None and target.type == "identifier" else ""
    parent = node.parent
    while parent is not None and parent.type in ("parenthesized_expression", "binary_expression", "cast_expression",
                                                 "unary_expression", "conditional_expression"):
        parent = parent.parent
    if parent is not None and parent.type == "assignment_expression":
        return _division_result(parent)
    if parent is not None and parent.type == "init_declarator":
        return _declared_name(parent.child_by_field_name("declarator"))
    return ""


def carried_divisions(function: tree_sitter.Node, loop_nodes: LoopNodes) -> list[CarriedDivision]:
    """Integer divisions and remainders, in a loop, by a divisor that is a variable of the function, whose result
    flows back into the loop's next division (Euclid's `a %= b; swap(a, b)`, `h = (h * 31 + x[i]) % p`): each
    waits for the last one's result, so their latencies add up. Reported for the innermost loop around them."""
    integers, scalars = _integer_variables(function)
    found = []
    for node, loop in loop_nodes:
        flows = _flows(node)
        for division in _walk(node):
            operator = _text(division.child_by_field_name("operator"))
            if not ((division.type == "binary_expression" and operator in ("/", "%"))
                    or (division.type == "assignment_expression" and operator in ("/=", "%="))):
                continue
            line = _line(division)
            if _in_inner_loop(line, loop, loop_nodes):
                continue  # an inner loop's division
            if _FLOATING_RE.search(_text(division)):
                continue  # `(double) n / d`, `1.0 * n / d`: a floating-point division
            dividend = _stripped(division.child_by_field_name("left"))
            divisor = _stripped(division.child_by_field_name("right"))
            if dividend is None or divisor is None or divisor.type == "number_literal":
                continue
            divisor_names, operands = _identifiers(divisor), _identifiers(dividend) | _identifiers(divisor)
            if not divisor_names & scalars or "." in _text(divisor) or "[" in _text(divisor):
                continue  # a literal, a macro, a constant, an element or a field: not a variable of this function
            if operator.startswith("/") and not (operands <= integers):
                continue  # `/` of floats (or of what we cannot type) is no integer division
            result = _division_result(division)
            if result and _reached(result, flows) & operands:
                found.append(CarriedDivision(line, loop.start_line, loop.end_line, _text(division)))
    return found


# ---- arithmetic chains ----------------------------------------------------------------------------------------------

# compound assignments whose independent terms can be combined in any order (integer wrap-around, or floating point
# under -ffast-math, which is how such code is built to be split): `t += a; t += b` is `t += (a + b)`
_REASSOCIABLE = frozenset({"+=", "-=", "*=", "&=", "|=", "^="})
# the same operators written out (`t = t * e`), and the minimum and maximum (`v = std::min(v, e)`)
_ASSOCIATIVE = frozenset({"+", "*", "&", "|", "^"})
_UPDATES = frozenset({"assignment_expression", "update_expression"})
# A single integer update a step (`s += x[i]`, `i++`: one cycle) is a reduction or a counter, which loops.py's carried
# scalars name; chains are reported from two cycles of latency a step (dependency_chain's threshold decides from how
# much latency a step one is a bottleneck).
MIN_CHAIN_LATENCY_CYCLES = 2.0

# Latency in cycles of one operation on a loop-carried chain, by what it does and the type it works on: integer add,
# subtract, logic, shift, compare and select 1, integer multiply 3; floating-point add, subtract, multiply, fused
# multiply-add, minimum, maximum and compare 4 (Skylake to Golden Cove, Zen 2 to 4: 3-5; uops.info, Agner Fog's
# instruction tables). Divisions are counted as the cheaper class's operation, a lower bound: an integer one's 10-90
# cycles are slow_integer_division's (it reads them), a floating-point one's 11-20 are not estimated.
INTEGER_OPERATION_CYCLES = 1.0
INTEGER_MULTIPLY_CYCLES = 3.0
FLOATING_OPERATION_CYCLES = 4.0
# calls that are one operation of their operands' type once inlined (minss/maxss, vfmadd, cmp + cmov), and the
# SIMD intrinsics that are one instruction on a vector register: x86's `_mm256_fmadd_pd(a, b, c)`,
# `_mm_add_ps`, `_mm512_mask_max_pd` (floating point, or an integer add, subtract, min, max, logic: `_epi32`), Arm
# NEON's `vfmaq_f32`, `vaddq_s32`. A vector accumulator updated by one (`c0 = _mm256_fmadd_pd(a, b0, c0)` a step:
# yzhai-dgemm's kernel6) is a chain as `c0 += a * b` is: each step waits for the last one's fused multiply-add.
# (the arithmetic ones on floating-point lanes take FLOATING_OPERATION_CYCLES; the bit operations, on any lanes,
# one cycle: `_mm256_and_pd` is a logic instruction)
_X86_ARITHMETIC = r"_mm(256|512)?_(mask_|maskz_)?(fn?m(add|sub)|add|sub|mul|min|max)_"
_X86_LOGIC = r"_mm(256|512)?_(mask_|maskz_)?(and|or|xor)_"
_X86_FLOATING_SUFFIX = r"(ps|pd|ss|sd|ph)"
_ONE_OPERATION_CALLS = re.compile(
    r"^(std::)?(min|max|fmin[fl]?|fmax[fl]?|fma[fl]?)$"
    rf"|^({_X86_ARITHMETIC}|{_X86_LOGIC})({_X86_FLOATING_SUFFIX}|epi(8|16|32|64)|epu(8|16|32)|si(128|256|512))$"
    r"|^v(fma|fms|add|sub|mul|min|max|and|orr|eor)q?_[fsu](8|16|32|64)$")
_FLOATING_CALLS = re.compile(rf"^(std::)?(fmin|fmax|fma)[fl]?$|^{_X86_ARITHMETIC}{_X86_FLOATING_SUFFIX}$"
                             r"|^v(fma|fms|add|sub|mul|min|max)q?_f(16|32|64)$")
# one-operation calls whose two operands commute and associate (`v = std::min(v, e)`, `c = _mm256_add_pd(c, e)`):
# their updates can keep partial results; fused multiply-adds (three operands), subtractions and masked forms
# cannot; vector bit operations are left out (a one-cycle chain is never long enough to report alone)
_ASSOCIATIVE_CALLS = re.compile(r"^(std::)?(min|max|fmin[fl]?|fmax[fl]?)$"
                                r"|^_mm(256|512)?_(add|mul|min|max)_|^v(add|mul|min|max)q?_")
# Words that make a declared type a floating-point one (`double`, `std::vector<float>`, `float32_t`).
_FLOATING_TYPE_WORDS = frozenset({"float", "double", "_Float16", "_Float32", "_Float64", "__fp16", "__bf16",
                                  "float16_t", "float32_t", "float64_t", "half", "bfloat16"})


def operation_latency(operator: str, floating: bool) -> float:
    """Cycles of latency of one operation (an operator as written, or `min` for a minimum, maximum or fma call) on
    a value of a floating-point type or not (integer, pointer, or unknown: counted as an integer, the lower
    bound)."""
    if floating:
        return FLOATING_OPERATION_CYCLES
    return INTEGER_MULTIPLY_CYCLES if operator.rstrip("=") == "*" else INTEGER_OPERATION_CYCLES


def floating_variables(root: tree_sitter.Node, function: tree_sitter.Node) -> set[str]:
    """Names declared with a floating-point type (through the file's typedefs and using aliases: `data_t`):
    scalars, arrays and pointers (their elements), members. The function's own declarations hide the file's."""
    aliases = {}
    for node in _walk(root):
        if node.type == "type_definition":
            for declarator in _declarators(node):
                aliases[_declared_name(declarator) or _text(declarator)] = _text(node.child_by_field_name("type"))
        elif node.type == "alias_declaration":
            aliases[_text(node.child_by_field_name("name"))] = _text(node.child_by_field_name("type"))

    def floating(type_text: str) -> bool:
        for _ in range(8):  # typedefs of typedefs
            words = set(re.findall(r"[A-Za-z_]\w*", type_text))
            if words & _FLOATING_TYPE_WORDS:
                return True
            named = [w for w in words if w in aliases]
            if not named:
                return False
            type_text = " ".join(aliases[w] for w in named)
        return False

    found: dict[str, bool] = {}
    for scope in (root, function):
        for node in _walk(scope):
            if node.type not in ("declaration", "parameter_declaration", "field_declaration"):
                continue
            kind = floating(_text(node.child_by_field_name("type")))
            for declarator in _declarators(node) or [node.child_by_field_name("declarator")]:
                name = _declared_name(declarator) or next(
                    (_text(n) for n in _walk(declarator) if n.type == "field_identifier"), "") if declarator else ""
                if name:
                    found[name] = kind
    return {name for name, kind in found.items() if kind}


def _reads(node: tree_sitter.Node | None, target: str) -> bool:
    """Whether the expression reads the value written as target (an identifier, or an element or field as
    written)."""
    return node is not None and any(_text(n) == target for n in _walk(node)
                                    if n.type == "identifier" or n.type in _MEMORY_TARGETS)


def _one_operation_call(node: tree_sitter.Node) -> bool:
    return node.type == "call_expression" and bool(
        _ONE_OPERATION_CALLS.match(_text(node.child_by_field_name("function")).replace(" ", "")))


def _path_latency(node: tree_sitter.Node | None, target: str, floating: bool) -> float | None:
    """Cycles of the longest path of operations from the target's value to the expression's; None when the
    expression does not read it. Parentheses, casts, loads and other calls add nothing (a lower bound)."""
    if node is None or not _reads(node, target):
        return None
    if _text(node) == target and (node.type == "identifier" or node.type in _MEMORY_TARGETS):
        return 0.0
    inner = [latency for child in node.named_children
             if (latency := _path_latency(child, target, floating)) is not None]
    longest = max(inner, default=0.0)
    if node.type == "binary_expression":
        return longest + operation_latency(_text(node.child_by_field_name("operator")), floating)
    if node.type == "unary_expression":
        return longest + INTEGER_OPERATION_CYCLES  # negation, not, complement: one cycle in either unit
    if _one_operation_call(node):
        call_floating = floating or bool(_FLOATING_CALLS.match(_text(node.child_by_field_name("function"))))
        return longest + operation_latency("min", call_floating)
    return longest


@dataclass(frozen=True)
class _Step:
    """One update's part of a chain: its dependent operations, their latency, whether it only adds an independent
    term."""

    operations: int
    latency_cycles: float
    reassociable: int  # updates adding an independent term (one for an update, a count for a path)


def _chain_operations(update: tree_sitter.Node, target: str, floating: bool) -> _Step | None:
    """The dependent operations on the target's chain of an update of target from its own value, their latency
    (the longest path through them: operation_latency of each, by the target's type) and whether the update only
    adds an independent term (`t += e`, `t = t * e`, `v = std::min(v, e)`: e not reading t); None when it sets
    the target without reading it (the chain restarts there). `t op= e` is one operation, plus the operators of e
    that read t (`x ^= x << 13`: two); `t = e` the operators and minimum/maximum/fma calls of e on a path from t
    (`x = x * a + c`: two); a constant step (`t++`, `t -= 4`) none."""
    if update.type == "update_expression":
        return _Step(0, 0.0, 0)  # a constant step: an induction variable, see below
    operator = _text(update.child_by_field_name("operator"))
    right = update.child_by_field_name("right")
    if operator in ("+=", "-=") and _stripped(right) is not None and _stripped(right).type == "number_literal":
        # Constant steps (`p++` four times, `i += 4`) are an induction variable: the compiler folds them into one
        # add a step, or into the addressing offsets of the accesses (`*a_to++ = x` four times: one add of 32).
        return _Step(0, 0.0, 0)
    on_path = sum(1 for n in _walk(right) if (n.type in ("binary_expression", "unary_expression")
                                              or _one_operation_call(n)) and _reads(n, target)) \
        if right is not None else 0
    latency = _path_latency(right, target, floating) or 0.0
    if operator == "=":
        return _Step(on_path, latency, int(_associative_step(_stripped(right), target))) if on_path else None
    return _Step(1 + on_path, operation_latency(operator, floating) + latency,
                 int(operator in _REASSOCIABLE and not on_path))


def _associative_step(right: tree_sitter.Node | None, target: str) -> bool:
    """`t = t op e` or `t = e op t` with op associative, `t = std::min(t, e)`: e not reading t, so the updates
    can keep partial results."""
    if right is None:
        return False
    if right.type == "binary_expression" and _text(right.child_by_field_name("operator")) in _ASSOCIATIVE:
        operands = [_stripped(right.child_by_field_name(side)) for side in ("left", "right")]
    elif _one_operation_call(right) and _ASSOCIATIVE_CALLS.match(_text(right.child_by_field_name("function"))):
        operands = [_stripped(a) for a in right.child_by_field_name("arguments").named_children]
    else:
        return False
    own = [o for o in operands if o is not None and _text(o) == target]
    return len(own) == 1 and len(operands) == 2 and not any(_reads(o, target) for o in operands if o is not own[0])


def _scope_updates(scope: tree_sitter.Node, skip: Sequence[tree_sitter.Node]) -> list[tuple[str, tree_sitter.Node]]:
    """(target as written, update) of the assignments and increments under scope, not inside the skipped nodes
    (nested loops, whose chains are theirs), not in a for loop's header (its counter)."""
    found = []
    for node in _walk(scope):
        if node.type not in _UPDATES or any(s.start_byte <= node.start_byte < s.end_byte for s in skip):
            continue
        parent = node.parent
        while parent is not None and parent.type in ("comma_expression", "parenthesized_expression"):
            parent = parent.parent
        if parent is not None and parent.type == "for_statement" and node != parent.child_by_field_name("body"):
            continue
        target = _written_target(node)
        if target is not None and (target.type == "identifier" or target.type in _MEMORY_TARGETS):
            found.append((_text(target), node))
    return found


def _longest_path(node: tree_sitter.Node, steps: dict[tuple[int, int], _Step | None]) -> _Step:
    """The steps on the longest path through node (the operations, their latency, the reassociable updates):
    statements in sequence add up, the two branches of an `if` do not (one runs: `if (V == 0) {...} else {...}`
    counts the one of more latency)."""
    step = steps.get((node.start_byte, node.end_byte)) if node.type in _UPDATES else None
    if step is not None:
        return step
    if node.type == "if_statement":
        branches = [_longest_path(b, steps) for b in (node.child_by_field_name("consequence"),
                                                      node.child_by_field_name("alternative")) if b is not None]
        return max(branches, default=_Step(0, 0.0, 0), key=lambda b: (b.latency_cycles, b.operations))
    totals = [_longest_path(child, steps) for child in node.children]
    return _Step(sum(t.operations for t in totals), sum(t.latency_cycles for t in totals),
                 sum(t.reassociable for t in totals))


def _chains_in(scope: tree_sitter.Node, updates: list[tuple[str, tree_sitter.Node]], changed: set[str],
               loop_line: int, floating: set[str]) -> list[ArithmeticChain]:
    """The chains among a scope's updates: per target whose address the scope does not change (an element indexed
    by the loop is a new value each iteration) and that no update sets without reading it. A target's operations
    take its declared type (floating: the names declared floating point)."""
    by_target: dict[str, list[tree_sitter.Node]] = {}
    for target, node in updates:
        by_target.setdefault(target, []).append(node)
    found = []
    for target, nodes in by_target.items():
        head = _written_target(nodes[0])
        if head is None or (head.type != "identifier" and _identifiers(head) & changed):
            continue
        is_floating = (_text(head) if head.type == "identifier" else _base(head)) in floating
        steps = {(node.start_byte, node.end_byte): _chain_operations(node, target, is_floating) for node in nodes}
        if any(step is None for step in steps.values()):
            continue
        path = _longest_path(scope, steps)
        found.append(ArithmeticChain(target, loop_line, tuple(sorted({_line(n) for n in nodes})), path.operations,
                                     path.reassociable, latency_cycles=path.latency_cycles))
    return found


def _function_locals(function: tree_sitter.Node) -> set[str]:
    """Names whose values do not outlive a call: declared in the function's body other than `static`, and its
    parameters passed by value (a pointer or reference parameter's pointee is the caller's state)."""
    body = function.child_by_field_name("body")
    found = {_declared_name(d) for n in (_walk(body) if body is not None else ()) if n.type == "declaration"
             and not re.search(r"\bstatic\b", _text(n)) for d in _declarators(n)}
    declarator = function.child_by_field_name("declarator")
    while declarator is not None and declarator.type != "function_declarator":
        declarator = declarator.child_by_field_name("declarator")
    parameters = declarator.child_by_field_name("parameters") if declarator is not None else None
    for parameter in parameters.named_children if parameters is not None else ():
        inner = parameter.child_by_field_name("declarator")
        if inner is not None and inner.type == "identifier":  # by value: `uint32_t x`, not `uint32_t &x`, `S *s`
            found.add(_text(inner))
    return found - {""}


def arithmetic_chains(root: tree_sitter.Node, function: tree_sitter.Node,
                      loop_nodes: LoopNodes) -> list[ArithmeticChain]:
    """Values updated from their own previous value: in the body of each innermost loop, values declared outside
    it; outside every loop of the function, the state it keeps across calls (not its locals: a member, a global, a
    static local, a parameter's field or element); and in each innermost loop, the state chain of a function of the
    file it calls (`rng.gen()`, `next()`: reported at the call, with the callee's operations). Chains of
    MIN_CHAIN_LATENCY_CYCLES and more a step are reported; the diagnosis's threshold says how long one must be."""
    floating = floating_variables(root, function)
    found = []
    for node, loop in loop_nodes:
        if not loop.innermost:
            continue
        body = node.child_by_field_name("body")
        if body is None:
            continue
        declared = {_declared_name(n.child_by_field_name("declarator")) for n in _walk(body)
                    if n.type == "init_declarator"} | {_declared_name(d) for n in _walk(body)
                                                       if n.type == "declaration" for d in _declarators(n)}
        updates = [(t, u) for t, u in _scope_updates(body, ()) if t not in declared]
        found += _chains_in(body, updates, _written_names(node), loop.start_line, floating)
        found += _called_state_chains(root, body, loop.start_line)
    found += state_chains(function, [n for n, _ in loop_nodes], floating)
    return [chain for chain in found if chain.latency_cycles >= MIN_CHAIN_LATENCY_CYCLES]


def state_chains(function: tree_sitter.Node, loops: Sequence[tree_sitter.Node],
                 floating: set[str]) -> list[ArithmeticChain]:
    """Chains of the state a function keeps across calls, updated outside its loops (loop_line 0): each call's
    first update waits for the last call's result. floating: the names floating_variables finds for it."""
    body = function.child_by_field_name("body")
    if body is None:
        return []
    locals_ = _function_locals(function)
    updates = [(t, u) for t, u in _scope_updates(body, loops) if not (_identifiers(_written_target(u)) & locals_)]
    return _chains_in(body, updates, set(), 0, floating)


def _definition_name(node: tree_sitter.Node) -> str:
    """The last component of a function definition's name (`gen` of `XorShift32::gen`)."""
    declarator = node.child_by_field_name("declarator")
    while declarator is not None and declarator.type != "function_declarator":
        declarator = declarator.child_by_field_name("declarator")
    inner = declarator.child_by_field_name("declarator") if declarator is not None else None
    return re.split(r"::|\.|->", _text(inner))[-1] if inner is not None else ""


def _called_state_chains(root: tree_sitter.Node, body: tree_sitter.Node, loop_line: int) -> list[ArithmeticChain]:
    """The state chains of the file's functions that a loop body calls, one per callee, at the calls' lines: the
    state carries from one iteration's call to the next's."""
    callees: dict[str, list[int]] = {}
    for node in _walk(body):
        if node.type == "call_expression":
            name = re.split(r"::|\.|->", _text(node.child_by_field_name("function")))[-1]
            callees.setdefault(name, []).append(_line(node))
    found = []
    for definition in (n for n in _walk(root) if n.type == "function_definition"):
        name = _definition_name(definition)
        if name not in callees:
            continue
        loops = [n for n in _walk(definition) if n.type in _LOOP_TYPES]
        for chain in state_chains(definition, loops, floating_variables(root, definition)):
            found.append(ArithmeticChain(chain.target, loop_line, tuple(sorted(set(callees[name]))),
                                         chain.operations, chain.reassociable, callee=name,
                                         latency_cycles=chain.latency_cycles))
    return found


# ---- per-thread slots (false sharing) -------------------------------------------------------------------------------

def _parallel_regions(function: tree_sitter.Node) -> list[tuple[int, tree_sitter.Node]]:
    """(pragma line, the statement it applies to) of each `#pragma omp parallel` of the function."""
    regions = []
    for node in _walk(function):
        if node.type != "preproc_call" or _text(node.child_by_field_name("directive")) != "#pragma":
            continue
        if not re.match(r"omp\s+parallel\b", _text(node.child_by_field_name("argument")).strip()):
            continue
        statement = node.next_named_sibling
        while statement is not None and statement.type == "preproc_call":
            statement = statement.next_named_sibling
        if statement is not None:
            regions.append((_line(node), statement))
    return regions


def _padded_types(root: tree_sitter.Node) -> set[str]:
    """Structures of the file aligned to a cache line or more, and the typedef and using names of them (an
    anonymous aligned structure's typedef too): their array elements never share one."""
    padded = {_text(n.child_by_field_name("name")) for n in _walk(root)
              if n.type in ("struct_specifier", "class_specifier", "union_specifier")
              and n.child_by_field_name("body") is not None and _LINE_ALIGNED_RE.search(_text(n))} - {""}
    for node in _walk(root):
        if node.type == "type_definition" and (_LINE_ALIGNED_RE.search(_text(node))
                                               or padded & _type_names(node)):
            padded |= {_declared_name(d) or _text(d) for d in _declarators(node)}
        elif node.type == "alias_declaration" and padded & _type_names(node):
            padded.add(_text(node.child_by_field_name("name")))
    return padded - {""}


def _type_names(node: tree_sitter.Node) -> set[str]:
    return {_text(n) for n in _walk(node) if n.type == "type_identifier"}


def thread_slot_writes(root: tree_sitter.Node, function: tree_sitter.Node) -> list[ThreadSlotWrite]:
    """Writes, inside a loop of code that runs once per thread, to a shared array's element selected by the thread's
    index, at an address some enclosing loop does not change (the same slot written again and again; a thread
    writing its own chunk element by element, `out[begin + i]` over i, shares a line only at the chunk's ends).
    Code that runs once per thread: an OpenMP parallel region (the index: omp_get_thread_num()), or a function
    started as a thread (std::thread, std::jthread, std::async, a vector of threads' emplace_back) in a loop whose
    variable it is passed (the index: that parameter)."""
    padded = _padded_types(root)
    found = []
    for pragma_line, region in _parallel_regions(function):
        ids = {_declared_name(n.child_by_field_name("declarator")) for n in _walk(region)
               if n.type == "init_declarator" and _THREAD_ID in _text(n.child_by_field_name("value"))} - {""}
        found += _slot_writes_in(region, ids, pragma_line, (function, root), padded)
    index_parameters, constants = _thread_parameters(root, function)
    body = function.child_by_field_name("body")
    if index_parameters and body is not None:
        constants = {name: value for name, value in constants.items() if name not in _assigned_names(body)}
        found += _slot_writes_in(body, _derived_from(body, index_parameters), _line(function), (function, root),
                                 padded, constants)
    return sorted(set(found), key=lambda w: w.line)


def _slot_writes_in(region: tree_sitter.Node, ids: set[str], region_line: int, scopes: Sequence[tree_sitter.Node],
                    padded: set[str], constants: dict[str, int] | None = None) -> list[ThreadSlotWrite]:
    """constants: parameters of a thread's function that every start passes the same integer literal (a loop's
    trip count known there: `std::thread(work, i, 1)`)."""
    declared_inside = {_declared_name(d) for n in _walk(region) if n.type == "declaration"
                       and not re.search(r"\bstatic\b", _text(n)) for d in _declarators(n)}
    # references and pointers bound to a slot: `auto &t = acc[tid];`, `T *p = &acc[omp_get_thread_num()];` (not a
    # copy of its value, `int k = rowptr[tid]`, nor a pointer loaded from it, `double *mine = bufs[tid]`: that one
    # points at storage of the thread's own)
    bound = {}
    for n in _walk(region):
        if n.type == "init_declarator" and _binds_slot(n):
            array = _slot_array(n.child_by_field_name("value"), declared_inside, ids)
            if array:
                bound[_declared_name(n.child_by_field_name("declarator"))] = array
    found = []
    for update in _walk(region):
        target = _written_target(update)
        loops = [loop for loop in _enclosing_loops(update)
                 if region.start_byte <= loop.start_byte and loop.end_byte <= region.end_byte]
        if target is None or not loops:
            continue
        array = _slot_array(target, declared_inside, ids) or bound.get(_base(target) or _text(target), "")
        if array and not _padded(array, scopes, padded) and _rewritten_in_place(target, loops, constants or {}):
            found.append(ThreadSlotWrite(_line(update), array, region_line))
    return found


def _binds_slot(declaration: tree_sitter.Node) -> bool:
    """Whether an init declarator binds a reference or a pointer to an element (`T &t = a[i]`, `T *p = &a[i]`,
    `T *p = a + i`) rather than copying a value out of it."""
    declarator, value = declaration.child_by_field_name("declarator"), declaration.child_by_field_name("value")
    if declarator is not None and declarator.type == "reference_declarator":
        return True
    return declarator is not None and declarator.type == "pointer_declarator" and value is not None and \
        (_text(value).lstrip("(").startswith("&") or value.type == "binary_expression")


# A loop nested around the write that starts again on each outer iteration rewrites the same few slots when its
# trip count is a small constant (`for (int k = 0; k < 4; k++) counts[4 * tid + k]++`); with a larger or run-time
# count it walks a chunk (`for (i = 0; i < chunk; i++) out[begin + i] = ...` inside a time-step loop), which shares
# a line with the next thread's only at its ends. Elements, so 8 doubles fill one 64-byte line.
_FEW_SLOTS = 8


def _rewritten_in_place(target: tree_sitter.Node, loops: Sequence[tree_sitter.Node], constants: dict[str, int]) -> bool:
    """Whether one of the loops around a write (those of its region) writes the same addresses again on each of its
    iterations: none of the variables that place the target is one that loop changes, other than the counters of
    loops inside it that count a few elements. A value loaded in the loop (`h[tid * 4 + (x[i] & 3)]++`: a bin
    chosen by the data) moves the write within the thread's slots; it does not walk them."""
    names = _placing_variables(target)
    return any(not names & (_written_names(loop) - _inner_counters(loop, constants)) for loop in loops)


def _placing_variables(target: tree_sitter.Node) -> set[str]:
    """The identifiers of a memory target, leaving out those inside a value loaded or computed by a call within its
    subscripts (`x[i]` of `h[t * 4 + (x[i] & 3)]`)."""
    names: set[str] = set()

    def visit(node: tree_sitter.Node, in_index: bool) -> None:
        if in_index and node.type in ("subscript_expression", "call_expression"):
            return
        if node.type == "identifier":
            names.add(_text(node))
        index = node.child_by_field_name("index") if node.type == "subscript_expression" else None
        for child in node.children:
            visit(child, in_index or (index is not None and child.start_byte >= index.start_byte
                                      and child.type != "]"))

    visit(target, False)
    return names


def _inner_counters(loop: tree_sitter.Node, constants: dict[str, int]) -> set[str]:
    """The counters of the for loops nested in loop that run a small constant number of times (_FEW_SLOTS)."""
    names = set()
    for inner in _walk(loop):
        if inner is loop or inner.type != "for_statement" or not _few_trips(inner, constants):
            continue
        for part in (inner.child_by_field_name("initializer"), inner.child_by_field_name("update")):
            if part is not None:
                names |= _written_names(part)
    return names


def _few_trips(loop: tree_sitter.Node, constants: dict[str, int]) -> bool:
    """`for (... ; k < N; ...)` or `<= N` with N a literal of at most _FEW_SLOTS, or a parameter every thread's
    start passes such a literal (constants)."""
    condition = loop.child_by_field_name("condition")
    if condition is None or condition.type != "binary_expression":
        return False
    bound = condition.child_by_field_name("right")
    operator = _text(condition.child_by_field_name("operator"))
    if operator not in ("<", "<=") or bound is None:
        return False
    value = _integer(bound)
    value = constants.get(_text(bound)) if value is None else value
    return value is not None and value <= _FEW_SLOTS


def _integer(node: tree_sitter.Node | None) -> int | None:
    """A decimal integer literal's value (suffixes dropped), None for any other number or expression."""
    digits = _text(node).rstrip("uUlL") if node is not None and node.type == "number_literal" else ""
    return int(digits) if digits.isdigit() else None


# A call that starts its first argument as a thread: std::thread / std::jthread / std::async (`std::thread t(f, i)`,
# `std::thread(f, i)`), or a container of threads constructing one in place (`threads.emplace_back(f, i)`).
_THREAD_STARTERS = re.compile(r"(^|[.:>])(thread|jthread|async|emplace_back|emplace)$")


def _thread_parameters(root: tree_sitter.Node, function: tree_sitter.Node) -> tuple[set[str], dict[str, int]]:
    """The function's parameters that carry a thread index, and those every start passes the same integer literal
    (their values). A thread index: the function is started as a thread inside a loop of the file, and the argument
    in that parameter's position is the loop's own variable."""
    declarator = function.child_by_field_name("declarator")
    while declarator is not None and declarator.type != "function_declarator":
        declarator = declarator.child_by_field_name("declarator")
    if declarator is None:
        return set(), {}
    name = _text(declarator.child_by_field_name("declarator")).rsplit("::", 1)[-1]
    parameters = [_declared_name(p.child_by_field_name("declarator"))
                  for p in declarator.child_by_field_name("parameters").named_children
                  if p.type == "parameter_declaration"]
    found: set[str] = set()
    literals: dict[str, set[int | None]] = {}  # parameter -> the values the starts pass it (None: not a literal)
    for arguments in (n for n in _walk(root) if n.type == "argument_list"):
        values = arguments.named_children
        if values and _text(values[0]).startswith("std::launch"):  # std::async(std::launch::async, f, i)
            values = values[1:]
        if not values or _text(values[0]).lstrip("&").rsplit("::", 1)[-1] != name:
            continue
        starter = arguments.parent
        callee = (starter.child_by_field_name("function") if starter.type == "call_expression"
                  else starter.parent.child_by_field_name("type") if starter.type == "init_declarator"
                  and starter.parent is not None else None)
        if callee is None or not _THREAD_STARTERS.search(_text(callee).replace(" ", "")):
            continue
        loop_variables = set().union(*(_written_names(loop) for loop in _enclosing_loops(arguments)))
        found |= {parameters[k] for k, value in enumerate(values[1:])
                  if k < len(parameters) and _identifiers(value) & loop_variables}
        for k, parameter in enumerate(parameters):
            literals.setdefault(parameter, set()).add(_integer(values[k + 1]) if k + 1 < len(values) else None)
    constants = {name: value for name, values in literals.items() if name and len(values) == 1
                 for value in values if value is not None}
    return found - {""}, constants


def _enclosing_loops(node: tree_sitter.Node) -> list[tree_sitter.Node]:
    loops = []
    while node.parent is not None:
        node = node.parent
        if node.type in _LOOP_TYPES:
            loops.append(node)
    return loops


def _derived_from(body: tree_sitter.Node, names: set[str]) -> set[str]:
    """The names and the locals initialised from them and never changed after, directly or through another
    (`int target = tid * step;`; not a loop counter started from the index, `for (i = tid; i < n; i += T)`)."""
    derived = set(names)
    reassigned = _assigned_names(body)
    initialisations = [(_declared_name(n.child_by_field_name("declarator")), n.child_by_field_name("value"))
                       for n in _walk(body) if n.type == "init_declarator"
                       and _declared_name(n.child_by_field_name("declarator")) not in reassigned]
    changed = True
    while changed:
        changed = False
        for name, value in initialisations:
            if name and name not in derived and value is not None and _identifiers(value) & derived:
                derived.add(name)
                changed = True
    return derived


def _slot_array(expression: tree_sitter.Node | None, declared_inside: set[str], ids: set[str]) -> str:
    """The array declared outside the region whose element, selected by a thread id, expression reaches, or ""."""
    for node in _walk(expression) if expression is not None else ():
        if node.type != "subscript_expression":
            continue
        index = node.child_by_field_name("index") or (node.named_children[-1] if node.named_children else None)
        array = _base(node)
        if index is not None and array and array not in declared_inside and \
                (_THREAD_ID in _text(index) or _identifiers(index) & ids):
            return array
    return ""


def _padded(array: str, scopes: Sequence[tree_sitter.Node], padded: set[str]) -> bool:
    """Whether the array's declaration, in the first scope that has one (the function, then the file), gives each
    thread a line of its own: an element type aligned to a cache line, or thread-local storage (every thread has
    its own copy)."""
    for scope in scopes:
        for node in _walk(scope):
            if node.type in ("declaration", "parameter_declaration") and \
                    any(_declared_name(d) == array for d in _declarators(node)):
                return bool(padded & _type_names(node)) or bool(_THREAD_LOCAL_RE.search(_text(node)))
    return False
