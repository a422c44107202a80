#include "common/server/switchboard.h"

#include <sys/socket.h>

#include <catch2/catch.hpp>
#include <string>

#include "common/base/clock.h"
#include "common/http/http_test_util.h"
#include "common/server/debug_http.h"
#include "common/server/rate_limits.h"

namespace kdns::server {
namespace {

using Detail = QueryLogOptions::Detail;
using http::testing::BlockingGet;

struct Fixture {
  ManualClock clock;
  QueryLog log{QueryLogOptions{}, clock, [](std::string_view) {}};
  RateLimits limits;

  Fixture() {
    std::string error;
    REQUIRE(MakeRateLimits(RateLimitFlags{}, nullptr, &limits, &error));
  }
  // Port 0 stands for a program's default debug port: any free one.
  Switchboard::Options Board(std::optional<loop::SocketAddress> flag = std::nullopt,
                             Detail log_flag = Detail::kOff) {
    return Switchboard::Options{log_flag, flag, 0, [this](const loop::SocketAddress& address) {
                                  return MakeDebugServer(address, limits.clients);
                                }};
  }
};

bool Serving(const Switchboard& board) { return board.debug_address().family() != AF_UNSPEC; }

config::RuntimeSwitches Debug(bool on) {
  config::RuntimeSwitches switches;
  switches.debug_data = on;
  return switches;
}

TEST_CASE("the debug data switch opens and closes the debug port while the server runs",
          "[switchboard]") {
  Fixture f;
  Switchboard board(f.Board(), f.log);
  std::string error;
  REQUIRE(board.Start(&error));
  CHECK_FALSE(Serving(board));  // no flag, no switch
  board.Apply(Debug(true));
  REQUIRE(Serving(board));
  CHECK(board.debug_address().HostString() == "127.0.0.1");  // loopback without the flag
  CHECK(BlockingGet(board.debug_address(), "/debug/top-clients").rfind("200", 0) == 0);
  board.Apply(Debug(false));
  CHECK_FALSE(Serving(board));
  board.Apply(Debug(true));
  CHECK(Serving(board));
  board.Stop();
  CHECK_FALSE(Serving(board));
  board.Apply(Debug(true));  // after Stop: nothing starts again
  CHECK_FALSE(Serving(board));
}

TEST_CASE("an absent switch leaves --debug-address in charge, false overrides it",
          "[switchboard]") {
  Fixture f;
  Switchboard board(f.Board(*loop::SocketAddress::Parse("127.0.0.1:0")), f.log);
  SECTION("a switch read before the start is the start's decision") {
    board.Apply(Debug(false));
    std::string error;
    REQUIRE(board.Start(&error));
    CHECK_FALSE(Serving(board));
    board.Apply(config::RuntimeSwitches{});  // the key removed: the flag again
    CHECK(Serving(board));
  }
  SECTION("served at start by the flag") {
    std::string error;
    REQUIRE(board.Start(&error));
    CHECK(Serving(board));
    board.Apply(Debug(false));
    CHECK_FALSE(Serving(board));
  }
}

TEST_CASE("the debug port taken at start is a start-up error, later only a log line",
          "[switchboard]") {
  Fixture f;
  Switchboard first(f.Board(*loop::SocketAddress::Parse("127.0.0.1:0")), f.log);
  std::string error;
  REQUIRE(first.Start(&error));
  const loop::SocketAddress taken = first.debug_address();
  Switchboard second(f.Board(taken), f.log);
  CHECK_FALSE(second.Start(&error));
  CHECK(error.rfind("--debug-address " + taken.ToString() + ": ", 0) == 0);
  Switchboard later(f.Board(taken), f.log);
  later.Apply(Debug(false));
  REQUIRE(later.Start(&error));
  later.Apply(Debug(true));  // cannot bind: stays off, keeps running
  CHECK_FALSE(Serving(later));
}

TEST_CASE("the query log switch sets the detail, an absent one gives the flag's back",
          "[switchboard]") {
  Fixture f;
  Switchboard board(f.Board(std::nullopt, Detail::kBasic), f.log);
  config::RuntimeSwitches switches;
  switches.log_queries = Detail::kExtra;
  board.Apply(switches);  // also before the start: the log needs no port
  CHECK(f.log.detail() == Detail::kExtra);
  switches.log_queries = Detail::kOff;
  board.Apply(switches);
  CHECK_FALSE(f.log.enabled());
  board.Apply(config::RuntimeSwitches{});
  CHECK(f.log.detail() == Detail::kBasic);
}

}  // namespace
}  // namespace kdns::server
