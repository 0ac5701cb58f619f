/* A main for the C code examples of codee-com/open-catalog (labels.toml, recipe open-catalog): each check's
 * Checks/<ID>/example*.c defines one function and no main (the repository's Benchmark/src/<ID>.cpp calls them through
 * Google Benchmark, which is not assumed here). This program calls the function of one check, chosen at build time
 * (-DOC_<ID>, e.g. -DOC_PWR039), on inputs it makes itself, `repeats` times, and prints a checksum of the output so
 * that nothing is optimised away. The example is compiled as its own unit (the recipe), so it is not inlined here.
 *
 *     prog [n] [repeats = 1]
 *
 * n is the check's problem size: the vector length, the matrix order (n x n; n x n x n for PWR022's C), or, for
 * PWR018, the number of Fibonacci terms summed.
 */
#include <stdio.h>
#include <stdlib.h>

/* Values in [1, 128) from a multiplicative hash of the index (as Benchmark.h's CreateRandomVector's range). */
static double value(size_t i, unsigned seed)
{
    return 1.0 + (double)(((unsigned)(i + seed) * 2654435761u) >> 25);
}

/* malloc that ends the program with one line when memory runs out (at least one byte asked for). */
static void *allocate(size_t bytes)
{
    void *p = malloc(bytes ? bytes : 1);
    if (!p) {
        fprintf(stderr, "out of memory\n");
        exit(2);
    }
    return p;
}

static double *dvec(size_t n, unsigned seed)
{
    double *x = allocate(sizeof(double) * n);
    for (size_t i = 0; i < n; i++)
        x[i] = value(i, seed);
    return x;
}

static float *fvec(size_t n, unsigned seed)
{
    float *x = allocate(sizeof(float) * n);
    for (size_t i = 0; i < n; i++)
        x[i] = (float)value(i, seed);
    return x;
}

/* An n x n matrix as an array of row pointers into one contiguous block (the examples' double **). */
static double **rows(int n, unsigned seed)
{
    double *block = dvec((size_t)n * (size_t)n, seed);
    double **r = allocate(sizeof(double *) * (size_t)n);
    for (int i = 0; i < n; i++)
        r[i] = block + (size_t)i * (size_t)n;
    return r;
}

static double dsum(const double *x, size_t n)
{
    double s = 0.0;
    for (size_t i = 0; i < n; i++)
        s += x[i];
    return s;
}

static double fsum(const float *x, size_t n)
{
    double s = 0.0;
    for (size_t i = 0; i < n; i++)
        s += x[i];
    return s;
}

#if defined(OC_PWR003)
void example(const int N, const double *masses, double *weights);
#define DEFAULT_N (1 << 20)
#elif defined(OC_PWR018)
double example(unsigned times);
#define DEFAULT_N 30
#elif defined(OC_PWR022)
void example(int n, const double *A, const double *B, const double *C, double *D);
#define DEFAULT_N 128
#elif defined(OC_PWR032)
void example(const int N, const float *X1, const float *Y1, const float *X2, const float *Y2, float *result);
#define DEFAULT_N 8192
#elif defined(OC_PWR039) || defined(OC_PWR043)
void matmul(int n, const double *A, const double *B, double *C);
#define DEFAULT_N 512
#elif defined(OC_PWR040)
void example(double **A, double **B, int n);
#define DEFAULT_N 2048
#elif defined(OC_PWR042)
void example(double **A, double *B, int n);
#define DEFAULT_N 2048
#elif defined(OC_PWR045)
void example(float *out, float *in, int n, float b);
#define DEFAULT_N 4096
#elif defined(OC_PWR050)
void example(double *D, double *X, double *Y, int n, double a);
#define DEFAULT_N (1 << 22)
#elif defined(OC_PWR054)
double example(double *A, int n);
#define DEFAULT_N (1 << 16)
#else
#error "build with -DOC_<check id>, one of PWR003 PWR018 PWR022 PWR032 PWR039 PWR040 PWR042 PWR043 PWR045 PWR050 PWR054"
#endif

int main(int argc, char **argv)
{
    int n = argc > 1 ? atoi(argv[1]) : DEFAULT_N;
    int repeats = argc > 2 ? atoi(argv[2]) : 1;
    if (n < 1 || repeats < 1) {
        fprintf(stderr, "usage: %s [n >= 1] [repeats >= 1]\n", argv[0]);
        return 2;
    }
    size_t nn = (size_t)n * (size_t)n;
    double check = 0.0;
#if defined(OC_PWR003)
    double *masses = dvec((size_t)n, 1), *weights = dvec((size_t)n, 2);
    for (int r = 0; r < repeats; r++)
        example(n, masses, weights);
    check = dsum(weights, (size_t)n);
#elif defined(OC_PWR018)
    for (int r = 0; r < repeats; r++)
        check += example((unsigned)n);
#elif defined(OC_PWR022)
    double *A = dvec((size_t)n, 1), *B = dvec(nn, 2), *C = dvec(nn * (size_t)n, 3), *D = dvec(nn, 4);
    for (int r = 0; r < repeats; r++)
        example(n, A, B, C, D);
    check = dsum(D, nn);
#elif defined(OC_PWR032)
    float *X1 = fvec((size_t)n, 1), *Y1 = fvec((size_t)n, 2), *X2 = fvec((size_t)n, 3), *Y2 = fvec((size_t)n, 4);
    float *result = fvec((size_t)n, 5);
    for (int r = 0; r < repeats; r++)
        example(n, X1, Y1, X2, Y2, result);
    check = fsum(result, (size_t)n);
#elif defined(OC_PWR039) || defined(OC_PWR043)
    double *A = dvec(nn, 1), *B = dvec(nn, 2), *C = dvec(nn, 3);
    for (size_t i = 0; i < nn; i++) { /* small values: repeated accumulation (PWR039) stays finite */
        A[i] /= 128.0;
        B[i] /= 128.0;
        C[i] = 0.0;
    }
    for (int r = 0; r < repeats; r++)
        matmul(n, A, B, C);
    check = dsum(C, nn);
#elif defined(OC_PWR040)
    double **A = rows(n, 1), **B = rows(n, 2);
    for (int r = 0; r < repeats; r++)
        example(A, B, n);
    check = dsum(A[0], nn);
#elif defined(OC_PWR042)
    double **A = rows(n, 1), *B = dvec((size_t)n, 2);
    for (int r = 0; r < repeats; r++)
        example(A, B, n);
    check = dsum(B, (size_t)n);
#elif defined(OC_PWR045)
    float *in = fvec((size_t)n, 1), *out = fvec((size_t)n, 2);
    for (int r = 0; r < repeats; r++)
        example(out, in, n, 3.0f);
    check = fsum(out, (size_t)n);
#elif defined(OC_PWR050)
    double *D = dvec((size_t)n, 1), *X = dvec((size_t)n, 2), *Y = dvec((size_t)n, 3);
    for (int r = 0; r < repeats; r++)
        example(D, X, Y, n, 0.5);
    check = dsum(D, (size_t)n);
#elif defined(OC_PWR054)
    double *A = dvec((size_t)n, 1);
    for (int r = 0; r < repeats; r++)
        check += example(A, n);
#endif
    printf("n = %d, repeats = %d, checksum = %.6g\n", n, repeats, check);
    return 0;
}
