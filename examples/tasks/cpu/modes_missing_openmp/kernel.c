#include <math.h>

/* Displacement of n independent damped oscillation modes at time t: out[i] = a[i] e^(-d[i] t) cos(w[i] t + p[i]). */
void modes(const float *a, const float *d, const float *w, const float *p, float *out, int n, float t) {
    for (int i = 0; i < n; i++) {
        out[i] = a[i] * expf(-d[i] * t) * cosf(w[i] * t + p[i]);
    }
}
