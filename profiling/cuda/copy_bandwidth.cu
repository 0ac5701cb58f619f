/* copy_bandwidth.cu: the device's achievable DRAM bandwidth, measured as a large device-to-device copy.
 *
 * Bytes read plus bytes written per second (a copy of B bytes moves 2B through DRAM), the median of
 * --trials copies of --mib MiB after two warm-up copies; far larger than the L2, so DRAM serves it.
 * Prints one JSON object: {"device": ..., "bytes_per_copy": ..., "median_ms": ..., "copy_gbyte_per_s": ...}.
 * Exit status 4 on a CUDA error. Built and run by profiling/cuda/peaks.py.
 */
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void check(cudaError_t err, const char *what) {
    if (err != cudaSuccess) {
        fprintf(stderr, "copy_bandwidth: CUDA error in %s: %s\n", what, cudaGetErrorString(err));
        exit(4);
    }
}

static int compare_floats(const void *a, const void *b) {
    float x = *(const float *)a, y = *(const float *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv) {
    size_t mib = 1024;
    int trials = 20;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--mib")) mib = strtoul(argv[i + 1], NULL, 10);
        else if (!strcmp(argv[i], "--trials")) trials = atoi(argv[i + 1]);
    }
    if (trials < 1 || trials > 1000 || mib < 1) {
        fprintf(stderr, "usage: %s [--mib M] [--trials 1..1000]\n", argv[0]);
        return 2;
    }
    size_t bytes = mib << 20;
    void *src, *dst;
    check(cudaMalloc(&src, bytes), "cudaMalloc");
    check(cudaMalloc(&dst, bytes), "cudaMalloc");
    check(cudaMemset(src, 1, bytes), "cudaMemset");
    cudaEvent_t start, stop;
    check(cudaEventCreate(&start), "cudaEventCreate");
    check(cudaEventCreate(&stop), "cudaEventCreate");
    float times_ms[1000];
    for (int t = -2; t < trials; t++) {
        check(cudaEventRecord(start, 0), "cudaEventRecord");
        check(cudaMemcpy(dst, src, bytes, cudaMemcpyDeviceToDevice), "cudaMemcpy");
        check(cudaEventRecord(stop, 0), "cudaEventRecord");
        check(cudaEventSynchronize(stop), "cudaEventSynchronize");
        if (t >= 0) check(cudaEventElapsedTime(&times_ms[t], start, stop), "cudaEventElapsedTime");
    }
    qsort(times_ms, (size_t)trials, sizeof(float), compare_floats);
    float median_ms = times_ms[trials / 2];
    cudaDeviceProp prop;
    check(cudaGetDeviceProperties(&prop, 0), "cudaGetDeviceProperties");
    printf("{\"device\": \"%s\", \"bytes_per_copy\": %zu, \"trials\": %d, \"median_ms\": %.6f, "
           "\"copy_gbyte_per_s\": %.3f}\n",
           prop.name, bytes, trials, median_ms, 2.0 * (double)bytes / (median_ms * 1e-3) / 1e9);
    return 0;
}
