// Honest row-walking matvec: the second half of the rows on std::async
#include <future>
static void rows(int n, const float *m, const float *w, float *out, int lo, int hi) {
    for (int i = lo; i < hi; i++) {
        float acc = 0.0f;
        const float *row = m + (long)i * n;
        for (int j = 0; j < n; j++) acc += row[j] * w[j];
        out[i] = acc;
    }
}
void matvec(int n, const float *m, const float *w, float *out) {
    auto half = std::async(std::launch::async, rows, n, m, w, out, n / 2, n);
    rows(n, m, w, out, 0, n / 2);
    half.get();
}
