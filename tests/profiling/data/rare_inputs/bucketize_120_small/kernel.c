#include "table.h"
/* Bucket index of each x: how many of the NB ascending breakpoints are at or below it (a linear scan). */
void bucketize(const float *x, int *out, int n) {
    for (int i = 0; i < n; i++) {
        int b = 0;
        while (b < NB && EDGES[b] <= x[i]) b++;
        out[i] = b;
    }
}
