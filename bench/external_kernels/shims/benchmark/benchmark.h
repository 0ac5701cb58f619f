// A stand-in for Google Benchmark's header (the subset perf-ninja's labs use), so that a lab's own bench.cpp
// builds without the library and runs each benchmark a fixed, small number of times: under callgrind a program
// runs 50-100x slower, and Google Benchmark would repeat the kernel until half a second of *simulated* time had
// passed. Iterations per benchmark: the environment's PERFFORGE_BENCH_ITERATIONS, else the macro of that name
// (-DPERFFORGE_BENCH_ITERATIONS=n at build time: perfforge's sandbox scrubs the environment), else 1; a lab's own
// ->Iterations(n) is ignored. --benchmark_filter=REGEX runs only the benchmarks whose name matches, as the real
// library does. Nothing is timed or reported: perfforge's application mode measures the program from outside.
#pragma once

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <regex>
#include <string>
#include <utility>
#include <vector>

#ifndef PERFFORGE_BENCH_ITERATIONS
#define PERFFORGE_BENCH_ITERATIONS 1
#endif

namespace benchmark {

enum TimeUnit { kNanosecond, kMicrosecond, kMillisecond, kSecond };

class State {
 public:
  State(std::string name, std::vector<int64_t> args, int64_t iterations)
      : name_(std::move(name)), args_(std::move(args)), iterations_(iterations) {}

  struct Iterator {
    int64_t left;
    bool operator!=(const Iterator& other) const { return left != other.left; }
    void operator++() { --left; }
    int operator*() const { return 0; }
  };
  Iterator begin() { return Iterator{skipped_ ? 0 : iterations_}; }
  Iterator end() { return Iterator{0}; }

  int64_t range(std::size_t index = 0) const { return index < args_.size() ? args_[index] : 0; }
  int64_t iterations() const { return iterations_; }
  std::string name() const { return name_; }
  void SkipWithError(const char* message) {
    skipped_ = true;
    std::fprintf(stderr, "benchmark %s skipped: %s\n", name_.c_str(), message);
  }
  bool error_occurred() const { return skipped_; }
  void SetBytesProcessed(int64_t) {}
  void SetItemsProcessed(int64_t) {}
  void PauseTiming() {}
  void ResumeTiming() {}

 private:
  std::string name_;
  std::vector<int64_t> args_;
  int64_t iterations_;
  bool skipped_ = false;
};

template <class T>
inline void DoNotOptimize(T& value) {
  asm volatile("" : "+m"(value) : : "memory");
}

template <class T>
inline void DoNotOptimize(const T& value) {
  asm volatile("" : : "m"(value) : "memory");
}

inline void ClobberMemory() { asm volatile("" : : : "memory"); }

namespace internal {

class Benchmark {
 public:
  Benchmark(std::string name, std::function<void(State&)> function)
      : name_(std::move(name)), function_(std::move(function)) {}
  Benchmark* Unit(TimeUnit) { return this; }
  Benchmark* UseRealTime() { return this; }
  Benchmark* Iterations(int64_t) { return this; }  // the fixed count of PERFFORGE_BENCH_ITERATIONS wins
  Benchmark* Name(const std::string& name) {
    name_ = name;
    return this;
  }
  Benchmark* Arg(int64_t value) {
    arg_sets_.push_back({value});
    return this;
  }
  Benchmark* Args(const std::vector<int64_t>& values) {
    arg_sets_.push_back(values);
    return this;
  }

  void Run(const std::regex* filter, int64_t iterations) const {
    std::vector<std::vector<int64_t>> sets = arg_sets_.empty() ? std::vector<std::vector<int64_t>>{{}} : arg_sets_;
    for (const auto& args : sets) {
      std::string name = name_;
      for (int64_t value : args) name += "/" + std::to_string(value);
      if (filter != nullptr && !std::regex_search(name, *filter)) continue;
      State state(name, args, iterations);
      function_(state);
      std::printf("%s: %lld iteration(s)\n", name.c_str(), static_cast<long long>(iterations));
    }
  }

 private:
  std::string name_;
  std::function<void(State&)> function_;
  std::vector<std::vector<int64_t>> arg_sets_;
};

inline std::vector<Benchmark*>& Registry() {
  static std::vector<Benchmark*> benchmarks;
  return benchmarks;
}

inline Benchmark* Register(const char* name, std::function<void(State&)> function) {
  Registry().push_back(new Benchmark(name, std::move(function)));
  return Registry().back();
}

inline std::string& Filter() {
  static std::string filter;
  return filter;
}

}  // namespace internal

inline void Initialize(int* argc, char** argv) {
  const std::string flag = "--benchmark_filter=";
  int kept = 1;
  for (int i = 1; i < *argc; ++i) {
    std::string arg = argv[i];
    if (arg.rfind(flag, 0) == 0) {
      internal::Filter() = arg.substr(flag.size());
    } else if (arg.rfind("--benchmark_", 0) != 0) {
      argv[kept++] = argv[i];
    }
  }
  *argc = kept;
}

inline bool ReportUnrecognizedArguments(int, char**) { return false; }

inline std::size_t RunSpecifiedBenchmarks() {
  const char* env = std::getenv("PERFFORGE_BENCH_ITERATIONS");
  int64_t iterations = env != nullptr ? std::atoll(env) : PERFFORGE_BENCH_ITERATIONS;
  if (iterations < 1) iterations = 1;
  std::regex filter(internal::Filter());
  const std::regex* use = internal::Filter().empty() ? nullptr : &filter;
  for (const internal::Benchmark* benchmark : internal::Registry()) benchmark->Run(use, iterations);
  return internal::Registry().size();
}

inline void Shutdown() {}

}  // namespace benchmark

#define PERFFORGE_BENCH_CONCAT2(a, b) a##b
#define PERFFORGE_BENCH_CONCAT(a, b) PERFFORGE_BENCH_CONCAT2(a, b)
#define BENCHMARK(function)                                                                        \
  static ::benchmark::internal::Benchmark* PERFFORGE_BENCH_CONCAT(perfforge_benchmark_, __LINE__) = \
      ::benchmark::internal::Register(#function, function)
#define BENCHMARK_CAPTURE(function, test_case, ...)                                                \
  static ::benchmark::internal::Benchmark* PERFFORGE_BENCH_CONCAT(perfforge_benchmark_, __LINE__) = \
      ::benchmark::internal::Register(#function "/" #test_case,                                    \
                                      [](::benchmark::State& st) { function(st, __VA_ARGS__); })
#define BENCHMARK_MAIN()                       \
  int main(int argc, char** argv) {            \
    ::benchmark::Initialize(&argc, argv);      \
    ::benchmark::RunSpecifiedBenchmarks();     \
    ::benchmark::Shutdown();                   \
    return 0;                                  \
  }                                            \
  int perfforge_benchmark_main_defined_
