void matvec(int n, const float *m, const float *w, float *out) {
    for (int i = 0; i < n; i++) out[i] = 0.0f;
    for (int j = 0; j < n; j++)
        for (int i = 0; i < n; i++)
            out[i] += m[(long)i * n + j] * w[j];
}
