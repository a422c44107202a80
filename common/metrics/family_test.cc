#include "common/metrics/family.h"

#include <catch2/catch.hpp>
#include <memory>
#include <string>
#include <thread>
#include <vector>

namespace kdns::metrics {
namespace {

CounterFamily MakeFamily() {
  return CounterFamily({"type", "rcode"}, [] { return std::make_unique<Counter>(); });
}

std::vector<std::string> SeriesOrder(const CounterFamily& family) {
  std::vector<std::string> order;
  family.ForEach([&order](const std::vector<std::string>& values, const Counter& counter) {
    order.push_back(values[0] + "/" + values[1] + "=" + std::to_string(counter.Value()));
  });
  return order;
}

TEST_CASE("the same label values give the same series", "[metrics]") {
  CounterFamily family = MakeFamily();
  Counter& first = family.WithLabels({"A", "NOERROR"});
  first.Inc();
  Counter& again = family.WithLabelValues({"A", "NOERROR"});
  CHECK(&first == &again);
  CHECK(again.Value() == 1);
  CHECK(&family.WithLabels({"AAAA", "NOERROR"}) != &first);
}

TEST_CASE("series are visited sorted by label values, not by creation", "[metrics]") {
  CounterFamily family = MakeFamily();
  family.WithLabels({"SRV", "NXDOMAIN"}).Inc(3);
  family.WithLabels({"A", "SERVFAIL"}).Inc(2);
  family.WithLabels({"A", "NOERROR"}).Inc(1);
  CHECK(SeriesOrder(family) ==
        std::vector<std::string>{"A/NOERROR=1", "A/SERVFAIL=2", "SRV/NXDOMAIN=3"});
}

TEST_CASE("references stay valid while other series are added", "[metrics]") {
  CounterFamily family = MakeFamily();
  Counter& kept = family.WithLabels({"A", "NOERROR"});
  for (int i = 0; i < 100; ++i) family.WithLabelValues({"T" + std::to_string(i), "NOERROR"});
  kept.Inc();
  CHECK(family.WithLabels({"A", "NOERROR"}).Value() == 1);
}

TEST_CASE("threads creating and incrementing series concurrently count exactly", "[metrics]") {
  CounterFamily family = MakeFamily();
  std::vector<std::thread> threads;
  threads.reserve(4);
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&family, t] {
      for (int i = 0; i < 1000; ++i) {
        family.WithLabelValues({std::to_string(i % 10), t % 2 == 0 ? "even" : "odd"}).Inc();
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  CHECK(family.WithLabels({"0", "even"}).Value() == 200);
  CHECK(family.WithLabels({"9", "odd"}).Value() == 200);
  CHECK(SeriesOrder(family).size() == 20);
}

}  // namespace
}  // namespace kdns::metrics
