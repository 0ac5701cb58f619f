#include "perfforge_harness.h"
void launch_parity_maps(const float *x, float *y, int n);   /* defined in the editable source */

int main(int argc, char **argv) {
    pf_run r;
    pf_init(&r, argc, argv);
    int n = (int)pf_param_int(&r, "n", 1 << 20);
    if (n % 64 != 0) pf_fail(2, "n must be a multiple of 64 (got %s)%s", pf_param(&r, "n"), "");
    pf_buf *x = pf_input(&r, "x", PF_F32, (size_t)n, 0.05, 0.95);
    pf_buf *y = pf_output(&r, "y", PF_F32, (size_t)n);
    while (pf_begin(&r)) {
        launch_parity_maps((const float *)pf_ptr(x), (float *)pf_ptr(y), n);
        pf_end(&r);
    }
    return pf_finish(&r);
}
