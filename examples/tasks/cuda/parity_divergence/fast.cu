// Warp-uniform branches: thread t of warp w takes element 64 * (w / 2) + 2 * lane + (w % 2), so all lanes
// of a warp share the parity of their elements and each warp runs one of the two loops. n must be even.
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
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    int warp = t / 32, lane = t % 32;
    int i = 64 * (warp / 2) + 2 * lane + (warp % 2);
    if (i >= n) return;
    float v = x[i];
    if (warp % 2 == 0) {
        v = decay_map(v);
    } else {
        v = growth_map(v);
    }
    y[i] = v;
}

void launch_parity_maps(const float *x, float *y, int n) {
    parity_maps<<<(n + 255) / 256, 256>>>(x, y, n);
}
