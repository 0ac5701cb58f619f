#include "table.h"
/* bucket of each value: how many breakpoints it reaches (x >= b), by a linear scan of the table */
void bucketize(const double *x, int *out, int n) {
    for (int i = 0; i < n; i++) {
        int c = 0;
        for (int k = 0; k < NB; k++) c += x[i] >= BREAKS[k];
        out[i] = c;
    }
}
