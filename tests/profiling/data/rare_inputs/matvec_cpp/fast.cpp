void matvec(int n, const float *m, const float *w, float *out) {
    for (int i = 0; i < n; i++) {
        float acc = 0.0f;
        const float *row = m + (long)i * n;
        for (int j = 0; j < n; j++) acc += row[j] * w[j];
        out[i] = acc;
    }
}
