// Row normalisation in one launch: one 256-thread block per row sums the squares of its row (grid-stride
// over the columns, warp shuffles, shared memory), then scales the row: one launch per call.
#include <cuda_runtime.h>

#define THREADS 256
#define EPS 1e-6f

__global__ void rownorm(const float *x, float *y, float *norms, int cols) {
    __shared__ float partial[THREADS / 32];
    __shared__ float scale;
    const float *xr = x + (size_t)blockIdx.x * cols;
    float *yr = y + (size_t)blockIdx.x * cols;
    float v = 0.0f;
    for (int j = threadIdx.x; j < cols; j += THREADS) v = fmaf(xr[j], xr[j], v);
    for (int offset = 16; offset > 0; offset /= 2) v += __shfl_down_sync(0xffffffffu, v, offset);
    if ((threadIdx.x & 31) == 0) partial[threadIdx.x / 32] = v;
    __syncthreads();
    if (threadIdx.x == 0) {
        float s = 0.0f;
        for (int w = 0; w < THREADS / 32; w++) s += partial[w];
        norms[blockIdx.x] = s;
        scale = rsqrtf(s + EPS);
    }
    __syncthreads();
    for (int j = threadIdx.x; j < cols; j += THREADS) yr[j] = xr[j] * scale;
}

void launch_rownorm(const float *x, float *y, float *norms, int rows, int cols) {
    rownorm<<<rows, THREADS>>>(x, y, norms, cols);
}
