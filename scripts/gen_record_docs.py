"""Write docs/records.md from the field documentation in perfforge/records.py.

    python scripts/gen_record_docs.py

tests/core/test_records.py fails when docs/records.md is out of date.
"""

from __future__ import annotations

from pathlib import Path

from perfforge.io import write_text
from perfforge.record_docs import records_markdown

DOC_PATH = Path(__file__).resolve().parents[1] / "docs" / "records.md"

if __name__ == "__main__":
    write_text(DOC_PATH, records_markdown())
    print(DOC_PATH)
