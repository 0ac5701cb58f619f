"""The record schema as Markdown: docs/records.md and the data cards' "Data Fields" tables, rendered from the field
documentation in perfforge.records, so the two never disagree.
"""

from __future__ import annotations

from perfforge.records import RECORD_CLASSES, SCHEMA_VERSION, Category, FoundBy, KernelKind, Pairing, Target, field_docs


def records_markdown() -> str:
    """Markdown tables documenting every record class and field."""
    parts = [f"# The record schema (version {SCHEMA_VERSION})\n",
             "Generated from perfforge/records.py by `python scripts/gen_record_docs.py`; do not edit by hand.\n"]
    for cls in RECORD_CLASSES:
        parts.append(f"## {cls.__name__}\n\n{(cls.__doc__ or '').strip()}\n")
        parts.append(fields_table(cls))
        parts.append("")
    parts.append("## Closed sets\n")
    for enum in (Category, KernelKind, Target, FoundBy, Pairing):
        parts.append(f"- `{enum.__name__}` ({(enum.__doc__ or '').strip()}): "
                     + ", ".join(f"`{member.value}`" for member in enum))
    parts.append("")
    return "\n".join(parts)


def fields_table(cls: type) -> str:
    rows = ["| field | type | meaning |", "|---|---|---|"]
    rows.extend(f"| `{name}` | `{kind.replace('|', 'or')}` | {doc} |" for name, kind, doc in field_docs(cls))
    return "\n".join(rows)
