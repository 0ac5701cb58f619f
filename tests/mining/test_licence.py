"""mining/licence.py: SPDX ids from the signature phrases of each licence, read at a revision of a real repository.

The texts are short stand-ins holding the phrases the module looks for (its _SIGNATURES), in the licences' own
wording and line breaks, not full licences.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from mining.licence import NOASSERTION, licence_of, spdx_of_text
from tests.conftest import MIT_LICENSE, RepoBuilder

MIT = MIT_LICENSE
APACHE_2 = """
                                 Apache License
                           Version 2.0, January 2004
                        http://www.apache.org/licenses/
"""
BSD_2 = """Copyright (c) 2024, Test Author

Redistribution and use in source and binary forms, with or without
modification, are permitted provided that the following conditions are met:

1. Redistributions of source code must retain the above copyright notice.
"""
BSD_3 = BSD_2 + """
3. Neither the name of the copyright holder nor the names of its
   contributors may be used to endorse or promote products derived from
   this software without specific prior written permission.
"""
GPL_3_MENTIONING_MIT = """                    GNU GENERAL PUBLIC LICENSE
                       Version 3, 29 June 2007

Parts of this program were first released under the MIT licence, whose notice
reads: Permission is hereby granted, free of charge, to any person obtaining a copy.
The above copyright notice and this permission notice shall be included.
"""
LGPL_2_1 = """                  GNU LESSER GENERAL PUBLIC LICENSE
                       Version 2.1, February 1999
"""
UNKNOWN = "All rights reserved. Ask the author before you use this.\n"


@pytest.mark.parametrize(("text", "spdx"), [
    (MIT, "MIT"), (APACHE_2, "Apache-2.0"), (BSD_3, "BSD-3-Clause"), (BSD_2, "BSD-2-Clause"),
    (GPL_3_MENTIONING_MIT, "GPL-3.0"), (LGPL_2_1, "LGPL-2.1"), (UNKNOWN, NOASSERTION), ("", NOASSERTION),
], ids=["mit", "apache-2.0", "bsd-3-clause", "bsd-2-clause", "gpl-3.0-quoting-mit", "lgpl-2.1", "unknown", "empty"])
def test_spdx_of_text(text: str, spdx: str) -> None:
    assert spdx_of_text(text) == spdx


def test_phrases_match_across_line_breaks_and_case() -> None:
    """'Version 2.0' on the line after 'Apache License', in capitals: white space is folded, case ignored."""
    assert spdx_of_text("APACHE\n   LICENSE\n\tVERSION 2.0") == "Apache-2.0"


def test_gpl_3_naming_the_affero_and_lesser_licences_stays_gpl_3() -> None:
    """GPL-3.0's section 13 names the GNU Affero General Public License with 'version 3', and its last paragraph
    the GNU Lesser General Public License: checked first, either would win. Opening lines, section 13 and the
    last paragraph of the GPL-3.0 text, verbatim (/usr/share/common-licenses/GPL-3 once came out AGPL-3.0)."""
    text = """                    GNU GENERAL PUBLIC LICENSE
                       Version 3, 29 June 2007

 Copyright (C) 2007 Free Software Foundation, Inc. <https://fsf.org/>
 Everyone is permitted to copy and distribute verbatim copies
 of this license document, but changing it is not allowed.

                            Preamble

  The GNU General Public License is a free, copyleft license for
software and other kinds of works.

  The licenses for most software and other practical works are designed
to take away your freedom to share and change the works.

  13. Use with the GNU Affero General Public License.

  Notwithstanding any other provision of this License, you have
permission to link or combine any covered work with a work licensed
under version 3 of the GNU Affero General Public License into a single
combined work, and to convey the resulting work.

  The GNU General Public License does not permit incorporating your program
into proprietary programs.  If your program is a subroutine library, you
may consider it more useful to permit linking proprietary applications with
the library.  If this is what you want to do, use the GNU Lesser General
Public License instead of this License.
"""
    assert spdx_of_text(text) == "GPL-3.0"


def test_mpl_2_naming_gpl_licences_as_secondary_stays_mpl_2() -> None:
    """MPL-2.0's definition 1.12 names 'the GNU Affero General Public License, Version 3.0'. Its opening
    definitions and 1.12, verbatim (the MPL-2.0 text once came out AGPL-3.0)."""
    text = """Mozilla Public License Version 2.0
==================================

1. Definitions
--------------

1.1. "Contributor"
    means each individual or legal entity that creates, contributes to
    the creation of, or owns Covered Software.

1.2. "Contributor Version"
    means the combination of the Contributions of others (if any) used
    by a Contributor and that particular Contributor's Contribution.

1.3. "Contribution"
    means Covered Software of a particular Contributor.

1.12. "Secondary License"
    means either the GNU General Public License, Version 2.0, the GNU
    Lesser General Public License, Version 2.1, the GNU Affero General
    Public License, Version 3.0, or any later versions of those
    licenses.
"""
    assert spdx_of_text(text) == "MPL-2.0"


# ---- licence files in a repository --------------------------------------------------------------------------------


@pytest.mark.parametrize(("files", "spdx"), [
    ({"LICENSE": MIT}, "MIT"),
    ({"LICENCE.txt": APACHE_2}, "Apache-2.0"),
    ({"COPYING": GPL_3_MENTIONING_MIT}, "GPL-3.0"),
    ({"copying.md": LGPL_2_1, "src/LICENSE": MIT}, "LGPL-2.1"),  # only top-level files count
    ({"COPYRIGHT": UNKNOWN, "LICENSE.md": BSD_3}, "BSD-3-Clause"),  # the first one recognised wins
    ({"README.md": "MIT licensed: Permission is hereby granted, free of charge. The above copyright notice."},
     NOASSERTION),  # not a licence file
    ({"LICENSE": UNKNOWN}, NOASSERTION),
    ({"COPYING": GPL_3_MENTIONING_MIT, "COPYING.LESSER": LGPL_2_1}, "LGPL-2.1"),  # the GPL text beside the LGPL's
    ({"COPYING": GPL_3_MENTIONING_MIT, "COPYING.LIB": LGPL_2_1}, "LGPL-2.1"),
], ids=["LICENSE", "LICENCE.txt", "COPYING", "copying.md", "unrecognised-first", "readme-only", "unknown-text",
        "COPYING.LESSER", "COPYING.LIB"])
def test_licence_of_a_repository(make_repo: Callable[[str], RepoBuilder], files: dict[str, str], spdx: str) -> None:
    repo = make_repo("licensed")
    repo.commit("import", {"src/a.cu": "int a;\n", **files})
    assert licence_of(repo.path / ".git") == spdx


def test_no_licence_file_is_noassertion(make_repo: Callable[[str], RepoBuilder]) -> None:
    repo = make_repo("unlicensed")
    repo.commit("import", {"src/a.cu": "int a;\n"})
    assert licence_of(repo.path / ".git") == NOASSERTION


def test_licence_is_read_at_the_given_revision(make_repo: Callable[[str], RepoBuilder]) -> None:
    """Relicensed from MIT to Apache-2.0: each revision reports its own licence."""
    repo = make_repo("relicensed")
    first = repo.commit("import", {"LICENSE": MIT})
    second = repo.commit("relicense", {"LICENSE": APACHE_2})
    git_dir = repo.path / ".git"
    assert (licence_of(git_dir, first), licence_of(git_dir, second), licence_of(git_dir)) == (
        "MIT", "Apache-2.0", "Apache-2.0")


def test_empty_repository_or_unknown_revision_is_noassertion(make_repo: Callable[[str], RepoBuilder]) -> None:
    repo = make_repo("empty")
    assert licence_of(repo.path / ".git") == NOASSERTION
    repo.commit("import", {"LICENSE": MIT})
    assert licence_of(repo.path / ".git", "no-such-branch") == NOASSERTION
