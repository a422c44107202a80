// Test helpers for kubedns's DNS path (dns_handler_test.cc, dns_handler_autopath_test.cc,
// dns_handler_query_log_test.cc): queries (dns::testing::QuerySpec) asked, replies parsed, and
// DnsHandlers served on a LoopServer on the test's own loop, as KubednsServer serves them, with all
// they share (DnsHandlerFixture). Header-only; tests only; the loop's thread.
#pragma once

#include <catch2/catch.hpp>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "common/dns/builder.h"
#include "common/dns/message.h"
#include "common/dns/query_testing.h"
#include "common/dns/testing.h"
#include "common/loop/loop.h"
#include "common/loop/loop_test_util.h"
#include "common/metrics/registry.h"
#include "common/metrics/text_parser.h"
#include "common/server/loop_server.h"
#include "common/server/server_test_util.h"
#include "kubedns/answering/answerer.h"
#include "kubedns/answering/autopath.h"
#include "kubedns/records/records_testing.h"  // SyncedRecords
#include "kubedns/serving/autopath_metrics.h"
#include "kubedns/serving/dns_handler.h"

namespace kdns::kubedns::testing {

using dns::testing::Parse;

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
  std::vector<uint8_t> reply = server::testing::RunUntilReply(loop, client);
  return Parse(reply);
}

// What the handler tests share: kubedns's DNS path on the test's own loop, as KubednsServer
// assembles it. An Answerer for cluster.local. over `records`, the DNS and forward metrics on
// one registry, short forwarder timeouts (tries of 50-100 ms, 400 ms in all), and DnsHandlers
// served once the test calls Serve. Each test file's fixture derives from it and adds its
// upstreams after it (on `loop`); their destructors StopServing before the upstreams go, and
// the LoopFixture it derives from checks that the loop closes clean.
class DnsHandlerFixture : public loop::testing::LoopFixture {
 public:
  explicit DnsHandlerFixture(std::shared_ptr<const Snapshot> records) {
    snapshots_.Publish(std::move(records));
    shared_.forwarder.min_try_timeout_ms = 50;
    shared_.forwarder.max_try_timeout_ms = 100;
    shared_.forwarder.total_timeout_ms = 400;
    shared_.forwarder.budgets = std::make_shared<upstream::ForwardBudgets>();
  }
  ~DnsHandlerFixture() { StopServing(); }
  DnsHandlerFixture(const DnsHandlerFixture&) = delete;
  DnsHandlerFixture& operator=(const DnsHandlerFixture&) = delete;

  // Starts serving with `routes` (and `udp`'s receiver thread, say).
  void Serve(std::shared_ptr<const UpstreamRoutes> routes, const server::UdpOptions& udp = {}) {
    server_ = ServeDnsHandlers(loop, shared_, std::move(routes), stats_, &handler_, udp, tcp_);
  }
  void StopServing() { server_.reset(); }

  // --autopath for cluster.local. with the node's search domain node.example.; before Serve.
  void EnableAutopath() {
    autopath_.emplace(dns::testing::N("cluster.local."),
                      std::vector<dns::Name>{dns::testing::N("node.example.")});
    autopath_metrics_.emplace(registry_, *autopath_);
    shared_.autopath = &*autopath_;
    shared_.autopath_metrics = &*autopath_metrics_;
  }

  // What the config thread does when the ConfigMap changes.
  void PublishRoutes(std::shared_ptr<const UpstreamRoutes> routes) {
    routes_.Publish(std::move(routes));
  }

  dns::Message Ask(const dns::testing::QuerySpec& query) {
    return AskUdp(loop, server_->udp_address(), query.Bytes());
  }

  // The value of one sample of the registry's text, 0 when it is not there.
  double Metric(const std::string& sample) {
    std::string error;
    auto parsed = metrics::ParseText(registry_.Render(), &error);
    INFO(error);
    REQUIRE(parsed);
    auto it = parsed->samples.find(sample);
    return it == parsed->samples.end() ? 0 : it->second;
  }

  // The last handler made.
  DnsHandler& handler() { return *handler_; }
  server::ServerStats stats() const { return stats_.Read(); }
  loop::SocketAddress udp_address() const { return server_->udp_address(); }
  loop::SocketAddress tcp_address() const { return server_->tcp_address(); }
  // The process's budget of waiting queries; set before Serve.
  void SetWaitingBudget(size_t max) {
    shared_.waiting = std::make_shared<server::WaitingBudget>(max);
  }
  const server::WaitingBudget& waiting_budget() const { return *shared_.waiting; }
  // Set before Serve.
  upstream::Forwarder::Options& forwarder_options() { return shared_.forwarder; }
  // DNS over TCP limits; set before Serve.
  server::TcpOptions& tcp_options() { return tcp_; }
  // --log-queries; set before Serve.
  void SetQueryLog(server::QueryLog* query_log) { shared_.query_log = query_log; }
  // --loadbalance; set before Serve.
  void SetLoadBalance(dns::LoadBalance mode) { shared_.loadbalance = mode; }

 private:
  static AnswerConfig Config() {
    AnswerConfig config;
    config.zone = dns::testing::N("cluster.local.");
    return config;
  }

  metrics::Registry registry_;
  Answerer answerer_{Config()};
  std::optional<Autopath> autopath_;
  std::optional<AutopathMetrics> autopath_metrics_;
  SnapshotHolder<Snapshot> snapshots_;
  DnsMetrics dns_metrics_{registry_, "skydns_skydns"};
  std::shared_ptr<upstream::UpstreamTable> table_ = std::make_shared<upstream::UpstreamTable>();
  ForwardMetrics forward_metrics_{registry_, table_};
  SnapshotHolder<UpstreamRoutes> routes_;
  DnsHandler::Shared shared_{
      answerer_,        snapshots_, routes_, dns_metrics_,
      forward_metrics_, table_,     {},      std::make_shared<server::WaitingBudget>()};
  server::ThreadStats stats_;
  server::TcpOptions tcp_;
  std::unique_ptr<server::LoopServer> server_;
  DnsHandler* handler_ = nullptr;
};

}  // namespace kdns::kubedns::testing
