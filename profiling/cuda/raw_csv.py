"""Parser of ncu's raw page (`ncu --import R --csv --page raw --print-units base`).

The page is a CSV table: row 0 holds the column names, row 1 their units, then one row per profiled launch. The
first columns identify the launch (ID, process, kernel name, block and grid size, device, compute capability,
NVTX state); every other column is a metric, named as ncu names it (`unit__counter.rollup.submetric`, e.g.
`dram__bytes_read.sum`, unit byte). Numbers are printed with thousands separators ("268,468,224"); an empty
cell or "n/a" is a metric ncu could not collect for that launch. Lines before the header (ncu's `==PROF==` and
`==WARNING==` messages when the page is printed by a profiling run) are skipped.
"""

from __future__ import annotations

import argparse
import csv
import io
import re
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from perfforge.errors import PerfforgeError
from perfforge.records import CounterValue

ANONYMOUS = "(anonymous namespace)::"  # in a demangled name: a namespace, not the start of the parameter list
_NUMBER_RE = re.compile(r"^[+-]?(\d{1,3}(,\d{3})+|\d+)(\.\d*)?([eE][+-]?\d+)?$|^[+-]?\.\d+([eE][+-]?\d+)?$")
# Identity columns of a launch (the rest are metrics).
_IDENTITY = ("ID", "Process ID", "Process Name", "Host Name", "Kernel Name", "Context", "Stream", "Block Size",
             "Grid Size", "Device", "CC")


class NcuCsvError(PerfforgeError):
    """An ncu CSV page is not in the format perfforge reads."""


@dataclass
class KernelLaunch:
    """One profiled launch: its identity and its metrics (name -> CounterValue, in the page's units)."""

    launch_id: int
    kernel: str  # as ncu prints it: demangled, with parameter types ("transpose(const float *, float *, int)")
    block_size: str
    grid_size: str
    device: str
    compute_capability: str
    counters: dict[str, CounterValue] = field(default_factory=dict)

    @property
    def kernel_base(self) -> str:
        """The kernel's name without parameters or template arguments' closing text (an anonymous namespace's
        parentheses are not the parameter list)."""
        return self.kernel.replace(ANONYMOUS, "\0").split("(", 1)[0].replace("\0", ANONYMOUS).strip()

    def value(self, metric: str) -> float | None:
        counter = self.counters.get(metric)
        return None if counter is None else counter.value


def parse_number(text: str) -> float | None:
    """A number as ncu prints it ("1,013,328,599,770.28", "65536.000000"), or None for anything else."""
    text = text.strip()
    if not _NUMBER_RE.match(text):
        return None
    return float(text.replace(",", ""))


def read_rows(text: str, first_cell: str) -> list[list[str]]:
    """The CSV rows of an ncu page from the first row whose first cell is `first_cell` on."""
    lines = text.splitlines()
    start = next((i for i, line in enumerate(lines) if line.startswith(f'"{first_cell}"')), None)
    if start is None:
        raise NcuCsvError(f'no row starting with "{first_cell}": not an ncu CSV page (ncu --csv --page ...)')
    return list(csv.reader(io.StringIO("\n".join(lines[start:]))))


def parse_raw_page(text: str) -> list[KernelLaunch]:
    """Every launch of a raw page, in the page's order."""
    rows = read_rows(text, "ID")
    if len(rows) < 2:
        raise NcuCsvError("raw page has a header but no units row: export it with --page raw --csv")
    names, units = rows[0], rows[1]
    missing = [column for column in ("ID", "Kernel Name") if column not in names]
    if missing:
        raise NcuCsvError(f"raw page lacks the column(s) {missing}")
    return [_launch(names, units, row) for row in rows[2:] if row]


def _launch(names: list[str], units: list[str], row: list[str]) -> KernelLaunch:
    cells = dict(zip(names, row, strict=False))
    launch = KernelLaunch(launch_id=int(parse_number(cells["ID"]) or 0), kernel=cells["Kernel Name"],
                          block_size=cells.get("Block Size", ""), grid_size=cells.get("Grid Size", ""),
                          device=cells.get("Device", ""), compute_capability=cells.get("CC", ""))
    for name, unit, cell in zip(names, units, row, strict=False):
        if name in _IDENTITY or "__" not in name:
            continue
        number = parse_number(cell)
        if number is not None:
            launch.counters[name] = CounterValue(name=name, value=number, unit=unit)
    return launch


def read_raw_page(path: Path) -> list[KernelLaunch]:
    return parse_raw_page(path.read_text(encoding="utf-8"))


def select_launch(launches: Sequence[KernelLaunch], kernel: str | None = None) -> KernelLaunch:
    """The first launch whose kernel's base name is `kernel` (or starts with it), or the first launch."""
    if not launches:
        raise NcuCsvError("the raw page holds no launch: did the NVTX or kernel-name filter match nothing?")
    if kernel is None:
        return launches[0]
    for launch in launches:
        if launch.kernel_base == kernel:
            return launch
    for launch in launches:
        if launch.kernel_base.startswith(kernel):
            return launch
    names = sorted({launch.kernel_base for launch in launches})
    raise NcuCsvError(f"no launch of kernel {kernel!r} in the raw page; kernels: {', '.join(names)}")


def _main(argv: Sequence[str] | None = None) -> int:
    """Prints a raw page's launches and metric count (a quick look at a capture)."""
    parser = argparse.ArgumentParser(prog="python -m profiling.cuda.raw_csv")
    parser.add_argument("csv", type=Path)
    args = parser.parse_args(argv)
    for launch in read_raw_page(args.csv):
        print(f"{launch.launch_id}\t{launch.kernel_base}\tblock {launch.block_size}\tgrid {launch.grid_size}\t"
              f"{len(launch.counters)} metrics")
    return 0


def function_name(kernel: str) -> str:
    """A launch's function name as ncu prints the kernel: "void relu_kernel<128>(const float *, float *)" and
    "at::native::elementwise_kernel<...>(...)" give "relu_kernel" and "elementwise_kernel"; an anonymous namespace
    ("void at::native::(anonymous namespace)::cunn_SoftMaxForward<...>(...)") is not the parameter list."""
    head = kernel.replace(ANONYMOUS, "").split("(", 1)[0].split("<", 1)[0].strip()
    return head.split()[-1].rsplit("::", 1)[-1] if head else ""


if __name__ == "__main__":
    sys.exit(_main())

