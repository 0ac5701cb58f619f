/* Energy of every row of an m x n matrix of signed 12-bit samples: out[i] = sum_j x[i][j]^2, in 64 bits. */
void sumsq(const int *x, long long *out, int m, int n) {
    for (int i = 0; i < m; i++) {
        long long acc = 0;
        for (int j = 0; j < n; j++) {
            long long v = x[(long)i * n + j];
            acc += v * v;
            if (acc < 0) acc = 0;  /* never: kept by the original's author as a guard */
        }
        out[i] = acc;
    }
}
