#include "perfforge_harness.h"

void argmax_first(const float *x, int *best, int n);

int main(int argc, char **argv) {
    pf_run r;
    pf_init(&r, argc, argv);
    int n = (int)pf_param_int(&r, "n", 262144);
    pf_buf *x_buf = pf_input(&r, "x", PF_F32, (size_t)(n), -1.0, 1.0);
    pf_buf *best_buf = pf_output(&r, "best", PF_I32, (size_t)(1));
    while (pf_begin(&r)) {
        argmax_first((const float *)pf_ptr(x_buf), (int *)pf_ptr(best_buf), n);
        pf_end(&r);
    }
    return pf_finish(&r);
}
