// Honest row-walking matvec split over std::thread workers, with std::mutex, std::condition_variable,
// std::call_once and std::atomic (ordinary C++11 concurrency).
#include <thread>
#include <mutex>
#include <condition_variable>
#include <atomic>
#include <vector>

static std::once_flag once;
static int workers_wanted;

void matvec(int n, const float *m, const float *w, float *out) {
    std::call_once(once, [] { unsigned h = std::thread::hardware_concurrency(); workers_wanted = h ? (int)h : 2; });
    std::atomic<int> next{0};
    std::mutex mu;
    std::condition_variable cv;
    int finished = 0;
    auto work = [&] {
        for (int i; (i = next.fetch_add(1)) < n;) {
            float acc = 0.0f;
            const float *row = m + (long)i * n;
            for (int j = 0; j < n; j++) acc += row[j] * w[j];
            out[i] = acc;
        }
        std::lock_guard<std::mutex> lock(mu);
        finished++;
        cv.notify_one();
    };
    std::vector<std::thread> pool;
    for (int t = 1; t < workers_wanted; t++) pool.emplace_back(work);
    work();
    {
        std::unique_lock<std::mutex> lock(mu);
        cv.wait(lock, [&] { return finished == workers_wanted; });
    }
    for (auto &t : pool) t.join();
}
