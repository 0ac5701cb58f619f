"""Structure padding, from the source: which structures of a function's file (and of the local headers it
includes) hold padding that reordering their fields would remove, and which lines of the function move arrays of
them.

The layout is the C/C++ ABI's on x86-64: each field at the next multiple of its alignment (a scalar's size, at most
8; a pointer's 8; an array's element's), the structure's size rounded up to its largest alignment. Reordered by
decreasing alignment, the same fields need only their sizes rounded up once. A structure with a field whose type
is not a known scalar or a pointer (another structure, a class, a template), a bitfield, or an alignment attribute
gets no layout: its size is not known from the text alone, and no padding is claimed.

Lines moving arrays of a padded structure: lines of the function naming a variable declared as a pointer to it, an
array of it, a `std::vector`/`std::array`/`std::deque`/`std::span` of it (or a reference to one), or the element a
range-for takes from one of those. Every cache line such a line fetches carries the padding along with the fields.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import tree_sitter

from profiling.cpu import loops

_INCLUDE_RE = re.compile(r'^\s*#\s*include\s*"([^"]+)"', re.M)
_CONTAINER_RE = r"(?:std::)?(?:vector|array|deque|span)\s*<\s*(?:const\s+)?{name}\s*[,>]"
_MAX_ALIGN = 8


@dataclass(frozen=True)
class Padded:
    """A structure whose fields, reordered by decreasing alignment, take fewer bytes than its layout."""

    name: str
    size: int  # bytes of its layout, padding included
    packed: int  # bytes with its fields reordered by decreasing alignment

    @property
    def saving(self) -> float:
        """Share of each structure's bytes (so of the cache lines an array of them fills) reordering removes."""
        return 1.0 - self.packed / self.size if self.size else 0.0


def local_headers(source: Path, text: str, depth: int = 2) -> list[str]:
    """Texts of the headers the source includes with quotes, found beside it, and theirs (depth levels)."""
    found: list[str] = []
    seen: set[Path] = set()
    frontier = [(source.parent, text)]
    for _ in range(depth):
        following = []
        for directory, body in frontier:
            for name in _INCLUDE_RE.findall(body):
                path = (directory / name).resolve()
                if path in seen or not path.is_file():
                    continue
                seen.add(path)
                content = path.read_text(encoding="utf-8", errors="replace")
                found.append(content)
                following.append((path.parent, content))
        frontier = following
    return found


def _field(declaration: tree_sitter.Node) -> list[tuple[int, int]] | None:
    """(size, alignment) of each data member a field declaration declares; [] for a method or a static member;
    None when a size is unknown (a structure or class type, a bitfield, an alignment attribute)."""
    text = loops._text(declaration)
    if re.search(r"\bstatic\b|\bconstexpr\b|\btypedef\b", text):
        return []
    if any(child.type == "bitfield_clause" for child in declaration.children) or "align" in text:
        return None
    type_node = declaration.child_by_field_name("type")
    if type_node is None:
        return None
    words = loops._text(type_node).replace("std::", "").split()
    if not words or words[-1] not in loops.TYPE_BYTES:
        return None
    scalar = loops.TYPE_BYTES[words[-1]]
    if words[-1] == "double" and "long" in words:  # long double: 16 bytes, aligned to 16
        return None
    fields = []
    for declarator in declaration.children_by_field_name("declarator"):
        if declarator.type == "function_declarator":
            return []  # a method's declaration
        count, node = 1, declarator
        while node is not None and node.type == "array_declarator":
            size = node.child_by_field_name("size")
            if size is None or not loops._text(size).isdigit():
                return None
            count *= int(loops._text(size))
            node = node.child_by_field_name("declarator")
        if node is not None and node.type in ("pointer_declarator", "reference_declarator"):
            fields.append((8 * count, 8))
        else:
            fields.append((scalar * count, min(scalar, _MAX_ALIGN)))
    return fields


def _name_of(declarator: tree_sitter.Node | None) -> str:
    """The name a declarator declares, through pointers, references and arrays (`&arr`, `*p`, `a[4]`)."""
    while declarator is not None and declarator.type != "identifier":
        declarator = declarator.child_by_field_name("declarator") or (
            declarator.named_children[-1] if declarator.named_children else None)
    return loops._text(declarator) if declarator is not None else ""


def _layout(fields: list[tuple[int, int]]) -> int:
    offset = 0
    for size, align in fields:
        offset = -(-offset // align) * align + size
    largest = max(align for _, align in fields)
    return -(-offset // largest) * largest


def padded_structs(texts: list[str], language: str) -> dict[str, Padded]:
    """The structures defined in the texts (a source and its local headers) whose layout holds padding that
    reordering the fields by decreasing alignment removes: name -> Padded."""
    found: dict[str, Padded] = {}
    for text in texts:
        root = loops.syntax_tree(text, language)
        for node in loops._walk(root):
            if node.type not in ("struct_specifier", "class_specifier") or node.child_by_field_name("body") is None:
                continue
            fields: list[tuple[int, int]] = []
            known = True
            for member in node.child_by_field_name("body").named_children:
                if member.type == "field_declaration":
                    entries = _field(member)
                    if entries is None:
                        known = False
                        break
                    fields += entries
            if not known or not fields:
                continue
            size = _layout(fields)
            packed = _layout(sorted(fields, key=lambda f: -f[1]))
            names = [loops._text(tag)] if (tag := node.child_by_field_name("name")) is not None else []
            if node.parent is not None and node.parent.type == "type_definition":
                names += [loops._text(d) for d in node.parent.children_by_field_name("declarator")]
            for name in names:
                if packed < size:
                    found[name] = Padded(name, size, packed)
    return found


def padded_lines(text: str, function: str, language: str, structs: dict[str, Padded]) -> dict[int, Padded]:
    """Lines of the function naming an array or container of a padded structure, or an element a range-for takes
    from one: line -> the structure (the one with the largest saving when several)."""
    if not structs:
        return {}
    root = loops.syntax_tree(text, language)
    definition = loops._find_function(root, function)
    if definition is None:
        return {}
    arrays: dict[str, Padded] = {}
    for node in loops._walk(definition):
        if node.type not in ("parameter_declaration", "declaration", "field_declaration"):
            continue
        declaration = loops._text(node)
        for name, padded in structs.items():
            container = re.search(_CONTAINER_RE.format(name=re.escape(name)), declaration)
            for declarator in node.children_by_field_name("declarator"):
                target = declarator.child_by_field_name("declarator") if declarator.type == "init_declarator" \
                    else declarator
                if target is None:
                    continue
                direct = re.match(rf"^(?:const\s+)?(?:struct\s+)?{re.escape(name)}\b", declaration) and \
                    target.type in ("pointer_declarator", "array_declarator")
                if container or direct:
                    declared = _name_of(target)
                    if declared:
                        arrays[declared] = padded
    for node in loops._walk(definition):  # elements a range-for takes from those
        if node.type == "for_range_loop":
            right = node.child_by_field_name("right")
            source = loops._text(right) if right is not None else ""
            if source in arrays:
                name = _name_of(node.child_by_field_name("declarator"))
                if name:
                    arrays[name] = arrays[source]
    lines: dict[int, Padded] = {}
    for node in loops._walk(definition):
        if node.type == "identifier" and (padded := arrays.get(loops._text(node))) is not None:
            line = loops._line(node)
            if line not in lines or padded.saving > lines[line].saving:
                lines[line] = padded
    return lines
