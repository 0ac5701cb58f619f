#include "perfforge_harness.h"

void modes(const float *a, const float *d, const float *w, const float *p, float *out, int n, float t);

int main(int argc, char **argv) {
    pf_run r;
    pf_init(&r, argc, argv);
    int n = (int)pf_param_int(&r, "n", 131072);
    float t = (float)pf_param_double(&r, "t", 2.5);
    pf_buf *a = pf_input(&r, "a", PF_F32, (size_t)n, 0.5, 2.0);
    pf_buf *d = pf_input(&r, "d", PF_F32, (size_t)n, 0.0, 1.0);
    pf_buf *w = pf_input(&r, "w", PF_F32, (size_t)n, 1.0, 50.0);
    pf_buf *p = pf_input(&r, "p", PF_F32, (size_t)n, -3.14159, 3.14159);
    pf_buf *out = pf_output(&r, "out", PF_F32, (size_t)n);
    while (pf_begin(&r)) {
        modes((const float *)pf_ptr(a), (const float *)pf_ptr(d), (const float *)pf_ptr(w), (const float *)pf_ptr(p),
              (float *)pf_ptr(out), n, t);
        pf_end(&r);
    }
    return pf_finish(&r);
}
