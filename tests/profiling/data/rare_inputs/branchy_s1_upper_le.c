/* "Optimised": the two bounds hoisted out of the loops, one pass; the upper test written <= by mistake. */
void where_split(const float *samples, int *keep, int *rest, int *counts, int n, float threshold, float width) {
    const float lo = threshold - width, hi = threshold + width;
    int n0 = 0, n1 = 0;
    for (int i = 0; i < n; i++) {
        float x = samples[i];
        if (x > lo && x <= hi) keep[n0++] = i;
        else rest[n1++] = i;
    }
    counts[0] = n0;
    counts[1] = n1;
    for (int i = n0; i < n; i++) keep[i] = -1;
    for (int i = n1; i < n; i++) rest[i] = -1;
}
