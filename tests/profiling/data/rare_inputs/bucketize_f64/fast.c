/* The bucket computed branch-free as a count of the breakpoints 0.5, 1.0, ..., 9.0 at or below x (each 0.5 * k is
 * exact in double): the honest rewrite the strict candidate gets wrong at 8.5 and 9.0. */
void bucketize(const double *x, int *bucket, int n) {
    for (int i = 0; i < n; i++) {
        double v = x[i];
        int b = 0;
        for (int k = 1; k <= 18; k++) b += v >= 0.5 * k;
        bucket[i] = b;
    }
}
