// Naive matmul C = A B (n x n, row-major): each thread computes one element of C and fetches a full row
// of A and a full column of B from global memory; nothing is kept in shared memory or registers, so every
// operand is re-read from L1/L2 for each of its n uses.
#include <cuda_runtime.h>

__global__ void matmul(const float *a, const float *b, float *c, int n) {
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    int row = blockIdx.y * blockDim.y + threadIdx.y;
    if (row >= n || col >= n) return;
    float acc = 0.0f;
    for (int k = 0; k < n; k++) {
        acc += a[(size_t)row * n + k] * b[(size_t)k * n + col];
    }
    c[(size_t)row * n + col] = acc;
}

void launch_matmul(const float *a, const float *b, float *c, int n) {
    dim3 block(16, 16);
    dim3 grid((n + 15) / 16, (n + 15) / 16);
    matmul<<<grid, block>>>(a, b, c, n);
}
