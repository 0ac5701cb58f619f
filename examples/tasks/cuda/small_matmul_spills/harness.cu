#include "perfforge_harness.h"
void launch_square8(const float *a, float *c, int n);   /* defined in the editable source */

int main(int argc, char **argv) {
    pf_run r;
    pf_init(&r, argc, argv);
    int n = (int)pf_param_int(&r, "n", 1 << 16);
    pf_buf *a = pf_input(&r, "a", PF_F32, (size_t)64 * n, -1.0, 1.0);
    pf_buf *c = pf_output(&r, "c", PF_F32, (size_t)64 * n);
    while (pf_begin(&r)) {
        launch_square8((const float *)pf_ptr(a), (float *)pf_ptr(c), n);
        pf_end(&r);
    }
    return pf_finish(&r);
}
