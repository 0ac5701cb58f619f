"""Row sums of a row-major m x n float32 matrix: out[i] = sum_j x[i, j]."""

import torch
import triton
import triton.language as tl

BLOCK_N = 1024


@triton.jit
def row_sum_kernel(x_ptr, out_ptr, m, n, BLOCK_N: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_N)
    acc = tl.zeros((BLOCK_N,), dtype=tl.float32)
    for start in range(0, n, BLOCK_N):
        c = start + cols
        acc += tl.load(x_ptr + row * n + c, mask=c < n, other=0.0)
    tl.store(out_ptr + row, tl.sum(acc, axis=0))


def row_sum(x: torch.Tensor, out: torch.Tensor, m: int, n: int) -> None:
    row_sum_kernel[(m,)](x, out, m, n, BLOCK_N=BLOCK_N)
