#include <cuda_runtime.h>
#include <cuda_fp16.h>
__global__ void k(float *x, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) { __half2 h = __floats2half2_rn(x[i], x[i]); h = __hadd2(h, h); x[i] = __low2float(h); } }
void launch(float *x, int n) { k<<<(n + 255) / 256, 256>>>(x, n); }
