// FrontendServer in-process: real sockets on loopback, a scripted upstream (the shared fake
// DNS server, whose answers depend on the name asked), and plain-socket clients.
#include "frontend-cache/frontend_server.h"

#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <condition_variable>
#include <fstream>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "common/dns/builder.h"
#include "common/dns/message.h"
#include "common/dns/presentation.h"
#include "common/dns/query_testing.h"
#include "common/dns/testing.h"
#include "common/http/http_test_util.h"
#include "common/limits/limits.h"
#include "common/server/server_test_util.h"
#include "test/support/fake_dns_server.h"
#include "test/unit/temp_dir.h"

namespace kdns::frontend {
namespace {

using dns::testing::N;
using dns::testing::QuerySpec;
using http::testing::BlockingGet;
using server::testing::TcpClient;
using server::testing::UdpClient;

// A record from its presentation form, without Catch: the upstream runs on its own thread,
// and Catch's assertion macros are for the test's thread only.
std::optional<dns::ResourceRecord> Record(std::string_view text) {
  dns::ResourceRecord record;
  if (dns::RecordFromText(text, &record) != dns::ParseError::kOk) return std::nullopt;
  return record;
}

// The upstream: the shared fake DNS server on its own thread (the server under test runs on
// threads of its own), answering by name: `<x>.nx.test.` NXDOMAIN with an SOA (negative TTL
// 5); `fail.test.` SERVFAIL; `ttl1.test.` A with TTL 1; anything else A 192.0.2.<tag> with
// TTL 60. While `down`, it answers nothing. `loop_to`, when set, makes it forward our loop
// probes back to that address (an upstream that forwards to us). Counts queries by
// transport, loop probes apart.
class ScriptedUpstream {
 public:
  explicit ScriptedUpstream(uint8_t tag)
      : tag_(tag),
        server_([this](const kdns::testing::ReceivedQuery& query) { return Handle(query); }) {}
  ~ScriptedUpstream() { Release(); }  // the fake's thread may wait in Handle

  std::string address() const { return "127.0.0.1#" + std::to_string(server_.address().port()); }
  int udp_queries() const { return udp_.load(); }
  int tcp_queries() const { return tcp_.load(); }
  void set_down(bool down) { down_ = down; }
  void set_loop_to(const loop::SocketAddress& address) {
    std::lock_guard lock(mu_);
    loop_to_ = address;
  }
  // The answer to `name` waits until Release() (an answer still in flight while the test
  // does something); WaitHeld() returns once that query has arrived.
  void Hold(const std::string& name) {
    std::lock_guard lock(mu_);
    held_name_ = name;
  }
  bool WaitHeld() {
    std::unique_lock lock(mu_);
    return held_cv_.wait_for(lock, std::chrono::seconds(10), [this] { return holding_; });
  }
  void Release() {
    std::lock_guard lock(mu_);
    held_name_.clear();
    held_cv_.notify_all();
  }

 private:
  // On the fake's thread: no Catch2 macro here.
  kdns::testing::Replies Handle(const kdns::testing::ReceivedQuery& received) {
    if (!received.parsed || received.message.questions.empty()) return {};
    const dns::Message& query = received.message;
    const std::string name = query.questions[0].name.Lowercased().ToText();
    if (name.ends_with("kdns-loop-check.")) {  // not counted: only client queries are
      std::lock_guard lock(mu_);
      if (loop_to_.family() == AF_UNSPEC) return {};
      // Sent on from another port, which drops whatever comes back.
      kdns::testing::Reply forwarded(received.bytes);
      forwarded.to = loop_to_;
      forwarded.from_other_port = true;
      return {forwarded};
    }
    (received.transport == dns::Transport::kTcp ? tcp_ : udp_)++;
    if (down_) return {};
    {
      std::unique_lock lock(mu_);
      if (!held_name_.empty() && name == held_name_) {
        holding_ = true;
        held_cv_.notify_all();
        held_cv_.wait(lock, [this] { return held_name_.empty(); });
      }
    }
    dns::Message reply;
    reply.header = query.header;
    reply.header.qr = true;
    reply.header.ra = true;
    reply.questions = query.questions;
    reply.edns = query.edns;
    if (name.ends_with(".nx.test.")) {
      reply.header.rcode = dns::Rcode::kNxDomain;
      if (auto soa = Record("test. 300 IN SOA ns.test. host.test. 1 60 60 60 5")) {
        reply.authorities.push_back(*soa);
      }
    } else if (name == "fail.test.") {
      reply.header.rcode = dns::Rcode::kServFail;
    } else if (query.questions[0].type == dns::RrType::kA) {
      const std::string ttl = name == "ttl1.test." ? "1" : "60";
      if (auto record = Record(name + " " + ttl + " IN A 192.0.2." + std::to_string(tag_))) {
        record->owner = query.questions[0].name;
        reply.answers.push_back(*record);
      }
    }
    std::vector<uint8_t> bytes;
    if (dns::BuildMessage(reply, 65535, &bytes) != dns::BuildError::kOk) return {};
    return {std::move(bytes)};
  }

  const uint8_t tag_;
  std::atomic<int> udp_{0};
  std::atomic<int> tcp_{0};
  std::atomic<bool> down_{false};
  std::mutex mu_;
  loop::SocketAddress loop_to_;  // Guarded by mu_.
  std::string held_name_;        // Guarded by mu_.
  bool holding_ = false;         // Guarded by mu_.
  std::condition_variable held_cv_;
  kdns::testing::FakeDnsServerThread server_;  // last: stopped before the state it uses
};

dns::Message Ask(const loop::SocketAddress& server, std::string_view name,
                 dns::RrType type = dns::RrType::kA, uint16_t id = 0x4242,
                 dns::RrClass cls = dns::RrClass::kIn) {
  UdpClient client(server);
  REQUIRE(client.Send(QuerySpec(name).Type(type).Class(cls).Id(id).Bytes()));
  auto reply = client.Receive(5000);
  REQUIRE(reply.has_value());
  dns::Message message;
  REQUIRE(dns::ParseMessage(*reply, &message) == dns::ParseError::kOk);
  CHECK(message.header.id == id);
  return message;
}

std::string Txt(const dns::Message& message) {
  REQUIRE(message.answers.size() == 1);
  const auto& txt = std::get<dns::RdataTxt>(message.answers[0].rdata);
  std::string out;
  for (const auto& s : txt.strings) out += (out.empty() ? "" : " ") + s;
  return out;
}

struct Harness {
  explicit Harness(const std::vector<std::string>& servers, uint32_t forward_max = 150,
                   const Clock& clock = SteadyClock::Instance(), bool receiver_threads = true) {
    FrontendServer::Options options;
    options.flags.no_resolv = true;
    options.flags.listen_addresses = {*IpAddress::Parse("127.0.0.1")};
    options.flags.port = 0;
    options.flags.threads = 2;
    options.flags.cache_size = 1000;
    options.flags.dns_forward_max = forward_max;
    options.flags.dns_loop_detect = true;
    options.flags.servers_file = temp.path() + "/servers";
    options.flags.receiver_threads =
        receiver_threads ? ReceiverThreads::kOn : ReceiverThreads::kOff;
    WriteServers(servers);
    // Generous for sanitizer builds; the tests never depend on how long a failure takes.
    options.forwarder.total_timeout_ms = 1500;
    options.forwarder.max_try_timeout_ms = 500;
    server = std::make_unique<FrontendServer>(options, clock);
    std::string error;
    REQUIRE(server->Start(&error));
    address = server->addresses().at(0);
  }
  ~Harness() { server->Stop(); }

  void WriteServers(const std::vector<std::string>& servers) {
    std::ofstream file(temp.path() + "/servers.tmp");
    for (const auto& line : servers) file << "server=" << line << "\n";
    file.close();
    std::rename((temp.path() + "/servers.tmp").c_str(), (temp.path() + "/servers").c_str());
  }

  kdns::testing::TempDir temp;
  std::unique_ptr<FrontendServer> server;
  loop::SocketAddress address;
};

}  // namespace

TEST_CASE("misses are forwarded and answered again from the cache", "[frontend]") {
  ScriptedUpstream upstream(7);
  Harness h({upstream.address()});
  dns::Message first = Ask(h.address, "WWW.Example.TEST.", dns::RrType::kA, 0x1111);
  CHECK(first.rcode() == dns::Rcode::kNoError);
  REQUIRE(first.answers.size() == 1);
  CHECK(first.questions[0].name.IdenticalTo(N("WWW.Example.TEST.")));
  CHECK(first.header.ra);
  dns::Message second = Ask(h.address, "www.example.test.", dns::RrType::kA, 0x2222);
  REQUIRE(second.answers.size() == 1);
  CHECK(second.answers[0].ttl_s <= 60);
  CHECK(upstream.udp_queries() == 1);  // the second came from the cache
  CHECK(h.server->cache().Stats().hits == 1);

  SECTION("negative answers are cached for the SOA's negative TTL") {
    CHECK(Ask(h.address, "a.nx.test.").rcode() == dns::Rcode::kNxDomain);
    dns::Message again = Ask(h.address, "a.nx.test.");
    CHECK(again.rcode() == dns::Rcode::kNxDomain);
    REQUIRE(again.authorities.size() == 1);
    CHECK(again.authorities[0].ttl_s <= 5);
    CHECK(upstream.udp_queries() == 2);
  }
  SECTION("an upstream SERVFAIL is not cached and is answered SERVFAIL") {
    CHECK(Ask(h.address, "fail.test.").rcode() == dns::Rcode::kServFail);
    CHECK(Ask(h.address, "fail.test.").rcode() == dns::Rcode::kServFail);
    CHECK(h.server->cache().Stats().size == 1);
  }
  SECTION("TCP clients are forwarded over TCP") {
    TcpClient client(h.address);
    REQUIRE(client.Send(QuerySpec("tcp.test.").Id(0x3333).Bytes()));
    auto reply = client.Receive();
    REQUIRE(reply.has_value());
    dns::Message message;
    REQUIRE(dns::ParseMessage(*reply, &message) == dns::ParseError::kOk);
    CHECK(message.answers.size() == 1);
    CHECK(upstream.tcp_queries() >= 1);
  }
}

// Polls `done` (another thread's work) for up to five seconds.
bool WaitFor(const std::function<bool()>& done) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (!done()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  return true;
}

TEST_CASE("hits are answered on the receiver threads, counted once, and prefetched from there",
          "[frontend]") {
  const bool receiver_threads = GENERATE(true, false);
  INFO("receiver threads: " << receiver_threads);
  ManualClock clock(1'000'000);
  ScriptedUpstream upstream(9);
  Harness h({upstream.address()}, 150, clock, receiver_threads);
  CHECK(Ask(h.address, "p.test.").answers.size() == 1);  // a miss, forwarded
  CHECK(Ask(h.address, "P.Test.", dns::RrType::kA, 0x0101)
            .questions[0]
            .name.IdenticalTo(N("P.Test.")));  // a hit, in the client's case
  CacheStats stats = h.server->cache().Stats();
  CHECK(stats.hits == 1);
  // Counted once, by the thread that looked: the loop forwards a receiver thread's miss on the
  // route it decided (server::Decision), without looking again.
  CHECK(stats.misses == 1);
  server::ServerStats served = h.server->server_stats();
  CHECK(served.udp_queries == 2);
  CHECK(served.udp_fast_answers == (receiver_threads ? 1 : 0));
  CHECK(h.server->RenderMetrics().find(
            "kdns_frontend_queries_total{type=\"A\",rcode=\"NOERROR\"} 2") != std::string::npos);
  // The hit's wait is counted once, as `cache`, on whichever thread answered it.
  for (const char* line :
       {"kdns_frontend_answer_duration_seconds_count{source=\"cache\"} 1\n",
        "kdns_frontend_answer_duration_seconds_count{source=\"upstream\"} 1\n"}) {
    INFO(line);
    CHECK(h.server->RenderMetrics().find(line) != std::string::npos);
  }

  // 55 s into the 60 s lifetime, a hit asks for a refresh, which the serving thread sends.
  clock.AdvanceMs(55'000);
  dns::Message late = Ask(h.address, "p.test.");
  REQUIRE(late.answers.size() == 1);
  CHECK(late.answers[0].ttl_s == 5);
  CHECK(WaitFor([&] { return upstream.udp_queries() == 2; }));
  CHECK(WaitFor([&] { return h.server->cache().Stats().insertions == 2; }));
  CHECK(h.server->cache().Stats().prefetches == 1);
  // Past the old expiry, the refreshed entry answers.
  clock.AdvanceMs(10'000);
  CHECK(Ask(h.address, "p.test.").answers.size() == 1);
  CHECK(upstream.udp_queries() == 2);
}

TEST_CASE("routing picks the most specific server, local domains and no upstream", "[frontend]") {
  ScriptedUpstream fallback(1);
  ScriptedUpstream stub(2);
  Harness h({fallback.address(), "/corp.test/" + stub.address(), "/private.test/"});
  auto a = [](const dns::Message& m) {
    REQUIRE(m.answers.size() == 1);
    return std::get<dns::RdataA>(m.answers[0].rdata).address.ToString();
  };
  CHECK(a(Ask(h.address, "host.corp.test.")) == "192.0.2.2");
  CHECK(a(Ask(h.address, "host.elsewhere.test.")) == "192.0.2.1");
  dns::Message local = Ask(h.address, "x.private.test.");
  CHECK(local.rcode() == dns::Rcode::kNxDomain);
  CHECK(fallback.udp_queries() + stub.udp_queries() == 2);
  CHECK(h.server->registry().Render().find(
            "kdns_frontend_answer_duration_seconds_count{source=\"local\"} 1\n") !=
        std::string::npos);

  SECTION("a reload swaps the routing and keeps the cache of unchanged domains") {
    h.WriteServers({fallback.address(), "/corp.test/" + fallback.address()});
    std::string error;
    REQUIRE(h.server->Reload(&error));
    CHECK(h.server->routing()->generation == 2);
    CHECK(a(Ask(h.address, "host.corp.test.")) == "192.0.2.1");  // flushed, asked anew
    CHECK(a(Ask(h.address, "host.elsewhere.test.")) == "192.0.2.1");
    CHECK(fallback.udp_queries() == 2);  // elsewhere still cached
  }
  SECTION("a bad servers file is rejected and the running routing kept") {
    h.WriteServers({"/corp.test/300.1.1.1"});
    std::string error;
    CHECK_FALSE(h.server->Reload(&error));
    CHECK(error.find("servers") != std::string::npos);
    CHECK(h.server->routing()->generation == 1);
    CHECK(a(Ask(h.address, "other.corp.test.")) == "192.0.2.2");
  }
}

TEST_CASE("an answer in flight across a reload reaches its client but is not cached",
          "[frontend]") {
  // The nanny's early ConfigMap change: a query forwarded under the old routing must not
  // refill the cache the reload just flushed, or the old answer outlives the change.
  ScriptedUpstream before(2);
  ScriptedUpstream after(3);
  Harness h({"/corp.test/" + before.address()});
  auto a = [](const dns::Message& m) {
    REQUIRE(m.answers.size() == 1);
    return std::get<dns::RdataA>(m.answers[0].rdata).address.ToString();
  };
  before.Hold("host.corp.test.");
  UdpClient client(h.address);
  REQUIRE(client.Send(QuerySpec("host.corp.test.").Bytes()));
  REQUIRE(before.WaitHeld());
  h.WriteServers({"/corp.test/" + after.address()});
  std::string error;
  REQUIRE(h.server->Reload(&error));
  before.Release();
  auto reply = client.Receive(5000);
  REQUIRE(reply.has_value());
  dns::Message first;
  REQUIRE(dns::ParseMessage(*reply, &first) == dns::ParseError::kOk);
  CHECK(a(first) == "192.0.2.2");  // the client asked under the old routing
  CHECK(a(Ask(h.address, "host.corp.test.")) == "192.0.2.3");
  CHECK(after.udp_queries() == 1);
}

TEST_CASE("CHAOS queries are answered with dnsmasq's statistics, never forwarded", "[frontend]") {
  ScriptedUpstream upstream(3);
  ScriptedUpstream stub(10);
  Harness h({"/stub.test/" + stub.address(), upstream.address()});
  (void)Ask(h.address, "one.test.");
  (void)Ask(h.address, "one.test.");
  const auto ch = dns::RrClass::kCh;
  CHECK(Txt(Ask(h.address, "cachesize.bind.", dns::RrType::kTxt, 1, ch)) == "1000");
  CHECK(Txt(Ask(h.address, "hits.bind.", dns::RrType::kTxt, 1, ch)) == "1");
  CHECK(Txt(Ask(h.address, "misses.bind.", dns::RrType::kTxt, 1, ch)) == "1");
  CHECK(Txt(Ask(h.address, "insertions.bind.", dns::RrType::kTxt, 1, ch)) == "1");
  // In configuration order, as dnsmasq lists them.
  CHECK(Txt(Ask(h.address, "servers.bind.", dns::RrType::kTxt, 1, ch)) ==
        stub.address() + " 0 0 " + upstream.address() + " 1 0");
  CHECK(Ask(h.address, "other.bind.", dns::RrType::kA, 1, ch).rcode() == dns::Rcode::kNotImp);
  CHECK(upstream.udp_queries() == 1);
}

TEST_CASE("servers.bind counts a tcp:// upstream under its own name, apart from UDP",
          "[frontend]") {
  ScriptedUpstream upstream(3);
  ScriptedUpstream over_tcp(10);
  Harness h({"/tcp.test/tcp://" + over_tcp.address(), upstream.address()});
  (void)Ask(h.address, "one.tcp.test.");
  CHECK(over_tcp.tcp_queries() == 1);
  CHECK(over_tcp.udp_queries() == 0);
  const auto ch = dns::RrClass::kCh;
  CHECK(Txt(Ask(h.address, "servers.bind.", dns::RrType::kTxt, 1, ch)) ==
        "tcp://" + over_tcp.address() + " 1 0 " + upstream.address() + " 0 0");
}

TEST_CASE("when every upstream fails, an expired answer is served stale", "[frontend]") {
  ManualClock clock(1'000'000);
  ScriptedUpstream upstream(4);
  Harness h({upstream.address()}, 150, clock);
  REQUIRE(Ask(h.address, "ttl1.test.").answers.size() == 1);
  clock.AdvanceMs(1100);  // past the 1 s TTL
  upstream.set_down(true);
  dns::Message stale = Ask(h.address, "ttl1.test.");
  CHECK(stale.rcode() == dns::Rcode::kNoError);
  REQUIRE(stale.answers.size() == 1);
  CHECK(stale.answers[0].ttl_s == 30);  // RFC 8767 §4
  CHECK(Ask(h.address, "never-seen.test.").rcode() == dns::Rcode::kServFail);
  CHECK(h.server->cache().Stats().stale_hits == 1);
  CHECK(h.server->registry().Render().find("kdns_frontend_servfail_total{reason=\"timeout\"} 1") !=
        std::string::npos);
  // What each client waited, by where its answer came from.
  const std::string text = h.server->registry().Render();
  for (const char* line : {"kdns_frontend_answer_duration_seconds_count{source=\"upstream\"} 1\n",
                           "kdns_frontend_answer_duration_seconds_count{source=\"stale\"} 1\n",
                           "kdns_frontend_answer_duration_seconds_count{source=\"failure\"} 1\n",
                           "kdns_frontend_answer_duration_seconds_count{source=\"cache\"} 0\n"}) {
    INFO(line);
    CHECK(text.find(line) != std::string::npos);
  }
}

TEST_CASE("beyond --dns-forward-max queries get SERVFAIL at once", "[frontend]") {
  ScriptedUpstream upstream(5);
  upstream.set_down(true);
  Harness h({upstream.address()}, /*forward_max=*/1);
  // Both threads' caps are 1; send enough distinct names that one thread gets two.
  std::vector<std::unique_ptr<UdpClient>> clients;
  for (int i = 0; i < 8; ++i) {
    clients.push_back(std::make_unique<UdpClient>(h.address));
    REQUIRE(clients.back()->Send(QuerySpec("q" + std::to_string(i) + ".test.").Bytes()));
  }
  for (auto& client : clients) {
    auto reply = client->Receive(5000);
    REQUIRE(reply.has_value());
  }
  CHECK(h.server->forward_totals().overloaded >= 1);
  CHECK(h.server->registry().Render().find("kdns_frontend_forward_rejected_total") !=
        std::string::npos);
}

TEST_CASE("an upstream that sends our queries back to us is disabled", "[frontend]") {
  ScriptedUpstream looping(6);
  ScriptedUpstream good(8);
  Harness h({"/loop.test/" + looping.address(), good.address()});
  looping.set_loop_to(h.address);
  std::string error;
  REQUIRE(h.server->Reload(&error));  // probes again, now that the upstream loops
  const loop::SocketAddress looping_address =
      *loop::SocketAddress::Parse("127.0.0.1:" + looping.address().substr(10));
  CHECK(WaitFor([&] { return h.server->upstream_table().IsDisabled(looping_address); }));
  CHECK(Ask(h.address, "x.loop.test.").rcode() == dns::Rcode::kServFail);
  CHECK(Ask(h.address, "x.fine.test.").rcode() == dns::Rcode::kNoError);
  CHECK(h.server->registry().Render().find("kdns_frontend_upstreams_loop_disabled 1") !=
        std::string::npos);
}

TEST_CASE("a metrics text file is appended to /metrics only when it parses", "[frontend]") {
  kdns::testing::TempDir temp;
  const std::string path = temp.path() + "/nanny.prom";
  FrontendServer::Options options;
  options.flags.no_resolv = true;
  options.flags.metrics_textfile = path;
  FrontendServer server(options);
  // (Not compared with registry().Render(): process_cpu_seconds_total moves between calls.)
  CHECK(server.RenderMetrics().find("kdns_nanny") == std::string::npos);  // no file yet
  std::ofstream(path) << "# HELP kdns_nanny_config_generation Configs applied.\n"
                         "# TYPE kdns_nanny_config_generation gauge\n"
                         "kdns_nanny_config_generation 3\n";
  CHECK(server.RenderMetrics().ends_with("kdns_nanny_config_generation 3\n"));
  std::ofstream(path) << "kdns_nanny_config_generation{ 3\n";  // broken: left out
  CHECK(server.RenderMetrics().find("kdns_nanny") == std::string::npos);
}

// A TCP port free on 127.0.0.1 a moment ago: --prometheus-port has no "any port" (0 is
// off), so the test asks the kernel for one rather than hard-coding it.
uint16_t FreeLoopbackPort() {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  REQUIRE(fd >= 0);
  loop::SocketAddress address = *loop::SocketAddress::Parse("127.0.0.1:0");
  REQUIRE(bind(fd, address.sockaddr_ptr(), address.sockaddr_len()) == 0);
  socklen_t length = address.sockaddr_len();
  REQUIRE(getsockname(fd, address.mutable_sockaddr_ptr(), &length) == 0);
  close(fd);
  return address.port();
}

TEST_CASE("debug data is served on --debug-address only, never on the metrics port", "[frontend]") {
  FrontendServer::Options options;
  options.flags.no_resolv = true;
  options.flags.listen_addresses = {*IpAddress::Parse("127.0.0.1")};
  options.flags.port = 0;
  options.flags.threads = 1;
  options.flags.prometheus_address = *IpAddress::Parse("127.0.0.1");
  options.flags.prometheus_port = FreeLoopbackPort();
  const bool with_debug_address = GENERATE(false, true);
  if (with_debug_address) {
    options.flags.debug_address = *loop::SocketAddress::Parse("127.0.0.1:0");
  }
  FrontendServer server(options);
  std::string error;
  REQUIRE(server.Start(&error));
  const uint64_t before = limits::LimitHits(limits::Limit::kDebugOnPublishedPort);
  CHECK(BlockingGet(server.metrics_address(), "/metrics").rfind("200", 0) == 0);
  CHECK(BlockingGet(server.metrics_address(), "/debug/top-clients").rfind("404", 0) == 0);
  CHECK(limits::LimitHits(limits::Limit::kDebugOnPublishedPort) == before + 1);
  CHECK(server.RenderMetrics().find("kdns_limit_hits_total{limit=\"debug_on_published_port\"}") !=
        std::string::npos);
  if (with_debug_address) {
    const std::string top = BlockingGet(server.debug_address(), "/debug/top-clients");
    CHECK(top.rfind("200 {\"tracked\":", 0) == 0);
    CHECK(BlockingGet(server.debug_address(), "/metrics").rfind("404", 0) == 0);
  } else {
    CHECK(server.debug_address().family() == AF_UNSPEC);
  }
  server.Stop();
}

TEST_CASE("malformed queries get FORMERR, responses are dropped", "[frontend]") {
  ScriptedUpstream upstream(9);
  Harness h({upstream.address()});
  UdpClient client(h.address);
  std::vector<uint8_t> bad = QuerySpec("x.test.").Bytes();
  bad[5] = 2;  // QDCOUNT 2 with one question
  REQUIRE(client.Send(bad));
  auto reply = client.Receive(5000);
  REQUIRE(reply.has_value());
  CHECK(((*reply)[3] & 0x0f) == static_cast<int>(dns::Rcode::kFormErr));
  std::vector<uint8_t> response = QuerySpec("x.test.").Bytes();
  response[2] |= 0x80;  // QR
  REQUIRE(client.Send(response));
  CHECK_FALSE(client.Receive(300).has_value());
  CHECK(h.server->registry().Render().find("kdns_frontend_malformed_total 2") != std::string::npos);
}

}  // namespace kdns::frontend
