/* Driver for leimao/CUDA-GEMM-Optimization: the repository's profile_cuda_gemm_fp32/fp16 mains run every version in
   one program (application mode would profile whichever three cost most). This one calls one version's launch
   function, chosen at build time (-DPERFFORGE_LAUNCH=launch_gemm_kernel_v04_vectorized, -DPERFFORGE_T=float or
   __half), three times on square matrices (the files' own benchmark uses 4096; 2048 keeps ncu's serialised replay
   of the naive versions short), and prints C[0] so the work cannot be dropped.
   Usage: leimao_gemm [N = 2048] */
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>
#include <vector>

#include "cuda_gemm.hpp"

#ifndef PERFFORGE_T
#define PERFFORGE_T float
#endif

using T = PERFFORGE_T;

static void check(cudaError_t status, char const* what) {
    if (status != cudaSuccess) {
        std::fprintf(stderr, "%s: %s\n", what, cudaGetErrorString(status));
        std::exit(1);
    }
}

int main(int argc, char** argv) {
    size_t const n = argc > 1 ? std::strtoul(argv[1], nullptr, 10) : 2048;
    std::vector<T> host(n * n);
    for (size_t i = 0; i < host.size(); ++i) host[i] = T(0.01f * static_cast<float>(i % 7));
    T *a = nullptr, *b = nullptr, *c = nullptr;
    check(cudaMalloc(&a, n * n * sizeof(T)), "cudaMalloc");
    check(cudaMalloc(&b, n * n * sizeof(T)), "cudaMalloc");
    check(cudaMalloc(&c, n * n * sizeof(T)), "cudaMalloc");
    check(cudaMemcpy(a, host.data(), n * n * sizeof(T), cudaMemcpyHostToDevice), "cudaMemcpy");
    check(cudaMemcpy(b, host.data(), n * n * sizeof(T), cudaMemcpyHostToDevice), "cudaMemcpy");
    check(cudaMemset(c, 0, n * n * sizeof(T)), "cudaMemset");
    T const alpha = T(1.0f), beta = T(0.0f);
    for (int repeat = 0; repeat < 3; ++repeat)
        PERFFORGE_LAUNCH<T>(n, n, n, &alpha, a, n, b, n, &beta, c, n, nullptr);
    check(cudaDeviceSynchronize(), "the GEMM");
    T first;
    check(cudaMemcpy(&first, c, sizeof(T), cudaMemcpyDeviceToHost), "cudaMemcpy");
    std::printf("C[0] = %f\n", static_cast<float>(first));
    cudaFree(a);
    cudaFree(b);
    cudaFree(c);
    return 0;
}
