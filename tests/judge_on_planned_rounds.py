"""The judge deciding on the task's planned rounds, in processes the tests start: imported, it sets
profiling.score.NOISY_FLOOR to infinity in its process, so that no verdict is extended to CONFIRMING_ROUNDS.

The module-scoped fixture `judge_on_planned_rounds` (tests/conftest.py) does the same inside the pytest process, for
modules whose subject is the pipeline around the judge; this module carries it into the processes they start:
- a dask worker, as its `--preload tests.judge_on_planned_rounds` (tests/scale/conftest.py);
- the CLI, as `python -m tests.judge_on_planned_rounds ARGV` in place of `python -m perfforge.cli ARGV`
  (tests/conftest.py's spawn_perfforge with planned_rounds=True): the same main(), the same process, so a signal
  to it or to its group is what it would be.
Under the suite's two busy workers nearly every timed reading is above NOISY_FLOOR, and an extended verdict takes
3-4x as long. Never imported by perfforge: the extension is tested with the judge's own settings in tests/profiling.
"""

from __future__ import annotations

import sys

import profiling.score

profiling.score.NOISY_FLOOR = float("inf")

if __name__ == "__main__":
    from perfforge.cli import main

    sys.exit(main())
