"""The SPDX id of a repository's licence, read from its licence file at the mined revision.

Recognition is by phrases each licence text must contain (the SPDX list's own wording), most specific first,
so that a GPL text that quotes "MIT" is not taken for MIT. Unknown or missing licences are NOASSERTION, the
SPDX value for "nobody said"; a dataset card lists them so users can leave such records out.
"""

from __future__ import annotations

import re
from pathlib import Path

from mining.gitlog import BlobReader, run_git
from perfforge.errors import SourceError

NOASSERTION = "NOASSERTION"
LICENCE_FILE_RE = re.compile(r"^(licen[cs]e|copying|copyright)([.-](lesser|lib|lgpl))?(\.(md|txt|rst))?$",
                             re.IGNORECASE)
# An LGPL project ships the GPL text as COPYING and the LGPL's additional permissions as COPYING.LESSER (or
# COPYING.LIB): the lesser file names the licence, so it is read first.
_LESSER_RE = re.compile(r"[.-](lesser|lib|lgpl)\b", re.IGNORECASE)

# Licences with a title: (SPDX id, title phrase that must open the text, phrases that must appear anywhere).
# The title is looked for in the opening lines only, because licence bodies name other licences (GPL-3.0's
# section 13 names the Affero licence, MPL-2.0 names the GPLs as secondary licences).
_TITLED: list[tuple[str, str, tuple[str, ...]]] = [
    ("AGPL-3.0", "gnu affero general public license", ("version 3",)),
    ("LGPL-3.0", "gnu lesser general public license", ("version 3",)),
    ("LGPL-2.1", "gnu lesser general public license", ("version 2.1",)),
    ("GPL-3.0", "gnu general public license", ("version 3",)),
    ("GPL-2.0", "gnu general public license", ("version 2",)),
    ("Apache-2.0", "apache license", ("version 2.0",)),
    ("MPL-2.0", "mozilla public license", ("2.0",)),
    ("BSL-1.0", "boost software license", ()),
]
# Licences without a title of their own: (SPDX id, phrases that must all appear), most specific first.
_UNTITLED: list[tuple[str, tuple[str, ...]]] = [
    ("Unlicense", ("this is free and unencumbered software released into the public domain",)),
    ("BSD-3-Clause", ("redistribution and use in source and binary forms", "neither the name")),
    ("BSD-2-Clause", ("redistribution and use in source and binary forms",)),
    ("ISC", ("permission to use, copy, modify, and/or distribute this software for any purpose",)),
    ("MIT", ("permission is hereby granted, free of charge", "the above copyright notice")),
]
# Characters of the folded text in which a title counts: a copyright line or two may precede it.
TITLE_WINDOW_CHARS = 300


def spdx_of_text(text: str) -> str:
    folded = " ".join(text.lower().split())
    head = folded[:TITLE_WINDOW_CHARS]
    for spdx, title, phrases in _TITLED:
        if title in head and all(p in folded for p in phrases):
            return spdx
    for spdx, phrases in _UNTITLED:
        if all(p in folded for p in phrases):
            return spdx
    return NOASSERTION


def licence_of(git_dir: Path, rev: str = "HEAD") -> str:
    """SPDX id of the licence file at the top of rev (the first one recognised), else NOASSERTION."""
    try:
        names = run_git(git_dir, "ls-tree", "--name-only", rev).splitlines()
    except SourceError:  # an empty repository or an unreadable tree
        return NOASSERTION
    with BlobReader(git_dir) as blobs:
        for name in sorted((n for n in names if LICENCE_FILE_RE.match(n)), key=lambda n: (not _LESSER_RE.search(n), n)):
            data = blobs.read(rev, name)
            if data:
                spdx = spdx_of_text(data.decode("utf-8", errors="replace"))
                if spdx != NOASSERTION:
                    return spdx
    return NOASSERTION
