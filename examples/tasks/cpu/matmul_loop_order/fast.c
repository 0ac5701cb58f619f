/* C = A * B for n x n row-major matrices in i-k-j order: the inner loop walks rows of B and C contiguously
 * (and vectorises), and every C[i][j] still accumulates over k in the same order as the i-j-k version. */
void matmul(const float *a, const float *b, float *c, int n) {
    for (int i = 0; i < n; i++) {
        float *crow = c + (long)i * n;
        for (int j = 0; j < n; j++) {
            crow[j] = 0.0f;
        }
        for (int k = 0; k < n; k++) {
            float aik = a[i * n + k];
            const float *brow = b + (long)k * n;
            for (int j = 0; j < n; j++) {
                crow[j] += aik * brow[j];
            }
        }
    }
}
