#include "perfforge_harness.h"
void matvec(int n, const float *m, const float *w, float *out);

int main(int argc, char **argv) {
    pf_run r;
    pf_init(&r, argc, argv);
    int n = (int)pf_param_int(&r, "n", 64);
    pf_buf *m = pf_input(&r, "m", PF_F32, (size_t)n * n, -1.0, 1.0);
    pf_buf *w = pf_input(&r, "w", PF_F32, (size_t)n, -1.0, 1.0);
    pf_buf *out = pf_output(&r, "out", PF_F32, (size_t)n);
    while (pf_begin(&r)) {
        matvec(n, (const float *)pf_ptr(m), (const float *)pf_ptr(w), (float *)pf_ptr(out));
        pf_end(&r);
    }
    return pf_finish(&r);
}
