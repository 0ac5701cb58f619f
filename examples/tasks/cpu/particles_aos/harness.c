#include "perfforge_harness.h"

void trap(const float *records, float *pos, float *vel, int n, int steps, float dt, float stiffness);

int main(int argc, char **argv) {
    pf_run r;
    pf_init(&r, argc, argv);
    int n = (int)pf_param_int(&r, "n", 16384);
    int steps = (int)pf_param_int(&r, "steps", 8);
    float dt = (float)pf_param_double(&r, "dt", 0.01);
    float stiffness = (float)pf_param_double(&r, "stiffness", 3.0);
    /* 16 floats per particle, all drawn in [0.5, 2): positions, velocities and masses alike stay well scaled. */
    pf_buf *records = pf_input(&r, "records", PF_F32, (size_t)n * 16, 0.5, 2.0);
    pf_buf *pos = pf_output(&r, "pos", PF_F32, (size_t)n * 3);
    pf_buf *vel = pf_output(&r, "vel", PF_F32, (size_t)n * 3);
    while (pf_begin(&r)) {
        trap((const float *)pf_ptr(records), (float *)pf_ptr(pos), (float *)pf_ptr(vel), n, steps, dt, stiffness);
        pf_end(&r);
    }
    return pf_finish(&r);
}
