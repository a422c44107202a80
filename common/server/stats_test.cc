#include "common/server/stats.h"

#include <catch2/catch.hpp>
#include <cstdint>
#include <memory>
#include <thread>

namespace kdns::server {
namespace {

TEST_CASE("ThreadStats reads back what its one writer counted", "[server]") {
  ThreadStats stats;
  ThreadStats::Increment(stats.udp_queries);
  ThreadStats::Increment(stats.udp_queries, 2);
  ThreadStats::Increment(stats.dropped_replies);
  ThreadStats::Set(stats.tcp_open, 7);
  ServerStats s = stats.Read();
  CHECK(s.udp_queries == 3);
  CHECK(s.dropped_replies == 1);
  CHECK(s.tcp_open == 7);
  CHECK(s.tcp_queries == 0);
}

TEST_CASE("ServerStats sums every counter", "[server]") {
  ServerStats a;
  a.udp_queries = 1;
  a.tcp_queries = 2;
  a.udp_replies = 3;
  a.tcp_replies = 4;
  a.unanswered = 5;
  a.dropped_replies = 6;
  a.udp_truncated = 7;
  a.udp_errors = 8;
  a.tcp_accepted = 9;
  a.tcp_rejected = 10;
  a.tcp_open = 11;
  ServerStats total;
  total += a;
  total += a;
  CHECK(total.udp_queries == 2);
  CHECK(total.tcp_queries == 4);
  CHECK(total.udp_replies == 6);
  CHECK(total.tcp_replies == 8);
  CHECK(total.unanswered == 10);
  CHECK(total.dropped_replies == 12);
  CHECK(total.udp_truncated == 14);
  CHECK(total.udp_errors == 16);
  CHECK(total.tcp_accepted == 18);
  CHECK(total.tcp_rejected == 20);
  CHECK(total.tcp_open == 22);
}

TEST_CASE("ThreadStats may be read while its writer thread counts", "[server]") {
  ThreadStats stats;
  std::thread writer([&] {
    for (int i = 0; i < 10000; ++i) ThreadStats::Increment(stats.udp_queries);
  });
  uint64_t last = 0;
  bool monotonic = true;
  for (int i = 0; i < 1000; ++i) {
    uint64_t now = stats.Read().udp_queries;
    monotonic = monotonic && now >= last;
    last = now;
  }
  writer.join();
  CHECK(monotonic);  // counters never go backwards
  CHECK(stats.Read().udp_queries == 10000);
}

TEST_CASE("The receiver's counter shares no cache line with the loop's or a neighbour's",
          "[server]") {
  constexpr uintptr_t kLine = metrics::kCacheLineBytes;
  auto line = [](const void* p) { return reinterpret_cast<uintptr_t>(p) / kLine; };
  // Separately allocated, as DnsServer's per-thread stats are.
  auto first = std::make_unique<ThreadStats>();
  auto second = std::make_unique<ThreadStats>();
  for (const ThreadStats* stats : {first.get(), second.get()}) {
    CHECK(reinterpret_cast<uintptr_t>(stats) % kLine == 0);
    CHECK(line(&stats->udp_fast_answers) != line(&stats->udp_queries));
    CHECK(line(&stats->udp_fast_answers) != line(&stats->udp_replies));
    CHECK(line(&stats->udp_fast_answers) != line(&stats->tcp_open));
  }
  CHECK(sizeof(ThreadStats) % kLine == 0);
}

}  // namespace
}  // namespace kdns::server
