// Two iterative maps chosen by the parity of the element index: neighbouring lanes of every warp take
// different branches, so each warp runs both loops one after the other with half of its lanes idle.
#include <cuda_runtime.h>

#define STEPS 256

__device__ float decay_map(float v) {
    for (int s = 0; s < STEPS; s++) v = fmaf(-0.001f * v, v, v);
    return v;
}

__device__ float growth_map(float v) {
    for (int s = 0; s < STEPS; s++) v = fmaf(v, 0.999f, (0.0004f * v) * v);
    return v;
}

__global__ void parity_maps(const float *x, float *y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float v = x[i];
    if (i % 2 == 0) {
        v = decay_map(v);
    } else {
        v = growth_map(v);
    }
    y[i] = v;
}

void launch_parity_maps(const float *x, float *y, int n) {
    parity_maps<<<(n + 255) / 256, 256>>>(x, y, n);
}
