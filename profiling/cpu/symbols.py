"""Function names as the source defines them, from the symbols the tools print (callgrind's and objdump -C's
demangled names, gcc's clones)."""

from __future__ import annotations

import re

# gcc's clones: `f(int) [clone .constprop.0]` in C++, `f.constprop.0` / `f.isra.0` / `f.part.0` / `f.cold` in C
_CLONE_RE = re.compile(r"\s*\[clone [^\]]*\]|(\.(constprop|isra|part|cold|lto_priv|localalias)(\.\d+)*)+$")


def base_name(symbol: str) -> str:
    """A function's name as its source defines it, from callgrind's demangled symbol: `void ns::kern<64>(float*)
    [clone .constprop.0]` -> `ns::kern`; `(anonymous namespace)::f(int)` -> `f`; a C name unchanged."""
    text = _CLONE_RE.sub("", symbol).replace("(anonymous namespace)::", "").strip()
    depth, cut = 0, len(text)
    for index, char in enumerate(text):  # the parameter list: the first '(' outside template brackets
        depth += (char == "<") - (char == ">")
        if char == "(" and depth == 0:
            cut = index
            break
    text = text[:cut]
    while "<" in text and ">" in text:
        stripped = re.sub(r"<[^<>]*>", "", text)
        if stripped == text:
            break
        text = stripped
    words = text.split()
    return words[-1] if words else symbol
