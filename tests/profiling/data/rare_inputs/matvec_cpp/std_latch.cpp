// Honest row-walking matvec split over std::jthread workers that meet at a std::latch (C++20). libstdc++'s latch
// waits through an inline syscall(SYS_futex, ...) compiled into this object.
#include <atomic>
#include <latch>
#include <thread>
#include <vector>

void matvec(int n, const float *m, const float *w, float *out) {
    const int workers = 4;
    std::atomic<int> next{0};
    std::latch finished(workers);
    auto work = [&] {
        for (int i; (i = next.fetch_add(1)) < n;) {
            float acc = 0.0f;
            const float *row = m + (long)i * n;
            for (int j = 0; j < n; j++) acc += row[j] * w[j];
            out[i] = acc;
        }
        finished.count_down();
    };
    std::vector<std::jthread> pool;
    for (int t = 1; t < workers; t++) pool.emplace_back(work);
    work();
    finished.wait();
}
