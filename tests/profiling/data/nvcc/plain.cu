#include <cuda_runtime.h>
__global__ void k(float *x, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) x[i] *= 2.0f; }
void launch(float *x, int n) { k<<<(n + 255) / 256, 256>>>(x, n); }
