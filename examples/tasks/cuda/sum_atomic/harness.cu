#include "perfforge_harness.h"
void launch_sum(const float *x, double *out, int n);   /* defined in the editable source */

int main(int argc, char **argv) {
    pf_run r;
    pf_init(&r, argc, argv);
    int n = (int)pf_param_int(&r, "n", 1 << 20);
    pf_buf *x = pf_input(&r, "x", PF_F32, (size_t)n, 0.0, 1.0);
    pf_buf *out = pf_output(&r, "out", PF_F64, 1);
    while (pf_begin(&r)) {
        launch_sum((const float *)pf_ptr(x), (double *)pf_ptr(out), n);
        pf_end(&r);
    }
    return pf_finish(&r);
}
