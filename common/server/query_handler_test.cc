#include "common/server/query_handler.h"

#include <catch2/catch.hpp>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "common/dns/query_testing.h"
#include "common/loop/loop_test_util.h"
#include "common/server/loop_server.h"
#include "common/server/server_test_util.h"

namespace kdns::server::testing {
namespace {

// A LoopServer on the test's loop whose handler is `fn`; sends one UDP query and runs the
// loop until the handler has run. Returns the counters once the server is gone.
ServerStats HandleOneQuery(const std::function<void(Request&, ThreadStats&)>& fn) {
  bool handled = false;
  LoopServerHarness h(
      [&](const ThreadContext&) {
        return std::make_unique<FunctionHandler>([&](Request& request) {
          fn(request, h.stats);
          handled = true;
        });
      },
      LoopServer::Options());
  UdpClient udp(h.server->udp_address());
  REQUIRE(udp.Send(QuerySpec().Id(1).Bytes()));
  REQUIRE(RunUntil(h.loop, [&] { return handled; }));
  h.Finish();
  return h.stats.Read();
}

TEST_CASE("An empty Responder replies nothing", "[server]") {
  Responder responder;
  CHECK_FALSE(responder.pending());
  const uint8_t bytes[12] = {};
  CHECK_FALSE(responder.Reply(bytes));
  responder.Drop();  // no-op
}

TEST_CASE("A request is answered at most once", "[server]") {
  HandleOneQuery([](Request& request, ThreadStats& stats) {
    CHECK(request.pending());
    CHECK(ReplyEcho(request));
    CHECK_FALSE(request.pending());
    CHECK_FALSE(ReplyEcho(request));
    Responder late = request.TakeResponder();
    CHECK_FALSE(late.pending());
    CHECK(stats.udp_replies.load() == 1);
  });
}

TEST_CASE("A taken Responder leaves the request unable to reply", "[server]") {
  HandleOneQuery([](Request& request, ThreadStats& stats) {
    Responder responder = request.TakeResponder();
    CHECK(responder.pending());
    CHECK_FALSE(request.pending());
    CHECK_FALSE(ReplyEcho(request));
    CHECK(responder.Reply(EchoResponse(request.query(), request.response_buffer())));
    CHECK_FALSE(responder.pending());
    CHECK(stats.udp_replies.load() == 1);
  });
}

TEST_CASE("Moving a Responder moves the right to answer", "[server]") {
  HandleOneQuery([](Request& request, ThreadStats& stats) {
    Responder first = request.TakeResponder();
    Responder second = std::move(first);
    CHECK_FALSE(first.pending());  // NOLINT(bugprone-use-after-move): checking moved-from state
    CHECK(second.pending());
    Responder third;
    third = std::move(second);
    CHECK(third.pending());
    CHECK(third.peer().port() != 0);
    CHECK(third.transport() == dns::Transport::kUdp);
    CHECK(stats.unanswered.load() == 0);
  });
}

TEST_CASE("A Responder destroyed or reassigned unanswered counts as a drop", "[server]") {
  SECTION("destroyed") {
    ServerStats s = HandleOneQuery([](Request& request, ThreadStats& stats) {
      { Responder gone = request.TakeResponder(); }
      CHECK(stats.unanswered.load() == 1);
    });
    CHECK(s.unanswered == 1);
  }
  SECTION("reassigned") {
    ServerStats s = HandleOneQuery([](Request& request, ThreadStats& stats) {
      Responder held = request.TakeResponder();
      held = Responder();
      CHECK_FALSE(held.pending());
      CHECK(stats.unanswered.load() == 1);
    });
    CHECK(s.unanswered == 1);
  }
}

TEST_CASE("A request the handler neither answers nor takes is dropped", "[server]") {
  std::optional<uint64_t> unanswered_during;
  ServerStats s = HandleOneQuery(
      [&](Request&, ThreadStats& stats) { unanswered_during = stats.unanswered.load(); });
  CHECK(unanswered_during == 0u);
  CHECK(s.unanswered == 1);
  CHECK(s.udp_replies == 0);
}

TEST_CASE("A handler that throws has its query dropped and the server keeps serving", "[server]") {
  LoopServerHarness h(
      [](const ThreadContext&) {
        return std::make_unique<FunctionHandler>([](Request& request) {
          if (IdOf(request.query()) == 1) throw std::runtime_error("boom");
          ReplyEcho(request);
        });
      },
      LoopServer::Options());
  UdpClient udp(h.server->udp_address());
  REQUIRE(udp.Send(QuerySpec().Id(1).Bytes()));
  REQUIRE(udp.Send(QuerySpec().Id(2).Bytes()));
  std::vector<uint8_t> reply = RunUntilReply(h.loop, udp);
  CHECK(IdOf(reply) == 2);
  CHECK(h.stats.unanswered.load() == 1);
  h.Finish();
}

}  // namespace
}  // namespace kdns::server::testing
