// How much the per-thread sharding of metrics::Counter buys over one shared atomic: ns per
// increment on 1 thread and with 2 threads hammering the same counter. Prints figures and
// ratios; it asserts nothing (a benchmark is not a test).
//
//   build/bin/metrics_bench [increments_per_thread]
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <latch>
#include <thread>
#include <vector>

#include "common/metrics/counter.h"
#include "common/metrics/histogram.h"

namespace {

// Runs `body(iterations)` on `threads` threads started together; returns ns per operation
// as seen by one thread (wall time / iterations).
template <typename Body>
double NsPerOp(int threads, uint64_t iterations, Body body) {
  std::latch start(threads + 1);
  std::vector<std::thread> workers;
  workers.reserve(threads);
  for (int t = 0; t < threads; ++t) {
    workers.emplace_back([&] {
      start.arrive_and_wait();
      body(iterations);
    });
  }
  const auto begin = std::chrono::steady_clock::now();
  start.arrive_and_wait();
  for (std::thread& worker : workers) worker.join();
  const auto elapsed = std::chrono::steady_clock::now() - begin;
  return std::chrono::duration<double, std::nano>(elapsed).count() / iterations;
}

}  // namespace

int main(int argc, char** argv) {
  const uint64_t iterations = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 20'000'000;
  std::printf("metrics_bench: %llu increments per thread, %u hardware threads\n",
              static_cast<unsigned long long>(iterations), std::thread::hardware_concurrency());

  std::printf("%-34s %10s %10s\n", "", "1 thread", "2 threads");
  double counter_ns[2];
  double atomic_ns[2];
  for (int threads : {1, 2}) {
    kdns::metrics::Counter counter;
    counter_ns[threads - 1] = NsPerOp(threads, iterations, [&counter](uint64_t n) {
      for (uint64_t i = 0; i < n; ++i) counter.Inc();
    });
    if (counter.Value() != threads * iterations) std::printf("counter lost increments!\n");

    alignas(64) std::atomic<uint64_t> shared{0};
    atomic_ns[threads - 1] = NsPerOp(threads, iterations, [&shared](uint64_t n) {
      for (uint64_t i = 0; i < n; ++i) shared.fetch_add(1, std::memory_order_relaxed);
    });
  }
  std::printf("%-34s %10.2f %10.2f  ns/inc\n", "metrics::Counter::Inc", counter_ns[0],
              counter_ns[1]);
  std::printf("%-34s %10.2f %10.2f  ns/inc\n", "shared std::atomic fetch_add", atomic_ns[0],
              atomic_ns[1]);
  std::printf("%-34s %10.2f %10.2f  (above 1: Counter is faster)\n", "ratio atomic / Counter",
              atomic_ns[0] / counter_ns[0], atomic_ns[1] / counter_ns[1]);

  kdns::metrics::Histogram histogram(kdns::metrics::ExponentialBuckets(0.25, 2, 16));
  const double observe_ns = NsPerOp(1, iterations / 4, [&histogram](uint64_t n) {
    for (uint64_t i = 0; i < n; ++i) histogram.Observe(static_cast<double>(i & 1023));
  });
  std::printf("%-34s %10.2f %10s  ns/observe\n", "metrics::Histogram::Observe (16 b)", observe_ns,
              "-");
  return 0;
}
