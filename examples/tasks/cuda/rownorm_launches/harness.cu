#include "perfforge_harness.h"
void launch_rownorm(const float *x, float *y, float *norms, int rows, int cols);   /* the editable source */

int main(int argc, char **argv) {
    pf_run r;
    pf_init(&r, argc, argv);
    int rows = (int)pf_param_int(&r, "rows", 256);
    int cols = (int)pf_param_int(&r, "cols", 16384);
    pf_buf *x = pf_input(&r, "x", PF_F32, (size_t)rows * cols, -1.0, 1.0);
    pf_buf *y = pf_output(&r, "y", PF_F32, (size_t)rows * cols);
    pf_buf *norms = pf_output(&r, "norms", PF_F32, (size_t)rows);
    while (pf_begin(&r)) {
        launch_rownorm((const float *)pf_ptr(x), (float *)pf_ptr(y), (float *)pf_ptr(norms), rows, cols);
        pf_end(&r);
    }
    return pf_finish(&r);
}
