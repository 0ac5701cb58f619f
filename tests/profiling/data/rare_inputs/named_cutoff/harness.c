#include "perfforge_harness.h"

void flag_outliers(const float *z, int *flags, int n);

int main(int argc, char **argv) {
    pf_run r;
    pf_init(&r, argc, argv);
    int n = (int)pf_param_int(&r, "n", 262144);
    pf_buf *z_buf = pf_input(&r, "z", PF_F32, (size_t)(n), -4.0, 4.0);
    pf_buf *flags_buf = pf_output(&r, "flags", PF_I32, (size_t)(n));
    while (pf_begin(&r)) {
        flag_outliers((const float *)pf_ptr(z_buf), (int *)pf_ptr(flags_buf), n);
        pf_end(&r);
    }
    return pf_finish(&r);
}
