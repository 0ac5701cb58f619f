#include "perfforge_harness.h"
void row_sad(const int *a, const int *b, long long *out, int m, int n);
int main(int argc, char **argv) {
    pf_run r;
    pf_init(&r, argc, argv);
    int m = (int)pf_param_int(&r, "m", 256);
    int n = (int)pf_param_int(&r, "n", 2048);
    pf_buf *a = pf_input(&r, "a", PF_I32, (size_t)m * n, -1048576.0, 1048576.0);
    pf_buf *b = pf_input(&r, "b", PF_I32, (size_t)m * n, -1048576.0, 1048576.0);
    pf_buf *out = pf_output(&r, "out", PF_I64, (size_t)m);
    while (pf_begin(&r)) {
        row_sad((const int *)pf_ptr(a), (const int *)pf_ptr(b), (long long *)pf_ptr(out), m, n);
        pf_end(&r);
    }
    return pf_finish(&r);
}
