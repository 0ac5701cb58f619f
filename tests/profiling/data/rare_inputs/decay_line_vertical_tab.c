/* The eighteenth red team: a #line directive spelled with a vertical tab after the `#` (a form feed works the
 * same): whitespace in a directive that the line check read as spaces and tabs only. */
#include <math.h>
#line 1 "/usr/include/stdio.h"
__attribute__((optimize("Ofast"))) void decay(const float *x, const float *t, float *out, int n, int m, float lambda) {
    for (int i = 0; i < n; i++) {
        float factor = expf(-lambda * t[i]);
        for (int j = 0; j < m; j++) out[i * m + j] = x[i * m + j] * factor;
    }
}
