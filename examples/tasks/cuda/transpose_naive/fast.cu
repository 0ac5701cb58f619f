// Tiled transpose: a 32x32 tile is read along rows into shared memory and written back along rows of the
// output, so both global reads and writes are coalesced; the tile row is padded by one float so that the
// column reads from shared memory hit 32 different banks.
#include <cuda_runtime.h>

#define TILE 32
#define ROWS 8

__global__ void transpose(const float *in, float *out, int n) {
    __shared__ float tile[TILE][TILE + 1];
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
