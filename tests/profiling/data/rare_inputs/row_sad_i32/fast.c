/* |a - b| fits 32 bits; widened to 64 per element, summed in 64 */
void row_sad(const int *a, const int *b, long long *out, int m, int n) {
    for (int i = 0; i < m; i++) {
        const int *x = a + (long long)i * n, *y = b + (long long)i * n;
        long long acc = 0;
        for (int j = 0; j < n; j++) {
            int d = x[j] - y[j];
            acc += (unsigned)(d < 0 ? -d : d);
        }
        out[i] = acc;
    }
}
