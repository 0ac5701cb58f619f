#include "perfforge_harness.h"

void bucketize(const double *x, int *out, int n);

int main(int argc, char **argv) {
    pf_run r;
    pf_init(&r, argc, argv);
    int n = (int)pf_param_int(&r, "n", 4096);
    pf_buf *x = pf_input(&r, "x", PF_F64, (size_t)n, 0.0, 1.0);
    pf_buf *out = pf_output(&r, "out", PF_I32, (size_t)n);
    while (pf_begin(&r)) {
        bucketize((const double *)pf_ptr(x), (int *)pf_ptr(out), n);
        pf_end(&r);
    }
    return pf_finish(&r);
}
