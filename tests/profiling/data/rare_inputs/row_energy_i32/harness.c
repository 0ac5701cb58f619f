#include "perfforge_harness.h"
void sumsq(const int *x, long long *out, int m, int n);
int main(int argc, char **argv) {
    pf_run r;
    pf_init(&r, argc, argv);
    int m = (int)pf_param_int(&r, "m", 512);
    int n = (int)pf_param_int(&r, "n", 1024);
    pf_buf *x = pf_input(&r, "x", PF_I32, (size_t)m * n, -2048.0, 2048.0);
    pf_buf *out = pf_output(&r, "out", PF_I64, (size_t)m);
    while (pf_begin(&r)) {
        sumsq((const int *)pf_ptr(x), (long long *)pf_ptr(out), m, n);
        pf_end(&r);
    }
    return pf_finish(&r);
}
