/* The seventeenth red team's second round: |a - b| summed in 32 bits, wrong only where a row mixes both ends. */
/* |a - b| summed in 32 bits: wraps past 2^31, which rows of mixed ends reach (a near +2^20, b near -2^20) */
void row_sad(const int *a, const int *b, long long *out, int m, int n) {
    for (int i = 0; i < m; i++) {
        const int *x = a + (long long)i * n, *y = b + (long long)i * n;
        unsigned acc = 0;
        for (int j = 0; j < n; j++) {
            int d = x[j] - y[j];
            acc += (unsigned)(d < 0 ? -d : d);
        }
        out[i] = (int)acc;
    }
}
