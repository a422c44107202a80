#include "common/server/query_gate.h"

#include <array>
#include <catch2/catch.hpp>
#include <vector>

#include "common/dns/query_testing.h"
#include "common/server/server_test_util.h"

namespace kdns::server {
namespace {

using dns::testing::QuerySpec;

loop::SocketAddress Peer(const char* text) { return *loop::SocketAddress::Parse(text); }

// A limiter of one query per second per client, each limited one answered TC.
std::unique_ptr<ClientLimiter> OnePerSecond() {
  ClientLimitOptions options;
  options.rate = 1;
  options.burst = 1;
  options.slip = 1;
  options.shed = false;
  return std::make_unique<ClientLimiter>(options);
}

struct Entered {
  QueryGate::Pass pass;
  Admission admission;
  size_t limited_size = 0;
  std::array<uint8_t, kMaxLimitedReplyBytes> limited{};
};

Entered Enter(const QueryGate& gate, std::span<const uint8_t> packet, dns::Transport transport,
              const char* peer) {
  Entered entered;
  entered.pass = gate.Enter(packet, transport, Peer(peer), 1'000'000'000, &entered.admission,
                            entered.limited, &entered.limited_size);
  return entered;
}

TEST_CASE("The gate admits a query and names its client", "[server][gate]") {
  const AdmissionPolicy admission;
  const ClientAddressPolicy client_address;
  const QueryGate gate(admission, client_address, nullptr, nullptr);
  const auto query = QuerySpec().Id(7).Bytes();
  const Entered entered = Enter(gate, query, dns::Transport::kUdp, "192.0.2.1:5353");
  CHECK(entered.pass == QueryGate::Pass::kHandle);
  CHECK(entered.admission.admitted());
  CHECK(entered.admission.client == Peer("192.0.2.1:5353"));
  CHECK(gate.NowNs() == 0);  // no limiter: no clock read
  // Without a response limiter every reply leaves as it is.
  const std::span<const uint8_t> reply =
      gate.Leave(entered.admission.client, false, query, gate.NowNs(), std::span<uint8_t>());
  CHECK(reply.data() == query.data());
  CHECK(reply.size() == query.size());
}

TEST_CASE("Over its rate a UDP client gets TC, a response nothing, and TCP is not limited",
          "[server][gate]") {
  const AdmissionPolicy admission;
  const ClientAddressPolicy client_address;
  const auto clients = OnePerSecond();
  const QueryGate gate(admission, client_address, clients.get(), nullptr);
  CHECK(gate.NowNs() != 0);
  const auto query = QuerySpec().Id(7).Bytes();
  REQUIRE(Enter(gate, query, dns::Transport::kUdp, "192.0.2.1:5353").pass ==
          QueryGate::Pass::kHandle);
  const Entered limited = Enter(gate, query, dns::Transport::kUdp, "192.0.2.1:5353");
  CHECK(limited.pass == QueryGate::Pass::kLimited);
  REQUIRE(limited.limited_size > 0);
  CHECK(testing::IdOf(limited.limited) == 7);
  CHECK((limited.limited[2] & 0x02) != 0);  // TC
  // A response is never answered: nothing is reflected.
  auto response = QuerySpec().Id(8).Bytes();
  response[2] |= 0x80;
  const Entered reflected = Enter(gate, response, dns::Transport::kUdp, "192.0.2.1:5353");
  CHECK(reflected.pass == QueryGate::Pass::kLimited);
  CHECK(reflected.limited_size == 0);
  // TCP is bounded by its connection caps instead.
  CHECK(Enter(gate, query, dns::Transport::kTcp, "192.0.2.1:5353").pass ==
        QueryGate::Pass::kHandle);
  // Another client is not held back by the first.
  CHECK(Enter(gate, query, dns::Transport::kUdp, "192.0.2.2:5353").pass ==
        QueryGate::Pass::kHandle);
}

}  // namespace
}  // namespace kdns::server
