/* Per-row sum of absolute differences of two signals of 21-bit samples (|a - b| < 2^21), in 64 bits. */
void row_sad(const int *a, const int *b, long long *out, int m, int n) {
    for (int i = 0; i < m; i++) {
        long long acc = 0;
        for (int j = 0; j < n; j++) {
            long long d = (long long)a[(long long)i * n + j] - b[(long long)i * n + j];
            if (d < 0) d = -d;
            acc += d;
        }
        out[i] = acc;
    }
}
