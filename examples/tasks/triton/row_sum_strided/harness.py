"""Harness of row_sum_strided: x is m x n in [0, 1) (positive, so sums do not cancel), out has m sums."""

import kernel
from perfforge_harness import Run


def main() -> int:
    r = Run()
    m = r.param_int("m", 64)
    n = r.param_int("n", 256)
    x = r.input("x", "float32", (m, n), 0.0, 1.0)
    out = r.output("out", "float32", m)
    while r.begin():
        kernel.row_sum(x, out, m, n)
        r.end()
    return r.finish()


if __name__ == "__main__":
    raise SystemExit(main())
