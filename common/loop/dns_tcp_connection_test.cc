#include "common/loop/dns_tcp_connection.h"

#include <catch2/catch.hpp>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "common/loop/loop_test_util.h"
#include "common/loop/tcp_listener.h"
#include "common/loop/timer.h"

namespace kdns::loop {
namespace {

using CloseReason = TcpConnection::CloseReason;

// A 12+ byte "DNS message": two ID bytes then the text, padded to a header's size.
std::string Message(uint16_t id, const std::string& text) {
  std::string m{static_cast<char>(id >> 8), static_cast<char>(id & 0xff)};
  m += text;
  if (m.size() < 12) m.resize(12, '.');
  return m;
}

std::string Framed(const std::string& message) {
  std::string out{static_cast<char>(message.size() >> 8), static_cast<char>(message.size() & 0xff)};
  return out + message;
}

// Splits a framed response stream into messages.
std::vector<std::string> Unframe(const std::string& stream) {
  std::vector<std::string> out;
  size_t at = 0;
  while (stream.size() - at >= 2) {
    size_t len = (static_cast<uint8_t>(stream[at]) << 8) | static_cast<uint8_t>(stream[at + 1]);
    if (stream.size() - at < 2 + len) break;
    out.push_back(stream.substr(at + 2, len));
    at += 2 + len;
  }
  return out;
}

// A DNS/TCP server whose handler records queries; the test decides when to answer.
struct Server {
  explicit Server(Loop& loop, DnsTcpConnection::Options options = {},
                  const TcpListener::Options& listener_options = {})
      : loop_(loop), options_(options) {
    std::string error;
    listener = TcpListener::Bind(
        loop, *SocketAddress::Parse("127.0.0.1:0"), listener_options,
        [this](std::unique_ptr<TcpConnection> c) { Accept(std::move(c)); }, &error);
    INFO(error);
    REQUIRE(listener != nullptr);
  }
  void Accept(std::unique_ptr<TcpConnection> c) {
    int id = next_id++;
    connections[id] = std::make_unique<DnsTcpConnection>(
        loop_, std::move(c), options_,
        [this, id](std::span<const uint8_t> q) {
          queries.push_back({id, std::string(q.begin(), q.end())});
          if (answer_at_once) Answer(id, std::string(q.begin(), q.end()));
        },
        [this, id](CloseReason reason) {
          reasons.push_back(reason);
          connections.erase(id);
        },
        [this, id] {
          ++overdue;
          if (answer_overdue) {
            for (const auto& [connection, query] : queries) {
              if (connection == id) (void)Answer(id, query);
            }
          }
        });
  }
  // Answers with the query's ID and "re:" + the query.
  bool Answer(int connection, const std::string& query) {
    auto it = connections.find(connection);
    if (it == connections.end()) return false;
    std::string reply = query.substr(0, 2) + "re:" + query.substr(2);
    return it->second->Send(
        std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(reply.data()), reply.size()));
  }
  SocketAddress address() const { return listener->GetLocalAddress(); }

  Loop& loop_;
  DnsTcpConnection::Options options_;
  std::unique_ptr<TcpListener> listener;
  std::map<int, std::unique_ptr<DnsTcpConnection>> connections;
  std::vector<std::pair<int, std::string>> queries;
  std::vector<CloseReason> reasons;
  bool answer_at_once = false;
  bool answer_overdue = false;  // the overdue callback answers every query of its connection
  int overdue = 0;              // overdue callbacks
  int next_id = 0;
};

TEST_CASE_METHOD(testing::LoopFixture, "DnsTcpConnection frames queries written one byte at a time",
                 "[loop][dns_tcp]") {
  Server server(loop);
  server.answer_at_once = true;
  testing::RawTcpClient client(server.address());
  std::string stream = Framed(Message(1, "first")) + Framed(Message(2, "second-query"));
  for (char byte : stream) {
    client.Send(std::string(1, byte));
    loop.RunNoWait();
  }
  REQUIRE(testing::RunUntil(loop, [&] { return Unframe(client.received()).size() == 2; }));
  auto replies = Unframe(client.received());
  CHECK(replies[0].substr(2, 3) == "re:");
  CHECK(replies[1].find("second-query") != std::string::npos);
}

TEST_CASE_METHOD(testing::LoopFixture, "DnsTcpConnection delivers two queries from one write",
                 "[loop][dns_tcp]") {
  Server server(loop);
  testing::RawTcpClient client(server.address());
  client.Send(Framed(Message(1, "a")) + Framed(Message(2, "b")));
  REQUIRE(testing::RunUntil(loop, [&] { return server.queries.size() == 2; }));
  CHECK(server.queries[0].second == Message(1, "a"));
  CHECK(server.queries[1].second == Message(2, "b"));
}

TEST_CASE_METHOD(testing::LoopFixture, "Pipelined queries may be answered out of order",
                 "[loop][dns_tcp]") {
  Server server(loop);
  testing::RawTcpClient client(server.address());
  client.Send(Framed(Message(1, "one")) + Framed(Message(2, "two")) + Framed(Message(3, "three")));
  REQUIRE(testing::RunUntil(loop, [&] { return server.queries.size() == 3; }));
  CHECK(server.connections.begin()->second->outstanding_queries() == 3);
  REQUIRE(server.Answer(0, server.queries[2].second));
  REQUIRE(server.Answer(0, server.queries[0].second));
  REQUIRE(server.Answer(0, server.queries[1].second));
  REQUIRE(testing::RunUntil(loop, [&] { return Unframe(client.received()).size() == 3; }));
  auto replies = Unframe(client.received());
  CHECK(replies[0][1] == 3);
  CHECK(replies[1][1] == 1);
  CHECK(replies[2][1] == 2);
  CHECK(server.connections.begin()->second->outstanding_queries() == 0);
}

TEST_CASE_METHOD(testing::LoopFixture, "A length shorter than a DNS header closes the connection",
                 "[loop][dns_tcp]") {
  Server server(loop);
  testing::RawTcpClient client(server.address());
  std::string garbage = GENERATE(std::string("\x00\x00", 2), std::string("\x00\x05hello", 7));
  client.Send(garbage);
  testing::RunUntilClosed(loop, client);
  CHECK(testing::RunUntilFirstClose(loop, server) == CloseReason::kProtocolError);
  CHECK(server.queries.empty());
}

TEST_CASE_METHOD(testing::LoopFixture, "A maximum-size 65535-byte query is accepted",
                 "[loop][dns_tcp]") {
  Server server(loop);
  testing::RawTcpClient client(server.address());
  client.Send(Framed(Message(7, std::string(65533, 'q'))));
  REQUIRE(testing::RunUntil(loop, [&] { return server.queries.size() == 1; }));
  CHECK(server.queries[0].second.size() == 65535);
}

TEST_CASE_METHOD(testing::LoopFixture,
                 "An idle DNS/TCP connection is closed, but not while a query is outstanding",
                 "[loop][dns_tcp]") {
  DnsTcpConnection::Options options;
  options.idle_timeout_ms = 50;
  Server server(loop, options);
  testing::RawTcpClient client(server.address());
  client.Send(Framed(Message(1, "slow upstream")));
  REQUIRE(testing::RunUntil(loop, [&] { return server.queries.size() == 1; }));
  // Well past the idle timeout with the query unanswered: still open.
  bool waited = false;
  Timer wait(loop);
  wait.Start(150, [&] { waited = true; });
  REQUIRE(testing::RunUntil(loop, [&] { return waited; }));
  CHECK(server.connections.size() == 1);
  REQUIRE(server.Answer(0, server.queries[0].second));
  CHECK(Unframe(testing::RunUntilClosed(loop, client)).size() == 1);
  CHECK(testing::RunUntilFirstClose(loop, server) == CloseReason::kIdleTimeout);
}

TEST_CASE_METHOD(testing::LoopFixture,
                 "The outstanding-query cap pauses reading until an answer goes out",
                 "[loop][dns_tcp]") {
  DnsTcpConnection::Options options;
  options.max_outstanding_queries = 2;
  Server server(loop, options);
  testing::RawTcpClient client(server.address());
  client.Send(Framed(Message(1, "a")) + Framed(Message(2, "b")) + Framed(Message(3, "c")) +
              Framed(Message(4, "d")));
  REQUIRE(testing::RunUntil(loop, [&] { return server.queries.size() == 2; }));
  for (int i = 0; i < 5; ++i) loop.RunNoWait();
  CHECK(server.queries.size() == 2);
  REQUIRE(server.Answer(0, server.queries[0].second));
  REQUIRE(testing::RunUntil(loop, [&] { return server.queries.size() == 3; }));
  for (int i = 0; i < 5; ++i) loop.RunNoWait();
  CHECK(server.queries.size() == 3);
  REQUIRE(server.Answer(0, server.queries[1].second));
  REQUIRE(server.Answer(0, server.queries[2].second));
  REQUIRE(testing::RunUntil(loop, [&] { return server.queries.size() == 4; }));
}

TEST_CASE_METHOD(testing::LoopFixture, "A client's half-close still gets its outstanding answers",
                 "[loop][dns_tcp]") {
  Server server(loop);
  testing::RawTcpClient client(server.address());
  client.Send(Framed(Message(1, "a")) + Framed(Message(2, "b")));
  client.ShutdownWrite();
  REQUIRE(testing::RunUntil(loop, [&] { return server.queries.size() == 2; }));
  for (int i = 0; i < 5; ++i) loop.RunNoWait();
  REQUIRE(server.Answer(0, server.queries[1].second));
  REQUIRE(server.Answer(0, server.queries[0].second));
  CHECK(Unframe(testing::RunUntilClosed(loop, client)).size() == 2);
  CHECK(testing::RunUntilFirstClose(loop, server) == CloseReason::kFlushed);
}

TEST_CASE_METHOD(testing::LoopFixture, "A client that does not read is disconnected",
                 "[loop][dns_tcp]") {
  DnsTcpConnection::Options options;
  options.max_pending_output_bytes = 100 * 1024;
  options.max_outstanding_queries = 1000;
  Server server(loop, options);
  testing::RawTcpClient client(server.address());
  client.ShrinkReceiveBuffer();
  std::string queries;
  for (int i = 0; i < 200; ++i) queries += Framed(Message(i, "q"));
  client.Send(queries);
  REQUIRE(testing::RunUntil(loop, [&] { return server.queries.size() == 200; }));
  // Big answers the client never reads.
  auto& conn = *server.connections.begin()->second;
  std::vector<uint8_t> big(60000, 'A');
  bool refused = false;
  for (int i = 0; i < 200 && !refused; ++i) refused = !conn.Send(big);
  CHECK(refused);
  CHECK(testing::RunUntilFirstClose(loop, server) == CloseReason::kOutputOverflow);
}

TEST_CASE_METHOD(testing::LoopFixture,
                 "A message trickled a byte at a time is closed at the frame timeout, not answered",
                 "[loop][dns_tcp]") {
  DnsTcpConnection::Options options;
  options.frame_timeout_ms = 100;
  options.idle_timeout_ms = 0;
  Server server(loop, options);
  server.answer_at_once = true;
  testing::RawTcpClient client(server.address());
  // 300 bytes, one every 10 ms: whole after 3 s if nothing stopped it.
  const std::string stream = Framed(Message(1, std::string(298, 'x')));
  size_t sent = 0;
  Timer trickle(loop);
  trickle.StartRepeating(10, [&] {
    if (sent < stream.size()) client.Send(stream.substr(sent++, 1));
  });
  REQUIRE(testing::RunUntil(loop, [&] { return !server.reasons.empty(); }));
  CHECK(server.reasons[0] == CloseReason::kFrameTimeout);
  CHECK(server.queries.empty());
  CHECK(sent < stream.size());
}

TEST_CASE("The next timeout follows the state: frame while a message arrives, idle otherwise",
          "[loop][dns_tcp]") {
  DnsTcpConnection::Options options;
  options.frame_timeout_ms = 2000;
  options.idle_timeout_ms = 10'000;
  options.query_timeout_ms = 0;
  DnsTcpFramer framer;
  auto deliver = [](std::span<const uint8_t>) { return DnsTcpFramer::Next::kContinue; };
  // Idle since 500, nothing arriving: the idle deadline.
  auto deadline = DnsTcpConnection::NextDeadline(framer, 0, 500, options);
  REQUIRE(deadline);
  CHECK(deadline->at_ms == 10'500);
  CHECK(deadline->reason == CloseReason::kIdleTimeout);
  // A query outstanding: not idle, no deadline.
  CHECK_FALSE(DnsTcpConnection::NextDeadline(framer, 1, 500, options));
  // A message started at 9000: its frame deadline, even past the idle one.
  const uint8_t first_byte = 0;
  REQUIRE(framer.Feed(std::span<const uint8_t>(&first_byte, 1), deliver, 9000) ==
          DnsTcpFramer::Result::kOk);
  deadline = DnsTcpConnection::NextDeadline(framer, 0, 500, options);
  REQUIRE(deadline);
  CHECK(deadline->at_ms == 11'000);
  CHECK(deadline->reason == CloseReason::kFrameTimeout);
  // Also while other queries are outstanding (pipelining).
  CHECK(DnsTcpConnection::NextDeadline(framer, 3, 500, options)->at_ms == 11'000);
  options.frame_timeout_ms = 0;
  CHECK_FALSE(DnsTcpConnection::NextDeadline(framer, 0, 500, options));
}

TEST_CASE("With queries outstanding, the query timeout runs from the last progress",
          "[loop][dns_tcp]") {
  DnsTcpConnection::Options options;
  options.frame_timeout_ms = 2000;
  options.idle_timeout_ms = 10'000;
  options.query_timeout_ms = 5000;
  DnsTcpFramer framer;
  auto deliver = [](std::span<const uint8_t>) { return DnsTcpFramer::Next::kContinue; };
  // Busy since 500 (or answered last then): the query deadline, however many wait.
  for (size_t outstanding : {1, 32}) {
    auto deadline = DnsTcpConnection::NextDeadline(framer, outstanding, 500, options);
    REQUIRE(deadline);
    CHECK(deadline->at_ms == 5500);
    CHECK(deadline->reason == CloseReason::kQueryTimeout);
  }
  // Idle: the idle deadline, not the query one.
  CHECK(DnsTcpConnection::NextDeadline(framer, 0, 500, options)->reason ==
        CloseReason::kIdleTimeout);
  // A message arriving behind the outstanding queries: whichever comes first.
  const uint8_t first_byte = 0;
  REQUIRE(framer.Feed(std::span<const uint8_t>(&first_byte, 1), deliver, 1000) ==
          DnsTcpFramer::Result::kOk);
  auto deadline = DnsTcpConnection::NextDeadline(framer, 1, 500, options);
  CHECK(deadline->at_ms == 3000);
  CHECK(deadline->reason == CloseReason::kFrameTimeout);
  deadline = DnsTcpConnection::NextDeadline(framer, 1, 500, options);
  options.frame_timeout_ms = 0;
  deadline = DnsTcpConnection::NextDeadline(framer, 1, 500, options);
  CHECK(deadline->at_ms == 5500);
  CHECK(deadline->reason == CloseReason::kQueryTimeout);
  options.query_timeout_ms = 0;
  CHECK_FALSE(DnsTcpConnection::NextDeadline(framer, 1, 500, options));
}

TEST_CASE_METHOD(testing::LoopFixture,
                 "An overdue query is answered by the owner and the connection stays open",
                 "[loop][dns_tcp]") {
  DnsTcpConnection::Options options;
  options.query_timeout_ms = 50;
  options.idle_timeout_ms = 0;
  Server server(loop, options);
  server.answer_overdue = true;
  testing::RawTcpClient client(server.address());
  client.Send(Framed(Message(1, "never answered")) + Framed(Message(2, "nor this")));
  REQUIRE(testing::RunUntil(loop, [&] { return Unframe(client.received()).size() == 2; }));
  CHECK(server.overdue == 1);
  CHECK(server.connections.begin()->second->outstanding_queries() == 0);
  // Still open, and serving: the next query is answered too.
  server.answer_at_once = true;
  client.Send(Framed(Message(3, "next")));
  REQUIRE(testing::RunUntil(loop, [&] { return Unframe(client.received()).size() == 3; }));
  CHECK(server.reasons.empty());
}

TEST_CASE_METHOD(testing::LoopFixture, "An overdue query nobody answers closes its connection",
                 "[loop][dns_tcp]") {
  DnsTcpConnection::Options options;
  options.query_timeout_ms = 50;
  options.idle_timeout_ms = 0;
  Server server(loop, options);
  testing::RawTcpClient client(server.address());
  client.Send(Framed(Message(1, "never answered")));
  testing::RunUntilClosed(loop, client);
  CHECK(testing::RunUntilFirstClose(loop, server) == CloseReason::kQueryTimeout);
  CHECK(server.overdue == 1);
  CHECK(client.received().empty());
}

TEST_CASE_METHOD(testing::LoopFixture, "Pipelining more queries does not move the query timeout",
                 "[loop][dns_tcp]") {
  DnsTcpConnection::Options options;
  options.query_timeout_ms = 100;
  options.idle_timeout_ms = 0;
  Server server(loop, options);
  testing::RawTcpClient client(server.address());
  // A new query every 20 ms behind the first, never answered: closed all the same.
  int sent = 0;
  Timer pipeline(loop);
  pipeline.StartRepeating(20, [&] { client.Send(Framed(Message(++sent, "more"))); });
  REQUIRE(testing::RunUntil(loop, [&] { return !server.reasons.empty(); }));
  CHECK(server.reasons[0] == CloseReason::kQueryTimeout);
  CHECK(sent >= 2);
}

}  // namespace
}  // namespace kdns::loop
