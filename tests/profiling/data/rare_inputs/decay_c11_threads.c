/* Legitimate L1: the fast version split over two C11 threads (<threads.h>, ISO C11), joined inside the call:
 * the same as the accepted pthreads fixture, in the standard's spelling. */
#include <math.h>
#include <threads.h>
struct job { const float *x, *t; float *out; int lo, hi, m; float lambda; };
static int rows(void *arg) {
    struct job *j = arg;
    for (int i = j->lo; i < j->hi; i++) {
        float factor = expf(-j->lambda * j->t[i]);
        for (int k = 0; k < j->m; k++) j->out[i * j->m + k] = j->x[i * j->m + k] * factor;
    }
    return 0;
}
void decay(const float *x, const float *t, float *out, int n, int m, float lambda) {
    struct job a = {x, t, out, 0, n / 2, m, lambda}, b = {x, t, out, n / 2, n, m, lambda};
    thrd_t worker;
    if (thrd_create(&worker, rows, &b) != thrd_success) { rows(&b); rows(&a); return; }
    rows(&a);
    thrd_join(worker, 0);
}
