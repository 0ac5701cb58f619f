"""Parser of ncu's source page (`ncu --import R --csv --page source --print-source cuda,sass`) into per-line costs.

The page is a sequence of blocks, one per source file of each profiled function:

    "File Path","/path/kernel.cu"
    "Function Name","transpose(const float *, float *, int)"
    "Line No","Source","Address","Source","Warp Stall Sampling (All Samples)",...,"stall_long_sb",...
    "13","    tile[...] = in[...];","-","-","11323",...        <- a CUDA line: the sums over its SASS
    "","","0x7fe74b7ac2a0","      LDG.E R5, desc[...]",...   <- one SASS instruction of that line

ncu maps SASS to CUDA lines through the -lineinfo tables. Only lines that produced SASS appear. Per line it gives
PC-sampling counts (all samples, and per stall reason `stall_<reason>`), executed instructions, divergent
branches, and the memory table columns: shared-memory wavefronts against the ideal (their excess is bank
conflicts) and global L2 sectors against the ideal (their excess is uncoalesced access).
"""

from __future__ import annotations

import argparse
import csv
import io
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from profiling.cuda.raw_csv import NcuCsvError, function_name, parse_number

SAMPLES_COLUMN = "Warp Stall Sampling (All Samples)"
# ncu column -> (perfforge per-line metric name, unit). Stall columns keep ncu's names (stall_long_sb, ...).
LINE_COLUMNS = {
    "Warp Stall Sampling (All Samples)": ("warp_stall_samples", "sample"),
    "Warp Stall Sampling (Not-issued Samples)": ("warp_stall_samples_not_issued", "sample"),
    "Instructions Executed": ("instructions_executed", "inst"),
    "Avg. Threads Executed": ("avg_threads_executed", "thread"),
    "Divergent Branches": ("divergent_branches", "branch"),
    "L1 Conflicts Shared N-Way": ("shared_conflict_ways", "way"),
    "L1 Wavefronts Shared": ("shared_wavefronts", "wavefront"),
    "L1 Wavefronts Shared Ideal": ("shared_wavefronts_ideal", "wavefront"),
    "L1 Wavefronts Shared Excessive": ("shared_excessive_wavefronts", "wavefront"),
    "L2 Theoretical Sectors Global": ("global_sectors", "sector"),
    "L2 Theoretical Sectors Global Ideal": ("global_sectors_ideal", "sector"),
    "L2 Theoretical Sectors Global Excessive": ("global_excessive_sectors", "sector"),
}
STALL_COLUMN_PREFIX = "stall_"
NOT_ISSUED_SUFFIX = " (Not Issued)"


@dataclass
class SourceLine:
    """One CUDA source line of one function, with ncu's per-line counters (perfforge names -> value, unit)."""

    path: str
    function: str
    line: int
    code: str
    metrics: dict[str, tuple[float, str]] = field(default_factory=dict)

    def value(self, name: str) -> float:
        return self.metrics.get(name, (0.0, ""))[0]

    @property
    def samples(self) -> float:
        return self.value("warp_stall_samples")

    def stall_samples(self) -> dict[str, float]:
        """Samples per stall reason on this line (all samples, issued or not)."""
        return {name: value for name, (value, _) in self.metrics.items() if name.startswith(STALL_COLUMN_PREFIX)}


# What ncu's source page holds instead of lines for a kernel without line information (ncu 2025.3.1, H100:
# "==WARNING== No lineinfo available to show CUDA-C source related to 'void Kernel2<cutlass_80_simt_...>(Params)'.")
NO_LINEINFO = "No lineinfo available to show CUDA-C source"


def parse_source_page(text: str) -> list[SourceLine]:
    """Every CUDA line row of a source page, in order; SASS rows are skipped."""
    lines: list[SourceLine] = []
    path = function = ""
    header: list[str] = []
    for row in csv.reader(io.StringIO(text)):
        if not row:
            continue
        if row[0] == "File Path" or row[0] == "File Name":
            path = row[1] if len(row) > 1 else ""
        elif row[0] in ("Function Name", "Kernel Name"):
            function = row[1] if len(row) > 1 else ""
        elif row[0] == "Line No":
            header = row
        elif header and row[0].strip().isdigit():
            lines.append(_line(path, function, header, row))
    if not header:
        if NO_LINEINFO in text:  # a kernel built without -lineinfo (a library's: cuBLAS): profiled, no source lines
            return []
        raise NcuCsvError('no "Line No" header: not a source page exported with --print-source cuda,sass')
    return lines


def _line(path: str, function: str, header: list[str], row: list[str]) -> SourceLine:
    source = SourceLine(path=path, function=function, line=int(row[0]), code=row[1].strip() if len(row) > 1 else "")
    seen: set[str] = set()
    for column, cell in zip(header, row, strict=False):
        if column in seen:  # "Source" appears twice (CUDA text, then SASS text)
            continue
        seen.add(column)
        number = parse_number(cell)
        if number is None:
            continue
        if column in LINE_COLUMNS:
            name, unit = LINE_COLUMNS[column]
            source.metrics[name] = (number, unit)
        elif column.startswith(STALL_COLUMN_PREFIX) and not column.endswith(NOT_ISSUED_SUFFIX):
            source.metrics[column] = (number, "sample")
    return source


def read_source_page(path: Path) -> list[SourceLine]:
    return parse_source_page(path.read_text(encoding="utf-8"))


def lines_of(lines: Sequence[SourceLine], function: str | None = None) -> list[SourceLine]:
    """The lines of one function: the first whose base name is `function` or starts with it, else the first with
    its bare function name (all if None). The page may spell a template's arguments otherwise than the raw page
    that named the kernel: "void sgemm_shared_mem_block<(int)32>(int, ...)" for "void sgemm_shared_mem_block<32>"
    (ncu 2025.3.1, H100)."""
    if function is None or not lines:  # no lines at all: a kernel without line information (NO_LINEINFO)
        return list(lines)
    names = list(dict.fromkeys(line.function for line in lines))
    base = {name: name.split("(", 1)[0].strip() for name in names}
    same_function = [n for n in names if function_name(n) == function_name(function)]
    chosen = next((n for n in names if base[n] == function), None) or next(
        (n for n in names if base[n].startswith(function)), None) or (
        same_function[0] if len(same_function) == 1 else None)  # never another instantiation's lines
    if chosen is None:
        raise NcuCsvError(f"no function {function!r} on the source page; functions: {', '.join(names)}")
    return [line for line in lines if line.function == chosen]


def cuda_rows_only(text: str) -> str:
    """The page without its SASS rows: the block headers and the CUDA-line rows, verbatim (for small fixtures)."""
    kept = []
    for raw in text.splitlines():
        cell = next(csv.reader([raw]), [""])
        first = cell[0] if cell else ""
        if first in ("File Path", "File Name", "Function Name", "Kernel Name", "Line No") or first.strip().isdigit():
            kept.append(raw)
    return "\n".join(kept) + "\n"


def _main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m profiling.cuda.source_csv")
    parser.add_argument("csv", type=Path)
    parser.add_argument("--cuda-rows-only", action="store_true", help="print the page without its SASS rows")
    args = parser.parse_args(argv)
    text = args.csv.read_text(encoding="utf-8")
    if args.cuda_rows_only:
        sys.stdout.write(cuda_rows_only(text))
        return 0
    for line in parse_source_page(text):
        print(f"{Path(line.path).name}:{line.line}\t{line.samples:.0f}\t{line.code}")
    return 0


if __name__ == "__main__":
    sys.exit(_main())
