/* the same classes, branch-free sums of comparisons (vectorises) */
void classify(const int *x, int *out, int n) {
    for (int i = 0; i < n; i++) {
        int v = x[i];
        out[i] = (v >= (3 << (22 - 1))) + (v >= (3 << (23 - 1))) + (v >= (3 << (24 - 1))) + (v >= (3 << (25 - 1))) + (v >= (3 << (26 - 1))) +
                 (v >= (3 << (27 - 1))) + (v >= (3 << (28 - 1)));
    }
}
