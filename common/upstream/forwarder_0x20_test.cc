// Tests of the Forwarder's 0x20 (random case of the name sent upstream): the client's case in the
// result, replies in the wrong case dropped, the plain-name fallback, and the TCP retry.

#include <catch2/catch.hpp>
#include <string>

#include "common/dns/testing.h"
#include "common/limits/limits.h"
#include "common/loop/loop.h"
#include "common/loop/loop_test_util.h"
#include "common/upstream/forwarder.h"
#include "common/upstream/forwarder_testing.h"
#include "common/upstream/testing.h"

namespace kdns::upstream::testing {
namespace {

// Many letters, so a random spelling equal to the client's (2^-26) never happens.
constexpr std::string_view kLongName = "abcdefghijklmnop.Example.Com.";

// The name of the question of `bytes`, a whole message.
dns::Name QuestionOf(std::span<const uint8_t> bytes) {
  const dns::Message message = dns::testing::Parse(bytes);
  REQUIRE(message.questions.size() == 1);
  return message.questions[0].name;
}

TEST_CASE_METHOD(LoopFixture,
                 "0x20: the name goes upstream in random case; the result has the client's case",
                 "[upstream][0x20]") {
  FakeUpstream a(loop, 1);
  Forwarder::Options options = TestOptions();
  options.reply_decode = GENERATE(ReplyDecode::kWhole, ReplyDecode::kQuestion);
  Forwarder forwarder(loop, options);
  const Request request = Req(kLongName);
  Result result = ResolveAndWait(loop, forwarder, request, {a.address()});
  REQUIRE(a.queries().size() == 1);
  const dns::Name& sent = a.queries()[0].message.questions[0].name;
  CHECK(sent == request.qname);
  CHECK_FALSE(sent.IdenticalTo(request.qname));
  REQUIRE(result.outcome == ForwardOutcome::kAnswer);
  CHECK(result.tries == 1);
  // The upstream echoed the random case; the client (and the cache) see theirs.
  dns::Message reply;
  REQUIRE(dns::ParseMessage(result.reply, &reply) == dns::ParseError::kOk);
  CHECK(reply.questions[0].name.IdenticalTo(request.qname));
  REQUIRE(reply.answers.size() == 1);
  CHECK(reply.answers[0].owner.IdenticalTo(request.qname));
  CHECK(result.message.questions[0].name.IdenticalTo(request.qname));
  if (options.reply_decode == ReplyDecode::kWhole) {
    CHECK(result.message.answers[0].owner.IdenticalTo(request.qname));
  }
}

TEST_CASE_METHOD(LoopFixture,
                 "0x20: a reply in the wrong case is dropped and the real one accepted",
                 "[upstream][0x20]") {
  FakeUpstream a(loop, 1);
  Forwarder forwarder(loop, TestOptions());
  const UpstreamSet set{a.address()};
  // The first reply echoes our case: the upstream is known to echo it.
  REQUIRE(AnswerAddress(ResolveAndWait(loop, forwarder, Req(kLongName), set)) == "192.0.2.1");
  a.set_behaviour(Behaviour::kWrongCaseFirst);
  const uint64_t hits = limits::LimitHits(limits::Limit::kUpstream0x20Mismatch);
  const Result result = ResolveAndWait(loop, forwarder, Req("x." + std::string(kLongName)), set);
  // The forged A 198.51.100.66 landed (our port, ID and question) and lost.
  CHECK(limits::LimitHits(limits::Limit::kUpstream0x20Mismatch) == hits + 1);
  CHECK(forwarder.counters().mismatched == 1);
  CHECK(AnswerAddress(result) == "192.0.2.1");
  CHECK(result.tries == 1);
  CHECK(a.queries().size() == 2);
}

TEST_CASE_METHOD(
    LoopFixture,
    "0x20: an upstream that lower-cases is asked again plainly, then gets the plain name",
    "[upstream][0x20]") {
  FakeUpstream a(loop, 1);
  a.set_behaviour(Behaviour::kLowercased);
  Forwarder::Options options = TestOptions();
  options.dns0x20.fallback_after = 3;
  Forwarder forwarder(loop, options);
  const UpstreamSet set{a.address()};
  const uint64_t fallbacks = limits::LimitHits(limits::Limit::kUpstream0x20Fallback);
  for (int i = 0; i < 3; ++i) {
    const Request request = Req("q" + std::to_string(i) + "." + std::string(kLongName));
    const Result result = ResolveAndWait(loop, forwarder, request, set);
    // Every answer arrives, one round trip later: the wrong case, then the plain name.
    CHECK(AnswerAddress(result) == "192.0.2.1");
    CHECK(result.tries == 2);
    // As the upstream spelt it (RewriteForClient gives each client its own spelling).
    CHECK(QuestionOf(result.reply).IdenticalTo(request.qname.Lowercased()));
    CHECK(a.queries().back().message.questions[0].name.IdenticalTo(request.qname));
  }
  CHECK(limits::LimitHits(limits::Limit::kUpstream0x20Fallback) == fallbacks + 1);
  // Marked: the plain name at once.
  const Request request = Req(kLongName);
  const Result result = ResolveAndWait(loop, forwarder, request, set);
  CHECK(AnswerAddress(result) == "192.0.2.1");
  CHECK(result.tries == 1);
  CHECK(a.queries().back().message.questions[0].name.IdenticalTo(request.qname));
  CHECK(a.queries().size() == 7);
}

TEST_CASE_METHOD(LoopFixture, "0x20 on: a reply in another case is never accepted",
                 "[upstream][0x20]") {
  FakeUpstream a(loop, 1);
  a.set_behaviour(Behaviour::kLowercased);
  Forwarder::Options options = TestOptions();
  options.dns0x20.mode = Dns0x20::kOn;
  options.total_timeout_ms = 300;
  Forwarder forwarder(loop, options);
  const Result result = ResolveAndWait(loop, forwarder, Req(kLongName), {a.address()});
  CHECK(result.outcome == ForwardOutcome::kServFail);
  CHECK(result.reason == FailReason::kTimeout);
  CHECK(a.queries().size() == 1);
}

TEST_CASE_METHOD(LoopFixture,
                 "0x20: the TCP retry of a truncated reply asks with the client's spelling",
                 "[upstream][0x20]") {
  FakeUpstream a(loop, 1);
  a.set_behaviour(Behaviour::kTruncate);
  Forwarder forwarder(loop, TestOptions());
  const Request request = Req(kLongName);
  Result result = ResolveAndWait(loop, forwarder, request, {a.address()});
  CHECK(AnswerAddress(result) == "192.0.2.1");
  CHECK(result.transport == dns::Transport::kTcp);
  REQUIRE(a.queries().size() == 2);
  CHECK_FALSE(a.queries()[0].message.questions[0].name.IdenticalTo(request.qname));
  CHECK(a.queries()[1].transport == dns::Transport::kTcp);
  CHECK(a.queries()[1].message.questions[0].name.IdenticalTo(request.qname));
  CHECK(QuestionOf(result.reply).IdenticalTo(request.qname));
}

}  // namespace
}  // namespace kdns::upstream::testing
