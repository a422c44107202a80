// Tests of the DnsServer's TCP connection caps, process-wide and per source, shared by its
// threads: which connection is closed for a new one, and what is never idle.

#include <algorithm>
#include <catch2/catch.hpp>
#include <chrono>
#include <memory>
#include <thread>
#include <vector>

#include "common/dns/query_testing.h"
#include "common/limits/limits.h"
#include "common/server/dns_server.h"
#include "common/server/server_test_util.h"

namespace kdns::server::testing {
namespace {

// A DnsServer's options with `threads` threads and the TCP caps: `max` connections in all,
// `per_source` from one source.
DnsServer::Options CappedOptions(size_t threads, size_t max, size_t per_source) {
  DnsServer::Options options = LocalOptions(threads);
  options.tcp.max_connections = max;
  options.tcp.max_connections_per_source = per_source;
  return options;
}

// A handler that keeps the Responder of every query with ID 666 (never answered: the query
// stays outstanding until the server stops) and echoes the rest.
std::unique_ptr<QueryHandler> HoldingQuery666(const ThreadContext&) {
  return std::make_unique<FunctionHandler>(
      [held = std::make_shared<std::vector<Responder>>()](Request& request) {
        if (IdOf(request.query()) == 666) {
          held->push_back(request.TakeResponder());
        } else {
          (void)ReplyEcho(request);
        }
      });
}

// Waits (bounded) until the server's counter `field` reads `value`.
bool WaitStat(const DnsServer& server, uint64_t ServerStats::*field, uint64_t value) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (server.stats().*field != value) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::yield();
  }
  return true;
}

TEST_CASE("At the process-wide TCP cap the oldest idle connection is closed for a new one",
          "[server]") {
  // One thread: each thread evicts among its own connections.
  DnsServer server(CappedOptions(/*threads=*/1, /*max=*/2, /*per_source=*/2), EchoFactory());
  RequireStart(server);
  const uint64_t hits_before = limits::LimitHits(limits::Limit::kTcpConnections);
  TcpClient oldest(server.tcp_address());
  RequireEcho(oldest, 1);
  TcpClient newer(server.tcp_address());
  RequireEcho(newer, 2);
  RequireEcho(oldest, 3);  // now `newer` has been idle longest
  TcpClient newest(server.tcp_address());
  RequireEcho(newest, 4);  // served at the cap
  CHECK(newer.WaitClosed());
  RequireEcho(oldest, 5);
  REQUIRE(WaitStat(server, &ServerStats::tcp_open, 2));
  ServerStats s = RequireStopsClean(server);
  CHECK(s.tcp_accepted == 3);
  CHECK(s.tcp_rejected == 0);
  CHECK(s.tcp_evicted == 1);
  CHECK(limits::LimitHits(limits::Limit::kTcpConnections) - hits_before == 1);
}

TEST_CASE(
    "A TCP connection with a query outstanding is not idle: at the cap the same client's new "
    "one is refused",
    "[server]") {
  // Two threads: the cap is the process's, whichever thread accepts.
  DnsServer server(CappedOptions(/*threads=*/2, /*max=*/1, /*per_source=*/1), HoldingQuery666);
  RequireStart(server);
  TcpClient busy(server.tcp_address());
  REQUIRE(busy.Send(QuerySpec().Id(666).Bytes()));
  REQUIRE(WaitStat(server, &ServerStats::tcp_queries, 1));  // delivered: busy, not idle
  for (int i = 0; i < 4; ++i) {
    TcpClient refused(server.tcp_address());
    CHECK(refused.WaitClosed());  // accepted by the kernel, closed at once by the server
  }
  CHECK_FALSE(busy.closed());
  ServerStats s = RequireStopsClean(server);
  CHECK(s.tcp_accepted == 1);
  CHECK(s.tcp_rejected == 4);
  CHECK(s.tcp_evicted == 0);
}

TEST_CASE(
    "At the process-wide TCP cap a light client's new connection closes the oldest busy one "
    "of the client holding the most",
    "[server]") {
  // One thread: each thread evicts among its own connections.
  DnsServer server(CappedOptions(/*threads=*/1, /*max=*/4, /*per_source=*/4), HoldingQuery666);
  RequireStart(server);
  const auto heavy = loop::SocketAddress::Parse("127.0.0.2:0");
  const uint64_t cap_hits = limits::LimitHits(limits::Limit::kTcpConnections);
  const uint64_t evicted_busy = limits::LimitHits(limits::Limit::kTcpEvictedInFlight);
  std::vector<std::unique_ptr<TcpClient>> holders;
  for (uint64_t i = 1; i <= 4; ++i) {
    holders.push_back(std::make_unique<TcpClient>(server.tcp_address(), heavy));
    REQUIRE(holders.back()->Send(QuerySpec().Id(666).Bytes()));
    REQUIRE(WaitStat(server, &ServerStats::tcp_queries, i));  // in order: the first is oldest
  }
  TcpClient light(server.tcp_address());
  RequireEcho(light, 7);  // served at the cap
  CHECK(holders[0]->WaitClosed());
  for (size_t i = 1; i < holders.size(); ++i) CHECK_FALSE(holders[i]->closed());
  // The heavy client cannot take its slot back: it holds three, the light one one.
  TcpClient again(server.tcp_address(), heavy);
  CHECK(again.WaitClosed());
  RequireEcho(light, 8);
  ServerStats s = RequireStopsClean(server);
  CHECK(s.tcp_evicted == 1);
  CHECK(s.tcp_rejected == 1);
  CHECK(limits::LimitHits(limits::Limit::kTcpConnections) - cap_hits == 2);
  CHECK(limits::LimitHits(limits::Limit::kTcpEvictedInFlight) - evicted_busy == 1);
}

TEST_CASE(
    "At the per-source TCP cap that source's oldest idle connection is closed, not "
    "another client's",
    "[server]") {
  DnsServer server(CappedOptions(/*threads=*/1, /*max=*/10, /*per_source=*/2), EchoFactory());
  RequireStart(server);
  const auto other_source = loop::SocketAddress::Parse("127.0.0.2:0");
  const uint64_t hits_before = limits::LimitHits(limits::Limit::kTcpConnectionsPerSource);
  TcpClient victim(server.tcp_address());  // 127.0.0.1, older than all the others
  RequireEcho(victim, 1);
  TcpClient first(server.tcp_address(), other_source);
  RequireEcho(first, 2);
  TcpClient second(server.tcp_address(), other_source);
  RequireEcho(second, 3);
  TcpClient third(server.tcp_address(), other_source);
  RequireEcho(third, 4);
  CHECK(first.WaitClosed());
  CHECK_FALSE(second.closed());
  RequireEcho(victim, 5);  // still open and served
  RequireStopsClean(server);
  CHECK(server.stats().tcp_evicted == 1);
  CHECK(limits::LimitHits(limits::Limit::kTcpConnectionsPerSource) - hits_before == 1);
}

}  // namespace
}  // namespace kdns::server::testing
