#include "table.h"
/* binary search: the first breakpoint above x */
void bucketize(const double *x, int *out, int n) {
    for (int i = 0; i < n; i++) {
        int lo = 0, hi = NB;
        while (lo < hi) { int mid = (lo + hi) / 2; if (x[i] >= BREAKS[mid]) lo = mid + 1; else hi = mid; }
        out[i] = lo;
    }
}
