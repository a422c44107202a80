#include "common/server/forwarding.h"

#include <catch2/catch.hpp>
#include <memory>
#include <optional>
#include <vector>

#include "common/dns/header.h"
#include "common/dns/query_testing.h"
#include "common/loop/loop_test_util.h"
#include "common/server/server_test_util.h"
#include "common/upstream/forwarder_testing.h"
#include "common/upstream/testing.h"

namespace kdns::server {
namespace {

using dns::testing::QuerySpec;
using loop::testing::RunUntil;
using testing::IdOf;
using testing::LongIdle;
using testing::UdpClient;
using upstream::ForwardFailure;
using upstream::testing::Behaviour;
using upstream::testing::FakeUpstream;

// What the Policy saw of one answer sent.
struct Seen {
  AnswerSource source;
  ForwardFailure failure;
  bool waited;
  dns::Rcode rcode;
  int state;
};

// A server's handler on the layer: forwards every query to `upstream`, its State a number
// the test sets per query (the query's ID), passes the upstream's answer as it came (the
// client's ID written back), and has an answer instead of SERVFAIL when `instead` is set.
class ForwardingHandler final : public QueryHandler, private Forwarding<int>::Policy {
 public:
  ForwardingHandler(const ThreadContext& context, const upstream::UpstreamSet& upstreams,
                    std::shared_ptr<WaitingBudget> budget)
      : upstreams_(upstreams),
        options_(upstream::testing::TestOptions()),
        forwarding_(*this, {context.loop, context.response_buffer, options_, nullptr,
                            SteadyClock::Instance(), std::move(budget), &totals, nullptr}) {}
  ~ForwardingHandler() override { forwarding_.CancelAll(); }

  void HandleQuery(Request& request) override {
    const int state = request.admission().query.header.id;
    (void)forwarding_.Forward(request, upstreams_, QueryLog::Start(nullptr), int{state});
  }
  void OnConnectionClosed(uint64_t connection_id) override {
    (void)forwarding_.OnConnectionClosed(connection_id);
  }

  bool instead = false;    // AnswerInstead gives a stale answer (REFUSED, to tell it apart)
  bool unfit = false;      // FitAnswer cannot write the upstream's answer
  std::vector<Seen> seen;  // every answer sent
  Forwarding<int>& forwarding() { return forwarding_; }

 private:
  std::span<uint8_t> FitAnswer(const dns::Query& query, size_t limit, int& state,
                               const upstream::Result& result, std::span<uint8_t> out) override {
    (void)state;
    if (unfit || result.reply.size() > std::min(limit, out.size())) return {};
    std::copy(result.reply.begin(), result.reply.end(), out.begin());
    out[0] = static_cast<uint8_t>(query.header.id >> 8);
    out[1] = static_cast<uint8_t>(query.header.id);
    return out.first(result.reply.size());
  }
  FailureAnswer AnswerInstead(const dns::Query& query, size_t limit, ForwardFailure failure,
                              std::span<uint8_t> out) override {
    (void)limit, (void)failure;
    if (!instead) return {};
    const size_t size = WriteEmptyResponse(query, dns::Rcode::kRefused, false, out).size();
    return {out.first(size), AnswerSource::kStale};
  }
  void Sending(const SentAnswer& answer, const int& state) override {
    seen.push_back(
        {answer.source, answer.failure, answer.waited, dns::RcodeOf(answer.response), state});
  }

  upstream::UpstreamSet upstreams_;
  upstream::Forwarder::Options options_;

 public:
  upstream::ForwarderTotals totals;  // this thread's forwarder's counters

 private:
  Forwarding<int> forwarding_;
};

struct Fixture : loop::testing::LoopFixture {
  explicit Fixture(size_t max_waiting = 100)
      : upstream(std::make_unique<FakeUpstream>(loop, 7)),
        budget(std::make_shared<WaitingBudget>(max_waiting)) {
    LoopServer::Options options;
    options.address = *loop::SocketAddress::Parse("127.0.0.1:0");
    options.tcp = LongIdle();
    std::string error;
    server = LoopServer::Create(
        loop, options,
        [this](const ThreadContext& context) {
          auto made = std::make_unique<ForwardingHandler>(
              context, upstream::UpstreamSet{upstream->address()}, budget);
          handler = made.get();
          return made;
        },
        stats, &error);
    INFO(error);
    REQUIRE(server != nullptr);
    client = std::make_unique<UdpClient>(server->udp_address());
  }
  void Send(uint16_t id) { REQUIRE(client->Send(QuerySpec("www.example.com.").Id(id).Bytes())); }
  // The next answer the client gets.
  std::vector<uint8_t> Receive() {
    std::optional<std::vector<uint8_t>> reply;
    REQUIRE(RunUntil(loop, [&] { return (reply = client->TryReceive()).has_value(); }));
    return *reply;
  }
  std::vector<uint8_t> Ask(uint16_t id) {
    Send(id);
    return Receive();
  }

  // Destroyed in reverse, the client first and the upstream last; LoopFixture then closes
  // the loop.
  ThreadStats stats;
  std::unique_ptr<FakeUpstream> upstream;
  std::shared_ptr<WaitingBudget> budget;
  ForwardingHandler* handler = nullptr;
  std::unique_ptr<LoopServer> server;
  std::unique_ptr<UdpClient> client;
};

TEST_CASE("an upstream's answer reaches the client as the Policy writes it", "[forwarding]") {
  Fixture f;
  const std::vector<uint8_t> reply = f.Ask(41);
  CHECK(IdOf(reply) == 41);
  CHECK(dns::RcodeOf(reply) == dns::Rcode::kNoError);
  REQUIRE(f.handler->seen.size() == 1);
  const Seen& seen = f.handler->seen[0];
  CHECK(seen.source == AnswerSource::kUpstream);
  CHECK(seen.waited);
  CHECK(seen.state == 41);  // the State the query waited with
  CHECK(f.handler->forwarding().waiting() == 0);
  CHECK(f.budget->waiting() == 0);
  CHECK(f.handler->totals.Sum().requests == 1);  // the thread's forwarder is summed
}

TEST_CASE("no answer from the upstreams is SERVFAIL, counted by its reason", "[forwarding]") {
  Fixture f;
  f.upstream->set_behaviour(Behaviour::kSilent);
  const std::vector<uint8_t> reply = f.Ask(7);
  CHECK(IdOf(reply) == 7);
  CHECK(dns::RcodeOf(reply) == dns::Rcode::kServFail);
  REQUIRE(f.handler->seen.size() == 1);
  CHECK(f.handler->seen[0].source == AnswerSource::kFailure);
  CHECK(f.handler->seen[0].failure == ForwardFailure::kTimeout);
  CHECK(f.handler->seen[0].waited);
  CHECK(f.handler->seen[0].state == 7);
}

TEST_CASE("the Policy's answer instead replaces SERVFAIL", "[forwarding]") {
  Fixture f;
  f.upstream->set_behaviour(Behaviour::kSilent);
  f.handler->instead = true;
  const std::vector<uint8_t> reply = f.Ask(8);
  CHECK(dns::RcodeOf(reply) == dns::Rcode::kRefused);
  REQUIRE(f.handler->seen.size() == 1);
  CHECK(f.handler->seen[0].source == AnswerSource::kStale);
  CHECK(f.handler->seen[0].failure == ForwardFailure::kTimeout);
}

TEST_CASE("an answer the Policy cannot write fails as a bad reply", "[forwarding]") {
  Fixture f;
  f.handler->unfit = true;
  const std::vector<uint8_t> reply = f.Ask(9);
  CHECK(dns::RcodeOf(reply) == dns::Rcode::kServFail);
  REQUIRE(f.handler->seen.size() == 1);
  CHECK(f.handler->seen[0].source == AnswerSource::kFailure);
  CHECK(f.handler->seen[0].failure == ForwardFailure::kBadReply);
}

TEST_CASE("over the budget of waiting queries a query is answered at once", "[forwarding]") {
  Fixture f(/*max_waiting=*/1);
  f.upstream->set_behaviour(Behaviour::kSilent);
  f.Send(1);  // waits, taking the only slot
  REQUIRE(RunUntil(f.loop, [&] { return f.budget->waiting() == 1; }));
  const std::vector<uint8_t> reply = f.Ask(2);
  CHECK(IdOf(reply) == 2);
  CHECK(dns::RcodeOf(reply) == dns::Rcode::kServFail);
  REQUIRE(f.handler->seen.size() == 1);
  CHECK(f.handler->seen[0].failure == ForwardFailure::kOverloaded);
  CHECK_FALSE(f.handler->seen[0].waited);
  CHECK(f.handler->seen[0].state == 2);  // the State it would have waited with
  // The first one still waits, and times out as usual.
  CHECK(IdOf(f.Receive()) == 1);
  CHECK(f.handler->seen.size() == 2);
}

TEST_CASE("CancelAll answers every waiting query as a shutdown", "[forwarding]") {
  Fixture f;
  f.upstream->set_behaviour(Behaviour::kSilent);
  f.Send(3);
  REQUIRE(RunUntil(f.loop, [&] { return f.handler->forwarding().waiting() == 1; }));
  f.handler->forwarding().CancelAll();
  const std::vector<uint8_t> reply = f.Receive();
  CHECK(IdOf(reply) == 3);
  CHECK(dns::RcodeOf(reply) == dns::Rcode::kServFail);
  REQUIRE(f.handler->seen.size() == 1);
  CHECK(f.handler->seen[0].failure == ForwardFailure::kShutdown);
  CHECK(f.budget->waiting() == 0);
}

}  // namespace
}  // namespace kdns::server
