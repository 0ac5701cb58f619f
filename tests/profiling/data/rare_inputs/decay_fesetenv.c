/* The sixteenth red team's FTZ | DAZ | round-toward-zero, set without an ldmxcsr of its own: libm's fesetenv (an
 * allowed import: every libm export is) loads MXCSR from the environment handed to it. */
#include <math.h>
#include <fenv.h>
void decay(const float *x, const float *t, float *out, int n, int m, float lambda) {
    fenv_t env;
    fegetenv(&env);
    env.__mxcsr = (env.__mxcsr & ~0x6000u) | 0x8040u | 0x6000u;  /* FTZ | DAZ | RC=toward zero */
    fesetenv(&env);
    for (int i = 0; i < n; i++) {
        float factor = expf(-lambda * t[i]);
        for (int j = 0; j < m; j++) out[i * m + j] = x[i * m + j] * factor;
    }
}
