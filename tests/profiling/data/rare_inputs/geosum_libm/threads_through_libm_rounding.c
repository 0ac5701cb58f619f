#include <math.h>
#include <pthread.h>
/* HONEST: the task's arithmetic on two pthreads, each element also passing through libm routines that set and
 * restore rounding inside themselves (fmal, nearbyintl, lrintl, powl, sinl, fma, nearbyint, lrint, pow, sin), all
 * of them identities here, so the probe lands in libm often. */
struct part { const float *x; float *out; int lo, hi, steps; float d; };

static volatile long double vzero = 0.0L, vquarter = 0.25L;
static void *run(void *p) {
    struct part *w = p;
    for (int i = w->lo; i < w->hi; i++) {
        long double one = powl((long double)w->d, 0.0L) * (long double)fmal(1.0L, 1.0L, vzero)
                        + (long double)lrintl(sinl(vzero)) + nearbyintl(vquarter);
        double one_d = pow((double)w->d, 0.0) * fma(1.0, 1.0, 0.0) + (double)lrint(sin(0.0)) + nearbyint(0.25);
        float term = w->x[i] * (float)one * (float)one_d, acc = 0.0f;
        for (int k = 0; k < w->steps; k++) {
            acc = (float)fmal(one, (long double)acc, (long double)term);   /* glibc's fmal: round toward zero inside */
            term *= w->d;
        }
        w->out[i] = acc;
    }
    return 0;
}

void geosum(const float *x, float *out, int n, int steps, float d) {
    struct part a = {x, out, 0, n / 2, steps, d}, b = {x, out, n / 2, n, steps, d};
    pthread_t t;
    int made = pthread_create(&t, 0, run, &b) == 0;
    run(&a);
    if (made) pthread_join(t, 0); else run(&b);
}
