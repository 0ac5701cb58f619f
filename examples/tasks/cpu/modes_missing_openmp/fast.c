#include <math.h>

/* Displacement of n independent damped oscillation modes at time t: out[i] = a[i] e^(-d[i] t) cos(w[i] t + p[i]).
 * The modes are independent: the loop is shared among the cores. */
void modes(const float *a, const float *d, const float *w, const float *p, float *out, int n, float t) {
#pragma omp parallel for schedule(static)
    for (int i = 0; i < n; i++) {
        out[i] = a[i] * expf(-d[i] * t) * cosf(w[i] * t + p[i]);
    }
}
