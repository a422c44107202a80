#include "common/server/loop_server.h"

#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "common/dns/builder.h"
#include "common/dns/query_testing.h"
#include "common/limits/limits.h"
#include "common/loop/loop_test_util.h"
#include "common/loop/tcp_limits.h"
#include "common/loop/timer.h"
#include "common/server/server_test_util.h"

namespace kdns::server {
namespace {

using dns::testing::QuerySpec;
using loop::testing::RequireClosesClean;
using loop::testing::RunUntil;
using testing::EchoFactory;
using testing::IdOf;
using testing::IsResponse;
using testing::TcpClient;
using testing::UdpClient;

// A LoopServer on a free loopback port, one thread, whose handler is a new Handler that
// *handler points at once it is made.
template <class Handler>
std::unique_ptr<LoopServer> StartWith(loop::Loop& loop, LoopServer::Options options,
                                      ThreadStats& stats, Handler** handler) {
  options.address = *loop::SocketAddress::Parse("127.0.0.1:0");
  std::string error;
  auto server = LoopServer::Create(
      loop, options,
      [handler](const ThreadContext&) {
        auto made = std::make_unique<Handler>();
        *handler = made.get();
        return made;
      },
      stats, &error);
  INFO(error);
  REQUIRE(server != nullptr);
  return server;
}

bool ReplyEcho(Responder& responder, const std::vector<uint8_t>& query);

// Takes every query's Responder and keeps it, so the test decides when to answer.
class HoldingHandler : public QueryHandler {
 public:
  void HandleQuery(Request& request) override {
    queries.emplace_back(request.query().begin(), request.query().end());
    transports.push_back(request.transport());
    held.push_back(request.TakeResponder());
  }
  // With answer_overdue, echoes every query it still holds for the connection.
  void OnQueriesOverdue(uint64_t connection_id) override {
    overdue.push_back(connection_id);
    for (size_t i = 0; answer_overdue && i < held.size(); ++i) {
      if (held[i].pending() && held[i].connection_id() == connection_id) {
        (void)ReplyEcho(held[i], queries[i]);
      }
    }
  }
  std::vector<std::vector<uint8_t>> queries;
  std::vector<dns::Transport> transports;
  std::vector<Responder> held;
  std::vector<uint64_t> overdue;
  bool answer_overdue = false;
};

// Replies to `responder` with an echo of `query`, built in a buffer of its own.
bool ReplyEcho(Responder& responder, const std::vector<uint8_t>& query) {
  std::vector<uint8_t> buffer(query.size());
  return responder.Reply(testing::EchoResponse(query, buffer));
}

// Tests look at connections for longer than the default idle timeout on a loaded machine.
TcpOptions LongIdle() {
  TcpOptions tcp;
  tcp.idle_timeout_ms = 60'000;
  return tcp;
}

struct Harness {
  explicit Harness(const HandlerFactory& factory, size_t thread_index = 0,
                   const TcpOptions& tcp = LongIdle()) {
    LoopServer::Options options;
    options.address = *loop::SocketAddress::Parse("127.0.0.1:0");
    options.thread_index = thread_index;
    options.tcp = tcp;
    std::string error;
    server = LoopServer::Create(loop, options, factory, stats, &error);
    INFO(error);
    REQUIRE(server != nullptr);
  }
  void Finish() {
    server.reset();
    RequireClosesClean(loop);
  }

  loop::Loop loop;
  ThreadStats stats;
  std::unique_ptr<LoopServer> server;
};

HandlerFactory HoldingFactory(HoldingHandler** out) {
  return [out](const ThreadContext&) {
    auto handler = std::make_unique<HoldingHandler>();
    *out = handler.get();
    return handler;
  };
}

TEST_CASE("LoopServer answers UDP and TCP on one port and tells the handler who asked",
          "[server]") {
  std::vector<dns::Transport> transports;
  std::vector<uint16_t> peer_ports;
  std::vector<size_t> thread_indexes;
  Harness h(
      [&](const ThreadContext& context) {
        CHECK(context.response_buffer.size() == kResponseBufferBytes);
        return std::make_unique<testing::FunctionHandler>([&](Request& request) {
          transports.push_back(request.transport());
          peer_ports.push_back(request.peer().port());
          thread_indexes.push_back(request.thread_index());
          CHECK(testing::ReplyEcho(request));
          CHECK_FALSE(request.pending());
        });
      },
      3);
  REQUIRE(h.server->udp_address().port() != 0);
  REQUIRE(h.server->udp_address().port() == h.server->tcp_address().port());

  UdpClient udp(h.server->udp_address());
  REQUIRE(udp.Send(QuerySpec().Id(7).Bytes()));
  std::optional<std::vector<uint8_t>> reply;
  REQUIRE(RunUntil(h.loop, [&] { return (reply = udp.TryReceive()).has_value(); }));
  CHECK(IdOf(*reply) == 7);
  CHECK(IsResponse(*reply));

  TcpClient tcp(h.server->tcp_address());
  REQUIRE(tcp.Send(QuerySpec().Id(8).Bytes()));
  REQUIRE(RunUntil(h.loop, [&] { return (reply = tcp.TryReceive()).has_value(); }));
  CHECK(IdOf(*reply) == 8);
  CHECK(IsResponse(*reply));

  REQUIRE(transports == std::vector<dns::Transport>{dns::Transport::kUdp, dns::Transport::kTcp});
  CHECK(thread_indexes == std::vector<size_t>{3, 3});
  CHECK(peer_ports[0] != 0);
  CHECK(peer_ports[1] != 0);
  ServerStats s = h.stats.Read();
  CHECK(s.udp_queries == 1);
  CHECK(s.tcp_queries == 1);
  CHECK(s.udp_replies == 1);
  CHECK(s.tcp_replies == 1);
  CHECK(s.tcp_accepted == 1);
  CHECK(s.tcp_open == 1);
  CHECK(s.unanswered == 0);
  h.Finish();
  CHECK(h.stats.Read().tcp_open == 0);
}

// Records each query's verdict on the loop, and what reaches the receiver thread.
class VerdictHandler : public QueryHandler {
 public:
  void HandleQuery(Request& request) override {
    verdicts.push_back(request.admission().verdict);
    const std::span<const uint8_t> refusal =
        WriteRefusal(request.admission(), request.response_buffer());
    if (!refusal.empty()) (void)request.Reply(refusal);
  }
  size_t AnswerOnReceiverThread(const Admission& admission, std::span<const uint8_t>,
                                const loop::SocketAddress&, std::span<uint8_t>,
                                Decision*) override {
    if (!admission.admitted()) not_admitted_on_receiver = true;
    return 0;
  }
  std::vector<Verdict> verdicts;  // the loop thread's
  std::atomic<bool> not_admitted_on_receiver{false};
};

TEST_CASE("queries reach the handler admitted under the server's policy, on both paths",
          "[server][admission]") {
  const bool receiver_thread = GENERATE(false, true);
  INFO("receiver thread: " << receiver_thread);
  loop::Loop loop;
  ThreadStats stats;
  VerdictHandler* handler = nullptr;
  LoopServer::Options options;
  options.udp.receiver_thread = receiver_thread;
  options.admission.classes = ClassScope::kInternetOnly;
  auto server = StartWith(loop, options, stats, &handler);
  std::vector<uint8_t> chaos = QuerySpec().Class(dns::RrClass::kCh).Id(2).Bytes();
  UdpClient udp(server->udp_address());
  REQUIRE(udp.Send(QuerySpec().Id(1).Bytes()));
  REQUIRE(RunUntil(loop, [&] { return handler->verdicts.size() == 1; }));
  REQUIRE(udp.Send(chaos));
  std::optional<std::vector<uint8_t>> reply;
  REQUIRE(RunUntil(loop, [&] { return (reply = udp.TryReceive()).has_value(); }));
  CHECK(IdOf(*reply) == 2);
  CHECK(((*reply)[3] & 0x0f) == 5);  // REFUSED
  CHECK(handler->verdicts == std::vector<Verdict>{Verdict::kAdmitted, Verdict::kRefused});
  CHECK_FALSE(handler->not_admitted_on_receiver);
  server.reset();
  RequireClosesClean(loop);
}

// Answers even query IDs on the receiver thread and leaves odd ones to HandleQuery.
class ReceiverThreadHandler : public QueryHandler {
 public:
  void HandleQuery(Request& request) override {
    ++loop_thread_queries;
    CHECK(testing::ReplyEcho(request));
  }
  size_t AnswerOnReceiverThread(const Admission&, std::span<const uint8_t> query,
                                const loop::SocketAddress& peer, std::span<uint8_t> out,
                                Decision*) override {
    // No CHECK here: Catch's assertions are not thread-safe.
    if (peer.port() == 0) peer_port_zero = true;
    if (query.size() < 2 || query[1] % 2 != 0) return 0;
    ++receiver_thread_queries;
    return testing::EchoResponse(query, out).size();
  }
  int loop_thread_queries = 0;  // the loop thread's
  std::atomic<int> receiver_thread_queries{0};
  std::atomic<bool> peer_port_zero{false};
};

TEST_CASE("With a receiver thread, the handler answers on it first and the loop gets the rest",
          "[server]") {
  loop::Loop loop;
  ThreadStats stats;
  ReceiverThreadHandler* handler = nullptr;
  LoopServer::Options options;
  options.udp.receiver_thread = true;
  auto server = StartWith(loop, options, stats, &handler);
  UdpClient udp(server->udp_address());
  for (uint16_t id = 1; id <= 10; ++id) REQUIRE(udp.Send(QuerySpec().Id(id).Bytes()));
  std::vector<uint16_t> ids;
  REQUIRE(RunUntil(loop, [&] {
    while (auto reply = udp.TryReceive()) ids.push_back(IdOf(*reply));
    return ids.size() == 10;
  }));
  CHECK(handler->receiver_thread_queries == 5);
  CHECK(handler->loop_thread_queries == 5);
  CHECK_FALSE(handler->peer_port_zero);
  // TCP never takes the fast path.
  TcpClient tcp(server->tcp_address());
  REQUIRE(tcp.Send(QuerySpec().Id(12).Bytes()));
  std::optional<std::vector<uint8_t>> reply;
  REQUIRE(RunUntil(loop, [&] { return (reply = tcp.TryReceive()).has_value(); }));
  CHECK(handler->loop_thread_queries == 6);
  const ServerStats s = stats.Read();
  CHECK(s.udp_queries == 10);
  CHECK(s.udp_replies == 10);
  CHECK(s.tcp_queries == 1);
  server.reset();  // stops the receiver thread before the handler goes
  RequireClosesClean(loop);
}

// Decides every third query ID on the receiver thread (forward on route ID) and answers
// nothing there; the loop records what it was handed.
class DecidingHandler : public QueryHandler {
 public:
  void HandleQuery(Request& request) override {
    decisions[request.admission().query.header.id] = request.decision();
    CHECK(testing::ReplyEcho(request));
  }
  size_t AnswerOnReceiverThread(const Admission& admission, std::span<const uint8_t>,
                                const loop::SocketAddress&, std::span<uint8_t>,
                                Decision* decision) override {
    const uint16_t id = admission.query.header.id;
    if (id % 3 == 0) *decision = Decision{Decision::Kind::kForward, id, 7};
    return 0;
  }
  std::map<uint16_t, Decision> decisions;  // the loop thread's
};

TEST_CASE(
    "What the receiver thread decides reaches HandleQuery with the query, and only that query",
    "[server]") {
  loop::Loop loop;
  ThreadStats stats;
  DecidingHandler* handler = nullptr;
  LoopServer::Options options;
  options.udp.receiver_thread = true;
  auto server = StartWith(loop, options, stats, &handler);
  UdpClient udp(server->udp_address());
  size_t replies = 0;
  // One at a time, so that every datagram reuses the same hand-off slot after a decided one.
  for (uint16_t id = 1; id <= 9; ++id) {
    REQUIRE(udp.Send(QuerySpec().Id(id).Bytes()));
    REQUIRE(RunUntil(loop, [&] {
      while (udp.TryReceive()) ++replies;
      return replies == id;
    }));
  }
  TcpClient tcp(server->tcp_address());  // the loop receives it: nothing decided
  REQUIRE(tcp.Send(QuerySpec().Id(12).Bytes()));
  REQUIRE(RunUntil(loop, [&] { return tcp.TryReceive().has_value(); }));
  REQUIRE(handler->decisions.size() == 10);
  for (const auto& [id, decision] : handler->decisions) {
    INFO("query " << id);
    if (id % 3 == 0 && id != 12) {
      CHECK(decision.kind == Decision::Kind::kForward);
      CHECK(decision.route == id);
      CHECK(decision.generation == 7);
    } else {
      CHECK(decision.kind == Decision::Kind::kUndecided);
    }
  }
  server.reset();
  RequireClosesClean(loop);
}

// Counts the calls that tell it to let go of its snapshots, and on which thread they came.
class ReleasingHandler : public QueryHandler {
 public:
  void HandleQuery(Request& request) override { CHECK(testing::ReplyEcho(request)); }
  void ReleaseSnapshots() override {
    ++loop_releases;
    if (std::this_thread::get_id() != loop_thread) loop_release_elsewhere = true;
  }
  void ReleaseReceiverSnapshots() override {
    ++receiver_releases;
    if (std::this_thread::get_id() == loop_thread) receiver_release_on_loop = true;
  }
  const std::thread::id loop_thread = std::this_thread::get_id();
  int loop_releases = 0;
  bool loop_release_elsewhere = false;
  std::atomic<int> receiver_releases{0};
  std::atomic<bool> receiver_release_on_loop{false};
};

TEST_CASE("An idle server tells its handler to release its snapshots, on each of its threads",
          "[server]") {
  loop::Loop loop;
  ThreadStats stats;
  ReleasingHandler* handler = nullptr;
  LoopServer::Options options;
  options.udp.receiver_thread = true;
  auto server = StartWith(loop, options, stats, &handler);
  UdpClient udp(server->udp_address());
  REQUIRE(udp.Send(QuerySpec().Id(1).Bytes()));
  REQUIRE(RunUntil(loop, [&] { return udp.TryReceive().has_value(); }));
  // Nothing more comes: the loop waits, and the receiver thread's receive times out.
  REQUIRE(RunUntil(
      loop, [&] { return handler->loop_releases >= 1 && handler->receiver_releases.load() >= 1; }));
  CHECK_FALSE(handler->loop_release_elsewhere);
  CHECK_FALSE(handler->receiver_release_on_loop);
  server.reset();
  RequireClosesClean(loop);
}

// A query for `example. A IN` with an OPT record carrying one option (code 65001, "abcd").
std::vector<uint8_t> MakeQueryWithOption(uint16_t id) {
  static constexpr uint8_t kOption[] = {0xfd, 0xe9, 0, 4, 'a', 'b', 'c', 'd'};
  return QuerySpec().Id(id).Edns(4096).EdnsOptions(kOption).Bytes();
}

// Declines every query on the receiver thread, noting the Admission it was given, and
// answers on the loop, noting whether HandleQuery got that same Admission (not a second
// parse of the datagram) with its EDNS options inside the query it was handed.
class DecliningHandler : public QueryHandler {
 public:
  void HandleQuery(Request& request) override {
    ++loop_queries;
    const Admission& admission = request.admission();
    {
      std::lock_guard lock(mutex_);
      if (receiver_admissions_.count(&admission) == 0) ++admitted_again;
    }
    const std::span<const uint8_t> query = request.query();
    if (admission.query.header.id != IdOf(query)) ++wrong_query;
    if (!admission.query.edns || admission.query.edns->options.size() != 8 ||
        admission.query.edns->options.data() != query.data() + query.size() - 8 ||
        std::memcmp(admission.query.edns->options.data() + 4, "abcd", 4) != 0) {
      ++wrong_options;
    }
    CHECK(testing::ReplyEcho(request));
  }
  size_t AnswerOnReceiverThread(const Admission& admission, std::span<const uint8_t>,
                                const loop::SocketAddress&, std::span<uint8_t>,
                                Decision*) override {
    std::lock_guard lock(mutex_);
    receiver_admissions_.insert(&admission);
    return 0;
  }
  // The loop thread's.
  int loop_queries = 0;
  int admitted_again = 0;
  int wrong_query = 0;
  int wrong_options = 0;

 private:
  std::mutex mutex_;
  std::set<const Admission*> receiver_admissions_;  // guarded by mutex_
};

TEST_CASE("A query the receiver thread declines reaches the loop admitted there, not parsed again",
          "[server][admission]") {
  loop::Loop loop;
  ThreadStats stats;
  DecliningHandler* handler = nullptr;
  LoopServer::Options options;
  options.udp.receiver_thread = true;
  auto server = StartWith(loop, options, stats, &handler);
  UdpClient udp(server->udp_address());
  constexpr uint16_t kQueries = 200;
  std::vector<uint16_t> ids;
  // In rounds, so that handoff slots and their admissions are reused.
  for (uint16_t round = 0; round < 4; ++round) {
    for (uint16_t i = 1; i <= kQueries / 4; ++i) {
      REQUIRE(udp.Send(MakeQueryWithOption(static_cast<uint16_t>(round * kQueries / 4 + i))));
    }
    REQUIRE(RunUntil(loop, [&] {
      while (auto reply = udp.TryReceive()) ids.push_back(IdOf(*reply));
      return ids.size() == static_cast<size_t>((round + 1) * kQueries / 4);
    }));
  }
  CHECK(handler->loop_queries == kQueries);
  CHECK(handler->admitted_again == 0);
  CHECK(handler->wrong_query == 0);
  CHECK(handler->wrong_options == 0);
  CHECK(stats.Read().udp_queries == kQueries);
  server.reset();
  RequireClosesClean(loop);
}

TEST_CASE("LoopServer lets a handler answer later through a Responder", "[server]") {
  HoldingHandler* handler = nullptr;
  Harness h(HoldingFactory(&handler));
  auto timer = std::make_unique<loop::Timer>(h.loop);
  std::optional<std::vector<uint8_t>> reply;

  SECTION("over UDP") {
    UdpClient udp(h.server->udp_address());
    REQUIRE(udp.Send(QuerySpec().Id(21).Bytes()));
    REQUIRE(RunUntil(h.loop, [&] { return handler->held.size() == 1; }));
    CHECK(handler->held[0].pending());
    CHECK(handler->held[0].transport() == dns::Transport::kUdp);
    timer->Start(1, [&] { CHECK(ReplyEcho(handler->held[0], handler->queries[0])); });
    REQUIRE(RunUntil(h.loop, [&] { return (reply = udp.TryReceive()).has_value(); }));
    CHECK(h.stats.Read().udp_replies == 1);
  }
  SECTION("over TCP") {
    TcpClient tcp(h.server->tcp_address());
    REQUIRE(tcp.Send(QuerySpec().Id(21).Bytes()));
    REQUIRE(RunUntil(h.loop, [&] { return handler->held.size() == 1; }));
    CHECK(handler->held[0].transport() == dns::Transport::kTcp);
    timer->Start(1, [&] { CHECK(ReplyEcho(handler->held[0], handler->queries[0])); });
    REQUIRE(RunUntil(h.loop, [&] { return (reply = tcp.TryReceive()).has_value(); }));
    CHECK(h.stats.Read().tcp_replies == 1);
  }
  CHECK(IdOf(*reply) == 21);
  CHECK(IsResponse(*reply));
  CHECK_FALSE(handler->held[0].pending());
  CHECK(h.stats.Read().unanswered == 0);
  timer.reset();
  h.Finish();
}

TEST_CASE("A late reply to a TCP connection the client closed is dropped safely", "[server]") {
  HoldingHandler* handler = nullptr;
  Harness h(HoldingFactory(&handler));
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
  Harness h(HoldingFactory(&handler));
  TcpClient tcp(h.server->tcp_address());
  REQUIRE(tcp.Send(QuerySpec().Id(5).Bytes()));
  tcp.ShutdownWrite();
  REQUIRE(RunUntil(h.loop, [&] { return handler->held.size() == 1; }));
  h.loop.RunNoWait();
  CHECK(h.server->open_connections() == 1);
  CHECK(ReplyEcho(handler->held[0], handler->queries[0]));
  std::optional<std::vector<uint8_t>> reply;
  REQUIRE(RunUntil(h.loop, [&] { return (reply = tcp.TryReceive()).has_value(); }));
  CHECK(IdOf(*reply) == 5);
  REQUIRE(RunUntil(h.loop, [&] { return tcp.closed(); }));
  REQUIRE(RunUntil(h.loop, [&] { return h.server->open_connections() == 0; }));
  h.Finish();
}

TEST_CASE("A dropped UDP query gets no reply and is counted", "[server]") {
  Harness h([](const ThreadContext&) {
    return std::make_unique<testing::FunctionHandler>([](Request& request) {
      if (IdOf(request.query()) % 2 == 0) testing::ReplyEcho(request);  // odd IDs: drop
    });
  });
  UdpClient udp(h.server->udp_address());
  REQUIRE(udp.Send(QuerySpec().Id(1).Bytes()));
  REQUIRE(udp.Send(QuerySpec().Id(2).Bytes()));
  std::optional<std::vector<uint8_t>> reply;
  REQUIRE(RunUntil(h.loop, [&] { return (reply = udp.TryReceive()).has_value(); }));
  // Loopback keeps the order: a reply to query 1 would have come first.
  CHECK(IdOf(*reply) == 2);
  CHECK_FALSE(udp.TryReceive().has_value());
  ServerStats s = h.stats.Read();
  CHECK(s.udp_queries == 2);
  CHECK(s.udp_replies == 1);
  CHECK(s.unanswered == 1);
  h.Finish();
}

TEST_CASE("A dropped TCP query closes the connection once the other queries are answered",
          "[server]") {
  HoldingHandler* handler = nullptr;
  Harness h(HoldingFactory(&handler));
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
  std::optional<std::vector<uint8_t>> reply;
  REQUIRE(RunUntil(h.loop, [&] { return (reply = tcp.TryReceive()).has_value(); }));
  CHECK(IdOf(*reply) == 1);
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
  Harness h(EchoFactory(), 0, tcp);
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
  std::optional<std::vector<uint8_t>> reply;
  REQUIRE(RunUntil(h.loop, [&] { return (reply = fine.TryReceive()).has_value(); }));
  CHECK(IdOf(*reply) == 9);
  h.Finish();
}

TEST_CASE("At the TCP query timeout the handler answers the waiting queries, the connection stays",
          "[server]") {
  HoldingHandler* handler = nullptr;
  TcpOptions tcp = LongIdle();
  tcp.query_timeout_ms = 50;
  Harness h(HoldingFactory(&handler), 0, tcp);
  handler->answer_overdue = true;
  const uint64_t hits = limits::LimitHits(limits::Limit::kTcpQueryTimeout);
  TcpClient client(h.server->tcp_address());
  REQUIRE(client.Send(QuerySpec().Id(3).Bytes()));
  std::optional<std::vector<uint8_t>> reply;
  REQUIRE(RunUntil(h.loop, [&] { return (reply = client.TryReceive()).has_value(); }));
  CHECK(IdOf(*reply) == 3);
  CHECK(handler->overdue.size() == 1);
  CHECK(limits::LimitHits(limits::Limit::kTcpQueryTimeout) - hits == 1);
  // Idle again, and still serving.
  REQUIRE(client.Send(QuerySpec().Id(4).Bytes()));
  REQUIRE(RunUntil(h.loop, [&] { return (reply = client.TryReceive()).has_value(); }));
  CHECK(IdOf(*reply) == 4);
  CHECK(h.server->open_connections() == 1);
  h.Finish();
}

TEST_CASE("At the TCP query timeout a connection whose queries nobody answers is closed",
          "[server]") {
  HoldingHandler* handler = nullptr;
  TcpOptions tcp = LongIdle();
  tcp.query_timeout_ms = 50;
  Harness h(HoldingFactory(&handler), 0, tcp);
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
  loop::Loop loop;
  ThreadStats stats;
  LoopServer::Options options;
  options.tcp = LongIdle();
  options.tcp.max_connections = 4;
  options.tcp.max_connections_per_source = 4;
  options.tcp.caps = MakeTcpCaps(options.tcp);
  HoldingHandler* holding = nullptr;
  HoldingHandler* empty = nullptr;
  auto first = StartWith(loop, options, stats, &holding);
  auto second = StartWith(loop, options, stats, &empty);
  const auto heavy = loop::SocketAddress::Parse("127.0.0.2:0");
  const uint64_t evicted_busy = limits::LimitHits(limits::Limit::kTcpEvictedInFlight);
  std::vector<std::unique_ptr<TcpClient>> holders;
  for (size_t i = 1; i <= 4; ++i) {
    holders.push_back(std::make_unique<TcpClient>(first->tcp_address(), heavy));
    REQUIRE(holders.back()->Send(QuerySpec().Id(666).Bytes()));
    REQUIRE(RunUntil(loop, [&] { return holding->held.size() == i; }));
  }
  TcpClient light(second->tcp_address());
  REQUIRE(light.Send(QuerySpec().Id(7).Bytes()));
  REQUIRE(RunUntil(loop, [&] { return empty->held.size() == 1; }));  // served at the cap
  REQUIRE(RunUntil(loop, [&] { return holders[0]->closed(); }));     // the oldest busy one
  REQUIRE(RunUntil(loop, [&] { return first->open_connections() == 3; }));
  CHECK(options.tcp.caps->open() == 4);  // the place lent is covered: back at the cap
  CHECK(limits::LimitHits(limits::Limit::kTcpEvictedInFlight) - evicted_busy == 1);
  CHECK(ReplyEcho(empty->held[0], empty->queries[0]));
  std::optional<std::vector<uint8_t>> reply;
  REQUIRE(RunUntil(loop, [&] { return (reply = light.TryReceive()).has_value(); }));
  CHECK(IdOf(*reply) == 7);
  first.reset();
  second.reset();
  RequireClosesClean(loop);
}

TEST_CASE("Pipelined TCP queries on one connection are answered in any order", "[server]") {
  HoldingHandler* handler = nullptr;
  Harness h(HoldingFactory(&handler));
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

TEST_CASE("Destroying a LoopServer drops the Responders its handler still holds", "[server]") {
  HoldingHandler* handler = nullptr;
  Harness h(HoldingFactory(&handler));
  UdpClient udp(h.server->udp_address());
  TcpClient tcp(h.server->tcp_address());
  REQUIRE(udp.Send(QuerySpec().Id(1).Bytes()));
  REQUIRE(tcp.Send(QuerySpec().Id(2).Bytes()));
  REQUIRE(RunUntil(h.loop, [&] { return handler->held.size() == 2; }));
  h.Finish();  // the handler goes first, its Responders drop into a live connection table
  ServerStats s = h.stats.Read();
  CHECK(s.unanswered == 2);
  CHECK(s.tcp_open == 0);
  CHECK(tcp.WaitClosed());
}

TEST_CASE("LoopServer reports what failed when it cannot bind or serve an fd", "[server]") {
  loop::Loop loop;
  ThreadStats stats;
  std::string error;
  LoopServer::Failure failure = LoopServer::Failure::kNone;

  SECTION("a UDP port taken by another socket") {
    int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    auto address = *loop::SocketAddress::Parse("127.0.0.1:0");
    REQUIRE(bind(fd, address.sockaddr_ptr(), address.sockaddr_len()) == 0);
    LoopServer::Options options;
    options.address = loop::internal::LocalAddressOf(fd);
    options.reuse_port = loop::ReusePort::kYes;
    CHECK(LoopServer::Create(loop, options, EchoFactory(), stats, &error, &failure) == nullptr);
    CHECK(failure == LoopServer::Failure::kUdp);
    CHECK_THAT(error, Catch::Contains("Address already in use"));
    close(fd);
  }
  SECTION("only one inherited fd") {
    LoopServer::Options options;
    options.udp_fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    CHECK(LoopServer::Create(loop, options, EchoFactory(), stats, &error, &failure) == nullptr);
    CHECK_THAT(error, Catch::Contains("both"));
  }
  SECTION("a factory that makes no handler") {
    LoopServer::Options options;
    options.address = *loop::SocketAddress::Parse("127.0.0.1:0");
    auto factory = [](const ThreadContext&) { return std::unique_ptr<QueryHandler>(); };
    CHECK(LoopServer::Create(loop, options, factory, stats, &error, &failure) == nullptr);
    CHECK(failure == LoopServer::Failure::kHandler);
    CHECK_THAT(error, Catch::Contains("no handler"));
  }
  RequireClosesClean(loop);
}

// A query for example. A with the client-address option naming `client` (code 65432).
std::vector<uint8_t> QueryFor(uint16_t id, const char* client) {
  std::vector<uint8_t> option(dns::kMaxClientAddressOptionBytes);
  const loop::SocketAddress address = *loop::SocketAddress::Parse(client);
  option.resize(dns::WriteClientAddressOption({loop::IpOf(address), address.port()},
                                              dns::kDefaultClientAddressOption, option));
  return QuerySpec().Id(id).Edns().EdnsOptions(option).Bytes();
}

dns::Rcode RcodeOf(std::span<const uint8_t> message) {
  return static_cast<dns::Rcode>(message[3] & 0x0f);
}

TEST_CASE("A trusted forwarder's queries are limited as the client they name, answered REFUSED",
          "[server][client_address]") {
  const bool receiver_thread = GENERATE(false, true);
  const loop::SocketAddress forwarder = *loop::SocketAddress::Parse("127.0.0.1:0");
  const loop::SocketAddress stranger = *loop::SocketAddress::Parse("127.0.0.2:0");
  loop::Loop loop;
  ThreadStats stats;
  std::vector<std::pair<std::string, std::string>> seen;  // (client, peer) per query
  LoopServer::Options options;
  options.address = *loop::SocketAddress::Parse("127.0.0.1:0");
  options.udp.receiver_thread = receiver_thread;
  options.client_address.trusted = {*IpPrefix::Parse("127.0.0.1/32")};
  ClientLimitOptions limit;
  limit.rate = 1;  // one query per client, then over
  limit.burst = 1;
  limit.shed = false;
  options.clients = std::make_shared<ClientLimiter>(limit);
  std::string error;
  auto server = LoopServer::Create(
      loop, options,
      [&](const ThreadContext&) {
        return std::make_unique<testing::FunctionHandler>([&](Request& request) {
          seen.emplace_back(request.client().HostString(), request.peer().HostString());
          CHECK(testing::ReplyEcho(request));
        });
      },
      stats, &error);
  INFO(error);
  REQUIRE(server != nullptr);
  auto exchange = [&](UdpClient& udp, const std::vector<uint8_t>& query) {
    REQUIRE(udp.Send(query));
    std::optional<std::vector<uint8_t>> reply;
    REQUIRE(RunUntil(loop, [&] { return (reply = udp.TryReceive()).has_value(); }));
    REQUIRE(IdOf(*reply) == IdOf(query));
    return *reply;
  };

  UdpClient udp(server->udp_address(), forwarder);
  // Handled as the client, answered to the forwarder.
  CHECK(RcodeOf(exchange(udp, QueryFor(1, "10.0.0.7:1234"))) == dns::Rcode::kNoError);
  REQUIRE(seen.size() == 1);
  CHECK(seen[0] == std::pair<std::string, std::string>{"10.0.0.7", "127.0.0.1"});
  // The same client again is over its rate: REFUSED (never silence, never TC to our own
  // forwarder), and the handler never sees it.
  const uint64_t limited = limits::LimitHits(limits::Limit::kClientRate);
  const std::vector<uint8_t> refused = exchange(udp, QueryFor(2, "10.0.0.7:1234"));
  CHECK(RcodeOf(refused) == dns::Rcode::kRefused);
  CHECK((refused[2] & 0x02) == 0);  // no TC
  CHECK(limits::LimitHits(limits::Limit::kClientRate) == limited + 1);
  CHECK(seen.size() == 1);
  // Another client through the same forwarder has its own rate.
  CHECK(RcodeOf(exchange(udp, QueryFor(3, "10.0.0.8:1234"))) == dns::Rcode::kNoError);
  REQUIRE(seen.size() == 2);
  CHECK(seen[1].first == "10.0.0.8");

  // From a peer not trusted, the option is ignored and counted: the peer is the client.
  const uint64_t untrusted = limits::LimitHits(limits::Limit::kClientAddressUntrusted);
  UdpClient forged(server->udp_address(), stranger);
  CHECK(RcodeOf(exchange(forged, QueryFor(4, "10.0.0.9:1234"))) == dns::Rcode::kNoError);
  REQUIRE(seen.size() == 3);
  CHECK(seen[2] == std::pair<std::string, std::string>{"127.0.0.2", "127.0.0.2"});
  CHECK(limits::LimitHits(limits::Limit::kClientAddressUntrusted) == untrusted + 1);

  // Over TCP the forwarder's connection carries many clients: limited per client too.
  TcpClient tcp(server->tcp_address(), forwarder);
  REQUIRE(tcp.Send(QueryFor(5, "10.0.0.7:1234")));
  std::optional<std::vector<uint8_t>> reply;
  REQUIRE(RunUntil(loop, [&] { return (reply = tcp.TryReceive()).has_value(); }));
  CHECK(IdOf(*reply) == 5);
  CHECK(RcodeOf(*reply) == dns::Rcode::kRefused);
  CHECK(seen.size() == 3);
  server.reset();
  RequireClosesClean(loop);
}

TEST_CASE("RRL limits a trusted forwarder's replies per client it names, REFUSED over it",
          "[server][client_address]") {
  loop::Loop loop;
  ThreadStats stats;
  LoopServer::Options options;
  options.address = *loop::SocketAddress::Parse("127.0.0.1:0");
  options.client_address.trusted = {*IpPrefix::Parse("127.0.0.1/32")};
  ResponseRateOptions rrl;
  rrl.responses_per_second = 1;  // one identical response per netblock, then over
  rrl.slip = 0;                  // a client of its own would get nothing
  options.responses = std::make_shared<ResponseRateLimiter>(rrl);
  std::string error;
  auto server = LoopServer::Create(loop, options, EchoFactory(), stats, &error);
  INFO(error);
  REQUIRE(server != nullptr);
  UdpClient udp(server->udp_address(), *loop::SocketAddress::Parse("127.0.0.1:0"));
  auto exchange = [&](const std::vector<uint8_t>& query) {
    REQUIRE(udp.Send(query));
    std::optional<std::vector<uint8_t>> reply;
    REQUIRE(RunUntil(loop, [&] { return (reply = udp.TryReceive()).has_value(); }));
    REQUIRE(IdOf(*reply) == IdOf(query));
    return RcodeOf(*reply);
  };
  const uint64_t limited = limits::LimitHits(limits::Limit::kResponseRate);
  CHECK(exchange(QueryFor(1, "10.0.0.7:1234")) == dns::Rcode::kNoError);
  // The same response again for the same netblock: over RRL, REFUSED rather than dropped,
  // so the forwarder does not take us for dead.
  CHECK(exchange(QueryFor(2, "10.0.0.7:1234")) == dns::Rcode::kRefused);
  CHECK(limits::LimitHits(limits::Limit::kResponseRate) == limited + 1);
  // Another netblock behind the same forwarder has its own.
  CHECK(exchange(QueryFor(3, "10.0.1.7:1234")) == dns::Rcode::kNoError);
  server.reset();
  RequireClosesClean(loop);
}

}  // namespace
}  // namespace kdns::server
