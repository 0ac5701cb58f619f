"""Row sums of a row-major m x n float32 matrix: out[i] = sum_j x[i, j]."""

import torch
import triton
import triton.language as tl

BLOCK_M = 64


@triton.jit
def row_sum_kernel(x_ptr, out_ptr, m, n, BLOCK_M: tl.constexpr):
    rows = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    in_bounds = rows < m
    acc = tl.zeros((BLOCK_M,), dtype=tl.float32)
    for j in range(0, n):
        acc += tl.load(x_ptr + rows * n + j, mask=in_bounds, other=0.0)
    tl.store(out_ptr + rows, acc, mask=in_bounds)


def row_sum(x: torch.Tensor, out: torch.Tensor, m: int, n: int) -> None:
    row_sum_kernel[(triton.cdiv(m, BLOCK_M),)](x, out, m, n, BLOCK_M=BLOCK_M)
