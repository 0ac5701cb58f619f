#include <math.h>
/* Stream compaction: copies the elements of x at or above exp(-t) (a decay of t) to the front of out,
 * in order, zeroes the rest of out, and stores how many were kept. */
void select_above(const float *x, float *out, int *count, int n, float t) {
    const float r = expf(-t);
    int kept = 0;
    for (int i = 0; i < n; i++) {
        if (x[i] >= r) {
            out[kept++] = x[i];
        }
    }
    *count = kept;
    for (int i = kept; i < n; i++) {
        out[i] = 0.0f;
    }
}
