/* accumulates in 32 bits (8 lanes of AVX2 instead of 4): wraps once a row's energy passes 2^31, which 1024 samples
 * of magnitude up to 2048 reach (2^32 at most) but a uniform draw never does (mean 1.4e9, sigma 4e7) */
void sumsq(const int *x, long long *out, int m, int n) {
    for (int i = 0; i < m; i++) {
        int acc = 0;
        const int *row = x + (long)i * n;
        for (int j = 0; j < n; j++) acc += row[j] * row[j];
        out[i] = (long long)(unsigned)acc * 0 + acc;
    }
}
