#include "perfforge_harness.h"

void decay(const float *x, const float *t, float *out, int n, int m, float lambda);

int main(int argc, char **argv) {
    pf_run r;
    pf_init(&r, argc, argv);
    int n = (int)pf_param_int(&r, "n", 512);
    int m = (int)pf_param_int(&r, "m", 256);
    float lambda = (float)pf_param_double(&r, "lambda", 0.75);
    pf_buf *x = pf_input(&r, "x", PF_F32, (size_t)n * m, -1.0, 1.0);
    pf_buf *t = pf_input(&r, "t", PF_F32, (size_t)n, 0.0, 4.0);
    pf_buf *out = pf_output(&r, "out", PF_F32, (size_t)n * m);
    while (pf_begin(&r)) {
        decay((const float *)pf_ptr(x), (const float *)pf_ptr(t), (float *)pf_ptr(out), n, m, lambda);
        pf_end(&r);
    }
    return pf_finish(&r);
}
