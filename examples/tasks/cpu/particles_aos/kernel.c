#include <stdlib.h>
#include <string.h>

/* One particle as the rest of the (imagined) application stores it: 16 floats, one 64-byte cache line. */
typedef struct {
    float x, y, z;          /* position */
    float vx, vy, vz;       /* velocity */
    float mass;
    float charge, radius, temperature;
    float spin[3];
    float id, flags, age;
} particle;

/* Moves n particles `steps` explicit steps in a harmonic trap of the given stiffness; writes the final positions
 * and velocities (n x 3 each). records holds the particles as n consecutive 16-float records. */
void trap(const float *records, float *pos, float *vel, int n, int steps, float dt, float stiffness) {
    particle *state = malloc((size_t)n * sizeof(particle));
    memcpy(state, records, (size_t)n * sizeof(particle));
    for (int s = 0; s < steps; s++) {
        for (int i = 0; i < n; i++) {
            float k = stiffness / state[i].mass;
            state[i].vx -= dt * k * state[i].x;
            state[i].vy -= dt * k * state[i].y;
            state[i].vz -= dt * k * state[i].z;
            state[i].x += dt * state[i].vx;
            state[i].y += dt * state[i].vy;
            state[i].z += dt * state[i].vz;
        }
    }
    for (int i = 0; i < n; i++) {
        pos[3 * i] = state[i].x;
        pos[3 * i + 1] = state[i].y;
        pos[3 * i + 2] = state[i].z;
        vel[3 * i] = state[i].vx;
        vel[3 * i + 1] = state[i].vy;
        vel[3 * i + 2] = state[i].vz;
    }
    free(state);
}
