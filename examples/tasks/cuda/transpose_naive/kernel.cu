// Naive transpose: reads along rows (coalesced) but writes down columns, so each warp's 32 stores land
// in 32 different 32-byte sectors, n floats apart.
#include <cuda_runtime.h>

__global__ void transpose(const float *in, float *out, int n) {
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    int row = blockIdx.y * blockDim.y + threadIdx.y;
    if (row < n && col < n) {
        out[(size_t)col * n + row] = in[(size_t)row * n + col];
    }
}

void launch_transpose(const float *in, float *out, int n) {
    dim3 block(32, 8);
    dim3 grid((n + 31) / 32, (n + 7) / 8);
    transpose<<<grid, block>>>(in, out, n);
}
