/* Stream compaction without a data-dependent branch: every element is written at the next free slot, and the slot
 * advances only when the element is kept (a compare turned into an add), so random data costs no mispredictions.
 * The slot after the last kept element is overwritten later by the zero fill or lies past the end (kept < n). */
void select_above(const float *x, float *out, int *count, int n, float threshold) {
    int kept = 0;
    for (int i = 0; i < n; i++) {
        float v = x[i];
        out[kept] = v;
        kept += v >= threshold;
    }
    *count = kept;
    for (int i = kept; i < n; i++) {
        out[i] = 0.0f;
    }
}
