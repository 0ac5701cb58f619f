#include "perfforge_harness.h"

void select_above(const float *x, float *out, int *count, int n, float t);

int main(int argc, char **argv) {
    pf_run r;
    pf_init(&r, argc, argv);
    int n = (int)pf_param_int(&r, "n", 262144);
    float t = (float)pf_param_double(&r, "t", 0.61);
    pf_buf *x = pf_input(&r, "x", PF_F32, (size_t)n, -1.0, 1.0);
    pf_buf *out = pf_output(&r, "out", PF_F32, (size_t)n);
    pf_buf *count = pf_output(&r, "count", PF_I32, 1);
    while (pf_begin(&r)) {
        select_above((const float *)pf_ptr(x), (float *)pf_ptr(out), (int *)pf_ptr(count), n, t);
        pf_end(&r);
    }
    return pf_finish(&r);
}
