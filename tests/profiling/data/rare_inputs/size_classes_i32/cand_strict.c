/* the vectorised sums with every bound compared strictly: wrong exactly at the 7 bounds (3 * 2^21 .. 3 * 2^27) */
void classify(const int *x, int *out, int n) {
    for (int i = 0; i < n; i++) {
        int v = x[i];
        out[i] = (v > (3 << (22 - 1))) + (v > (3 << (23 - 1))) + (v > (3 << (24 - 1))) + (v > (3 << (25 - 1))) + (v > (3 << (26 - 1))) +
                 (v > (3 << (27 - 1))) + (v > (3 << (28 - 1)));
    }
}
