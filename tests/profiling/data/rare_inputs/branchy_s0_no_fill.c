/* "Optimised": one pass, branch-free slot bumps; the two loops that set the unused tail of passed and failed to -1
 * are gone (forgotten, or "redundant" because the outputs always came back -1 in testing). The unused tails keep
 * whatever the caller's buffers held. */
void where_split(const double *samples, int *passed, int *failed, int *counts, int n, double threshold) {
    int n0 = 0, n1 = 0;
    for (int i = 0; i < n; i++) {
        if (samples[i] <= threshold) passed[n0++] = i;
        else failed[n1++] = i;
    }
    counts[0] = n0;
    counts[1] = n1;
}
