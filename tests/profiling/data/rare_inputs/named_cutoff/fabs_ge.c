/* "Branch-free": one test on |z|, written >= by mistake: differs from the original only at z = +-2.0 exactly. */
#include <math.h>
#define CUTOFF 2
void flag_outliers(const float *z, int *flags, int n) {
    for (int i = 0; i < n; i++) flags[i] = fabsf(z[i]) >= CUTOFF;
}
