"""out = relu(alpha * x + bias), element-wise over n float32 values."""

import torch
import triton
import triton.language as tl

BLOCK = 1024


@triton.jit
def scale_kernel(x_ptr, y_ptr, n, alpha, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=mask) * alpha, mask=mask)


@triton.jit
def bias_kernel(y_ptr, bias_ptr, z_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(z_ptr + offs, tl.load(y_ptr + offs, mask=mask) + tl.load(bias_ptr + offs, mask=mask), mask=mask)


@triton.jit
def relu_kernel(z_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.maximum(tl.load(z_ptr + offs, mask=mask), 0.0), mask=mask)


def scale_bias_relu(x: torch.Tensor, bias: torch.Tensor, out: torch.Tensor, n: int, alpha: float) -> None:
    scaled = torch.empty_like(x)
    shifted = torch.empty_like(x)
    grid = (triton.cdiv(n, BLOCK),)
    scale_kernel[grid](x, scaled, n, alpha, BLOCK=BLOCK)
    bias_kernel[grid](scaled, bias, shifted, n, BLOCK=BLOCK)
    relu_kernel[grid](shifted, out, n, BLOCK=BLOCK)
