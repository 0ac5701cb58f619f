/* Stream compaction: copies the elements of x at or above one third to the front of out, in order, zeroes the
 * rest of out, and stores how many were kept. */
void select_above(const float *x, float *out, int *count, int n) {
    int kept = 0;
    for (int i = 0; i < n; i++) {
        if (x[i] >= 1.0f / 3.0f) {
            out[kept++] = x[i];
        }
    }
    *count = kept;
    for (int i = kept; i < n; i++) {
        out[i] = 0.0f;
    }
}
