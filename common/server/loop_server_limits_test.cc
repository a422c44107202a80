// Tests of the LoopServer's per-client limits for a trusted forwarder: the client rate limit and
// RRL applied to the client its queries name (the client-address option).

#include <catch2/catch.hpp>
#include <memory>
#include <string>
#include <vector>

#include "common/dns/builder.h"
#include "common/dns/query_testing.h"
#include "common/limits/limits.h"
#include "common/loop/loop_test_util.h"
#include "common/server/loop_server.h"
#include "common/server/server_test_util.h"

namespace kdns::server::testing {
namespace {

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
  std::vector<std::pair<std::string, std::string>> seen;  // (client, peer) per query
  LoopServer::Options options;
  options.udp.receiver_thread = receiver_thread;
  options.client_address.trusted = {*IpPrefix::Parse("127.0.0.1/32")};
  ClientLimitOptions limit;
  limit.rate = 1;  // one query per client, then over
  limit.burst = 1;
  limit.shed = false;
  options.clients = std::make_shared<ClientLimiter>(limit);
  LoopServerHarness h(
      [&](const ThreadContext&) {
        return std::make_unique<FunctionHandler>([&](Request& request) {
          seen.emplace_back(request.client().HostString(), request.peer().HostString());
          CHECK(ReplyEcho(request));
        });
      },
      options);
  auto exchange = [&](UdpClient& udp, const std::vector<uint8_t>& query) {
    REQUIRE(udp.Send(query));
    std::vector<uint8_t> reply = RunUntilReply(h.loop, udp);
    REQUIRE(IdOf(reply) == IdOf(query));
    return reply;
  };

  UdpClient udp(h.server->udp_address(), forwarder);
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
  UdpClient forged(h.server->udp_address(), stranger);
  CHECK(RcodeOf(exchange(forged, QueryFor(4, "10.0.0.9:1234"))) == dns::Rcode::kNoError);
  REQUIRE(seen.size() == 3);
  CHECK(seen[2] == std::pair<std::string, std::string>{"127.0.0.2", "127.0.0.2"});
  CHECK(limits::LimitHits(limits::Limit::kClientAddressUntrusted) == untrusted + 1);

  // Over TCP the forwarder's connection carries many clients: limited per client too.
  TcpClient tcp(h.server->tcp_address(), forwarder);
  REQUIRE(tcp.Send(QueryFor(5, "10.0.0.7:1234")));
  std::vector<uint8_t> reply = RunUntilReply(h.loop, tcp);
  CHECK(IdOf(reply) == 5);
  CHECK(RcodeOf(reply) == dns::Rcode::kRefused);
  CHECK(seen.size() == 3);
  h.Finish();
}

TEST_CASE("RRL limits a trusted forwarder's replies per client it names, REFUSED over it",
          "[server][client_address]") {
  LoopServer::Options options;
  options.client_address.trusted = {*IpPrefix::Parse("127.0.0.1/32")};
  ResponseRateOptions rrl;
  rrl.responses_per_second = 1;  // one identical response per netblock, then over
  rrl.slip = 0;                  // a client of its own would get nothing
  options.responses = std::make_shared<ResponseRateLimiter>(rrl);
  LoopServerHarness h(EchoFactory(), options);
  UdpClient udp(h.server->udp_address(), *loop::SocketAddress::Parse("127.0.0.1:0"));
  auto exchange = [&](const std::vector<uint8_t>& query) {
    REQUIRE(udp.Send(query));
    std::vector<uint8_t> reply = RunUntilReply(h.loop, udp);
    REQUIRE(IdOf(reply) == IdOf(query));
    return RcodeOf(reply);
  };
  const uint64_t limited = limits::LimitHits(limits::Limit::kResponseRate);
  CHECK(exchange(QueryFor(1, "10.0.0.7:1234")) == dns::Rcode::kNoError);
  // The same response again for the same netblock: over RRL, REFUSED rather than dropped,
  // so the forwarder does not take us for dead.
  CHECK(exchange(QueryFor(2, "10.0.0.7:1234")) == dns::Rcode::kRefused);
  CHECK(limits::LimitHits(limits::Limit::kResponseRate) == limited + 1);
  // Another netblock behind the same forwarder has its own.
  CHECK(exchange(QueryFor(3, "10.0.1.7:1234")) == dns::Rcode::kNoError);
  h.Finish();
}

}  // namespace
}  // namespace kdns::server::testing
