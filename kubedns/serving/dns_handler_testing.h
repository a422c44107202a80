// Test helpers for kubedns's DNS path (dns_handler_test.cc, dns_handler_autopath_test.cc):
// queries as bytes, replies parsed, and DnsHandlers served on a LoopServer on the test's own
// loop, as KubednsServer serves them. Header-only; tests only; the loop's thread.
#pragma once

#include <catch2/catch.hpp>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/dns/builder.h"
#include "common/dns/message.h"
#include "common/dns/query_testing.h"
#include "common/dns/testing.h"
#include "common/loop/loop.h"
#include "common/loop/loop_test_util.h"
#include "common/server/loop_server.h"
#include "common/server/server_test_util.h"
#include "kubedns/answering/answerer.h"
#include "kubedns/serving/dns_handler.h"

namespace kdns::kubedns::testing {

struct Query {
  std::string name;
  dns::RrType type = dns::RrType::kA;
  uint16_t id = 0x4242;
  bool edns = true;
};

inline std::vector<uint8_t> Bytes(const Query& q) {
  dns::testing::QuerySpec spec(q.name);
  spec.Type(q.type).Id(q.id);
  if (q.edns) spec.Edns();
  return spec.Bytes();
}

inline dns::Message Parse(const std::vector<uint8_t>& bytes) {
  dns::Message message;
  REQUIRE(dns::ParseMessage(bytes, &message) == dns::ParseError::kOk);
  return message;
}

// DnsHandlers made from `shared`, with `routes` published to shared.routes, served on
// 127.0.0.1:0 (UDP and TCP) with kubedns's admission policy, `udp` (a receiver thread, say)
// and `tcp`; *handler points at the last one made. `shared` and `stats` must outlive the
// server.
inline std::unique_ptr<server::LoopServer> ServeDnsHandlers(
    loop::Loop& loop, DnsHandler::Shared& shared, std::shared_ptr<const UpstreamRoutes> routes,
    server::ThreadStats& stats, DnsHandler** handler, const server::UdpOptions& udp = {},
    const server::TcpOptions& tcp = {}) {
  server::LoopServer::Options options;
  options.address = *loop::SocketAddress::Parse("127.0.0.1:0");
  options.admission = kAdmissionPolicy;
  // kubedns's default --client-address-from: loopback's client-address option is believed.
  options.client_address.trusted = server::DefaultClientAddressPeers();
  options.udp = udp;
  options.tcp = tcp;
  shared.routes.Publish(std::move(routes));
  std::string error;
  auto server = server::LoopServer::Create(
      loop, options,
      [&shared, handler](const server::ThreadContext& context) {
        auto made = std::make_unique<DnsHandler>(context, shared);
        *handler = made.get();
        return made;
      },
      stats, &error);
  INFO(error);
  REQUIRE(server != nullptr);
  return server;
}

// Sends `query` over UDP to `server` and returns the parsed reply, running `loop` meanwhile.
inline dns::Message AskUdp(loop::Loop& loop, const loop::SocketAddress& server,
                           const std::vector<uint8_t>& query) {
  server::testing::UdpClient client(server);
  REQUIRE(client.Send(query));
  std::optional<std::vector<uint8_t>> reply;
  REQUIRE(loop::testing::RunUntil(loop, [&] { return (reply = client.TryReceive()).has_value(); }));
  return Parse(*reply);
}

}  // namespace kdns::kubedns::testing
