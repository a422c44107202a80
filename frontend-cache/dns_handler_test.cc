// DnsHandler driven by a LoopServer on loopback, with the shared state a FrontendServer
// would pass in; the forwarding paths are covered through the whole server
// (frontend_server_test.cc).
#include "frontend-cache/dns_handler.h"

#include <catch2/catch.hpp>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/dns/builder.h"
#include "common/dns/message.h"
#include "common/dns/testing.h"
#include "common/loop/loop_test_util.h"
#include "common/server/loop_server.h"
#include "common/server/server_test_util.h"
#include "frontend-cache/options.h"

namespace kdns::frontend {
namespace {

using dns::testing::N;
using loop::testing::RequireClosesClean;
using loop::testing::RunUntil;

std::vector<uint8_t> Query(const char* name, std::optional<uint8_t> edns_version = std::nullopt) {
  std::vector<uint8_t> buffer(512);
  dns::MessageBuilder builder(buffer);
  builder.header().id = 0x4242;
  builder.header().rd = true;
  REQUIRE(builder.AddQuestion(N(name), dns::RrType::kA, dns::RrClass::kIn) == dns::BuildError::kOk);
  if (edns_version) {
    dns::EdnsView edns;
    edns.version = *edns_version;
    REQUIRE(builder.SetEdns(edns) == dns::BuildError::kOk);
  }
  auto bytes = builder.Finish();
  return {bytes.begin(), bytes.end()};
}

// One DnsHandler on a LoopServer, routing `--server=/local.test/` locally and nothing else.
struct Harness {
  Harness()
      : cache(CacheOptions{}, clock),
        metrics(registry),
        table(std::make_shared<upstream::UpstreamTable>()),
        shared{cache, policy,  150, metrics, routing, table, upstream::Forwarder::Options{},
               clock, handlers} {
    std::vector<ServerOption> servers;
    std::string error;
    REQUIRE(ParseServersFile("server=/local.test/\n", &servers, &error));
    auto state = std::make_shared<RoutingState>();
    state->table = RoutingTable::Build(servers, {});
    routing.Publish(std::move(state));
    server::LoopServer::Options options;
    options.address = *loop::SocketAddress::Parse("127.0.0.1:0");
    server = server::LoopServer::Create(
        loop, options,
        [this](const server::ThreadContext& context) {
          return std::make_unique<DnsHandler>(context, shared);
        },
        stats, &error);
    INFO(error);
    REQUIRE(server != nullptr);
  }

  dns::Message Ask(const std::vector<uint8_t>& query) {
    server::testing::UdpClient client(server->udp_address());
    REQUIRE(client.Send(query));
    std::optional<std::vector<uint8_t>> reply;
    REQUIRE(RunUntil(loop, [&] { return (reply = client.TryReceive()).has_value(); }));
    dns::Message message;
    REQUIRE(dns::ParseMessage(*reply, &message) == dns::ParseError::kOk);
    return message;
  }
  bool Metric(const std::string& line) const {
    return registry.Render().find(line) != std::string::npos;
  }
  void Finish() {
    server.reset();
    RequireClosesClean(loop);
  }

  ManualClock clock{1'000'000};
  metrics::Registry registry;
  Cache cache;
  CachePolicy policy;
  FrontendMetrics metrics;
  SnapshotHolder<RoutingState> routing;
  std::shared_ptr<upstream::UpstreamTable> table;
  HandlerList handlers;
  DnsHandler::Shared shared;
  loop::Loop loop;
  server::ThreadStats stats;
  std::unique_ptr<server::LoopServer> server;
};

TEST_CASE("the handler answers the admission's refusals and counts them by their rcode",
          "[frontend][handler]") {
  Harness h;
  dns::Message badvers = h.Ask(Query("x.test.", 1));
  CHECK(badvers.rcode() == dns::Rcode::kBadVers);
  CHECK(badvers.header.ra);
  // BADVERS is not among the labelled rcodes: counted as "other", not as NOERROR.
  CHECK(h.Metric("kdns_frontend_queries_total{type=\"A\",rcode=\"other\"} 1"));
  CHECK_FALSE(h.Metric("kdns_frontend_queries_total{type=\"A\",rcode=\"NOERROR\"} 1"));
  std::vector<uint8_t> notimp = Query("x.test.");
  notimp[2] |= 2 << 3;  // opcode STATUS
  CHECK(h.Ask(notimp).rcode() == dns::Rcode::kNotImp);
  CHECK(h.Metric("kdns_frontend_queries_total{type=\"A\",rcode=\"NOTIMP\"} 1"));
  h.Finish();
}

TEST_CASE("local domains get NXDOMAIN with AA, names with no upstream REFUSED",
          "[frontend][handler]") {
  Harness h;
  dns::Message local = h.Ask(Query("a.local.test."));
  CHECK(local.rcode() == dns::Rcode::kNxDomain);
  CHECK(local.header.aa);
  CHECK(h.Ask(Query("elsewhere.test.")).rcode() == dns::Rcode::kRefused);
  CHECK(h.Metric("kdns_frontend_local_answers_total{kind=\"nxdomain\"} 1"));
  CHECK(h.Metric("kdns_frontend_local_answers_total{kind=\"refused\"} 1"));
  h.Finish();
}

TEST_CASE("the handler list knows the live handler and keeps a gone one's totals",
          "[frontend][handler]") {
  Harness h;
  CHECK(h.handlers.OnThisThread() != nullptr);  // the loop runs on this thread
  CHECK(h.handlers.Totals().requests == 0);
  h.Finish();
  CHECK(h.handlers.OnThisThread() == nullptr);
}

}  // namespace
}  // namespace kdns::frontend
