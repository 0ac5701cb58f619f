"""out = relu(alpha * x + bias), element-wise over n float32 values."""

import torch
import triton
import triton.language as tl

BLOCK = 1024


@triton.jit
def scale_bias_relu_kernel(x_ptr, bias_ptr, out_ptr, n, alpha, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    y = tl.load(x_ptr + offs, mask=mask) * alpha + tl.load(bias_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, tl.maximum(y, 0.0), mask=mask)


def scale_bias_relu(x: torch.Tensor, bias: torch.Tensor, out: torch.Tensor, n: int, alpha: float) -> None:
    scale_bias_relu_kernel[(triton.cdiv(n, BLOCK),)](x, bias, out, n, alpha, BLOCK=BLOCK)
