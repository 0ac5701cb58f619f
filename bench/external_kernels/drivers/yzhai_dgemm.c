/* A main for the DGEMM kernels of yzhaiustc/Optimizing-DGEMM-on-Intel-CPUs-with-AVX512F (labels.toml, recipe
 * yzhai-dgemm): include/kernel<n>.h defines mydgemm_cpu_v<n>(M, N, K, alpha, A, LDA, B, LDB, beta, C, LDC),
 * column-major C = alpha * A * B + beta * C. The repository's test.c checks every kernel against Intel MKL's
 * cblas_dgemm and times sizes 100..3000 three times each (MKL is not assumed here, and that is far too long under
 * callgrind); its utils.c includes every kernel, the AVX-512 ones among them. This program calls one kernel,
 * chosen at build time (-DPERFFORGE_DGEMM=mydgemm_cpu_v<n>), on n x n matrices with LDA = LDB = LDC = n as
 * test.c passes them and test.c's alpha = 2, but beta = 1: test.c's beta = 0 makes each kernel first scale C by 0
 * (scale_c_k<n>, a row-wise walk of column-major C that none of the steps is about). A few entries of C are then
 * checked against a plain dot product.
 *
 *     prog [n = 600] [repeats = 1]
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#ifndef PERFFORGE_DGEMM
#error "build with -DPERFFORGE_DGEMM=mydgemm_cpu_v<n>"
#endif

void PERFFORGE_DGEMM(int M, int N, int K, double alpha, double *A, int LDA, double *B, int LDB, double beta,
                     double *C, int LDC);

/* Values in [-0.5, 0.5) from a multiplicative hash of the index: cheap next to the kernels (drand48 on 3 x 1200^2
   elements would cost a tenth of a callgrind run). */
static double *matrix(size_t elements, unsigned seed)
{
    double *x = malloc(sizeof(double) * elements);
    if (!x)
        return NULL;
    for (size_t i = 0; i < elements; i++)
        x[i] = (double)(((unsigned)(i + seed) * 2654435761u) >> 24) / 256.0 - 0.5;
    return x;
}

int main(int argc, char **argv)
{
    int n = argc > 1 ? atoi(argv[1]) : 600;
    int repeats = argc > 2 ? atoi(argv[2]) : 1;
    size_t elements = (size_t)n * (size_t)n;
    double alpha = 2.0, beta = 1.0;
    double *a = matrix(elements, 1), *b = matrix(elements, 2), *c = matrix(elements, 3), *c0 = matrix(elements, 3);
    if (!a || !b || !c || !c0 || n < 1 || repeats < 1) {
        fprintf(stderr, "usage: %s [n >= 1] [repeats >= 1] (or out of memory)\n", argv[0]);
        return 2;
    }
    for (int r = 0; r < repeats; r++)
        PERFFORGE_DGEMM(n, n, n, alpha, a, n, b, n, beta, c, n);

    /* C = C0 + repeats * alpha * A * B, checked at a few positions (column-major: element (i, j) at i + j * n). */
    int bad = 0;
    for (int s = 0; s < 8; s++) {
        int i = (s * 131 + 7) % n, j = (s * 71 + 3) % n;
        double dot = 0.0;
        for (int k = 0; k < n; k++)
            dot += a[i + (size_t)k * n] * b[k + (size_t)j * n];
        double want = c0[i + (size_t)j * n] + repeats * alpha * dot;
        if (fabs(c[i + (size_t)j * n] - want) > 1e-6 * (1.0 + fabs(want)))
            bad++;
    }
    printf("n = %d, repeats = %d, c[0] = %.6f, %s\n", n, repeats, c[0], bad ? "WRONG" : "checked");
    free(a);
    free(b);
    free(c);
    free(c0);
    return bad ? 1 : 0;
}
