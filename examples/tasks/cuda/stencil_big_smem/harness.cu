#include "perfforge_harness.h"
void launch_stencil3(const float *x, float *y, int n);   /* defined in the editable source */

int main(int argc, char **argv) {
    pf_run r;
    pf_init(&r, argc, argv);
    int n = (int)pf_param_int(&r, "n", 1 << 20);
    pf_buf *x = pf_input(&r, "x", PF_F32, (size_t)n, -1.0, 1.0);
    pf_buf *y = pf_output(&r, "y", PF_F32, (size_t)n);
    while (pf_begin(&r)) {
        launch_stencil3((const float *)pf_ptr(x), (float *)pf_ptr(y), n);
        pf_end(&r);
    }
    return pf_finish(&r);
}
