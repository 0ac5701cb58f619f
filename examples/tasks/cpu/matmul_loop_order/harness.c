#include "perfforge_harness.h"

void matmul(const float *a, const float *b, float *c, int n);

int main(int argc, char **argv) {
    pf_run r;
    pf_init(&r, argc, argv);
    int n = (int)pf_param_int(&r, "n", 256);
    pf_buf *a = pf_input(&r, "a", PF_F32, (size_t)n * n, -1.0, 1.0);
    pf_buf *b = pf_input(&r, "b", PF_F32, (size_t)n * n, -1.0, 1.0);
    pf_buf *c = pf_output(&r, "c", PF_F32, (size_t)n * n);
    while (pf_begin(&r)) {
        matmul((const float *)pf_ptr(a), (const float *)pf_ptr(b), (float *)pf_ptr(c), n);
        pf_end(&r);
    }
    return pf_finish(&r);
}
