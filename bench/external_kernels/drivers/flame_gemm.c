/* Driver for flame/how-to-optimize-gemm's versions (src/MMult_*.c, each defining MY_MMult): one product
   C += A * B of n x n matrices, column-major with the leading dimension 1000 that the project's own driver
   (src/HowToOptimizeGemm/parameters.h: LDA = LDB = LDC = 1000) uses, so strides match the tutorial's.
   The project's test_MMult.c sweeps 40..800 and times each size: too long under callgrind.
   Usage: flame_gemm [n = 512] [repeats = 1] */
#include <stdio.h>
#include <stdlib.h>

void MY_MMult(int m, int n, int k, double *a, int lda, double *b, int ldb, double *c, int ldc);

static double *random_matrix(int rows, int cols, int ld) {
    double *x = malloc(sizeof(double) * (size_t)ld * (size_t)cols);
    for (size_t i = 0; i < (size_t)ld * (size_t)cols; i++) x[i] = 2.0 * drand48() - 1.0;
    (void)rows;
    return x;
}

int main(int argc, char **argv) {
    int n = argc > 1 ? atoi(argv[1]) : 512;
    int repeats = argc > 2 ? atoi(argv[2]) : 1;
    int ld = n > 1000 ? n : 1000;
    srand48(1);
    double *a = random_matrix(n, n, ld), *b = random_matrix(n, n, ld), *c = random_matrix(n, n, ld);
    for (int r = 0; r < repeats; r++) MY_MMult(n, n, n, a, ld, b, ld, c, ld);
    printf("c[0] = %g\n", c[0]);
    free(a);
    free(b);
    free(c);
    return 0;
}
