#include "perfforge_harness.h"
void geosum(const float *x, float *out, int n, int steps, float d);
int main(int argc, char **argv) {
    pf_run r;
    pf_init(&r, argc, argv);
    int n = (int)pf_param_int(&r, "n", 16384);
    int steps = (int)pf_param_int(&r, "steps", 200);
    float d = (float)pf_param_double(&r, "d", 0.6);
    pf_buf *x = pf_input(&r, "x", PF_F32, (size_t)n, -1.0, 1.0);
    pf_buf *out = pf_output(&r, "out", PF_F32, (size_t)n);
    while (pf_begin(&r)) {
        geosum((const float *)pf_ptr(x), (float *)pf_ptr(out), n, steps, d);
        pf_end(&r);
    }
    return pf_finish(&r);
}
