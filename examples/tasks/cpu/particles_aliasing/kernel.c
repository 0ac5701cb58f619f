/* Advances n charged particles `steps` explicit steps in a uniform electric field with linear drag.
 * Positions and velocities are updated in place (structure-of-arrays). */
void advance(float *x, float *y, float *z, float *vx, float *vy, float *vz, const float *q, const float *m, int n,
             int steps, float dt) {
    const float ex = 0.3f, ey = -0.2f, ez = 0.1f, drag = 0.05f;
    for (int s = 0; s < steps; s++) {
        for (int i = 0; i < n; i++) {
            float qm = q[i] / m[i];
            vx[i] += dt * (qm * ex - drag * vx[i]);
            vy[i] += dt * (qm * ey - drag * vy[i]);
            vz[i] += dt * (qm * ez - drag * vz[i]);
            x[i] += dt * vx[i];
            y[i] += dt * vy[i];
            z[i] += dt * vz[i];
        }
    }
}
