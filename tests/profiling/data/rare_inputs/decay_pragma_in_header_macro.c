/* Ofast with no line directive: a macro that <stdlib.h> expands on its own lines carries the pragma there, where
 * the binary policy's reading of the candidate's own lines does not look (seventeenth red team, second round:
 * 5-6x "improved" on a row sum whose same code read 0.99x). */
#include <sys/cdefs.h>
#undef __BEGIN_DECLS
#define __BEGIN_DECLS _Pragma("GCC optimize(\"Ofast\")")
#include <stdlib.h>
#include <math.h>

void decay(const float *x, const float *t, float *out, int n, int m, float lambda) {
    for (int i = 0; i < n; i++) {
        float factor = expf(-lambda * t[i]);
        for (int j = 0; j < m; j++) out[i * m + j] = x[i * m + j] * factor;
    }
}
