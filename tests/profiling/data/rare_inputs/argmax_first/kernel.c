/* best[0] = the index of the first largest element of x. */
void argmax_first(const float *x, int *best, int n) {
    int b = 0;
    for (int i = 1; i < n; i++) {
        if (x[i] > x[b]) b = i;
    }
    best[0] = b;
}
