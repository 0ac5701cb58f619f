#include "perfforge_harness.h"
void launch_matmul(const float *a, const float *b, float *c, int n);   /* defined in the editable source */

int main(int argc, char **argv) {
    pf_run r;
    pf_init(&r, argc, argv);
    int n = (int)pf_param_int(&r, "n", 512);
    if (n % 64 != 0) pf_fail(2, "n must be a multiple of 64 (got %s)%s", pf_param(&r, "n"), "");
    pf_buf *a = pf_input(&r, "a", PF_F32, (size_t)n * n, -1.0, 1.0);
    pf_buf *b = pf_input(&r, "b", PF_F32, (size_t)n * n, -1.0, 1.0);
    pf_buf *c = pf_output(&r, "c", PF_F32, (size_t)n * n);
    while (pf_begin(&r)) {
        launch_matmul((const float *)pf_ptr(a), (const float *)pf_ptr(b), (float *)pf_ptr(c), n);
        pf_end(&r);
    }
    return pf_finish(&r);
}
