/* The n values of x in ascending order (insertion sort). */
void sort_copy(const float *x, float *out, int n) {
    for (int i = 0; i < n; i++) {
        float v = x[i];
        int j = i;
        while (j > 0 && out[j - 1] > v) { out[j] = out[j - 1]; j--; }
        out[j] = v;
    }
}
