// Block reduction: each thread sums a grid-stride slice in registers, the block reduces with warp shuffles
// and shared memory, and one thread per block adds the block's partial sum: one atomic per block.
#include <cuda_runtime.h>

#define THREADS 256

__global__ void sum(const float *x, double *out, int n) {
    __shared__ double warp_sums[THREADS / 32];
    double v = 0.0;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) v += (double)x[i];
    for (int offset = 16; offset > 0; offset /= 2) v += __shfl_down_sync(0xffffffffu, v, offset);
    if ((threadIdx.x & 31) == 0) warp_sums[threadIdx.x / 32] = v;
    __syncthreads();
    if (threadIdx.x < 32) {
        v = threadIdx.x < THREADS / 32 ? warp_sums[threadIdx.x] : 0.0;
        for (int offset = 16; offset > 0; offset /= 2) v += __shfl_down_sync(0xffffffffu, v, offset);
        if (threadIdx.x == 0) atomicAdd(out, v);
    }
}

void launch_sum(const float *x, double *out, int n) {
    int device = 0, sms = 0;
    cudaGetDevice(&device);
    cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device);
    int blocks = (n + THREADS - 1) / THREADS;
    if (blocks > 8 * sms) blocks = 8 * sms;
    cudaMemsetAsync(out, 0, sizeof(double));
    sum<<<blocks, THREADS>>>(x, out, n);
}
