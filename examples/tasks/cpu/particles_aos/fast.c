#include <stdlib.h>

/* One step over the structure-of-arrays copy; restrict tells the compiler the seven arrays do not overlap. */
static void step(float *restrict x, float *restrict y, float *restrict z, float *restrict vx, float *restrict vy,
                 float *restrict vz, const float *restrict mass, int n, float dt, float stiffness) {
    for (int i = 0; i < n; i++) {
        float k = stiffness / mass[i];
        vx[i] -= dt * k * x[i];
        vy[i] -= dt * k * y[i];
        vz[i] -= dt * k * z[i];
        x[i] += dt * vx[i];
        y[i] += dt * vy[i];
        z[i] += dt * vz[i];
    }
}

/* The same motion with the seven fields the steps touch copied once into separate arrays (structure of arrays):
 * each step streams 28 bytes per particle instead of a 64-byte record, and the step loop vectorises. */
void trap(const float *records, float *pos, float *vel, int n, int steps, float dt, float stiffness) {
    enum { X, Y, Z, VX, VY, VZ, MASS, FIELDS = 16 };
    float *soa = malloc((size_t)n * 7 * sizeof(float));
    float *x = soa, *y = soa + n, *z = soa + 2 * (size_t)n, *vx = soa + 3 * (size_t)n, *vy = soa + 4 * (size_t)n;
    float *vz = soa + 5 * (size_t)n, *mass = soa + 6 * (size_t)n;
    for (int i = 0; i < n; i++) {
        const float *r = records + (size_t)i * FIELDS;
        x[i] = r[X]; y[i] = r[Y]; z[i] = r[Z];
        vx[i] = r[VX]; vy[i] = r[VY]; vz[i] = r[VZ];
        mass[i] = r[MASS];
    }
    for (int s = 0; s < steps; s++) {
        step(x, y, z, vx, vy, vz, mass, n, dt, stiffness);
    }
    for (int i = 0; i < n; i++) {
        pos[3 * i] = x[i]; pos[3 * i + 1] = y[i]; pos[3 * i + 2] = z[i];
        vel[3 * i] = vx[i]; vel[3 * i + 1] = vy[i]; vel[3 * i + 2] = vz[i];
    }
    free(soa);
}
