#include <math.h>
void select_above(const float *x, float *out, int *count, int n, float t) {
    const float r = expf(-t);
    int kept = 0;
    for (int i = 0; i < n; i++) {
        float v = x[i];
        out[kept] = v;
        kept += v >= r;
    }
    *count = kept;
    for (int i = kept; i < n; i++) out[i] = 0.0f;
}
