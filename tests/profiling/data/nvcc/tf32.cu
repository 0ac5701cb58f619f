#include <cuda_runtime.h>
#include <mma.h>
using namespace nvcuda;
__global__ void k(const float *a, const float *b, float *c) {
  wmma::fragment<wmma::matrix_a, 16, 16, 8, wmma::precision::tf32, wmma::row_major> fa;
  wmma::fragment<wmma::matrix_b, 16, 16, 8, wmma::precision::tf32, wmma::row_major> fb;
  wmma::fragment<wmma::accumulator, 16, 16, 8, float> fc;
  wmma::fill_fragment(fc, 0.0f); wmma::load_matrix_sync(fa, a, 8); wmma::load_matrix_sync(fb, b, 16);
  wmma::mma_sync(fc, fa, fb, fc); wmma::store_matrix_sync(c, fc, 16, wmma::mem_row_major); }
void launch(const float *a, const float *b, float *c) { k<<<1, 32>>>(a, b, c); }
