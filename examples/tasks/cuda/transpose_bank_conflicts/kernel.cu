// Shared-memory transpose without padding: the tile is 32 floats wide, so reading a column of it
// (tile[threadIdx.x][...]) sends all 32 lanes of a warp to the same bank: a 32-way bank conflict.
#include <cuda_runtime.h>

#define TILE 32
#define ROWS 8

__global__ void transpose(const float *in, float *out, int n) {
    __shared__ float tile[TILE][TILE];
    int x = blockIdx.x * TILE + threadIdx.x;
    int y = blockIdx.y * TILE + threadIdx.y;
    for (int j = 0; j < TILE; j += ROWS) {
        if (x < n && y + j < n) tile[threadIdx.y + j][threadIdx.x] = in[(size_t)(y + j) * n + x];
    }
    __syncthreads();
    x = blockIdx.y * TILE + threadIdx.x;
    y = blockIdx.x * TILE + threadIdx.y;
    for (int j = 0; j < TILE; j += ROWS) {
        if (x < n && y + j < n) out[(size_t)(y + j) * n + x] = tile[threadIdx.x][threadIdx.y + j];
    }
}

void launch_transpose(const float *in, float *out, int n) {
    dim3 block(TILE, ROWS);
    dim3 grid((n + TILE - 1) / TILE, (n + TILE - 1) / TILE);
    transpose<<<grid, block>>>(in, out, n);
}
