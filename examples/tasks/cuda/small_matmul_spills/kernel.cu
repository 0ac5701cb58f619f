// Batched 8x8 matrix squares, one matrix per thread (structure-of-arrays layout: element k of matrix i is at
// a[k * n + i], so loads are coalesced). __launch_bounds__(256, 8) asks for eight resident blocks per SM,
// which caps the kernel at 32 registers per thread; the 64 matrix elements each thread must keep live do not
// fit, and the compiler spills them to local memory.
#include <cuda_runtime.h>

#define THREADS 256

__global__ void __launch_bounds__(THREADS, 8) square8(const float *a, float *c, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float m[64];
#pragma unroll
    for (int k = 0; k < 64; k++) m[k] = a[(size_t)k * n + i];
#pragma unroll
    for (int r = 0; r < 8; r++) {
#pragma unroll
        for (int col = 0; col < 8; col++) {
            float s = 0.0f;
#pragma unroll
            for (int k = 0; k < 8; k++) s = fmaf(m[r * 8 + k], m[k * 8 + col], s);
            c[(size_t)(r * 8 + col) * n + i] = s;
        }
    }
}

void launch_square8(const float *a, float *c, int n) {
    square8<<<(n + THREADS - 1) / THREADS, THREADS>>>(a, c, n);
}
