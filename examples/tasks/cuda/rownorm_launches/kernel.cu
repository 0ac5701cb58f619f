// Row normalisation y[r][:] = x[r][:] / sqrt(sum(x[r][:]^2) + eps), written as two small kernels launched
// once per row: 2 * rows launches per call, each moving only one row (cols floats), so the GPU spends its
// time between launches rather than in them.
#include <cuda_runtime.h>

#define THREADS 256
#define EPS 1e-6f

__global__ void rownorm_sum_squares(const float *x, float *norms, int row, int cols) {
    __shared__ float partial[THREADS / 32];
    int j = blockIdx.x * blockDim.x + threadIdx.x;
    float v = j < cols ? x[(size_t)row * cols + j] : 0.0f;
    v *= v;
    for (int offset = 16; offset > 0; offset /= 2) v += __shfl_down_sync(0xffffffffu, v, offset);
    if ((threadIdx.x & 31) == 0) partial[threadIdx.x / 32] = v;
    __syncthreads();
    if (threadIdx.x == 0) {
        float s = 0.0f;
        for (int w = 0; w < THREADS / 32; w++) s += partial[w];
        atomicAdd(&norms[row], s);
    }
}

__global__ void rownorm_scale(const float *x, float *y, const float *norms, int row, int cols) {
    int j = blockIdx.x * blockDim.x + threadIdx.x;
    if (j < cols) y[(size_t)row * cols + j] = x[(size_t)row * cols + j] * rsqrtf(norms[row] + EPS);
}

void launch_rownorm(const float *x, float *y, float *norms, int rows, int cols) {
    int blocks = (cols + THREADS - 1) / THREADS;
    cudaMemsetAsync(norms, 0, (size_t)rows * sizeof(float));
    for (int r = 0; r < rows; r++) {
        rownorm_sum_squares<<<blocks, THREADS>>>(x, norms, r, cols);
        rownorm_scale<<<blocks, THREADS>>>(x, y, norms, r, cols);
    }
}
