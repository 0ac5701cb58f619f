#include "table.h"
/* branch-free binary search: the number of breakpoints <= x */
void bucketize(const float *x, int *out, int n) {
    for (int i = 0; i < n; i++) {
        float v = x[i];
        int lo = 0;
        for (int step = 64; step > 0; step >>= 1) {
            int probe = lo + step;
            lo = (probe <= NB && EDGES[probe - 1] <= v) ? probe : lo;
        }
        out[i] = lo;
    }
}
