"""Function definitions in a source file, and the ones whose code a commit changed.

tree-sitter finds the definitions, so a file with syntax errors still yields every function the parser
recognises, and nothing here raises on bad code. Each definition gets a qualified name (to match the before and
after versions of a file) and a KernelKind (what the function is: CUDA kernel, Triton kernel, OpenMP host code...).

Lines are the "\\n"-separated lines of the file, as git and tree-sitter count them; Python's str.splitlines would
also split at form feeds and unicode separators and disagree.
"""

from __future__ import annotations

import functools
import importlib
import re
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, replace
from pathlib import PurePosixPath

import tree_sitter

from perfforge.records import KernelKind, normalise_code

LANGUAGE_BY_EXTENSION: dict[str, str] = {
    # CUDA and HIP share the CUDA grammar: HIP kernels use the same __global__ / __device__ qualifiers.
    ".cu": "cuda", ".cuh": "cuda", ".hip": "cuda",
    ".c": "c",
    # Headers are read as C++: the C++ grammar parses C headers too, the C grammar chokes on C++ ones.
    ".h": "cpp", ".hpp": "cpp", ".hh": "cpp", ".hxx": "cpp", ".inl": "cpp",
    ".cc": "cpp", ".cpp": "cpp", ".cxx": "cpp", ".C": "cpp",  # .C is C++ by the gcc convention
    ".cl": "opencl",
    ".py": "python",
    # Upper-case Fortran suffixes ask for the C preprocessor; both are Fortran.
    ".f": "fortran", ".f90": "fortran", ".f95": "fortran", ".f03": "fortran", ".f08": "fortran",
    ".F": "fortran", ".F90": "fortran", ".F95": "fortran", ".F03": "fortran", ".F08": "fortran",
}

# The grammar package parsing each language. OpenCL C is C with address-space and kernel qualifiers, which the C
# grammar reads as an unknown type name: the definition, its name and its body still come out right.
_GRAMMAR_MODULE = {
    "c": "tree_sitter_c", "opencl": "tree_sitter_c", "cpp": "tree_sitter_cpp", "cuda": "tree_sitter_cuda",
    "python": "tree_sitter_python", "fortran": "tree_sitter_fortran",
}
_C_FAMILY = frozenset({"c", "cpp", "cuda", "opencl"})

_DEFINITION_QUERY = {
    "c_family": "(function_definition) @definition",
    # The imports come in the same query: each query visits the whole tree.
    "python": "(function_definition) @definition [(import_statement) (import_from_statement)] @import",
    "fortran": "[(subroutine) (function) (module_procedure)] @definition",
}


@dataclass(frozen=True)
class Function:
    """One function definition in a source file."""

    name: str  # "ns::Class::method" in C++, "Class.method" for Python methods, the plain name otherwise
    kind: KernelKind
    start_line: int  # 1-based, inclusive; with decorators, template<> header, extern "C", attribute macro line
    end_line: int  # 1-based, inclusive
    code: str  # the whole lines start_line..end_line, without the final line break


@dataclass(frozen=True)
class FunctionChange:
    """A function present in both versions of a file whose code differs beyond formatting."""

    name: str
    kind: KernelKind  # kind of the after version
    before: Function
    after: Function


def language_of(path: str) -> str | None:
    """Mining language of a source path by its extension, None when the file is not a supported source."""
    suffix = PurePosixPath(path).suffix
    # Exact case first, since .F/.C differ from .f/.c; then any other casing (.CU, .Cpp) as its lower-case form.
    return LANGUAGE_BY_EXTENSION.get(suffix) or LANGUAGE_BY_EXTENSION.get(suffix.lower())


@functools.cache
def _tree_sitter_language(language: str) -> tree_sitter.Language:
    if language not in _GRAMMAR_MODULE:
        raise ValueError(f"unknown language {language!r}; expected one of {sorted(_GRAMMAR_MODULE)}")
    grammar = importlib.import_module(_GRAMMAR_MODULE[language])
    return tree_sitter.Language(grammar.language())


@functools.cache
def _parser(language: str) -> tree_sitter.Parser:
    return tree_sitter.Parser(_tree_sitter_language(language))


@functools.cache
def _query(language: str, pattern: str) -> tree_sitter.Query:
    return tree_sitter.Query(_tree_sitter_language(language), pattern)


def _captures(language: str, pattern: str, node: tree_sitter.Node) -> list[tree_sitter.Node]:
    """Nodes under node matching a single-capture query pattern, in source order."""
    return [n for nodes in _captures_by_name(language, pattern, node).values() for n in nodes]


def _captures_by_name(language: str, pattern: str, node: tree_sitter.Node) -> dict[str, list[tree_sitter.Node]]:
    """Nodes under node matching a query pattern, per capture name, in source order."""
    found = tree_sitter.QueryCursor(_query(language, pattern)).captures(node)
    return {name: sorted(nodes, key=lambda n: (n.start_byte, -n.end_byte)) for name, nodes in found.items()}


def _text(node: tree_sitter.Node) -> str:
    return node.text.decode("utf-8", "surrogatepass") if node.text is not None else ""


def _function_at(data: bytes, start_byte: int, end_byte: int, start_row: int, name: str, kind: KernelKind) -> Function:
    """Function spanning the whole lines of data[start_byte:end_byte]; start_row is the 0-based row of start_byte."""
    line_start = data.rfind(b"\n", 0, start_byte) + 1
    last_byte = max(end_byte - 1, start_byte)  # a node may end just after its own line break
    line_end = data.find(b"\n", last_byte)
    lines = data[line_start:len(data) if line_end < 0 else line_end]
    code = lines.removesuffix(b"\r").decode("utf-8", "surrogatepass")
    return Function(name=name, kind=kind, start_line=start_row + 1, end_line=start_row + 1 + lines.count(b"\n"),
                    code=code)


def _node_function(data: bytes, node: tree_sitter.Node, name: str, kind: KernelKind) -> Function:
    return _function_at(data, node.start_byte, node.end_byte, node.start_point.row, name, kind)


def extract_functions(source: str, language: str, edited_from: tuple[str, list[LineRange]] | None = None
                      ) -> list[Function]:
    """Every function definition in source (see _extract_functions).

    Cached: in a history, each version of a file is usually the after side of one commit and the before side of
    the next one that touches it. edited_from = (an earlier version, the hunks turning it into source) lets the
    parser start from the earlier version's tree and reparse only what the hunks changed (_edited_tree): the same
    tree, several times faster on large files."""
    key = (source, language)
    functions = _FUNCTIONS.pop(key, None)  # put back last: the least recently used goes first
    if functions is None:
        tree = _edited_tree(*edited_from, source, language) if edited_from else None
        functions = tuple(_extract_functions(source, language, tree))
    _FUNCTIONS[key] = functions
    while len(_FUNCTIONS) > _CACHED_VERSIONS:
        del _FUNCTIONS[next(iter(_FUNCTIONS))]
    return list(functions)


# Functions of the file versions used last, least recently used first; each key holds a whole source file.
_FUNCTIONS: dict[tuple[str, str], tuple[Function, ...]] = {}
_CACHED_VERSIONS = 32
# (old_start, old_count, new_start, new_count) of one hunk, as mining.gitlog.FileDiff.line_ranges holds them.
LineRange = tuple[int, int, int, int]


def clear_caches() -> None:
    """Forget every cached extraction and tree (benchmarks start each side cold)."""
    _FUNCTIONS.clear()
    _parse.cache_clear()


@functools.lru_cache(maxsize=4)
def _parse(source: str, language: str) -> tree_sitter.Tree:
    """The tree of a file version. The last few are kept as the starting points of incremental parses."""
    return _parser(language).parse(source.encode("utf-8", "surrogatepass"))


def _edited_tree(before: str, line_ranges: list[LineRange], after: str, language: str) -> tree_sitter.Tree | None:
    """The tree of after, parsed incrementally from before's tree edited by the hunks; None (parse afresh) when
    the hunks do not turn before into after exactly (every byte outside them must be the same in both), or when
    either version has syntax errors: on 2 of 3,835 ggml files with errors, the reparsed tree differed."""
    old, new = before.encode("utf-8", "surrogatepass"), after.encode("utf-8", "surrogatepass")
    spans = _byte_spans(old, new, line_ranges)
    if spans is None:
        return None
    base = _parse(before, language)
    if base.root_node.has_error:  # error recovery can settle differently when reparsing: the trees may differ
        return None
    tree = base.copy()
    for (old_start, old_end, old_row, old_end_row), (new_start, new_end, new_row, new_end_row) in reversed(spans):
        # Edits go last to first, so the text before each one is still the old text: it starts at old_start.
        tree.edit(start_byte=old_start, old_end_byte=old_end, new_end_byte=old_start + new_end - new_start,
                  start_point=(old_row, 0), old_end_point=(old_end_row, 0),
                  new_end_point=(old_row + new_end_row - new_row, 0))
    edited = _parser(language).parse(new, tree)
    return None if edited.root_node.has_error else edited


Span = tuple[int, int, int, int]  # start byte, end byte, start row, end row (0-based, whole lines)


def _byte_spans(old: bytes, new: bytes, line_ranges: list[LineRange]) -> list[tuple[Span, Span]] | None:
    """The old and new byte spans of each hunk, or None when the text between them differs (the hunks do not
    describe the whole change: a cut patch, another pair of versions)."""
    old_lines, new_lines = _line_starts(old), _line_starts(new)
    spans = []
    for old_start, old_count, new_start, new_count in line_ranges:
        old_row = old_start - 1 if old_count else old_start  # a count of 0 inserts or deletes after that line
        new_row = new_start - 1 if new_count else new_start
        if old_row < 0 or new_row < 0 or old_row + old_count >= len(old_lines) or new_row + new_count >= len(new_lines):
            return None
        spans.append(((old_lines[old_row], old_lines[old_row + old_count], old_row, old_row + old_count),
                      (new_lines[new_row], new_lines[new_row + new_count], new_row, new_row + new_count)))
    old_cuts = [0] + [offset for span, _ in spans for offset in span[:2]] + [len(old)]
    new_cuts = [0] + [offset for _, span in spans for offset in span[:2]] + [len(new)]
    for i in range(0, len(old_cuts), 2):  # the unchanged stretches: before the first hunk, between, after the last
        if old[old_cuts[i]:old_cuts[i + 1]] != new[new_cuts[i]:new_cuts[i + 1]]:
            return None
    return spans


def _line_starts(data: bytes) -> list[int]:
    """Byte offset of each line's start, then len(data): line k spans [starts[k], starts[k + 1])."""
    starts = [0]
    position = data.find(b"\n")
    while position >= 0:
        starts.append(position + 1)
        position = data.find(b"\n", position + 1)
    if starts[-1] != len(data):
        starts.append(len(data))
    return starts


def _extract_functions(source: str, language: str, tree: tree_sitter.Tree | None = None) -> list[Function]:
    """Every function definition in source (nested Python functions too), in source order; tree, when given,
    is source's parse tree.

    language is a mining language name (see LANGUAGE_BY_EXTENSION); an unknown one raises ValueError.
    """
    # surrogatepass: text decoded with errors="surrogateescape" (or holding any lone surrogate) still encodes,
    # and slices of it decode back to the same characters.
    data = source.encode("utf-8", "surrogatepass")
    root = (tree if tree is not None else _parse(source, language)).root_node
    if language in _C_FAMILY:
        functions = _c_functions(data, root, language)
    elif language == "python":
        functions = _python_functions(data, root)
    else:
        functions = _fortran_functions(data, root)
    return sorted(functions, key=lambda f: f.start_line)


# ---- C, C++, CUDA, OpenCL --------------------------------------------------------------------------------------

# Declarators wrapping the name of a function: `float *f()`, `T &f()`, `(f)()`, `f() [[attr]]`...
_DECLARATOR_WRAPPERS = frozenset({
    "function_declarator", "pointer_declarator", "reference_declarator", "parenthesized_declarator",
    "attributed_declarator",
})
# Scopes whose name qualifies a C++ definition written inside them.
_NAMED_SCOPES = frozenset({"namespace_definition", "class_specifier", "struct_specifier", "union_specifier"})
# The qualifiers deciding the kind are matched as words in the text before the declarator, not as nodes: the CUDA
# grammar makes them anonymous tokens, and the C/C++ grammars (OpenCL, HIP in .cpp) misread them as type names.
_CUDA_QUALIFIER_RE = re.compile(r"\b(__global__|__device__)\b")
_OPENCL_KERNEL_RE = re.compile(r"\b(__kernel|kernel)\b")
# Every match holds `ragma` (of `pragma` or `_Pragma`), starting at its line start or 2 bytes before it (see
# _matches_near).
_OMP_PRAGMA_RE = re.compile(rb"^[ \t]*#[ \t]*pragma[ \t]+omp\b|\b_Pragma\s*\(\s*\"\s*omp\b", re.MULTILINE)
_SPACE_RE = re.compile(r"\s+")
# Double-underscore identifiers before a declaration are compiler attributes (__cluster_dims__, __maxnreg__...),
# never the name of the function being defined.
_ATTRIBUTE_MACRO_RE = re.compile(r"__\w+__")
# Byte translation table blanking every byte but the line break.
_BLANK = bytes(byte if byte == ord("\n") else ord(" ") for byte in range(256))


def _c_functions(data: bytes, root: tree_sitter.Node, language: str) -> Iterable[Function]:
    code_only = _blank_comments(data, _comments(data, root))
    for definition in _trim_heads(_c_definitions(root, code_only, language), code_only):
        name = "::".join([*_c_scopes(definition.scope), _SPACE_RE.sub(" ", _text(definition.name_node))])
        kind = _c_kind(definition, code_only, language)
        yield _function_at(data, definition.head_start, definition.body_end, definition.head_row, name, kind)


def _c_definitions(root: tree_sitter.Node, code_only: bytes, language: str) -> list[_CDefinition]:
    """The outermost definitions (see _outermost), parsed and recovered, in source order.

    The same as from every function_definition node of the tree, but most bodies (most of the tree) are never
    searched: a definition inside the body of a kept definition is dropped. A body is searched, at every depth,
    only where what it holds can be kept: when its definition is dropped, has no name, or ends before its body
    node does (the conditional branches of _parsed_definition).
    """
    found = [_FoundDefinition(node, _parsed_definition(node, code_only)) for node in _definition_nodes(root)]
    errors = _error_nodes(root) if root.has_error else []
    recovered = [definition for error in errors for definition in _recovered_definitions(error, code_only)]
    for entry in [entry for entry in found if not entry.body_is_closed()]:
        found += _nested_definitions(entry, code_only, language)
    while True:
        # In the order a query returns the nodes: _outermost keeps the first of definitions at the same place.
        found.sort(key=lambda entry: (entry.node.start_byte, -entry.node.end_byte))
        kept = _outermost([entry.definition for entry in found if entry.definition is not None] + recovered)
        kept_ids = {id(definition) for definition in kept}
        dropped = [entry for entry in found if not entry.body_searched and id(entry.definition) not in kept_ids]
        if not dropped:
            return kept
        for entry in dropped:
            found += _nested_definitions(entry, code_only, language)


@dataclass
class _FoundDefinition:
    """A function_definition node, its parsed definition, and whether the definitions in its body are found."""

    node: tree_sitter.Node
    definition: _CDefinition | None
    body_searched: bool = False

    def body_is_closed(self) -> bool:
        """Whether every definition in the node's body lies in the parsed definition's body."""
        body = self.node.child_by_field_name("body")
        return self.definition is not None and body is not None and self.definition.body_end == body.end_byte


def _nested_definitions(entry: _FoundDefinition, code_only: bytes, language: str) -> list[_FoundDefinition]:
    """The function_definition nodes at any depth in the body of entry's node, which is marked searched."""
    entry.body_searched = True
    body = entry.node.child_by_field_name("body")
    nested = _captures(language, _DEFINITION_QUERY["c_family"], body) if body is not None else []
    return [_FoundDefinition(node, _parsed_definition(node, code_only), body_searched=True) for node in nested]


def _definition_nodes(root: tree_sitter.Node) -> list[tree_sitter.Node]:
    """The function_definition nodes of the tree except those in the body of another (most of the tree)."""
    found = []
    pending = [root.children]
    while pending:
        for child in pending.pop():
            if child.type == "function_definition":
                found.append(child)
                body = child.child_by_field_name("body")
                pending.append([grandchild for grandchild in child.children if grandchild != body])
            elif child.child_count:
                pending.append(child.children)
    return found


def _error_nodes(root: tree_sitter.Node) -> list[tree_sitter.Node]:
    """The ERROR nodes of the tree in source order, found along the nodes holding an error."""
    found = []
    pending = [[root]]
    while pending:
        for node in pending.pop():
            if node.has_error:
                if node.is_error:
                    found.append(node)
                pending.append(node.children)
    return sorted(found, key=lambda n: (n.start_byte, -n.end_byte))


# Where a comment may start: every comment token starts with `//` or `/*`.
_COMMENT_START_RE = re.compile(rb"/[/*]")


def _comments(data: bytes, root: tree_sitter.Node) -> list[tree_sitter.Node]:
    """The comment nodes of the tree in source order: the nodes starting at a `//` or `/*` outside comments.

    Looking up the node at each candidate offset is several times faster than a query visiting the whole tree;
    a candidate inside a string, or in text tree-sitter skipped, finds another node and is passed over.
    """
    comments = []
    candidate = _COMMENT_START_RE.search(data)
    while candidate is not None:
        start = candidate.start()
        node = root.descendant_for_byte_range(start, start + 1)
        if node is not None and node.start_byte == start and node.type == "comment":
            comments.append(node)
            candidate = _COMMENT_START_RE.search(data, node.end_byte)
        else:
            candidate = _COMMENT_START_RE.search(data, start + 1)
    return comments


@dataclass(frozen=True)
class _CDefinition:
    """Where the parts of one C-family definition lie: what its name, kind and lines are read from."""

    head_start: int  # byte offset where the definition starts (template header, extern "C", attribute macro line)
    head_row: int  # 0-based row of head_start
    name_node: tree_sitter.Node  # the declared name, qualified or not
    scope: tree_sitter.Node  # the node whose ancestors are the namespaces and classes qualifying the name
    body_start: int  # byte offset of the body's `{`
    body_end: int  # byte offset just past the body's `}`


def _parsed_definition(definition: tree_sitter.Node, code_only: bytes) -> _CDefinition | None:
    """A function_definition node as tree-sitter parsed it; None without body (`f() = default;`) or name.

    Conditional branches that open a brace each (`#ifdef X` `if (a) {` `#else` `if (b) {` `#endif`) make
    tree-sitter run the body on over the following functions; the body then ends at the brace matching its `{`
    in the first branch of each conditional.
    """
    body = definition.child_by_field_name("body")
    name_node = _declared_name(definition.child_by_field_name("declarator"))
    if name_node is not None and _ATTRIBUTE_MACRO_RE.fullmatch(_text(name_node)):
        name_node = _name_behind_attribute(definition.child_by_field_name("declarator"))
    if body is None or name_node is None:
        return None
    body_end = body.end_byte
    if _matches_near(_CONDITIONAL_RE, code_only, body.start_byte, body.end_byte, b"#", None):
        body_end = min(body_end, _matching_brace_end(code_only, body.start_byte) or body_end)
    head = _c_head(definition)
    return _CDefinition(head.start_byte, head.start_point.row, name_node, definition, body.start_byte, body_end)


def _name_behind_attribute(declarator: tree_sitter.Node) -> tree_sitter.Node | None:
    """Name of the real function when a leading attribute macro took the declarator's place.

    `__cluster_dims__(2, 1, 1) __global__ void k(...) {` reads as a function `__cluster_dims__` whose parameter
    list holds the real declarator `k(...)`: take the last function declarator nested in it.
    """
    nested = [node for node in _descendants(declarator) if node.type == "function_declarator" and node != declarator]
    names = [_declared_name(node) for node in nested]
    names = [name for name in names if name is not None and not _ATTRIBUTE_MACRO_RE.fullmatch(_text(name))]
    return names[-1] if names else None


def _descendants(node: tree_sitter.Node) -> Iterable[tree_sitter.Node]:
    """node's descendants in source order."""
    stack = list(reversed(node.children))
    while stack:
        child = stack.pop()
        yield child
        stack.extend(reversed(child.children))


def _declared_name(declarator: tree_sitter.Node | None) -> tree_sitter.Node | None:
    """The declared name (identifier, qualified_identifier, operator_name...) of a function's declarator."""
    node, is_function = declarator, False
    while node is not None and node.type in _DECLARATOR_WRAPPERS:
        is_function = is_function or node.type == "function_declarator"
        inner = node.child_by_field_name("declarator")
        if inner is None:  # wrappers without a declarator field hold it as their last named child
            inner = node.named_children[-1] if node.named_children else None
        node = inner
    return node if is_function else None


def _c_head(definition: tree_sitter.Node) -> tree_sitter.Node:
    """First node of a definition: its template<> headers, an `extern "C"` written for it alone, and a macro.

    An attribute macro on the line before a definition (`REQD_SUBGROUP_SIZE_128` above an OpenCL kernel, a
    template header with `__launch_bounds__(...) __cluster_dims__(...)`) reads to tree-sitter as a declaration
    missing its `;`, which swallows the next words (the `kernel` or `__global__` qualifier): such a declaration
    belongs to the definition.
    """
    head = definition
    while head.parent is not None and (
        head.parent.type == "template_declaration"
        or (head.parent.type == "linkage_specification" and head.parent.child_by_field_name("body") == head)
    ):
        head = head.parent
    before = head.prev_named_sibling
    if (
        before is not None
        and before.type in ("declaration", "template_declaration")
        and before.end_point.row >= head.start_point.row - 1  # on the line just above, not a stray one further up
        and _ends_with_missing(before)
    ):
        head = before
    return head


def _ends_with_missing(node: tree_sitter.Node) -> bool:
    """Whether the last token under node is one tree-sitter invented (a missing `;`)."""
    while node.child_count:
        node = node.children[-1]
    return node.is_missing


# What may separate the end of the previous declaration from the head of a recovered definition: white space,
# preprocessor lines (with their continuations) and access specifiers.
_BEFORE_HEAD_RE = re.compile(rb"(?:\s+|#(?:[^\n\\]|\\.)*|(?:public|private|protected)\s*:(?!:))+", re.DOTALL)


def _recovered_definitions(error: tree_sitter.Node, code_only: bytes) -> Iterable[_CDefinition]:
    """Definitions tree-sitter gave up on, found as `head declarator(...) {` runs of an ERROR node's children.

    A preprocessor conditional splitting a statement (an `#ifdef` between the two halves of an `if` condition)
    makes the whole function an ERROR node; its body is then delimited by matching braces, reading only the
    first branch of each conditional so that the alternatives do not count their braces twice.
    """
    children = error.children
    for index in range(1, len(children)):
        name_node = _declared_name(children[index - 1]) if children[index].type == "{" else None
        body_end = _matching_brace_end(code_only, children[index].start_byte) if name_node else None
        if name_node is None or body_end is None:
            continue
        head_start = _recovered_head_start(code_only, name_node.start_byte)
        yield _CDefinition(head_start, code_only.count(b"\n", 0, head_start), name_node, error,
                           children[index].start_byte, body_end)


def _recovered_head_start(code_only: bytes, name_start: int) -> int:
    """Start of the head ending at a recovered definition's name: just after the previous `;`, `{` or `}`.

    Read from the text, not the tree: error recovery scatters the head (`template <...> static __global__
    __cluster_dims__(4, 1, 1) void`) over nested ERROR nodes.
    """
    previous_end = max(code_only.rfind(delimiter, 0, name_start) for delimiter in (b";", b"{", b"}")) + 1
    skipped = _BEFORE_HEAD_RE.match(code_only, previous_end, name_start)
    return skipped.end() if skipped else previous_end


_DIRECTIVE_NAMES = rb"(if|ifdef|ifndef|elif|else|endif)\b"  # of a conditional directive, captured
_CONDITIONAL_RE = re.compile(rb"^[ \t]*#[ \t]*" + _DIRECTIVE_NAMES, re.MULTILINE)  # every match holds `#`
# Braces, string and character literals (matched whole, so that braces inside them are skipped), conditionals from
# their `#` (_matching_brace_end checks that only blanks precede it on its line). Every alternative starts with a
# literal byte, which lets the regex engine jump to the next candidate byte: 3 times faster than with a `^` or a
# `[{}]` alternative, which make it try every offset.
_BRACE_TOKEN_RE = re.compile(rb'"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'|\{|\}|#[ \t]*' + _DIRECTIVE_NAMES)


def _matching_brace_end(code_only: bytes, open_brace: int) -> int | None:
    """Offset just past the `}` closing the `{` at open_brace; only the first branch of an #if group counts."""
    depth = 0
    skipping: list[bool] = []  # per open #if group: are we past its first branch
    for token in _BRACE_TOKEN_RE.finditer(code_only, open_brace):
        directive = token.group(1)
        if directive is not None:
            line_start = code_only.rfind(b"\n", 0, token.start()) + 1
            if not code_only[line_start:token.start()].strip(b" \t"):  # a `#` starting its line
                _follow_conditional(skipping, directive.decode())
        elif any(skipping) or token.group() not in (b"{", b"}"):
            continue
        else:
            depth += 1 if token.group() == b"{" else -1
            if depth == 0:
                return token.end()
    return None


def _follow_conditional(skipping: list[bool], directive: str) -> None:
    if directive.startswith("if"):
        skipping.append(False)
    elif directive == "endif":
        if skipping:
            skipping.pop()
    elif skipping:  # elif, else
        skipping[-1] = True


def _matches_near(pattern: re.Pattern[bytes], data: bytes, start: int, end: int, marker: bytes,
                  lead: int | None) -> bool:
    """Whether pattern.search(data, start, end) finds a match, trying only the offsets where one can start.

    Every match of pattern holds marker and starts at the start of marker's line or (unless lead is None) lead
    bytes before marker. A search trying every offset of a long body costs more than the rest of its extraction.
    """
    at = data.find(marker, start, end)
    while at >= 0:
        line_start = data.rfind(b"\n", 0, at) + 1
        for candidate in (line_start,) if lead is None else (line_start, at - lead):
            if candidate >= start and pattern.match(data, candidate, end):
                return True
        at = data.find(marker, at + 1, end)
    return False


def _outermost(definitions: list[_CDefinition]) -> list[_CDefinition]:
    """The definitions not starting inside the body of another one, in source order.

    C functions do not nest: a definition in another's body is error recovery misreading part of that body (or,
    rarely, the method of a class local to a function, which is part of that function's code anyway).
    """
    kept: list[_CDefinition] = []
    open_bodies: list[_CDefinition] = []  # kept definitions whose body may still hold the next head
    for definition in sorted(definitions, key=lambda d: (d.head_start, -d.body_end)):
        open_bodies = [other for other in open_bodies if other.body_end > definition.head_start]
        if not any(other.body_start <= definition.head_start for other in open_bodies):
            kept.append(definition)
            open_bodies.append(definition)
    return kept


def _trim_heads(definitions: list[_CDefinition], code_only: bytes) -> list[_CDefinition]:
    """definitions (in source order), each head cut after any other definition lying inside it.

    Error recovery can read a whole misparsed kernel (recovered on its own from an ERROR node) as the head of the
    next function: that function's head then starts, like a recovered one, after the previous `;`, `{` or `}`.
    """
    trimmed = []
    for index, definition in enumerate(definitions):
        # Definitions come sorted by head start and none starts in another's body: only the next one can lie in
        # this head.
        following = definitions[index + 1] if index + 1 < len(definitions) else None
        if following is not None and following.body_end <= definition.body_start:
            head_start = _recovered_head_start(code_only, definition.name_node.start_byte)
            definition = replace(definition, head_start=head_start, head_row=code_only.count(b"\n", 0, head_start))
        trimmed.append(definition)
    return trimmed


def _blank_comments(data: bytes, comments: list[tree_sitter.Node]) -> bytes:
    """data with comment bytes turned to spaces (line breaks kept), so a commented-out pragma does not count."""
    blanked = bytearray(data)
    for comment in comments:
        blanked[comment.start_byte:comment.end_byte] = data[comment.start_byte:comment.end_byte].translate(_BLANK)
    return bytes(blanked)


def _c_scopes(scope: tree_sitter.Node) -> list[str]:
    """Names of the namespaces and classes enclosing scope, outermost first (anonymous ones skipped)."""
    scopes = []
    node = scope.parent
    while node is not None and node.type != "function_definition":  # a local class is not qualified further
        name = node.child_by_field_name("name") if node.type in _NAMED_SCOPES else None
        if name is not None:
            scopes.append(_SPACE_RE.sub("", _text(name)))
        node = node.parent
    return scopes[::-1]


def _c_kind(definition: _CDefinition, code_only: bytes, language: str) -> KernelKind:
    head = code_only[definition.head_start:definition.name_node.start_byte].decode("utf-8", "surrogatepass")
    if language == "opencl" and _OPENCL_KERNEL_RE.search(head):
        return KernelKind.OPENCL_KERNEL
    # Checked in every C-family language: HIP kernels often live in .cpp files.
    qualifiers = set(_CUDA_QUALIFIER_RE.findall(head))
    if "__global__" in qualifiers:
        return KernelKind.CUDA_KERNEL
    if "__device__" in qualifiers:
        return KernelKind.DEVICE_FUNCTION
    if _matches_near(_OMP_PRAGMA_RE, code_only, definition.body_start, definition.body_end, b"ragma", 2):
        return KernelKind.OPENMP_REGION
    return KernelKind.HOST_FUNCTION


# ---- Python --------------------------------------------------------------------------------------------------------


def _python_functions(data: bytes, root: tree_sitter.Node) -> Iterable[Function]:
    captured = _captures_by_name("python", _DEFINITION_QUERY["python"], root)
    triton_jit_names = _triton_jit_names(captured.get("import", []))
    for definition in captured.get("definition", []):
        name_node = definition.child_by_field_name("name")
        if name_node is None:
            continue
        decorated = definition.parent is not None and definition.parent.type == "decorated_definition"
        outer = definition.parent if decorated else definition
        decorators = {_decorated_callable(child) for child in outer.children if child.type == "decorator"}
        # @triton.autotune / @triton.heuristics only configure the jit function stacked below them: the jit
        # decorator alone decides.
        kind = KernelKind.TRITON_KERNEL if decorators & triton_jit_names else KernelKind.PYTHON_FUNCTION
        name = ".".join([*_python_classes(outer), _text(name_node)])
        yield _node_function(data, outer, name, kind)


def _decorated_callable(decorator: tree_sitter.Node) -> str:
    """Dotted name a decorator applies: `triton.jit` for both @triton.jit and @triton.jit(debug=True)."""
    expression = decorator.named_children[0] if decorator.named_children else decorator
    if expression.type == "call":
        expression = expression.child_by_field_name("function") or expression
    return _SPACE_RE.sub("", _text(expression))


def _python_classes(outer: tree_sitter.Node) -> list[str]:
    """Names of the classes enclosing a definition, outermost first, up to the nearest enclosing function."""
    classes = []
    node = outer.parent
    while node is not None and node.type != "function_definition":
        name = node.child_by_field_name("name") if node.type == "class_definition" else None
        if name is not None:
            classes.append(_text(name))
        node = node.parent
    return classes[::-1]


def _triton_jit_names(imports: list[tree_sitter.Node]) -> frozenset[str]:
    """The dotted names under which a module's import statements refer to triton's jit (`triton.jit`, `tr.jit`,
    an imported `jit`)."""
    module_names = {"triton"}  # `triton.jit` means triton even where the import is out of sight
    jit_names: set[str] = set()
    for statement in imports:
        if statement.type == "import_statement":
            module_names.update(_bound_names(statement, "triton"))
        elif _is_triton_module(statement.child_by_field_name("module_name")):
            jit_names.update(_bound_names(statement, "jit"))
    return frozenset(jit_names | {f"{module}.jit" for module in module_names})


def _is_triton_module(module_name: tree_sitter.Node | None) -> bool:
    if module_name is None:
        return False
    name = _text(module_name)
    return name == "triton" or name.startswith("triton.")


def _bound_names(statement: tree_sitter.Node, imported: str) -> set[str]:
    """Names an import statement binds to `imported` (`import triton as tr` binds tr to triton)."""
    bound = set()
    for child in statement.children_by_field_name("name"):
        if child.type == "aliased_import":
            original, alias = child.child_by_field_name("name"), child.child_by_field_name("alias")
            if original is not None and alias is not None and _text(original) == imported:
                bound.add(_text(alias))
        elif _text(child) == imported or _text(child).startswith(imported + "."):
            bound.add(imported)  # `import triton.language` binds triton as well
    return bound


# ---- Fortran -------------------------------------------------------------------------------------------------------

# Free-form `!$omp` directives anywhere on a line, fixed-form `c$omp` / `*$omp` in column 1.
_FORTRAN_OMP_RE = re.compile(rb"^[ \t]*!\$omp\b|^[c*]\$omp\b", re.MULTILINE | re.IGNORECASE)


def _fortran_functions(data: bytes, root: tree_sitter.Node) -> Iterable[Function]:
    for definition in _captures("fortran", _DEFINITION_QUERY["fortran"], root):
        if definition.parent is not None and definition.parent.type == "interface":
            continue  # an interface body declares a procedure defined elsewhere
        statement = definition.named_children[0] if definition.named_children else None
        name_node = statement.child_by_field_name("name") if statement is not None else None
        if name_node is None:
            continue
        has_omp = _FORTRAN_OMP_RE.search(data, definition.start_byte, definition.end_byte) is not None
        kind = KernelKind.OPENMP_REGION if has_omp else KernelKind.HOST_FUNCTION
        yield _node_function(data, definition, _text(name_node), kind)


# ---- changes -------------------------------------------------------------------------------------------------------


def changed_functions(before_source: str, after_source: str, language: str,
                      line_ranges: list[LineRange] | None = None) -> list[FunctionChange]:
    """Functions present in both versions whose code differs beyond comments and white space, in after order.

    Functions are matched by qualified name. A name defined more than once (overloads, #ifdef variants) is matched
    by match_definitions: unchanged code first, then the same signature, then position when as many definitions
    remain on both sides; a definition left over was added or removed. Functions only added or only removed are
    not returned. line_ranges, the hunks of the patch from before to after (FileDiff.line_ranges), only make it
    faster (extract_functions).
    """
    before_by_name: dict[str, list[Function]] = defaultdict(list)
    for function in extract_functions(before_source, language):
        before_by_name[function.name].append(function)
    edited_from = (before_source, line_ranges) if line_ranges else None
    after_by_name: dict[str, list[Function]] = defaultdict(list)
    for function in extract_functions(after_source, language, edited_from):
        after_by_name[function.name].append(function)
    changes = []
    for name, afters in after_by_name.items():
        for before, after in match_definitions(before_by_name.get(name, []), afters, language):
            # Most functions of a commit are untouched: identical code needs no normalising to compare equal.
            if before.code != after.code and normalise_code(before.code, language) != normalise_code(after.code,
                                                                                                      language):
                changes.append(FunctionChange(name=name, kind=after.kind, before=before, after=after))
    return sorted(changes, key=lambda change: change.after.start_line)


def match_definitions(befores: list[Function], afters: list[Function],
                      language: str) -> list[tuple[Function, Function]]:
    """(before, after) pairs of the definitions of one name. A single definition on each side is one function
    edited. Otherwise, so that an added overload or a removed #ifdef variant is never paired with its sibling:
    identical code pairs first, then identical signatures, then the rest by position only if as many remain on
    both sides."""
    if len(befores) == 1 and len(afters) == 1:
        return [(befores[0], afters[0])]
    pairs: list[tuple[Function, Function]] = []
    befores, afters = list(befores), list(afters)

    def code(function: Function) -> str:
        return normalise_code(function.code, language)

    def signature(function: Function) -> str:
        return _signature(function.code, language)

    for key_of, unique in ((code, False), (signature, True)):  # each key computed once per definition
        before_keys = [key_of(b) for b in befores]
        after_keys = [key_of(a) for a in afters]
        for after, key in zip(list(afters), after_keys, strict=True):
            if key not in before_keys or (unique and (before_keys.count(key) > 1 or after_keys.count(key) > 1)):
                continue  # unmatched, or a signature found twice on a side: which is which is not known
            index = before_keys.index(key)
            before_keys.pop(index)
            pairs.append((befores.pop(index), after))
            afters.remove(after)
    if len(befores) == len(afters):
        pairs.extend(zip(befores, afters, strict=True))
    return pairs


def _signature(code: str, language: str) -> str:
    """The definition's header, white space collapsed: up to the body's brace (the `def ...:` line in Python)."""
    head = code.split(":\n", 1)[0] if language == "python" else code.split("{", 1)[0]
    return " ".join(head.split())
