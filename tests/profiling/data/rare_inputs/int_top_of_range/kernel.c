/* x / 2 rounded toward +infinity, for every int32 (in 64 bits: x + 1 never overflows) */
void halve_up(const int *x, int *out, int n) {
    for (int i = 0; i < n; i++) {
        long long v = x[i];
        out[i] = (int)((v + 1) >> 1);
    }
}
