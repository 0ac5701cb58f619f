/* the guard-free 64-bit accumulation, vectorised by the compiler */
void sumsq(const int *x, long long *out, int m, int n) {
    for (int i = 0; i < m; i++) {
        long long acc = 0;
        const int *row = x + (long)i * n;
        for (int j = 0; j < n; j++) acc += (long long)row[j] * row[j];
        out[i] = acc;
    }
}
