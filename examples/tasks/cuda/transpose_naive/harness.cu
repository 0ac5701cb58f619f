#include "perfforge_harness.h"
void launch_transpose(const float *in, float *out, int n);   /* defined in the editable source */

int main(int argc, char **argv) {
    pf_run r;
    pf_init(&r, argc, argv);
    int n = (int)pf_param_int(&r, "n", 1024);
    pf_buf *in = pf_input(&r, "in", PF_F32, (size_t)n * n, -1.0, 1.0);
    pf_buf *out = pf_output(&r, "out", PF_F32, (size_t)n * n);
    while (pf_begin(&r)) {
        launch_transpose((const float *)pf_ptr(in), (float *)pf_ptr(out), n);
        pf_end(&r);
    }
    return pf_finish(&r);
}
