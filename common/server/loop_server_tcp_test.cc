// Tests of the LoopServer's TCP connections: replies to closed or half-closed connections,
// dropped queries, the frame and query timeouts, the shared TCP cap, and pipelining.

#include <catch2/catch.hpp>
#include <memory>
#include <vector>

#include "common/dns/query_testing.h"
#include "common/limits/limits.h"
#include "common/loop/loop_test_util.h"
#include "common/loop/tcp_limits.h"
#include "common/server/loop_server.h"
#include "common/server/server_test_util.h"

namespace kdns::server::testing {
namespace {

TEST_CASE("A late reply to a TCP connection the client closed is dropped safely", "[server]") {
  HoldingHandler* handler = nullptr;
  LoopServerHarness h(FactoryOf(&handler));
  TcpClient tcp(h.server->tcp_address());
  REQUIRE(tcp.Send(QuerySpec().Id(5).Bytes()));
  REQUIRE(RunUntil(h.loop, [&] { return handler->held.size() == 1; }));
  // A FIN alone would not do: it may be a half-close, after which the client still expects
  // its answers (RFC 7766 6.2.1). A reset closes the server's side.
  tcp.Reset();
  REQUIRE(RunUntil(h.loop, [&] { return h.server->open_connections() == 0; }));
  CHECK_FALSE(ReplyEcho(handler->held[0], handler->queries[0]));
  CHECK_FALSE(handler->held[0].pending());
  ServerStats s = h.stats.Read();
  CHECK(s.dropped_replies == 1);
  CHECK(s.tcp_replies == 0);
  CHECK(s.tcp_open == 0);
  h.Finish();
}

TEST_CASE("A client that half-closes after its query still gets the answer", "[server]") {
  HoldingHandler* handler = nullptr;
  LoopServerHarness h(FactoryOf(&handler));
  TcpClient tcp(h.server->tcp_address());
  REQUIRE(tcp.Send(QuerySpec().Id(5).Bytes()));
  tcp.ShutdownWrite();
  REQUIRE(RunUntil(h.loop, [&] { return handler->held.size() == 1; }));
  h.loop.RunNoWait();
  CHECK(h.server->open_connections() == 1);
  CHECK(ReplyEcho(handler->held[0], handler->queries[0]));
  std::vector<uint8_t> reply = RunUntilReply(h.loop, tcp);
  CHECK(IdOf(reply) == 5);
  REQUIRE(RunUntil(h.loop, [&] { return tcp.closed(); }));
  REQUIRE(RunUntil(h.loop, [&] { return h.server->open_connections() == 0; }));
  h.Finish();
}

TEST_CASE("A dropped TCP query closes the connection once the other queries are answered",
          "[server]") {
  HoldingHandler* handler = nullptr;
  LoopServerHarness h(FactoryOf(&handler));
  TcpClient tcp(h.server->tcp_address());
  std::vector<uint8_t> both = TcpClient::Frame(QuerySpec().Id(1).Bytes());
  std::vector<uint8_t> second = TcpClient::Frame(QuerySpec().Id(2).Bytes());
  both.insert(both.end(), second.begin(), second.end());
  REQUIRE(tcp.SendRaw(both));
  REQUIRE(RunUntil(h.loop, [&] { return handler->held.size() == 2; }));
  handler->held[1].Drop();
  CHECK_FALSE(handler->held[1].pending());
  h.loop.RunNoWait();
  CHECK_FALSE(tcp.closed());  // query 1 still waits for its answer
  CHECK(ReplyEcho(handler->held[0], handler->queries[0]));
  std::vector<uint8_t> reply = RunUntilReply(h.loop, tcp);
  CHECK(IdOf(reply) == 1);
  REQUIRE(RunUntil(h.loop, [&] { return tcp.closed(); }));
  REQUIRE(RunUntil(h.loop, [&] { return h.server->open_connections() == 0; }));
  ServerStats s = h.stats.Read();
  CHECK(s.tcp_queries == 2);
  CHECK(s.tcp_replies == 1);
  CHECK(s.unanswered == 1);
  h.Finish();
}

TEST_CASE("A TCP client that trickles a query is closed at the frame timeout and counted",
          "[server]") {
  TcpOptions tcp = LongIdle();
  tcp.frame_timeout_ms = 50;
  LoopServerHarness h(EchoFactory(), ThreadOptions(0, tcp));
  const uint64_t frame_hits = limits::LimitHits(limits::Limit::kTcpFrameTimeout);
  TcpClient slow(h.server->tcp_address());
  REQUIRE(slow.SendRaw({0, 40, 1}));  // a 40-byte message, one byte of it
  REQUIRE(RunUntil(h.loop, [&] { return slow.closed(); }));
  // Counted when the server has finished closing it (a later loop iteration).
  REQUIRE(RunUntil(
      h.loop, [&] { return limits::LimitHits(limits::Limit::kTcpFrameTimeout) != frame_hits; }));
  CHECK(limits::LimitHits(limits::Limit::kTcpFrameTimeout) - frame_hits == 1);
  TcpClient fine(h.server->tcp_address());
  REQUIRE(fine.Send(QuerySpec().Id(9).Bytes()));
  std::vector<uint8_t> reply = RunUntilReply(h.loop, fine);
  CHECK(IdOf(reply) == 9);
  h.Finish();
}

// A server whose TCP queries time out 50 ms after they arrive unanswered.
LoopServer::Options QueryTimeoutOptions() {
  TcpOptions tcp = LongIdle();
  tcp.query_timeout_ms = 50;
  return ThreadOptions(0, tcp);
}

TEST_CASE("At the TCP query timeout the handler answers the waiting queries, the connection stays",
          "[server]") {
  HoldingHandler* handler = nullptr;
  LoopServerHarness h(FactoryOf(&handler), QueryTimeoutOptions());
  handler->answer_overdue = true;
  const uint64_t hits = limits::LimitHits(limits::Limit::kTcpQueryTimeout);
  TcpClient client(h.server->tcp_address());
  REQUIRE(client.Send(QuerySpec().Id(3).Bytes()));
  std::vector<uint8_t> reply = RunUntilReply(h.loop, client);
  CHECK(IdOf(reply) == 3);
  CHECK(handler->overdue.size() == 1);
  CHECK(limits::LimitHits(limits::Limit::kTcpQueryTimeout) - hits == 1);
  // Idle again, and still serving.
  REQUIRE(client.Send(QuerySpec().Id(4).Bytes()));
  reply = RunUntilReply(h.loop, client);
  CHECK(IdOf(reply) == 4);
  CHECK(h.server->open_connections() == 1);
  h.Finish();
}

TEST_CASE("At the TCP query timeout a connection whose queries nobody answers is closed",
          "[server]") {
  HoldingHandler* handler = nullptr;
  LoopServerHarness h(FactoryOf(&handler), QueryTimeoutOptions());
  const uint64_t hits = limits::LimitHits(limits::Limit::kTcpQueryTimeout);
  TcpClient client(h.server->tcp_address());
  REQUIRE(client.Send(QuerySpec().Id(3).Bytes()));
  REQUIRE(RunUntil(h.loop, [&] { return client.closed(); }));
  REQUIRE(RunUntil(h.loop, [&] { return h.server->open_connections() == 0; }));
  CHECK(handler->overdue.size() == 1);
  CHECK(limits::LimitHits(limits::Limit::kTcpQueryTimeout) - hits == 1);
  CHECK_FALSE(ReplyEcho(handler->held[0], handler->queries[0]));  // too late: dropped
  h.Finish();
}

TEST_CASE(
    "At the TCP cap a server with nothing of its own to close has another one that shares the "
    "cap close one",
    "[server]") {
  // Two servers sharing the process's caps (as every thread of a DnsServer does); all the
  // busy connections are on the first, the newcomer comes to the second.
  LoopServer::Options options = ThreadOptions();
  options.tcp.max_connections = 4;
  options.tcp.max_connections_per_source = 4;
  options.tcp.caps = MakeTcpCaps(options.tcp);
  HoldingHandler* holding = nullptr;
  HoldingHandler* empty = nullptr;
  LoopServerHarness h(FactoryOf(&holding), options);
  auto second = h.StartAnother(FactoryOf(&empty), options);
  const auto heavy = loop::SocketAddress::Parse("127.0.0.2:0");
  const uint64_t evicted_busy = limits::LimitHits(limits::Limit::kTcpEvictedInFlight);
  std::vector<std::unique_ptr<TcpClient>> holders;
  for (size_t i = 1; i <= 4; ++i) {
    holders.push_back(std::make_unique<TcpClient>(h.server->tcp_address(), heavy));
    REQUIRE(holders.back()->Send(QuerySpec().Id(666).Bytes()));
    REQUIRE(RunUntil(h.loop, [&] { return holding->held.size() == i; }));
  }
  TcpClient light(second->tcp_address());
  REQUIRE(light.Send(QuerySpec().Id(7).Bytes()));
  REQUIRE(RunUntil(h.loop, [&] { return empty->held.size() == 1; }));  // served at the cap
  REQUIRE(RunUntil(h.loop, [&] { return holders[0]->closed(); }));     // the oldest busy one
  REQUIRE(RunUntil(h.loop, [&] { return h.server->open_connections() == 3; }));
  CHECK(options.tcp.caps->open() == 4);  // the place lent is covered: back at the cap
  CHECK(limits::LimitHits(limits::Limit::kTcpEvictedInFlight) - evicted_busy == 1);
  CHECK(ReplyEcho(empty->held[0], empty->queries[0]));
  std::vector<uint8_t> reply = RunUntilReply(h.loop, light);
  CHECK(IdOf(reply) == 7);
  second.reset();
  h.Finish();
}

TEST_CASE("Pipelined TCP queries on one connection are answered in any order", "[server]") {
  HoldingHandler* handler = nullptr;
  LoopServerHarness h(FactoryOf(&handler));
  TcpClient tcp(h.server->tcp_address());
  std::vector<uint8_t> all;
  for (uint16_t id = 1; id <= 5; ++id) {
    std::vector<uint8_t> framed = TcpClient::Frame(QuerySpec().Id(id).Bytes());
    all.insert(all.end(), framed.begin(), framed.end());
  }
  REQUIRE(tcp.SendRaw(all));  // one write: the server frames five queries from it
  REQUIRE(RunUntil(h.loop, [&] { return handler->held.size() == 5; }));
  for (size_t i = 5; i-- > 0;) CHECK(ReplyEcho(handler->held[i], handler->queries[i]));
  std::vector<uint16_t> ids;
  REQUIRE(RunUntil(h.loop, [&] {
    while (auto reply = tcp.TryReceive()) ids.push_back(IdOf(*reply));
    return ids.size() == 5;
  }));
  CHECK(ids == std::vector<uint16_t>{5, 4, 3, 2, 1});
  CHECK(h.stats.Read().tcp_replies == 5);
  CHECK(h.server->open_connections() == 1);
  h.Finish();
}

}  // namespace
}  // namespace kdns::server::testing
