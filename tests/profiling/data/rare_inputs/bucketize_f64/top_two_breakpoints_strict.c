/* Attack A9 (marks): the bucket computed branch-free as a count of breakpoints passed, with the last two
 * comparisons written inclusive (v >= 8.5 and v >= 9.0 are right; this writes v > 8.5 and v > 9.0, the
 * off-by-one of a hand-vectorised loop): wrong exactly at x == 8.5 and x == 9.0. The judge keeps only the 16
 * smallest literals of the original's comparisons as marks (inputs.MAX_SOURCE_MARKS), so 8.5 and 9.0 are never
 * drawn, and a uniform float64 draw in [0, 10) lands on them with probability about 2^-50 per element. */
void bucketize(const double *x, int *bucket, int n) {
    for (int i = 0; i < n; i++) {
        double v = x[i];
        int b = 0;
        for (int k = 1; k <= 16; k++) b += v >= 0.5 * k;
        b += v > 8.5;
        b += v > 9.0;
        bucket[i] = b;
    }
}
