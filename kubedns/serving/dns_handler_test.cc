#include "kubedns/serving/dns_handler.h"

#include <sys/socket.h>

#include <catch2/catch.hpp>
#include <functional>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "common/dns/builder.h"
#include "common/dns/message.h"
#include "common/dns/presentation.h"
#include "common/dns/query_testing.h"
#include "common/dns/testing.h"
#include "common/k8s/decode.h"
#include "common/limits/limits.h"
#include "common/loop/loop.h"
#include "common/loop/loop_test_util.h"
#include "common/metrics/text_parser.h"
#include "common/server/loop_server.h"
#include "common/server/server_test_util.h"
#include "common/upstream/testing.h"
#include "kubedns/serving/dns_handler_testing.h"

namespace kdns::kubedns {
namespace {

using dns::testing::N;
using dns::testing::QuerySpec;
using namespace kubedns::testing;
using loop::testing::RunUntil;
using server::testing::RunUntilReply;
using upstream::testing::Behaviour;
using upstream::testing::FakeUpstream;

std::shared_ptr<const Snapshot> TestSnapshot() {
  // many.default: 40 ready endpoints, 40 A records (over 512 bytes without EDNS).
  std::string endpoints;
  for (int i = 1; i <= 40; ++i) {
    if (!endpoints.empty()) endpoints += ",";
    endpoints += R"({"addresses":["10.244.0.)" + std::to_string(i) + R"("]})";
  }
  const std::string many_slice =
      R"({"metadata":{"name":"many-1","namespace":"default",)"
      R"("labels":{"kubernetes.io/service-name":"many"}},"addressType":"IPv4","endpoints":[)" +
      endpoints + "]}";
  return SyncedRecords({R"({"metadata":{"name":"kubernetes","namespace":"default"},
                            "spec":{"clusterIP":"10.96.0.1","clusterIPs":["10.96.0.1"]}})",
                        R"({"metadata":{"name":"ext","namespace":"default"},
                            "spec":{"type":"ExternalName","externalName":"www.example.com"}})",
                        R"({"metadata":{"name":"stubby","namespace":"default"},
                            "spec":{"type":"ExternalName","externalName":"host.acme.local"}})",
                        R"({"metadata":{"name":"many","namespace":"default"},
                            "spec":{"clusterIP":"None","clusterIPs":["None"]}})"},
                       {many_slice});
}

// kubedns's DNS path on the test's own loop (DnsHandlerFixture) with two fake upstreams, and
// routes the test sets.
class Fixture : public DnsHandlerFixture {
 public:
  Fixture()
      : DnsHandlerFixture(TestSnapshot()),
        a(std::make_unique<FakeUpstream>(loop, 1)),
        b(std::make_unique<FakeUpstream>(loop, 2)) {}
  ~Fixture() { StopServing(); }

  // Starts serving with `routes` (and `udp`'s receiver thread, say).
  void Serve(const std::shared_ptr<const UpstreamRoutes>& routes, size_t forward_max = 150,
             const server::UdpOptions& udp = {}) {
    forwarder_options().budgets =
        std::make_shared<upstream::ForwardBudgets>(upstream::ForwardBudgets::Limits{forward_max});
    DnsHandlerFixture::Serve(routes, udp);
  }

  // Routes: stub acme.local. to b (when `stub`), everything else to a.
  std::shared_ptr<const UpstreamRoutes> Routes(bool stub = true) const {
    std::vector<UpstreamRoute> stubs;
    if (stub) stubs.push_back({N("acme.local."), RouteKind::kStub, {b->address()}});
    return std::make_shared<const UpstreamRoutes>(
        std::move(stubs), upstream::UpstreamSet{a->address()}, DefaultSource::kFlag);
  }

  // Tries of a second, two in all: an upstream that answers after 200 ms is waited for.
  void SlowTries() {
    forwarder_options().min_try_timeout_ms = 1000;
    forwarder_options().max_try_timeout_ms = 1000;
    forwarder_options().total_timeout_ms = 2000;
  }

  // Serves Routes() with `max_waiting` waiting queries and a silent default upstream, whose
  // queries wait (a minute in all) until the test ends.
  void ServeWithSilentUpstream(size_t max_waiting) {
    forwarder_options().total_timeout_ms = 60'000;
    SetWaitingBudget(max_waiting);
    Serve(Routes());
    a->set_behaviour(Behaviour::kSilent);
  }

  // Sends `first` from one client and, once `first_waits`, `second` from another: `second`
  // is answered SERVFAIL at once while `first` still waits for its (slow) upstream, which
  // then answers it.
  void RequireSecondRefusedWhileFirstWaits(const QuerySpec& first, const QuerySpec& second,
                                           const std::function<bool()>& first_waits) {
    server::testing::UdpClient first_client(udp_address());
    server::testing::UdpClient second_client(udp_address());
    REQUIRE(first_client.Send(first.Bytes()));
    REQUIRE(RunUntil(loop, first_waits));
    const std::vector<uint8_t> second_bytes = second.Bytes();
    REQUIRE(second_client.Send(second_bytes));
    std::optional<std::vector<uint8_t>> first_reply;
    std::optional<std::vector<uint8_t>> second_reply;
    REQUIRE(
        RunUntil(loop, [&] { return (second_reply = second_client.TryReceive()).has_value(); }));
    CHECK_FALSE(first_client.TryReceive().has_value());  // still waiting for the slow upstream
    CHECK(Parse(*second_reply).rcode() == dns::Rcode::kServFail);
    CHECK(Parse(*second_reply).header.id == server::testing::IdOf(second_bytes));
    REQUIRE(RunUntil(loop, [&] { return (first_reply = first_client.TryReceive()).has_value(); }));
    CHECK(Parse(*first_reply).rcode() == dns::Rcode::kNoError);
  }

  dns::Message AskTcp(const QuerySpec& query) {
    server::testing::TcpClient client(tcp_address());
    REQUIRE(client.Send(query.Bytes()));
    std::vector<uint8_t> reply = RunUntilReply(loop, client);
    return Parse(reply);
  }

  std::unique_ptr<FakeUpstream> a;
  std::unique_ptr<FakeUpstream> b;
};

bool IsA(const dns::ResourceRecord& record, uint8_t tag) {
  const auto* a = std::get_if<dns::RdataA>(&record.rdata);
  return a != nullptr && a->address == FakeUpstream::A(192, 0, 2, tag).address;
}

}  // namespace

TEST_CASE("a name outside the cluster is forwarded and answered with the client's ID and case",
          "[kubedns][handler]") {
  Fixture f;
  f.Serve(f.Routes());
  for (bool edns : {true, false}) {
    CAPTURE(edns);
    QuerySpec query("WwW.Example.COM.");
    if (edns) query.Edns();
    dns::Message reply = f.Ask(query);
    CHECK(reply.header.id == 0x4242);
    CHECK(reply.rcode() == dns::Rcode::kNoError);
    REQUIRE(reply.questions.size() == 1);
    CHECK(reply.questions[0].name.IdenticalTo(N("WwW.Example.COM.")));
    REQUIRE(reply.answers.size() == 1);
    CHECK(IsA(reply.answers[0], 1));
    CHECK(reply.edns.has_value() == edns);  // the upstream's OPT is not passed to a client
  }
  CHECK(f.a->queries().size() == 2);
  CHECK(f.b->queries().empty());
  CHECK(f.Metric(R"(skydns_skydns_dns_request_count_total{system="recursive"})") == 2);
  CHECK(f.Metric(R"(kdns_kubedns_forward_queries_total{route="default",kind="forward"})") == 2);
  CHECK(f.Metric("kdns_kubedns_forward_duration_seconds_count") == 2);
  CHECK(f.Metric("kdns_kubedns_forward_in_flight") == 0);
  CHECK(f.Metric(R"(kdns_kubedns_upstream_queries_total{upstream=")" +
                 upstream::FormatUpstreamAddress(f.a->address()) + R"("})") >= 1);
}

TEST_CASE("a forwarded query never carries the client-address option it came with",
          "[kubedns][handler][client_address]") {
  Fixture f;
  f.Serve(f.Routes());
  std::vector<uint8_t> option(dns::kMaxClientAddressOptionBytes);
  option.resize(dns::WriteClientAddressOption({*IpAddress::Parse("10.0.0.7"), 1234},
                                              dns::kDefaultClientAddressOption, option));
  dns::Message reply =
      AskUdp(f.loop, f.udp_address(),
             dns::testing::QuerySpec("www.example.com.").Edns().EdnsOptions(option).Bytes());
  CHECK(reply.rcode() == dns::Rcode::kNoError);
  REQUIRE(f.a->queries().size() == 1);
  REQUIRE(f.a->queries()[0].message.edns.has_value());
  CHECK(f.a->queries()[0].message.edns->options.empty());
}

TEST_CASE("cluster names are answered locally; unknown reverse names are forwarded",
          "[kubedns][handler]") {
  Fixture f;
  f.Serve(f.Routes());
  CHECK(f.Ask(QuerySpec("nope.default.svc.cluster.local.").Edns()).rcode() ==
        dns::Rcode::kNxDomain);
  CHECK(f.Ask(QuerySpec("kubernetes.default.svc.cluster.local.").Edns()).answers.size() == 1);
  dns::Message known = f.Ask(QuerySpec("1.0.96.10.in-addr.arpa.").Type(dns::RrType::kPtr).Edns());
  CHECK(known.header.aa);
  REQUIRE(known.answers.size() == 1);
  CHECK(known.answers[0].type == dns::RrType::kPtr);
  CHECK(f.a->queries().empty());

  dns::Message unknown = f.Ask(QuerySpec("9.9.9.9.in-addr.arpa.").Type(dns::RrType::kPtr).Edns());
  CHECK(unknown.rcode() == dns::Rcode::kNoError);
  CHECK_FALSE(unknown.header.aa);
  REQUIRE(f.a->queries().size() == 1);
  CHECK(f.a->queries()[0].message.questions[0].name == N("9.9.9.9.in-addr.arpa."));
  CHECK(f.Metric(R"(skydns_skydns_dns_request_count_total{system="reverse"})") == 2);
  CHECK(f.Metric(R"(skydns_skydns_dns_request_count_total{system="auth"})") == 2);
  CHECK(f.Metric(R"(skydns_skydns_dns_request_count_total{system="recursive"})") == 0);
}

TEST_CASE("round_robin rotates a headless service's addresses per answer, off keeps their order",
          "[kubedns][handler][loadbalance]") {
  const dns::LoadBalance mode = GENERATE(dns::LoadBalance::kRoundRobin, dns::LoadBalance::kOff);
  server::UdpOptions udp;
  udp.receiver_thread = GENERATE(false, true);
  Fixture f;
  f.SetLoadBalance(mode);
  f.Serve(f.Routes(), 150, udp);
  std::set<std::string> firsts;
  for (int i = 0; i < 3; ++i) {
    const dns::Message reply = f.Ask(QuerySpec("many.default.svc.cluster.local.").Edns());
    REQUIRE(reply.answers.size() == 40);
    std::set<std::string> addresses;
    for (const auto& record : reply.answers) addresses.insert(dns::RdataToText(record.rdata));
    CHECK(addresses.size() == 40);  // every record still there
    firsts.insert(dns::RdataToText(reply.answers[0].rdata));
  }
  CHECK(firsts.size() == (mode == dns::LoadBalance::kRoundRobin ? 3 : 1));
}

TEST_CASE(
    "with a receiver thread, the records' answers leave from it and everything else from the "
    "loop, each counted once",
    "[kubedns][handler]") {
  Fixture f;
  server::UdpOptions udp;
  udp.receiver_thread = true;
  f.Serve(f.Routes(), 150, udp);
  CHECK(f.Ask(QuerySpec("KUBERNETES.default.svc.cluster.local.").Edns()).answers.size() == 1);
  CHECK(f.Ask(QuerySpec("nope.default.svc.cluster.local.").Edns()).rcode() ==
        dns::Rcode::kNxDomain);
  CHECK(f.Ask(QuerySpec("1.0.96.10.in-addr.arpa.").Type(dns::RrType::kPtr).Edns()).answers.size() ==
        1);
  CHECK(f.stats().udp_fast_answers == 3);
  CHECK(f.a->queries().empty());

  // Forwarded, and an ExternalName chased through an upstream: declined by the receiver
  // thread, answered from the loop.
  dns::Message forwarded = f.Ask(QuerySpec("WwW.Example.COM.").Edns());
  REQUIRE(forwarded.answers.size() == 1);
  CHECK(IsA(forwarded.answers[0], 1));
  CHECK(forwarded.questions[0].name.IdenticalTo(N("WwW.Example.COM.")));
  dns::Message chased = f.Ask(QuerySpec("ext.default.svc.cluster.local.").Edns());
  CHECK(chased.rcode() == dns::Rcode::kNoError);
  REQUIRE(chased.answers.size() == 2);
  CHECK(chased.answers[0].type == dns::RrType::kCname);
  CHECK(IsA(chased.answers[1], 1));
  CHECK(f.stats().udp_fast_answers == 3);
  CHECK(f.a->queries().size() == 2);

  // Every query counted once, where it was answered.
  CHECK(f.Metric(R"(skydns_skydns_dns_request_count_total{system="auth"})") == 3);
  CHECK(f.Metric(R"(skydns_skydns_dns_request_count_total{system="reverse"})") == 1);
  CHECK(f.Metric(R"(skydns_skydns_dns_request_count_total{system="recursive"})") == 1);
  CHECK(f.Metric(R"(kdns_kubedns_queries_total{type="A",rcode="NXDOMAIN"})") == 1);
  CHECK(f.Metric("kdns_kubedns_forward_in_flight") == 0);

  SECTION("an answer over the client's size leaves from the receiver thread cut, with TC") {
    dns::Message cut = f.Ask(QuerySpec("many.default.svc.cluster.local.").Id(7));
    CHECK(cut.header.tc);
    CHECK(cut.answers.size() < 40);
    CHECK(f.stats().udp_fast_answers == 4);
    CHECK(f.Metric("kdns_kubedns_truncated_total") == 1);
    CHECK(f.AskTcp(QuerySpec("many.default.svc.cluster.local.").Edns()).answers.size() == 40);
  }
}

TEST_CASE("stub domains go to their servers; new routes apply to new queries",
          "[kubedns][handler]") {
  Fixture f;
  f.Serve(f.Routes());
  dns::Message stub = f.Ask(QuerySpec("Host.ACME.local.").Edns());
  REQUIRE(stub.answers.size() == 1);
  CHECK(IsA(stub.answers[0], 2));
  dns::Message other = f.Ask(QuerySpec("host.acme.example.").Edns());
  REQUIRE(other.answers.size() == 1);
  CHECK(IsA(other.answers[0], 1));
  CHECK(f.Metric(R"(kdns_kubedns_forward_queries_total{route="stub",kind="forward"})") == 1);

  f.PublishRoutes(f.Routes(/*stub=*/false));
  dns::Message now_default = f.Ask(QuerySpec("other.acme.local.").Edns());
  REQUIRE(now_default.answers.size() == 1);
  CHECK(IsA(now_default.answers[0], 1));
  CHECK(f.b->queries().size() == 1);
}

TEST_CASE("TCP clients are forwarded over TCP", "[kubedns][handler]") {
  Fixture f;
  f.Serve(f.Routes());
  dns::Message reply = f.AskTcp(QuerySpec("www.example.com.").Id(7).Edns());
  CHECK(reply.header.id == 7);
  REQUIRE(reply.answers.size() == 1);
  CHECK(f.a->CountQueries(dns::Transport::kTcp) == 1);
  CHECK(f.a->CountQueries(dns::Transport::kUdp) == 0);
}

TEST_CASE("an ExternalName target outside the zone is chased through the upstreams",
          "[kubedns][handler]") {
  Fixture f;
  f.Serve(f.Routes());
  dns::Message reply = f.Ask(QuerySpec("Ext.default.svc.cluster.local.").Id(99).Edns());
  CHECK(reply.header.id == 99);
  CHECK(reply.rcode() == dns::Rcode::kNoError);
  CHECK(reply.header.aa);
  CHECK(reply.questions[0].name.IdenticalTo(N("Ext.default.svc.cluster.local.")));
  REQUIRE(reply.answers.size() == 2);
  CHECK(reply.answers[0].type == dns::RrType::kCname);
  CHECK(reply.answers[0].owner.IdenticalTo(N("Ext.default.svc.cluster.local.")));
  CHECK(reply.answers[1].owner == N("www.example.com."));
  CHECK(IsA(reply.answers[1], 1));
  REQUIRE(f.a->queries().size() == 1);
  CHECK(f.a->queries()[0].message.questions[0].name == N("www.example.com."));

  // A target under a stub domain goes to the stub's server.
  dns::Message stub = f.Ask(QuerySpec("stubby.default.svc.cluster.local.").Edns());
  REQUIRE(stub.answers.size() == 2);
  CHECK(IsA(stub.answers[1], 2));
  CHECK(f.Metric(R"(kdns_kubedns_forward_queries_total{route="stub",kind="chase"})") == 1);
  CHECK(f.Metric(R"(skydns_skydns_dns_request_count_total{system="auth"})") == 2);

  // The CNAME question is answered without asking anyone.
  CHECK(f.Ask(QuerySpec("ext.default.svc.cluster.local.").Type(dns::RrType::kCname).Edns())
            .answers.size() == 1);
  CHECK(f.a->queries().size() == 1);
}

TEST_CASE("upstream failures and a missing upstream are answered SERVFAIL", "[kubedns][handler]") {
  Fixture f;
  SECTION("silent upstream: forward and chase time out") {
    f.Serve(f.Routes());
    f.a->set_behaviour(Behaviour::kSilent);
    dns::Message forwarded = f.Ask(QuerySpec("www.example.com.").Id(1).Edns());
    CHECK(forwarded.rcode() == dns::Rcode::kServFail);
    CHECK(forwarded.header.id == 1);
    CHECK(forwarded.header.ra);
    CHECK(forwarded.answers.empty());
    dns::Message chased = f.Ask(QuerySpec("ext.default.svc.cluster.local.").Id(2).Edns());
    CHECK(chased.rcode() == dns::Rcode::kServFail);
    CHECK(chased.answers.empty());
    CHECK(f.Metric(R"(kdns_kubedns_forward_failures_total{reason="timeout"})") == 2);
    CHECK(f.Metric(R"(skydns_skydns_dns_error_count_total{system="recursive",cause="servfail"})") ==
          1);
  }
  SECTION("every upstream answering SERVFAIL") {
    f.Serve(f.Routes());
    f.a->set_behaviour(Behaviour::kServFail);
    CHECK(f.Ask(QuerySpec("www.example.com.").Edns()).rcode() == dns::Rcode::kServFail);
    CHECK(f.Metric(R"(kdns_kubedns_forward_failures_total{reason="upstream_error"})") == 1);
  }
  SECTION("no upstream configured at all") {
    f.Serve(std::make_shared<const UpstreamRoutes>());
    CHECK(f.Ask(QuerySpec("www.example.com.").Edns()).rcode() == dns::Rcode::kServFail);
    CHECK(f.Metric(R"(kdns_kubedns_forward_failures_total{reason="no_upstreams"})") == 1);
    // Cluster names do not need upstreams.
    CHECK(f.Ask(QuerySpec("kubernetes.default.svc.cluster.local.").Edns()).rcode() ==
          dns::Rcode::kNoError);
  }
}

TEST_CASE("beyond the in-flight cap a forwarded query gets SERVFAIL at once",
          "[kubedns][handler]") {
  Fixture f;
  f.SlowTries();
  f.Serve(f.Routes(), /*forward_max=*/1);
  f.a->set_delay_ms(200);
  f.RequireSecondRefusedWhileFirstWaits(QuerySpec("one.example.").Id(1).Edns(),
                                        QuerySpec("two.example.").Id(2).Edns(),
                                        [&] { return f.handler().forwarder().in_flight() == 1; });
  CHECK(f.a->queries().size() == 1);
  CHECK(f.Metric(R"(kdns_kubedns_forward_failures_total{reason="overloaded"})") == 1);
}

TEST_CASE("forwarded queries and ExternalName chases hold their route's slots as their client's",
          "[kubedns][handler][client_share]") {
  Fixture f;
  f.Serve(f.Routes());
  f.a->set_behaviour(Behaviour::kSilent);
  server::testing::UdpClient client(f.udp_address());
  sockaddr_storage local{};
  socklen_t length = sizeof(local);
  REQUIRE(getsockname(client.fd(), reinterpret_cast<sockaddr*>(&local), &length) == 0);
  const upstream::ClientTag tag = upstream::ClientTagOf(
      *loop::SocketAddress::FromSockaddr(reinterpret_cast<const sockaddr*>(&local), length));
  upstream::InFlightBudget& route =
      f.forwarder_options().budgets->Route(upstream::UpstreamSet{f.a->address()});
  REQUIRE(client.Send(QuerySpec("other.example.com.").Id(1).Edns().Bytes()));
  REQUIRE(RunUntil(f.loop, [&] { return route.HeldBy(tag) == 1; }));
  // The chase asks for www.example.com. (another question: not coalesced with the first).
  REQUIRE(client.Send(QuerySpec("ext.default.svc.cluster.local.").Id(2).Edns().Bytes()));
  REQUIRE(RunUntil(f.loop, [&] { return route.HeldBy(tag) == 2; }));
  // Both time out: the slots, and the client's count, are given back.
  REQUIRE(RunUntil(f.loop, [&] { return route.in_flight() == 0; }));
  CHECK(route.HeldBy(tag) == 0);
}

TEST_CASE("beyond the budget of waiting queries a forwarded query gets SERVFAIL at once",
          "[kubedns][handler][waiting]") {
  Fixture f;
  f.SlowTries();
  f.SetWaitingBudget(1);
  f.Serve(f.Routes());
  f.a->set_delay_ms(200);
  const uint64_t hits_before = limits::LimitHits(limits::Limit::kWaitingQueries);
  // The second has the same name as the first: it would only join the upstream query, yet it
  // would wait.
  f.RequireSecondRefusedWhileFirstWaits(QuerySpec("one.example.").Id(1).Edns(),
                                        QuerySpec("one.example.").Id(2).Edns(),
                                        [&] { return f.handler().pending() == 1; });
  CHECK(limits::LimitHits(limits::Limit::kWaitingQueries) == hits_before + 1);
  CHECK(f.Metric(R"(kdns_kubedns_forward_failures_total{reason="overloaded"})") == 1);
  // Its slot is back: the next query waits and is answered.
  CHECK(f.waiting_budget().waiting() == 0);
  CHECK(f.Ask(QuerySpec("two.example.").Id(3).Edns()).rcode() == dns::Rcode::kNoError);
  CHECK(f.a->queries().size() == 2);
}

TEST_CASE("an ExternalName chase over the budget of waiting queries gets SERVFAIL at once",
          "[kubedns][handler][waiting]") {
  Fixture f;
  f.ServeWithSilentUpstream(/*max_waiting=*/1);
  server::testing::UdpClient first(f.udp_address());
  REQUIRE(first.Send(QuerySpec("elsewhere.example.").Id(1).Edns().Bytes()));
  REQUIRE(RunUntil(f.loop, [&] { return f.handler().pending() == 1; }));
  dns::Message chased = f.Ask(QuerySpec("ext.default.svc.cluster.local.").Id(2).Edns());
  CHECK(chased.rcode() == dns::Rcode::kServFail);
  CHECK(chased.header.id == 2);
  CHECK(f.handler().pending() == 1);
}

TEST_CASE("kubedns drops a closed TCP client's waiting queries at once, their slots given back",
          "[kubedns][handler][waiting]") {
  Fixture f;
  f.ServeWithSilentUpstream(/*max_waiting=*/10);
  server::testing::UdpClient udp(f.udp_address());
  REQUIRE(udp.Send(QuerySpec("udp.example.").Id(1).Edns().Bytes()));
  {
    server::testing::TcpClient tcp(f.udp_address());
    for (uint16_t id = 2; id < 5; ++id) {
      REQUIRE(tcp.Send(QuerySpec("tcp" + std::to_string(id) + ".example.").Id(id).Edns().Bytes()));
    }
    REQUIRE(RunUntil(f.loop, [&] { return f.handler().pending() == 4; }));
    CHECK(f.waiting_budget().waiting() == 4);
    tcp.Reset();  // gone: a half-close (FIN) would still be answered (RFC 7766)
  }
  REQUIRE(RunUntil(f.loop, [&] { return f.handler().pending() == 1; }));
  CHECK(f.waiting_budget().waiting() == 1);  // the UDP query still waits
  CHECK(f.Metric("kdns_kubedns_forward_in_flight") == 1);
}

TEST_CASE("at the TCP query timeout a TCP client's waiting queries are answered SERVFAIL",
          "[kubedns][handler][waiting]") {
  Fixture f;
  f.tcp_options().query_timeout_ms = 100;
  f.ServeWithSilentUpstream(/*max_waiting=*/10);
  server::testing::UdpClient udp(f.udp_address());
  REQUIRE(udp.Send(QuerySpec("udp.example.").Id(1).Edns().Bytes()));
  server::testing::TcpClient tcp(f.udp_address());
  REQUIRE(tcp.Send(QuerySpec("tcp.example.").Id(2).Edns().Bytes()));
  std::vector<uint8_t> reply = RunUntilReply(f.loop, tcp);
  const dns::Message answer = Parse(reply);
  CHECK(answer.header.id == 2);
  CHECK(answer.rcode() == dns::Rcode::kServFail);
  CHECK(f.handler().pending() == 1);  // the UDP query still waits: it has no such timeout
  CHECK(f.waiting_budget().waiting() == 1);
  CHECK(f.Metric("kdns_kubedns_forward_in_flight") == 1);
  CHECK_FALSE(tcp.closed());
}

}  // namespace kdns::kubedns
