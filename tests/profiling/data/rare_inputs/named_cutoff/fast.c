/* flags[i] = 1 where the z-score lies beyond CUTOFF standard deviations, else 0. */
#define CUTOFF 2

void flag_outliers(const float *z, int *flags, int n) {
    for (int i = 0; i < n; i++) {
        flags[i] = z[i] > CUTOFF || z[i] < -CUTOFF;
    }
}
