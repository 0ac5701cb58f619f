#include "perfforge_harness.h"

void advance(float *x, float *y, float *z, float *vx, float *vy, float *vz, const float *q, const float *m, int n,
             int steps, float dt);

int main(int argc, char **argv) {
    pf_run r;
    pf_init(&r, argc, argv);
    int n = (int)pf_param_int(&r, "n", 512);
    int steps = (int)pf_param_int(&r, "steps", 64);
    float dt = (float)pf_param_double(&r, "dt", 0.01);
    pf_buf *x = pf_inout(&r, "x", PF_F32, (size_t)n, -1.0, 1.0);
    pf_buf *y = pf_inout(&r, "y", PF_F32, (size_t)n, -1.0, 1.0);
    pf_buf *z = pf_inout(&r, "z", PF_F32, (size_t)n, -1.0, 1.0);
    pf_buf *vx = pf_inout(&r, "vx", PF_F32, (size_t)n, -1.0, 1.0);
    pf_buf *vy = pf_inout(&r, "vy", PF_F32, (size_t)n, -1.0, 1.0);
    pf_buf *vz = pf_inout(&r, "vz", PF_F32, (size_t)n, -1.0, 1.0);
    pf_buf *q = pf_input(&r, "q", PF_F32, (size_t)n, -2.0, 2.0);
    pf_buf *m = pf_input(&r, "m", PF_F32, (size_t)n, 0.5, 4.0);
    while (pf_begin(&r)) {
        advance((float *)pf_ptr(x), (float *)pf_ptr(y), (float *)pf_ptr(z), (float *)pf_ptr(vx), (float *)pf_ptr(vy),
                (float *)pf_ptr(vz), (const float *)pf_ptr(q), (const float *)pf_ptr(m), n, steps, dt);
        pf_end(&r);
    }
    return pf_finish(&r);
}
