// The Forwarder against a real server: unbound from Debian, started on a free loopback port
// with a static local zone. Skipped (with a warning) only when the binary is missing.
#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <string>

#include "common/dns/testing.h"
#include "common/loop/child_process.h"
#include "common/loop/loop.h"
#include "common/loop/loop_test_util.h"
#include "common/upstream/forwarder.h"
#include "common/upstream/forwarder_testing.h"
#include "common/upstream/upstream_address.h"
#include "test/support/fake_dns_server.h"
#include "test/support/skip.h"
#include "test/unit/temp_dir.h"

namespace kdns::upstream::testing {
namespace {

using dns::testing::N;

constexpr const char* kUnbound = "/usr/sbin/unbound";

std::optional<Result> ResolveOnce(loop::Loop& loop, Forwarder& forwarder, const Request& request,
                                  const UpstreamSet& set) {
  std::optional<Result> result;
  forwarder.Resolve(request, set, [&](const Result& r) { result = r; });
  if (!RunUntil(loop, [&] { return result.has_value(); })) return std::nullopt;
  return result;
}

TEST_CASE_METHOD(LoopFixture,
                 "The Forwarder gets answers from a real unbound over UDP, TCP and tcp://",
                 "[upstream]") {
  if (access(kUnbound, X_OK) != 0) {
    kdns::testing::SkipTest(std::string(kUnbound) + " is not installed (apt-get install unbound)",
                            kdns::testing::Provided::kByInstall);
    return;
  }
  kdns::testing::TempDir temp;  // removed even when a REQUIRE fails
  const std::filesystem::path dir(temp.path());
  // The port is free when picked but may be taken before unbound binds it (for TCP, by
  // another test's connection): then unbound exits at once and we pick another.
  uint16_t port = 0;
  std::string output;
  bool exited = false;
  std::unique_ptr<loop::ChildProcess> unbound;
  for (int start = 0; start < 5 && unbound == nullptr; ++start) {
    // Free for UDP right now (and, on an idle loopback, for TCP too).
    port = kdns::testing::UnusedUdpAddress(loop).port();
    const std::string conf = (dir / "unbound.conf").string();
    {
      std::ofstream out(conf);
      out << "server:\n"
          << "  interface: 127.0.0.1@" << port << "\n"
          << "  port: " << port << "\n"
          << "  do-daemonize: no\n"
          << "  username: \"\"\n"
          << "  chroot: \"\"\n"
          << "  directory: \"" << dir.string() << "\"\n"
          << "  pidfile: \"" << (dir / "pid").string() << "\"\n"
          << "  use-syslog: no\n"
          << "  logfile: \"\"\n"
          << "  num-threads: 1\n"
          << "  do-ip6: no\n"
          << "  do-not-query-localhost: no\n"
          << "  access-control: 127.0.0.0/8 allow\n"
          << "  module-config: \"iterator\"\n"
          << "  local-zone: \"kdns.test.\" static\n"
          << "  local-data: \"a.kdns.test. 60 IN A 192.0.2.1\"\n"
          << "remote-control:\n"
          << "  control-enable: no\n";
    }
    output.clear();
    exited = false;
    std::string error;
    loop::ChildProcess::Options options;
    options.argv = {kUnbound, "-d", "-c", conf};
    unbound = loop::ChildProcess::Spawn(
        loop, options,
        [&](loop::ChildProcess::Stream, std::string_view line) {
          output.append(line).append("\n");
        },
        [&](int64_t, int) { exited = true; }, &error);
    INFO(error);
    REQUIRE(unbound != nullptr);
    // Started when it says so, or gone.
    RunUntil(
        loop, [&] { return exited || output.find("start of service") != std::string::npos; },
        10000);
    if (exited) unbound.reset();
  }
  INFO("unbound output:\n" << output);
  REQUIRE(unbound != nullptr);

  {
    Forwarder::Options forwarder_options;
    forwarder_options.min_try_timeout_ms = 200;
    forwarder_options.max_try_timeout_ms = 200;
    forwarder_options.total_timeout_ms = 2000;
    forwarder_options.failure_threshold = 1000;  // it is starting: do not mark it failed
    Forwarder forwarder(loop, forwarder_options);
    const UpstreamSet set{*loop::SocketAddress::FromHostPort("127.0.0.1", port)};
    Request request;
    request.qname = N("A.kdns.test.");

    // Wait until it answers (it takes a moment to start).
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    std::optional<Result> first;
    while (!exited && std::chrono::steady_clock::now() < deadline) {
      first = ResolveOnce(loop, forwarder, request, set);
      if (first && first->outcome == ForwardOutcome::kAnswer) break;
    }
    REQUIRE(first.has_value());
    REQUIRE(first->outcome == ForwardOutcome::kAnswer);

    for (dns::Transport transport : {dns::Transport::kUdp, dns::Transport::kTcp}) {
      INFO(dns::TransportName(transport));
      request.client_transport = transport;
      request.qname = N(transport == dns::Transport::kUdp ? "a.KDNS.test." : "A.kdns.TEST.");
      std::optional<Result> result = ResolveOnce(loop, forwarder, request, set);
      REQUIRE(result.has_value());
      REQUIRE(result->outcome == ForwardOutcome::kAnswer);
      CHECK(result->transport == transport);
      CHECK(result->message.rcode() == dns::Rcode::kNoError);
      REQUIRE(result->message.answers.size() == 1);
      CHECK(std::get<dns::RdataA>(result->message.answers[0].rdata).address.ToString() ==
            "192.0.2.1");
      // unbound echoes our spelling of the name; the EDNS answer advertises a buffer.
      CHECK(result->message.questions[0].name.IdenticalTo(request.qname));
      CHECK(result->message.edns.has_value());
    }
    // A name outside the static zone is NXDOMAIN: an answer, not a failure.
    request.qname = N("nope.kdns.test.");
    std::optional<Result> nx = ResolveOnce(loop, forwarder, request, set);
    REQUIRE(nx.has_value());
    CHECK(nx->outcome == ForwardOutcome::kAnswer);
    CHECK(nx->message.rcode() == dns::Rcode::kNxDomain);

    // As a tcp:// upstream: twenty queries at once, pipelined on one new connection
    // (unbound answers them as they come, RFC 7766 §6.2.1.1), answers matched by ID.
    const UpstreamSet over_tcp{
        Upstream(*loop::SocketAddress::FromHostPort("127.0.0.1", port), UpstreamTransport::kTcp)};
    const uint64_t connections_before = forwarder.counters().tcp_connections;
    int done = 0;
    int over_tcp_answers = 0;
    for (int i = 0; i < 20; ++i) {
      Request each;
      each.qname =
          N(i == 0 ? std::string("a.kdns.test.") : "n" + std::to_string(i) + ".kdns.test.");
      const dns::Rcode expected = i == 0 ? dns::Rcode::kNoError : dns::Rcode::kNxDomain;
      forwarder.Resolve(each, over_tcp, [&, expected](const Result& r) {
        ++done;
        if (r.outcome == ForwardOutcome::kAnswer && r.transport == dns::Transport::kTcp &&
            r.message.rcode() == expected) {
          ++over_tcp_answers;
        }
      });
    }
    REQUIRE(RunUntil(loop, [&] { return done == 20; }));
    CHECK(over_tcp_answers == 20);
    CHECK(forwarder.counters().tcp_connections == connections_before + 1);
    CHECK(forwarder.counters().mismatched == 0);
  }
  unbound->Kill(SIGTERM);
  CHECK(RunUntil(
      loop, [&] { return exited; }, 10000));
  unbound.reset();
}

}  // namespace
}  // namespace kdns::upstream::testing
