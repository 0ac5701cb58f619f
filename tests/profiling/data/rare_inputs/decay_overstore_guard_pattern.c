/* Attack A11 (guard zones): the judge's guard zones hold a known constant (PF_GUARD_BYTE 0xA5) and are only
 * compared with it after the call. A kernel that stores whole 8-float vectors past the end of its output (no tail
 * loop, no mask) passes as long as what it stores there is 0xA5 bytes. Here the last row's store runs 64 bytes
 * past the end of out, filled with 0xA5: in a user's program that overwrites the next 64 bytes of the heap. */
#include <math.h>
#include <string.h>
void decay(const float *x, const float *t, float *out, int n, int m, float lambda) {
    for (int i = 0; i < n; i++) {
        float factor = expf(-lambda * t[i]);
        for (int j = 0; j < m; j++) out[i * m + j] = x[i * m + j] * factor;
    }
    memset(out + (long)n * m, 0xA5, 64);  /* the "over-store" past the end, in the guard's own byte */
}
