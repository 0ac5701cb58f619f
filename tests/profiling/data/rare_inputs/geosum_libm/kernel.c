/* Response of n first-order filters to an impulse of size x[i], summed over `steps` steps: out[i] = sum_k x[i] d^k.
 * The late terms fall below FLT_MIN (subnormal) before they vanish. */
void geosum(const float *x, float *out, int n, int steps, float d) {
    for (int i = 0; i < n; i++) {
        float term = x[i], acc = 0.0f;
        for (int k = 0; k < steps; k++) {
            acc += term;
            term *= d;
        }
        out[i] = acc;
    }
}
