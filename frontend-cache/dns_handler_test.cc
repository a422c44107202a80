// DnsHandler driven by a LoopServer on loopback, with the shared state a FrontendServer
// would pass in; the forwarding paths are covered through the whole server
// (frontend_server_test.cc).
#include "frontend-cache/dns_handler.h"

#include <algorithm>
#include <catch2/catch.hpp>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/dns/builder.h"
#include "common/dns/message.h"
#include "common/dns/presentation.h"
#include "common/dns/query_testing.h"
#include "common/dns/testing.h"
#include "common/limits/limits.h"
#include "common/loop/loop_test_util.h"
#include "common/server/loop_server.h"
#include "common/server/server_test_util.h"
#include "common/upstream/testing.h"
#include "frontend-cache/options.h"

namespace kdns::frontend {
namespace {

using dns::testing::N;
using dns::testing::QuerySpec;
using loop::testing::RequireClosesClean;
using loop::testing::RunUntil;

// One DnsHandler on a LoopServer, routing `--server=/local.test/` locally and, after
// RouteTo, every other name to that upstream.
struct Harness {
  struct Setup {
    size_t forward_max = 150;
    size_t max_waiting = server::WaitingBudget::kDefaultMax;
    uint64_t tcp_query_timeout_ms = server::TcpOptions{}.query_timeout_ms;
  };

  Harness() : Harness(Setup{}) {}
  explicit Harness(const Setup& setup)
      : cache(CacheOptions{}, clock),
        metrics(registry),
        table(std::make_shared<upstream::UpstreamTable>()),
        shared{cache,
               policy,
               150,
               metrics,
               routing,
               table,
               ForwarderOptions(setup.forward_max),
               clock,
               handlers,
               forwarder_totals,
               std::make_shared<server::WaitingBudget>(setup.max_waiting),
               query_log,
               false,
               zone_serials,
               // 127.0.0.1 only, so a test can send from 127.0.0.2 as an untrusted pod.
               {*IpPrefix::Parse("127.0.0.1/32")}} {
    Route(std::nullopt);
    std::string error;
    server::LoopServer::Options options;
    options.address = *loop::SocketAddress::Parse("127.0.0.1:0");
    options.tcp.query_timeout_ms = setup.tcp_query_timeout_ms;
    server = server::LoopServer::Create(
        loop, options,
        [this](const server::ThreadContext& context) {
          return std::make_unique<DnsHandler>(context, shared);
        },
        stats, &error);
    INFO(error);
    REQUIRE(server != nullptr);
  }

  // Publishes the routing: local.test. locally, the rest to `upstream` (none: REFUSED);
  // `local` adds hosts-file entries and --address answers.
  void Route(std::optional<loop::SocketAddress> upstream,
             const LocalAnswersConfig& local = LocalAnswersConfig()) {
    std::string text = "server=/local.test/\n";
    if (upstream) text += "server=127.0.0.1#" + std::to_string(upstream->port()) + "\n";
    std::vector<ServerOption> servers;
    std::string error;
    REQUIRE(ParseServersFile(text, &servers, &error));
    auto state = std::make_shared<RoutingState>();
    state->table = RoutingTable::Build(servers, {});
    state->local = LocalAnswers(local);
    if (upstream) state->default_set = upstream::UpstreamSet{*upstream};
    routing.Publish(std::move(state));
  }

  static upstream::Forwarder::Options ForwarderOptions(size_t forward_max) {
    upstream::Forwarder::Options options;
    upstream::ForwardBudgets::Limits limits;
    limits.max_in_flight = forward_max;
    limits.max_per_route = forward_max;  // the ceiling is the one that counts here
    limits.max_per_upstream = forward_max;
    options.budgets = std::make_shared<upstream::ForwardBudgets>(limits);
    options.total_timeout_ms = 60'000;  // a silent upstream's queries wait for the whole test
    return options;
  }

  DnsHandler& handler() const {
    DnsHandler* handler = handlers.OnThisThread();  // the loop runs on this thread
    REQUIRE(handler != nullptr);
    return *handler;
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
  loop::Loop loop;
  metrics::Registry registry;
  Cache cache;
  CachePolicy policy;
  FrontendMetrics metrics;
  SnapshotHolder<RoutingState> routing;
  std::shared_ptr<upstream::UpstreamTable> table;
  HandlerList handlers;
  upstream::ForwarderTotals forwarder_totals;
  std::vector<std::string> log_lines;
  server::QueryLog query_log{{server::QueryLogOptions::Detail::kBasic, 0, 1},
                             clock,
                             [this](std::string_view line) { log_lines.emplace_back(line); }};
  ZoneSerials zone_serials{cache, {N("cluster.test.")}};
  DnsHandler::Shared shared;
  server::ThreadStats stats;
  std::unique_ptr<server::LoopServer> server;
};

TEST_CASE("the handler answers the admission's refusals and counts them by their rcode",
          "[frontend][handler]") {
  Harness h;
  dns::Message badvers = h.Ask(QuerySpec("x.test.").Edns().EdnsVersion(1).Bytes());
  CHECK(badvers.rcode() == dns::Rcode::kBadVers);
  CHECK(badvers.header.ra);
  // BADVERS is not among the labelled rcodes: counted as "other", not as NOERROR.
  CHECK(h.Metric("kdns_frontend_queries_total{type=\"A\",rcode=\"other\"} 1"));
  CHECK_FALSE(h.Metric("kdns_frontend_queries_total{type=\"A\",rcode=\"NOERROR\"} 1"));
  std::vector<uint8_t> notimp = QuerySpec("x.test.").Bytes();
  notimp[2] |= 2 << 3;  // opcode STATUS
  CHECK(h.Ask(notimp).rcode() == dns::Rcode::kNotImp);
  CHECK(h.Metric("kdns_frontend_queries_total{type=\"A\",rcode=\"NOTIMP\"} 1"));
  h.Finish();
}

// Caches, as the reply to `name`'s A question, what `fill` writes after the question.
void CacheReply(Cache& cache, const char* name,
                const std::function<void(dns::MessageBuilder&)>& fill) {
  std::vector<uint8_t> query_bytes = QuerySpec(name).Bytes();
  dns::Query query;
  REQUIRE(dns::ParseQuery(query_bytes, &query) == dns::ParseError::kOk);
  std::vector<uint8_t> buffer(512);
  dns::MessageBuilder builder(buffer);
  REQUIRE(builder.StartResponse(query) == dns::BuildError::kOk);
  fill(builder);
  REQUIRE(cache.Insert(CacheKey::FromQuery(query), builder.Finish()).result ==
          InsertResult::kInserted);
}

// An NXDOMAIN for `name` with an SOA of `zone`, as kubedns answers, cached as a reply to
// the A question.
void CacheNxDomain(Cache& cache, const char* name, const char* zone) {
  CacheReply(cache, name, [zone](dns::MessageBuilder& builder) {
    builder.header().rcode = dns::Rcode::kNxDomain;
    REQUIRE(builder.AddRecord(
                dns::Section::kAuthority,
                dns::testing::RR(std::string(zone) + " 60 IN SOA ns.dns." + zone + " hostmaster." +
                                 zone + " 7 28800 7200 604800 60")) == dns::BuildError::kOk);
  });
}

// A reply for `name` with three addresses, cached as a reply to its A question.
void CacheThreeAddresses(Cache& cache, const char* name) {
  CacheReply(cache, name, [name](dns::MessageBuilder& builder) {
    for (const char* address : {"10.0.0.1", "10.0.0.2", "10.0.0.3"}) {
      REQUIRE(builder.AddRecord(dns::Section::kAnswer,
                                dns::testing::RR(std::string(name) + " 60 IN A " + address)) ==
              dns::BuildError::kOk);
    }
  });
}

TEST_CASE("cache hits take turns at the first address under round_robin, never when off",
          "[frontend][handler][loadbalance]") {
  const dns::LoadBalance mode = GENERATE(dns::LoadBalance::kRoundRobin, dns::LoadBalance::kOff);
  Harness h;
  h.shared.loadbalance = mode;
  auto upstream = std::make_unique<upstream::testing::FakeUpstream>(h.loop, 7);
  h.Route(upstream->address());
  CacheThreeAddresses(h.cache, "lb.test.");
  std::vector<std::string> firsts;
  for (int i = 0; i < 3; ++i) {
    const dns::Message reply = h.Ask(QuerySpec("lb.test.").Bytes());
    REQUIRE(reply.answers.size() == 3);
    firsts.push_back(dns::RdataToText(reply.answers[0].rdata));
  }
  CHECK(h.cache.Stats().hits == 3);
  std::sort(firsts.begin(), firsts.end());
  if (mode == dns::LoadBalance::kRoundRobin) {
    CHECK(firsts == std::vector<std::string>{"10.0.0.1", "10.0.0.2", "10.0.0.3"});
  } else {
    CHECK(firsts == std::vector<std::string>{"10.0.0.1", "10.0.0.1", "10.0.0.1"});
  }
  h.server.reset();
  upstream.reset();
  RequireClosesClean(h.loop);
}

TEST_CASE("hosts-file answers take turns at the first address under round_robin, never when off",
          "[frontend][handler][loadbalance]") {
  const dns::LoadBalance mode = GENERATE(dns::LoadBalance::kRoundRobin, dns::LoadBalance::kOff);
  Harness h;
  h.shared.loadbalance = mode;
  LocalAnswersConfig local;
  for (const char* ip : {"10.0.1.1", "10.0.1.2", "10.0.1.3"}) {
    local.hosts.push_back(HostsEntry{*IpAddress::Parse(ip), {N("web.hosts.test.")}});
  }
  h.Route(std::nullopt, local);
  std::vector<std::string> firsts;
  for (int i = 0; i < 3; ++i) {
    const dns::Message reply = h.Ask(QuerySpec("web.hosts.test.").Bytes());
    REQUIRE(reply.answers.size() == 3);
    firsts.push_back(dns::RdataToText(reply.answers[0].rdata));
  }
  std::sort(firsts.begin(), firsts.end());
  if (mode == dns::LoadBalance::kRoundRobin) {
    CHECK(firsts == std::vector<std::string>{"10.0.1.1", "10.0.1.2", "10.0.1.3"});
  } else {
    CHECK(firsts == std::vector<std::string>{"10.0.1.1", "10.0.1.1", "10.0.1.1"});
  }
  h.server.reset();
  RequireClosesClean(h.loop);
}

std::vector<uint8_t> Notify(const char* zone) {
  std::vector<uint8_t> buffer(512);
  dns::MessageBuilder builder(buffer);
  builder.header().id = 0x5151;
  builder.header().opcode = dns::Opcode::kNotify;
  builder.header().aa = true;
  REQUIRE(builder.AddQuestion(N(zone), dns::RrType::kSoa, dns::RrClass::kIn) ==
          dns::BuildError::kOk);
  auto bytes = builder.Finish();
  return {bytes.begin(), bytes.end()};
}

TEST_CASE("a NOTIFY from loopback drops the zone's negative answers, from elsewhere nothing",
          "[frontend][handler][notify]") {
  Harness h;
  CacheNxDomain(h.cache, "missing.ns.svc.cluster.test.", "cluster.test.");
  CacheNxDomain(h.cache, "missing.example.test.", "example.test.");
  REQUIRE(h.cache.negatives() == 2);

  SECTION("another address than --notify-from's: REFUSED, counted, nothing dropped") {
    const uint64_t before = limits::LimitHits(limits::Limit::kNotifyUntrusted);
    server::testing::UdpClient stranger(h.server->udp_address(),
                                        *loop::SocketAddress::Parse("127.0.0.2:0"));
    REQUIRE(stranger.Send(Notify("cluster.test.")));
    std::optional<std::vector<uint8_t>> reply;
    REQUIRE(RunUntil(h.loop, [&] { return (reply = stranger.TryReceive()).has_value(); }));
    dns::Message refused;
    REQUIRE(dns::ParseMessage(*reply, &refused) == dns::ParseError::kOk);
    CHECK(refused.rcode() == dns::Rcode::kRefused);
    CHECK(limits::LimitHits(limits::Limit::kNotifyUntrusted) == before + 1);
    CHECK(h.cache.negatives() == 2);
    CHECK(h.zone_serials.notifies() == 0);
  }
  SECTION("from loopback: NOERROR with AA, and only that zone's negatives go") {
    dns::Message reply = h.Ask(Notify("Cluster.Test."));
    CHECK(reply.rcode() == dns::Rcode::kNoError);
    CHECK(reply.header.qr);
    CHECK(reply.header.aa);
    CHECK(reply.header.opcode == dns::Opcode::kNotify);
    CHECK(reply.header.id == 0x5151);
    CHECK(h.cache.negatives() == 1);
    CHECK(h.zone_serials.notifies() == 1);
    CHECK(h.zone_serials.dropped() == 1);
  }
  SECTION("a NOTIFY whose question is not an SOA is malformed") {
    std::vector<uint8_t> notify = Notify("cluster.test.");
    notify[notify.size() - 3] = 1;  // QTYPE A
    CHECK(h.Ask(notify).rcode() == dns::Rcode::kFormErr);
    CHECK(h.cache.negatives() == 2);
  }
  h.Finish();
}

TEST_CASE("local domains get NXDOMAIN with AA, names with no upstream REFUSED",
          "[frontend][handler]") {
  Harness h;
  dns::Message local = h.Ask(QuerySpec("a.local.test.").Bytes());
  CHECK(local.rcode() == dns::Rcode::kNxDomain);
  CHECK(local.header.aa);
  CHECK(h.Ask(QuerySpec("elsewhere.test.").Bytes()).rcode() == dns::Rcode::kRefused);
  CHECK(h.Metric("kdns_frontend_local_answers_total{kind=\"nxdomain\"} 1"));
  CHECK(h.Metric("kdns_frontend_local_answers_total{kind=\"refused\"} 1"));
  h.Finish();
}

TEST_CASE("the handler list knows the live handler and keeps a gone one's totals",
          "[frontend][handler]") {
  Harness h;
  CHECK(h.handlers.OnThisThread() != nullptr);  // the loop runs on this thread
  CHECK(h.forwarder_totals.Sum().requests == 0);
  h.Finish();
  CHECK(h.handlers.OnThisThread() == nullptr);
}

// A harness whose upstream answered "cached.test." once (TTL 60, now expired), then fell
// silent; "hold.test." waits for it.
struct OneWaiting {
  explicit OneWaiting(const Harness::Setup& setup)
      : h(setup), upstream(std::make_unique<upstream::testing::FakeUpstream>(h.loop, 7)) {
    h.Route(upstream->address());
    REQUIRE(h.Ask(QuerySpec("cached.test.").Bytes()).answers.size() == 1);
    h.clock.AdvanceMs(61'000);
    upstream->set_behaviour(upstream::testing::Behaviour::kSilent);
    REQUIRE(holder.Send(QuerySpec("hold.test.").Bytes()));
    REQUIRE(RunUntil(h.loop, [&] { return h.handler().waiting() == 1; }));
  }
  ~OneWaiting() {
    h.server.reset();
    upstream.reset();
    RequireClosesClean(h.loop);
  }

  Harness h;
  std::unique_ptr<upstream::testing::FakeUpstream> upstream;
  server::testing::UdpClient holder{h.server->udp_address()};
};

TEST_CASE(
    "over the forwarder's budget a miss is answered at once: stale if cached, else "
    "SERVFAIL",
    "[frontend][handler][waiting]") {
  OneWaiting w(Harness::Setup{.forward_max = 1});
  REQUIRE(w.h.handler().forwarder().in_flight() == 1);
  dns::Message stale = w.h.Ask(QuerySpec("cached.test.").Bytes());
  CHECK(stale.rcode() == dns::Rcode::kNoError);
  REQUIRE(stale.answers.size() == 1);
  CHECK(stale.answers[0].ttl_s == 30);  // RFC 8767 §4
  CHECK(w.h.cache.Stats().stale_hits == 1);
  CHECK(w.h.Ask(QuerySpec("never-seen.test.").Bytes()).rcode() == dns::Rcode::kServFail);
  CHECK(w.h.Metric("kdns_frontend_servfail_total{reason=\"overloaded\"} 1"));
  CHECK(w.h.handler().waiting() == 1);  // only the first still waits
}

TEST_CASE(
    "a client holding its share of the route's reserve is answered at once: stale if cached, "
    "else SERVFAIL",
    "[frontend][handler][client_share]") {
  // A route of 10 slots keeps its last one for clients holding less than the average.
  OneWaiting w(Harness::Setup{.forward_max = 10});
  upstream::InFlightBudget& route =
      w.h.shared.forwarder.budgets->Route(upstream::UpstreamSet{w.upstream->address()});
  const upstream::ClientTag client =
      upstream::ClientTagOf(*loop::SocketAddress::Parse("127.0.0.1:1"));
  for (int i = 0; i < 8; ++i) {
    REQUIRE(w.holder.Send(QuerySpec("hold" + std::to_string(i) + ".test.").Bytes()));
  }
  REQUIRE(RunUntil(w.h.loop, [&] { return route.HeldBy(client) == 9; }));
  const uint64_t hits_before = limits::LimitHits(limits::Limit::kRouteClientShare);
  dns::Message stale = w.h.Ask(QuerySpec("cached.test.").Bytes());  // from 127.0.0.1 too
  CHECK(stale.rcode() == dns::Rcode::kNoError);
  REQUIRE(stale.answers.size() == 1);
  CHECK(stale.answers[0].ttl_s == 30);
  CHECK(w.h.Ask(QuerySpec("never-seen.test.").Bytes()).rcode() == dns::Rcode::kServFail);
  CHECK(w.h.Metric("kdns_frontend_servfail_total{reason=\"overloaded\"} 1"));
  CHECK(limits::LimitHits(limits::Limit::kRouteClientShare) == hits_before + 2);
  CHECK(route.in_flight() == 9);  // the last slot is still free for another client
}

TEST_CASE(
    "over the budget of waiting queries a miss is answered at once: stale if cached, "
    "else SERVFAIL",
    "[frontend][handler][waiting]") {
  OneWaiting w(Harness::Setup{.max_waiting = 1});
  const uint64_t hits_before = limits::LimitHits(limits::Limit::kWaitingQueries);
  dns::Message stale = w.h.Ask(QuerySpec("cached.test.").Bytes());
  CHECK(stale.rcode() == dns::Rcode::kNoError);
  REQUIRE(stale.answers.size() == 1);
  CHECK(stale.answers[0].ttl_s == 30);
  CHECK(w.h.Ask(QuerySpec("never-seen.test.").Bytes()).rcode() == dns::Rcode::kServFail);
  CHECK(limits::LimitHits(limits::Limit::kWaitingQueries) == hits_before + 2);
  CHECK(w.h.handler().forwarder().counters().requests == 2);  // neither was forwarded
  CHECK(w.h.shared.waiting->waiting() == 1);
}

TEST_CASE(
    "frontend-cache drops a closed TCP client's waiting queries at once, their slots given back",
    "[frontend][handler][waiting]") {
  OneWaiting w(Harness::Setup{});
  {
    server::testing::TcpClient tcp(w.h.server->tcp_address());
    for (const char* name : {"a.test.", "b.test.", "c.test."})
      REQUIRE(tcp.Send(QuerySpec(name).Bytes()));
    REQUIRE(RunUntil(w.h.loop, [&] { return w.h.handler().waiting() == 4; }));
    CHECK(w.h.shared.waiting->waiting() == 4);
    tcp.Reset();  // gone: a half-close (FIN) would still be answered (RFC 7766)
  }
  REQUIRE(RunUntil(w.h.loop, [&] { return w.h.handler().waiting() == 1; }));
  CHECK(w.h.shared.waiting->waiting() == 1);  // the UDP query still waits
}

TEST_CASE(
    "at the TCP query timeout a TCP client's waiting misses are answered: stale if cached, "
    "else SERVFAIL",
    "[frontend][handler][waiting]") {
  OneWaiting w(Harness::Setup{.tcp_query_timeout_ms = 100});
  server::testing::TcpClient tcp(w.h.server->tcp_address());
  REQUIRE(tcp.Send(QuerySpec("cached.test.").Bytes()));
  REQUIRE(tcp.Send(QuerySpec("never-seen.test.").Bytes()));
  std::vector<dns::Rcode> rcodes;
  REQUIRE(RunUntil(w.h.loop, [&] {
    if (auto reply = tcp.TryReceive()) {
      dns::Message message;
      REQUIRE(dns::ParseMessage(*reply, &message) == dns::ParseError::kOk);
      rcodes.push_back(message.rcode());
    }
    return rcodes.size() == 2;
  }));
  CHECK(std::count(rcodes.begin(), rcodes.end(), dns::Rcode::kNoError) == 1);  // the stale one
  CHECK(std::count(rcodes.begin(), rcodes.end(), dns::Rcode::kServFail) == 1);
  CHECK(w.h.cache.Stats().stale_hits == 1);
  CHECK(w.h.handler().waiting() == 1);  // the UDP query still waits: it has no such timeout
  CHECK(w.h.shared.waiting->waiting() == 1);
  CHECK_FALSE(tcp.closed());
}

}  // namespace
}  // namespace kdns::frontend

namespace kdns::frontend {
namespace {

TEST_CASE("local answers come before the routing and are logged as local", "[frontend][handler]") {
  Harness h;
  Options options;
  options.local_ttl_s = 9;
  options.addresses.push_back(AddressOption{{N("local.test")}, {*IpAddress::Parse("192.0.2.7")}});
  auto state = std::make_shared<RoutingState>(*h.routing.Current());
  state->local = LocalAnswers(LocalAnswersConfig::From(options, {}));
  h.routing.Publish(std::move(state));
  // --address for a name under the local-only --server=/local.test/: the address wins, as
  // the rule is as specific as the route.
  dns::Message answer = h.Ask(QuerySpec("www.local.test.").Bytes());
  CHECK(answer.rcode() == dns::Rcode::kNoError);
  CHECK(answer.header.aa);
  REQUIRE(answer.answers.size() == 1);
  CHECK(answer.answers[0].ttl_s == 9);
  CHECK(h.Metric("kdns_frontend_local_answers_total{kind=\"address\"} 1"));
  REQUIRE(h.log_lines.size() == 1);
  CHECK(h.log_lines[0].starts_with("query client=127.0.0.1#"));
  CHECK(h.log_lines[0].find(" name=www.local.test. type=A rcode=NOERROR source=local ") !=
        std::string::npos);
  // Another type is routed as before: local-only, NXDOMAIN.
  std::vector<uint8_t> mx = QuerySpec("www.local.test.").Bytes();
  mx[mx.size() - 3] = static_cast<uint8_t>(dns::RrType::kMx);
  CHECK(h.Ask(mx).rcode() == dns::Rcode::kNxDomain);
  CHECK(h.log_lines.size() == 2);
  h.Finish();
}

}  // namespace
}  // namespace kdns::frontend
