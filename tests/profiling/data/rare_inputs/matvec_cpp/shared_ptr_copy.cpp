// Honest row-walking matvec whose weight copy is held by a std::shared_ptr (copied once)
#include <memory>
#include <vector>
void matvec(int n, const float *m, const float *w, float *out) {
    auto weights = std::make_shared<std::vector<float>>(w, w + n);
    std::shared_ptr<std::vector<float>> view = weights;  // a copy: the reference count is atomic
    const float *wv = view->data();
    for (int i = 0; i < n; i++) {
        float acc = 0.0f;
        const float *row = m + (long)i * n;
        for (int j = 0; j < n; j++) acc += row[j] * wv[j];
        out[i] = acc;
    }
}
