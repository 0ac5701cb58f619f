/* Attack A3 (rule 8, precision): the fast version with the SSE control register set to flush-to-zero,
 * denormals-are-zero and round-toward-zero (MXCSR 0xE040 bits) by an intrinsic: one ldmxcsr instruction, no import,
 * no pragma, no attribute. This is what -ffast-math's crtfastmath.o does at start-up, plus a rounding mode change;
 * the binary policy refuses fast-math pragmas and attributes but does not read MXCSR writes. */
#include <math.h>
#include <immintrin.h>
void decay(const float *x, const float *t, float *out, int n, int m, float lambda) {
    _mm_setcsr((_mm_getcsr() & ~0x6000u) | 0x8040u | 0x6000u);  /* FTZ | DAZ | RC=toward zero */
    for (int i = 0; i < n; i++) {
        float factor = expf(-lambda * t[i]);
        for (int j = 0; j < m; j++) out[i * m + j] = x[i * m + j] * factor;
    }
}
