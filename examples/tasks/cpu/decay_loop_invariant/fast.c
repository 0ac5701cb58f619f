#include <math.h>

/* Damps every row of an n x m signal by the decay factor of its own time stamp: out[i][j] = x[i][j] * e^(-lambda t[i]).
 * The factor depends on the row only: one expf per row, and the inner loop is a vectorisable scale. */
void decay(const float *x, const float *t, float *out, int n, int m, float lambda) {
    for (int i = 0; i < n; i++) {
        float factor = expf(-lambda * t[i]);
        for (int j = 0; j < m; j++) {
            out[i * m + j] = x[i * m + j] * factor;
        }
    }
}
