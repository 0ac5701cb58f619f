// A stand-in for Google Benchmark's header, for the recipes whose programs are Google Benchmark programs (labels.toml):
// coffeebeforearch-misc (CoffeeBeforeArch/misc_code: baseMod, srMod, ArrayOfStructs_Bench, ... registered with
// DenseRange, ArgPair, Apply, timed through KeepRunning or a range-for) and art-of-efficient-programs (Fedor Pikus's
// book programs: BM_branched, BM_read_list, ... registered with BENCHMARK, BENCHMARK_TEMPLATE1, Arg, RangeMultiplier,
// ThreadRange, UseRealTime; they call SetLabel and read thread_index). perfforge's own shim (shims/benchmark) offers
// none of these. A recipe's prepare copies this file to benchmark/benchmark.h beside the program (and makes the
// include a quoted one, or registers the entry's function where the program has its registration commented out), so
// that the program's unit compiles alone, without -I (gcc records no -I for perfforge's vectoriser report). Threads
// are not started (thread_index is 0). Like Google Benchmark's header it brings in <map>, <set>, <string> and
// <vector> (Pikus's Chapter12/02_index_tree.C uses std::set without including it), and its DoNotOptimize uses
// Google's constraint for gcc ("+m,r": "+r,m" is impossible for gcc -O3 on some operands of Pikus's programs).
//
//     prog NAME [iterations = PERFFORGE_BENCH_ITERATIONS or 1] [arg ...]
//
// runs the benchmark function NAME (the name it was registered under, without template arguments) `iterations`
// times with the given arguments (s.range(0), s.range(1), ...), or, without arguments, once per argument set the
// program registers. Nothing is timed or reported: perfforge's application mode measures the program from outside.
#pragma once

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <set>
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
  State(std::vector<int64_t> args, int64_t iterations) : args_(std::move(args)), iterations_(iterations) {}

  struct Iterator {
    int64_t left;
    bool operator!=(const Iterator& other) const { return left != other.left; }
    void operator++() { --left; }
    int operator*() const { return 0; }
  };
  Iterator begin() { return Iterator{iterations_}; }
  Iterator end() { return Iterator{0}; }
  bool KeepRunning() { return done_++ < iterations_; }

  int64_t range(std::size_t index = 0) const { return index < args_.size() ? args_[index] : 0; }
  int64_t iterations() const { return iterations_; }
  void SetBytesProcessed(int64_t) {}
  void SetItemsProcessed(int64_t) {}
  void PauseTiming() {}
  void SetLabel(const char*) {}
  int thread_index = 0;
  int threads = 1;
  void ResumeTiming() {}

 private:
  std::vector<int64_t> args_;
  int64_t iterations_;
  int64_t done_ = 0;
};

template <class T>
inline void DoNotOptimize(T& value) {
  asm volatile("" : "+m,r"(value) : : "memory");
}

template <class T>
inline void DoNotOptimize(const T& value) {
  asm volatile("" : : "r,m"(value) : "memory");
}

inline void ClobberMemory() { asm volatile("" : : : "memory"); }

namespace internal {

class Benchmark {
 public:
  Benchmark(std::string name, void (*function)(State&)) : name_(std::move(name)), function_(function) {}
  Benchmark* Unit(TimeUnit) { return this; }
  Benchmark* UseRealTime() { return this; }
  Benchmark* RangeMultiplier(int) { return this; }
  Benchmark* ThreadRange(int64_t, int64_t) { return this; }
  Benchmark* Threads(int) { return this; }
  Benchmark* Iterations(int64_t) { return this; }
  Benchmark* Arg(int64_t value) { return Args({value}); }
  Benchmark* ArgPair(int64_t first, int64_t second) { return Args({first, second}); }
  Benchmark* Args(const std::vector<int64_t>& values) {
    sets_.push_back(values);
    return this;
  }
  Benchmark* DenseRange(int64_t first, int64_t last, int64_t step = 1) {
    for (int64_t value = first; value <= last; value += step) Arg(value);
    return this;
  }
  Benchmark* Range(int64_t first, int64_t last) {
    for (int64_t value = first; value < last; value *= 8) Arg(value);
    return Arg(last);
  }
  Benchmark* Apply(void (*custom)(Benchmark*)) {
    custom(this);
    return this;
  }

  const std::string& name() const { return name_; }
  void Run(const std::vector<int64_t>& given, int64_t iterations) const {
    std::vector<std::vector<int64_t>> sets = sets_.empty() ? std::vector<std::vector<int64_t>>{{}} : sets_;
    if (!given.empty()) sets = {given};
    for (const auto& args : sets) {
      State state(args, iterations);
      function_(state);
      std::printf("%s", name_.c_str());
      for (int64_t value : args) std::printf("/%lld", static_cast<long long>(value));
      std::printf(": %lld iteration(s)\n", static_cast<long long>(iterations));
    }
  }

 private:
  std::string name_;
  void (*function_)(State&);
  std::vector<std::vector<int64_t>> sets_;
};

inline std::vector<Benchmark*>& Registry() {
  static std::vector<Benchmark*> benchmarks;
  return benchmarks;
}

inline Benchmark* Register(const char* name, void (*function)(State&)) {
  Registry().push_back(new Benchmark(name, function));
  return Registry().back();
}

inline int Main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s NAME [iterations] [arg ...]; benchmarks:", argv[0]);
    for (const Benchmark* b : Registry()) std::fprintf(stderr, " %s", b->name().c_str());
    std::fprintf(stderr, "\n");
    return 2;
  }
  int64_t iterations = argc > 2 ? std::strtoll(argv[2], nullptr, 10) : PERFFORGE_BENCH_ITERATIONS;
  std::vector<int64_t> args;
  for (int i = 3; i < argc; i++) args.push_back(std::strtoll(argv[i], nullptr, 10));
  for (const Benchmark* b : Registry()) {
    if (b->name() == argv[1]) {
      b->Run(args, iterations);
      return 0;
    }
  }
  std::fprintf(stderr, "no benchmark named %s\n", argv[1]);
  return 2;
}

}  // namespace internal
}  // namespace benchmark

#define PERFFORGE_GB_CONCAT2(a, b) a##b
#define PERFFORGE_GB_CONCAT(a, b) PERFFORGE_GB_CONCAT2(a, b)
#define BENCHMARK(function)                                                                  \
  static ::benchmark::internal::Benchmark* PERFFORGE_GB_CONCAT(perfforge_gb_, __LINE__) = \
      ::benchmark::internal::Register(#function, function)
#define BENCHMARK_TEMPLATE1(function, type)                                                  \
  static ::benchmark::internal::Benchmark* PERFFORGE_GB_CONCAT(perfforge_gb_, __LINE__) = \
      ::benchmark::internal::Register(#function, function<type>)
#define BENCHMARK_TEMPLATE(function, type) BENCHMARK_TEMPLATE1(function, type)
#define BENCHMARK_MAIN() \
  int main(int argc, char** argv) { return ::benchmark::internal::Main(argc, argv); }
