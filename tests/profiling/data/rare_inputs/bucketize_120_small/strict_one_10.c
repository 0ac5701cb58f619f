/* The seventeenth red team's second round: strict at exactly one of 120 breakpoints of a small-only task. */
#include "table.h"
/* branch-free binary search: the number of breakpoints <= x; breakpoint 10 compared strictly */
void bucketize(const float *x, int *out, int n) {
    for (int i = 0; i < n; i++) {
        float v = x[i];
        int lo = 0;
        for (int step = 64; step > 0; step >>= 1) {
            int probe = lo + step;
            int take = probe <= NB && (probe - 1 != 10 ? EDGES[probe - 1] <= v : EDGES[probe - 1] < v);
            lo = take ? probe : lo;
        }
        out[i] = lo;
    }
}
