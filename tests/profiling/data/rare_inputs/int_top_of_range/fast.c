/* the same in 32 bits without overflow: floor(x / 2) plus the low bit */
void halve_up(const int *x, int *out, int n) {
    for (int i = 0; i < n; i++) out[i] = (x[i] >> 1) + (x[i] & 1);
}
