"""perfforge_launch.py HARNESS MODE ...: runs a task's harness.py as `python HARNESS MODE ...` would, with serve
mode's set-up first.

A task's harness.py imports the candidate's module at its top, often before perfforge_harness itself, so nothing
harness.py runs comes before the candidate's import-time code. The judge starts Python harnesses through this file
(profiling/build.py): in serve mode perfforge_harness.serve_prelude() loads what a candidate may import and installs
the system-call filter (its first stage on a GPU) before harness.py is read. The seventeenth red team's candidate
had, at import, swapped the filter the harness was about to install for an allow-all one.
"""

from __future__ import annotations

import runpy
import sys
from pathlib import Path


def main() -> None:
    if len(sys.argv) < 2:
        raise SystemExit("usage: perfforge_launch.py HARNESS MODE [options] [key=value...]")
    harness = sys.argv[1]
    sys.argv = sys.argv[1:]
    sys.path[0] = str(Path(harness).resolve().parent)  # the harness's folder, as `python HARNESS` puts there
    if len(sys.argv) > 1 and sys.argv[1] == "serve":
        import perfforge_harness

        perfforge_harness.serve_prelude()
    runpy.run_path(harness, run_name="__main__")


if __name__ == "__main__":
    main()
