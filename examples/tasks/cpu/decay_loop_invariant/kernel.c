#include <math.h>

/* Damps every row of an n x m signal by the decay factor of its own time stamp: out[i][j] = x[i][j] * e^(-lambda t[i]). */
void decay(const float *x, const float *t, float *out, int n, int m, float lambda) {
    for (int i = 0; i < n; i++) {
        for (int j = 0; j < m; j++) {
            out[i * m + j] = x[i * m + j] * expf(-lambda * t[i]);
        }
    }
}
