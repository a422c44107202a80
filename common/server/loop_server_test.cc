// Tests of the LoopServer (common/server/loop_server.h): UDP and TCP on one port, admission, the
// receiver thread, idle release, answers later through a Responder, dropped UDP queries, and
// start-up failures. TCP connections and the per-client limits have their own
// loop_server_*_test.cc.

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

#include "common/dns/query_testing.h"
#include "common/loop/loop_test_util.h"
#include "common/loop/timer.h"
#include "common/metrics/shard.h"
#include "common/server/server_test_util.h"

namespace kdns::server::testing {
namespace {

TEST_CASE("LoopServer answers UDP and TCP on one port and tells the handler who asked",
          "[server]") {
  std::vector<dns::Transport> transports;
  std::vector<uint16_t> peer_ports;
  std::vector<size_t> thread_indexes;
  LoopServerHarness h(
      [&](const ThreadContext& context) {
        CHECK(context.response_buffer.size() == kResponseBufferBytes);
        return std::make_unique<FunctionHandler>([&](Request& request) {
          transports.push_back(request.transport());
          peer_ports.push_back(request.peer().port());
          thread_indexes.push_back(request.thread_index());
          CHECK(ReplyEcho(request));
          CHECK_FALSE(request.pending());
        });
      },
      ThreadOptions(3));
  REQUIRE(h.server->udp_address().port() != 0);
  REQUIRE(h.server->udp_address().port() == h.server->tcp_address().port());

  UdpClient udp(h.server->udp_address());
  REQUIRE(udp.Send(QuerySpec().Id(7).Bytes()));
  std::vector<uint8_t> reply = RunUntilReply(h.loop, udp);
  CHECK(IdOf(reply) == 7);
  CHECK(IsResponse(reply));

  TcpClient tcp(h.server->tcp_address());
  REQUIRE(tcp.Send(QuerySpec().Id(8).Bytes()));
  reply = RunUntilReply(h.loop, tcp);
  CHECK(IdOf(reply) == 8);
  CHECK(IsResponse(reply));

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
  VerdictHandler* handler = nullptr;
  LoopServer::Options options;
  options.udp.receiver_thread = receiver_thread;
  options.admission.classes = ClassScope::kInternetOnly;
  LoopServerHarness h(FactoryOf(&handler), options);
  std::vector<uint8_t> chaos = QuerySpec().Class(dns::RrClass::kCh).Id(2).Bytes();
  UdpClient udp(h.server->udp_address());
  REQUIRE(udp.Send(QuerySpec().Id(1).Bytes()));
  REQUIRE(RunUntil(h.loop, [&] { return handler->verdicts.size() == 1; }));
  REQUIRE(udp.Send(chaos));
  std::vector<uint8_t> reply = RunUntilReply(h.loop, udp);
  CHECK(IdOf(reply) == 2);
  CHECK((reply[3] & 0x0f) == 5);  // REFUSED
  CHECK(handler->verdicts == std::vector<Verdict>{Verdict::kAdmitted, Verdict::kRefused});
  CHECK_FALSE(handler->not_admitted_on_receiver);
  h.Finish();
}

// Answers even query IDs on the receiver thread and leaves odd ones to HandleQuery.
class ReceiverThreadHandler : public QueryHandler {
 public:
  void HandleQuery(Request& request) override {
    ++loop_thread_queries;
    CHECK(ReplyEcho(request));
  }
  size_t AnswerOnReceiverThread(const Admission&, std::span<const uint8_t> query,
                                const loop::SocketAddress& peer, std::span<uint8_t> out,
                                Decision*) override {
    // No CHECK here: Catch's assertions are not thread-safe.
    if (peer.port() == 0) peer_port_zero = true;
    receiver_shard = metrics::ThisThreadShard();
    if (query.size() < 2 || query[1] % 2 != 0) return 0;
    ++receiver_thread_queries;
    return EchoResponse(query, out).size();
  }
  int loop_thread_queries = 0;  // the loop thread's
  std::atomic<int> receiver_thread_queries{0};
  std::atomic<bool> peer_port_zero{false};
  std::atomic<size_t> receiver_shard{metrics::kShards};
};

TEST_CASE("With a receiver thread, the handler answers on it first and the loop gets the rest",
          "[server]") {
  ReceiverThreadHandler* handler = nullptr;
  LoopServerHarness h(FactoryOf(&handler), ReceiverThreadOptions());
  UdpClient udp(h.server->udp_address());
  for (uint16_t id = 1; id <= 10; ++id) REQUIRE(udp.Send(QuerySpec().Id(id).Bytes()));
  std::vector<uint16_t> ids;
  REQUIRE(RunUntil(h.loop, [&] {
    while (auto reply = udp.TryReceive()) ids.push_back(IdOf(*reply));
    return ids.size() == 10;
  }));
  CHECK(handler->receiver_thread_queries == 5);
  CHECK(handler->loop_thread_queries == 5);
  CHECK_FALSE(handler->peer_port_zero);
  // It counts metrics into its loop thread's shard (this thread's here).
  CHECK(handler->receiver_shard == metrics::ThisThreadShard());
  // TCP never takes the fast path.
  TcpClient tcp(h.server->tcp_address());
  REQUIRE(tcp.Send(QuerySpec().Id(12).Bytes()));
  RunUntilReply(h.loop, tcp);
  CHECK(handler->loop_thread_queries == 6);
  const ServerStats s = h.stats.Read();
  CHECK(s.udp_queries == 10);
  CHECK(s.udp_replies == 10);
  CHECK(s.tcp_queries == 1);
  h.Finish();  // stops the receiver thread before the handler goes
}

// Decides every third query ID on the receiver thread (forward on route ID) and answers
// nothing there; the loop records what it was handed.
class DecidingHandler : public QueryHandler {
 public:
  void HandleQuery(Request& request) override {
    decisions[request.admission().query.header.id] = request.decision();
    CHECK(ReplyEcho(request));
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
  DecidingHandler* handler = nullptr;
  LoopServerHarness h(FactoryOf(&handler), ReceiverThreadOptions());
  UdpClient udp(h.server->udp_address());
  size_t replies = 0;
  // One at a time, so that every datagram reuses the same hand-off slot after a decided one.
  for (uint16_t id = 1; id <= 9; ++id) {
    REQUIRE(udp.Send(QuerySpec().Id(id).Bytes()));
    REQUIRE(RunUntil(h.loop, [&] {
      while (udp.TryReceive()) ++replies;
      return replies == id;
    }));
  }
  TcpClient tcp(h.server->tcp_address());  // the loop receives it: nothing decided
  REQUIRE(tcp.Send(QuerySpec().Id(12).Bytes()));
  REQUIRE(RunUntil(h.loop, [&] { return tcp.TryReceive().has_value(); }));
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
  h.Finish();
}

// Counts the calls that tell it to let go of its snapshots, and on which thread they came.
class ReleasingHandler : public QueryHandler {
 public:
  void HandleQuery(Request& request) override { CHECK(ReplyEcho(request)); }
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
  ReleasingHandler* handler = nullptr;
  LoopServerHarness h(FactoryOf(&handler), ReceiverThreadOptions());
  UdpClient udp(h.server->udp_address());
  REQUIRE(udp.Send(QuerySpec().Id(1).Bytes()));
  REQUIRE(RunUntil(h.loop, [&] { return udp.TryReceive().has_value(); }));
  // Nothing more comes: the loop waits, and the receiver thread's receive times out.
  REQUIRE(RunUntil(h.loop, [&] {
    return handler->loop_releases >= 1 && handler->receiver_releases.load() >= 1;
  }));
  CHECK_FALSE(handler->loop_release_elsewhere);
  CHECK_FALSE(handler->receiver_release_on_loop);
  h.Finish();
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
    CHECK(ReplyEcho(request));
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
  DecliningHandler* handler = nullptr;
  LoopServer::Options options;
  options.udp.receiver_thread = true;
  LoopServerHarness h(FactoryOf(&handler), options);
  UdpClient udp(h.server->udp_address());
  constexpr uint16_t kQueries = 200;
  std::vector<uint16_t> ids;
  // In rounds, so that handoff slots and their admissions are reused.
  for (uint16_t round = 0; round < 4; ++round) {
    for (uint16_t i = 1; i <= kQueries / 4; ++i) {
      REQUIRE(udp.Send(MakeQueryWithOption(static_cast<uint16_t>(round * kQueries / 4 + i))));
    }
    REQUIRE(RunUntil(h.loop, [&] {
      while (auto reply = udp.TryReceive()) ids.push_back(IdOf(*reply));
      return ids.size() == static_cast<size_t>((round + 1) * kQueries / 4);
    }));
  }
  CHECK(handler->loop_queries == kQueries);
  CHECK(handler->admitted_again == 0);
  CHECK(handler->wrong_query == 0);
  CHECK(handler->wrong_options == 0);
  CHECK(h.stats.Read().udp_queries == kQueries);
  h.Finish();
}

TEST_CASE("LoopServer lets a handler answer later through a Responder", "[server]") {
  HoldingHandler* handler = nullptr;
  LoopServerHarness h(FactoryOf(&handler));
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

TEST_CASE("A dropped UDP query gets no reply and is counted", "[server]") {
  LoopServerHarness h([](const ThreadContext&) {
    return std::make_unique<FunctionHandler>([](Request& request) {
      if (IdOf(request.query()) % 2 == 0) ReplyEcho(request);  // odd IDs: drop
    });
  });
  UdpClient udp(h.server->udp_address());
  REQUIRE(udp.Send(QuerySpec().Id(1).Bytes()));
  REQUIRE(udp.Send(QuerySpec().Id(2).Bytes()));
  std::vector<uint8_t> reply = RunUntilReply(h.loop, udp);
  // Loopback keeps the order: a reply to query 1 would have come first.
  CHECK(IdOf(reply) == 2);
  CHECK_FALSE(udp.TryReceive().has_value());
  ServerStats s = h.stats.Read();
  CHECK(s.udp_queries == 2);
  CHECK(s.udp_replies == 1);
  CHECK(s.unanswered == 1);
  h.Finish();
}

TEST_CASE("Destroying a LoopServer drops the Responders its handler still holds", "[server]") {
  HoldingHandler* handler = nullptr;
  LoopServerHarness h(FactoryOf(&handler));
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

}  // namespace
}  // namespace kdns::server::testing
