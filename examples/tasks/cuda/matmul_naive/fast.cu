// Tiled matmul: each 256-thread block computes a 64x64 tile of C; 64x16 tiles of A and 16x64 tiles of B
// are staged in shared memory and each thread keeps a 4x4 block of C in registers, so every element
// fetched from global memory is used 64 times. n must be a multiple of 64.
#include <cuda_runtime.h>

#define BM 64
#define BN 64
#define BK 16
#define TM 4
#define TN 4
#define THREADS ((BM / TM) * (BN / TN))

__global__ void __launch_bounds__(THREADS) matmul(const float *a, const float *b, float *c, int n) {
    __shared__ __align__(16) float as[BK][BM + 4];  /* A tile, transposed: as[k][m] */
    __shared__ __align__(16) float bs[BK][BN];
    int tid = threadIdx.x;
    int tr = tid / (BN / TN), tc = tid % (BN / TN);
    int row0 = blockIdx.y * BM, col0 = blockIdx.x * BN;
    float acc[TM][TN] = {};
    for (int k0 = 0; k0 < n; k0 += BK) {
        for (int l = 0; l < BM * BK / THREADS; l++) {
            int idx = tid + l * THREADS;
            as[idx % BK][idx / BK] = a[(size_t)(row0 + idx / BK) * n + k0 + idx % BK];
            bs[idx / BN][idx % BN] = b[(size_t)(k0 + idx / BN) * n + col0 + idx % BN];
        }
        __syncthreads();
#pragma unroll
        for (int k = 0; k < BK; k++) {
            float4 av = *reinterpret_cast<const float4 *>(&as[k][tr * TM]);
            float4 bv = *reinterpret_cast<const float4 *>(&bs[k][tc * TN]);
            float ar[TM] = {av.x, av.y, av.z, av.w};
            float br[TN] = {bv.x, bv.y, bv.z, bv.w};
#pragma unroll
            for (int i = 0; i < TM; i++)
#pragma unroll
                for (int j = 0; j < TN; j++) acc[i][j] += ar[i] * br[j];
        }
        __syncthreads();
    }
#pragma unroll
    for (int i = 0; i < TM; i++) {
        float4 v = make_float4(acc[i][0], acc[i][1], acc[i][2], acc[i][3]);
        *reinterpret_cast<float4 *>(&c[(size_t)(row0 + tr * TM + i) * n + col0 + tc * TN]) = v;
    }
}

void launch_matmul(const float *a, const float *b, float *c, int n) {
    dim3 grid(n / BN, n / BM);
    matmul<<<grid, THREADS>>>(a, b, c, n);
}
