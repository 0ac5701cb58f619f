"""Harness of scale_bias_relu_unfused: x and bias in [-1, 1), so about half the outputs are clipped to 0."""

import kernel
from perfforge_harness import Run


def main() -> int:
    r = Run()
    n = r.param_int("n", 5000)
    alpha = r.param_float("alpha", 1.5)
    x = r.input("x", "float32", n, -1.0, 1.0)
    bias = r.input("bias", "float32", n, -1.0, 1.0)
    out = r.output("out", "float32", n)
    while r.begin():
        kernel.scale_bias_relu(x, bias, out, n, alpha)
        r.end()
    return r.finish()


if __name__ == "__main__":
    raise SystemExit(main())
