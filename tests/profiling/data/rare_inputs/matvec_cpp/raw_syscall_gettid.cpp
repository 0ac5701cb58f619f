// The row-walking matvec, plus libc's syscall() with a number other than the futex's (gettid here; any other
// call the filter allows would read the same way): the import stays refused, the futex waits of C++20 aside.
#include <unistd.h>
#include <sys/syscall.h>

static volatile long last_thread;

void matvec(int n, const float *m, const float *w, float *out) {
    last_thread = syscall(SYS_gettid);
    for (int i = 0; i < n; i++) {
        float acc = 0.0f;
        for (int j = 0; j < n; j++) acc += m[(long)i * n + j] * w[j];
        out[i] = acc;
    }
}
