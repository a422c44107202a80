#include "frontend-cache/frontend_server.h"

#include <glog/logging.h>

#include <algorithm>
#include <fstream>
#include <optional>
#include <sstream>
#include <utility>

#include "common/http/response.h"
#include "common/limits/limits.h"
#include "common/metrics/coredns_compat.h"
#include "common/metrics/process_metrics.h"
#include "common/metrics/text_merge.h"
#include "common/server/debug_http.h"
#include "common/upstream/resolv_conf.h"

namespace kdns::frontend {

namespace {

// auto: a receiver thread that hands off most datagrams (a cold or mostly missing cache)
// leaves the socket to the loop, judged over windows of this many datagrams (about 50 ms
// at 20,000 q/s); on: it never does.
size_t ReceiverYieldWindow(ReceiverThreads mode) {
  constexpr size_t kWindow = 1024;
  return mode == ReceiverThreads::kAuto ? kWindow : 0;
}

}  // namespace

FrontendServer::FrontendServer(Options options, const Clock& clock,
                               server::QueryLog::Sink query_log_sink)
    : options_(std::move(options)),
      clock_(clock),
      metrics_(registry_),
      cache_(ToCacheOptions(options_.flags), clock),
      cache_policy_(ToCacheOptions(options_.flags).policy),
      zone_serials_(cache_, options_.flags.serial_zones),
      upstream_table_(std::make_shared<upstream::UpstreamTable>(options_.local_addresses, clock)),
      query_log_(options_.flags.log_queries, clock, std::move(query_log_sink)),
      switchboard_(server::Switchboard::Options{options_.flags.log_queries.detail,
                                                options_.flags.debug_address, kDefaultDebugPort,
                                                [this](const loop::SocketAddress& address) {
                                                  return server::MakeDebugServer(
                                                      address, rate_limits_.clients);
                                                }},
                   query_log_),
      hosts_files_(HostsFilePaths(options_.flags)) {
  if (options_.flags.metrics_compat == metrics::MetricsCompat::kCoredns) {
    upstream_table_->CountReplies();  // coredns_forward_responses_total{rcode}
  }
  upstream::ForwardBudgets::Limits budgets;
  budgets.max_in_flight = options_.flags.dns_forward_max;
  budgets.max_per_route = options_.flags.forward_max_per_route;
  budgets.max_per_upstream = options_.flags.forward_max_per_upstream;
  budgets.client_reserve_percent = options_.flags.forward_client_reserve;
  options_.forwarder.budgets = std::make_shared<upstream::ForwardBudgets>(budgets);
  if (options_.flags.strict_order) {
    options_.forwarder.server_order = upstream::ServerOrder::kConfigured;
  }
  if (options_.flags.all_servers) options_.forwarder.first_try = upstream::FirstTry::kAllServers;
  // The cache keeps and serves the reply's bytes: no decoded records (a large reply's would
  // take some 50 times its size).
  options_.forwarder.reply_decode = upstream::ReplyDecode::kQuestion;
  options_.forwarder.dns0x20.mode = options_.flags.upstream_0x20;
  options_.forwarder.client_address_to = options_.flags.client_address_to;
  options_.forwarder.client_address_option = options_.flags.client_address_option;
  std::string tls_error;
  options_.forwarder.tls_context = loop::TlsContext::Create(options_.flags.tls_ca_file, &tls_error);
  if (options_.forwarder.tls_context == nullptr) {
    LOG(ERROR) << "tls:// upstreams fail (never asked in the clear): " << tls_error;
  }
  handler_shared_ = std::make_unique<DnsHandler::Shared>(DnsHandler::Shared{
      cache_, cache_policy_, options_.flags.cache_size, metrics_, routing_, upstream_table_,
      options_.forwarder, clock_, handlers_, forwarder_totals_,
      std::make_shared<server::WaitingBudget>(options_.flags.max_waiting_queries), query_log_,
      options_.flags.filter_aaaa, zone_serials_, options_.flags.notify_from});
  handler_shared_->loadbalance = options_.flags.loadbalance;
  std::string error;
  CHECK(server::MakeRateLimits(options_.flags.rate_limits, handler_shared_->waiting, &rate_limits_,
                               &error))
      << "the rate-limit flags were checked by ParseOptions: " << error;
  RegisterMetrics();
}

FrontendServer::~FrontendServer() { Stop(); }

bool FrontendServer::BuildRouting(RoutingState* state, config::RuntimeSwitches* switches,
                                  std::string* error) const {
  const Options& o = options_;
  std::vector<ServerOption> servers = o.flags.servers;
  std::vector<upstream::RouteOptionsEntry> route_options = o.flags.route_options;
  if (!o.flags.servers_file.empty()) {
    std::ifstream file(o.flags.servers_file);
    if (!file) {
      *error = "--servers-file " + o.flags.servers_file + ": cannot read it";
      return false;
    }
    std::stringstream text;
    text << file.rdbuf();
    if (!ParseServersFile(text.str(), &servers, error, switches, &route_options)) {
      *error = "--servers-file " + o.flags.servers_file + ": " + *error;
      return false;
    }
  }
  std::vector<loop::SocketAddress> resolv;
  if (!o.flags.no_resolv) {
    upstream::ResolvConf conf;
    std::string resolv_error;
    if (upstream::LoadResolvConf(o.flags.resolv_file, &conf, &resolv_error)) {
      for (const auto& line : conf.skipped_lines) {
        LOG(WARNING) << o.flags.resolv_file << ": skipped \"" << line << "\"";
      }
      resolv = std::move(conf.nameservers);
    } else {
      // dnsmasq carries on without the file (it may appear later); so do we, loudly.
      LOG(WARNING) << resolv_error;
    }
  }
  state->table = RoutingTable::Build(servers, resolv);
  state->listing_order.clear();
  // Each upstream once, a tcp:// one apart from the same address over UDP.
  auto list = [&](const upstream::Upstream& upstream) {
    if (std::find(state->listing_order.begin(), state->listing_order.end(), upstream) ==
        state->listing_order.end()) {
      state->listing_order.push_back(upstream);
    }
  };
  for (const ServerOption& server : servers) {
    if (server.target == ServerOption::Target::kUpstream) list(server.upstream);
  }
  for (const upstream::Upstream& upstream : state->table.AllUpstreams()) list(upstream);
  if (o.inherited.empty()) {
    std::vector<IpAddress> listen = o.flags.listen_addresses;
    if (!CheckNoSelfLoop(state->table, listen, o.flags.port, o.local_addresses, error)) {
      return false;
    }
  }
  state->domain_sets.clear();
  for (const Route& route : state->table.domain_routes()) {
    state->domain_sets.push_back(upstream::UpstreamSet(
        route.upstreams, upstream::RouteOptionsFor(route_options, route.domain)));
  }
  state->default_set = upstream::UpstreamSet(
      state->table.default_route().upstreams,
      upstream::RouteOptionsFor(route_options, state->table.default_route().domain));
  // The hosts files as last read (ReadHostsFiles), each at its last good version.
  state->local = LocalAnswers(LocalAnswersConfig::From(o.flags, hosts_files_.Entries()));
  return true;
}

bool FrontendServer::Start(std::string* error) {
  {
    std::lock_guard<std::mutex> lock(reload_mutex_);
    (void)hosts_files_.Read();
    auto state = std::make_shared<RoutingState>();
    config::RuntimeSwitches switches;
    if (!BuildRouting(state.get(), &switches, error)) return false;
    state->generation = ++routing_generation_;
    routing_.Publish(std::move(state));
    switchboard_.Apply(switches);  // the query log now; the debug data below
  }

  server::HandlerFactory factory = [this](const server::ThreadContext& context) {
    return std::make_unique<DnsHandler>(context, *handler_shared_);
  };
  // A burst waits in the socket, not on the floor, while a thread is off the CPU (the
  // kernel caps this at net.core.rmem_max).
  constexpr int kReceiveBufferBytes = 4 << 20;
  // The TCP caps and output budget hold for the process: every listening address shares them.
  server::TcpOptions tcp = options_.flags.tcp;
  tcp.caps = server::MakeTcpCaps(tcp);
  tcp.output_budget = server::MakeOutputBudget(tcp);
  // One count for every listening address, chosen (and logged) once.
  const size_t threads = server::ServingThreads(options_.flags.threads, "--threads");
  std::vector<server::DnsServer::Options> configs;
  if (!options_.inherited.empty()) {
    for (const auto& sockets : options_.inherited) {
      server::DnsServer::Options config;
      config.threads = threads;
      config.udp.receive_buffer_bytes = kReceiveBufferBytes;
      // The receivers of an inherited socket wait in poll, not in recvmmsg, so a kill -9
      // leaves the queue to the socket's next owner (loop::UdpReceiverThread::Run).
      config.udp.receiver_thread = options_.flags.receiver_threads != ReceiverThreads::kOff;
      config.udp.receiver_yield_window = ReceiverYieldWindow(options_.flags.receiver_threads);
      config.inherited = sockets;
      config.tcp = tcp;
      config.clients = rate_limits_.clients;
      config.responses = rate_limits_.responses;
      configs.push_back(config);
    }
  } else {
    std::vector<IpAddress> listen = options_.flags.listen_addresses;
    if (listen.empty()) listen.push_back(*IpAddress::Parse("0.0.0.0"));
    for (const auto& ip : listen) {
      server::DnsServer::Options config;
      config.threads = threads;
      config.udp.receive_buffer_bytes = kReceiveBufferBytes;
      config.udp.receiver_thread = options_.flags.receiver_threads != ReceiverThreads::kOff;
      config.udp.receiver_yield_window = ReceiverYieldWindow(options_.flags.receiver_threads);
      // One socket for up to two threads, so their receivers take turns; more threads get a
      // socket each (see DnsServer, "Sockets").
      config.shared_sockets = config.udp.receiver_thread;
      config.listen_address = loop::SocketAddressOf(ip, options_.flags.port);
      config.tcp = tcp;
      config.clients = rate_limits_.clients;
      config.responses = rate_limits_.responses;
      configs.push_back(config);
    }
  }
  for (const auto& config : configs) {
    auto server = std::make_unique<server::DnsServer>(config, factory);
    if (!server->Start(error)) {
      Stop();
      return false;
    }
    servers_.push_back(std::move(server));
  }

  if (options_.flags.prometheus_port != 0) {
    http::Server::Options http_options;
    http_options.bind_address =
        loop::SocketAddressOf(options_.flags.prometheus_address, options_.flags.prometheus_port);
    if (options_.flags.prometheus_reuse_port) http_options.reuse_port = loop::ReusePort::kYes;
    metrics_http_ = std::make_unique<http::ServerThread>(http_options);
    metrics_http_->Handle("/metrics", [this](const http::Request&) {
      http::Response response = http::Response::Text(200, RenderMetrics());
      response.content_type = "text/plain; version=0.0.4; charset=utf-8";
      return response;
    });
    metrics_http_->Handle("/healthz",
                          [](const http::Request&) { return http::Response::Text(200, "ok"); });
    // Debug data only on the debug address: every pod reaches this port.
    server::RefuseDebugPaths(*metrics_http_);
    if (!metrics_http_->Start(error)) {
      *error =
          "--prometheus-port " + std::to_string(options_.flags.prometheus_port) + ": " + *error;
      Stop();
      return false;
    }
  }
  if (!switchboard_.Start(error)) {
    Stop();
    return false;
  }
  if (options_.flags.dns_loop_detect) ProbeForLoops();
  if (options_.flags.hosts_reload_ms != 0 && !hosts_files_.paths().empty()) {
    hosts_watcher_ = std::make_unique<HostsWatcher>(
        HostsWatcher::Options{hosts_files_.paths(), options_.flags.hosts_reload_ms},
        [this] { ReloadHostsFiles(); });
    hosts_watcher_->Start();
  }
  // One thread polls for the process: its answers reach the shared ZoneSerials.
  (void)servers_.front()->Post(0, [this, interval_ms = options_.flags.serial_poll_ms] {
    if (DnsHandler* here = handlers_.OnThisThread()) here->StartSerialPoll(interval_ms);
  });
  return true;
}

bool FrontendServer::Reload(std::string* error) {
  std::lock_guard<std::mutex> lock(reload_mutex_);
  // The hosts files too, as dnsmasq re-reads them on SIGHUP.
  CountHostsRead(hosts_files_.Read());
  auto state = std::make_shared<RoutingState>();
  config::RuntimeSwitches switches;
  if (!BuildRouting(state.get(), &switches, error)) {
    metrics_reload_rejected_->Inc();
    return false;
  }
  switchboard_.Apply(switches);
  std::shared_ptr<const RoutingState> before = routing_.Current();
  const RoutingChange change = DiffRoutes(before->table, state->table);
  state->generation = ++routing_generation_;
  const uint64_t generation = state->generation;
  routing_.Publish(std::move(state));
  // After the swap, so no query routed the old way can refill what is flushed (one already
  // in flight answers its client but is not cached: DnsHandler::Cacheable).
  size_t flushed = 0;
  if (change.flush_all) {
    flushed = cache_.Flush();
  } else {
    for (const dns::Name& domain : change.domains) flushed += cache_.FlushDomain(domain);
  }
  metrics_reloads_->Inc();
  LOG(INFO) << "configuration " << generation << " applied: "
            << (change.flush_all ? std::string("default route changed, whole cache")
                                 : std::to_string(change.domains.size()) + " domain(s) changed")
            << ", " << flushed << " cache entries dropped";
  if (options_.flags.dns_loop_detect) {
    upstream_table_->ClearLoopDisabled();
    ProbeForLoops();
  }
  return true;
}

void FrontendServer::ReloadHostsFiles() {
  std::lock_guard<std::mutex> lock(reload_mutex_);
  const HostsFiles::Outcome outcome = hosts_files_.Read();
  CountHostsRead(outcome);
  if (!outcome.changed) return;
  // Only the local answers change: the routes and their cache entries stay. A copy of the
  // current state, published whole, so every thread sees the old answers or the new ones.
  auto state = std::make_shared<RoutingState>(*routing_.Current());
  state->local = LocalAnswers(LocalAnswersConfig::From(options_.flags, hosts_files_.Entries()));
  state->generation = ++routing_generation_;
  const uint64_t generation = state->generation;
  routing_.Publish(std::move(state));
  LOG(INFO) << "configuration " << generation << " applied: hosts files changed";
}

void FrontendServer::CountHostsRead(const HostsFiles::Outcome& outcome) {
  if (outcome.changed) metrics_hosts_reloads_->Inc();
  if (outcome.rejected > 0) metrics_hosts_rejected_->Inc(outcome.rejected);
}

void FrontendServer::ProbeForLoops() {
  if (servers_.empty()) return;
  std::shared_ptr<const RoutingState> state = routing_.Current();
  std::vector<upstream::Upstream> upstreams;
  auto add = [&](const upstream::UpstreamSet& set) {
    for (const auto& address : set.addresses()) {
      if (std::find(upstreams.begin(), upstreams.end(), address) == upstreams.end()) {
        upstreams.push_back(address);
      }
    }
  };
  add(state->default_set);
  for (const auto& set : state->domain_sets) add(set);
  // From the first thread's Forwarder: the answer (or our own query coming back) arrives
  // on whichever thread the kernel picks, and the shared table sees it there.
  (void)servers_.front()->Post(0, [this, upstreams] {
    DnsHandler* here = handlers_.OnThisThread();
    if (here == nullptr) return;  // shutting down
    for (const auto& address : upstreams) {
      dns::Name probe = here->forwarder().ProbeForLoop(address);
      VLOG(1) << "loop probe " << probe.ToText() << " sent to "
              << upstream::FormatUpstreamAddress(address);
    }
  });
}

void FrontendServer::Stop() {
  if (hosts_watcher_) hosts_watcher_->Stop();
  if (metrics_http_) metrics_http_->Stop();
  switchboard_.Stop();
  for (auto& server : servers_) server->Stop();
  servers_.clear();
}

server::ServerStats FrontendServer::server_stats() const {
  server::ServerStats total;
  for (const auto& server : servers_) total += server->stats();
  return total;
}

std::vector<loop::SocketAddress> FrontendServer::addresses() const {
  std::vector<loop::SocketAddress> out;
  for (const auto& server : servers_) out.push_back(server->local_address());
  return out;
}

const loop::SocketAddress& FrontendServer::metrics_address() const {
  static const loop::SocketAddress kNone;
  return metrics_http_ ? metrics_http_->local_address() : kNone;
}

loop::SocketAddress FrontendServer::debug_address() const { return switchboard_.debug_address(); }

upstream::ForwardTotals FrontendServer::forward_totals() const { return forwarder_totals_.Sum(); }

std::string FrontendServer::RenderMetrics() const {
  std::string text = registry_.Render();
  if (options_.flags.metrics_compat == metrics::MetricsCompat::kCoredns) {
    text = metrics::WithCorednsFamilies(std::move(text), CorednsSources());
  }
  const std::string& path = options_.flags.metrics_textfile;
  if (path.empty()) return text;
  // Bounded, and only merged in whole when it parses and merges cleanly (text_merge.h): a
  // half-written or broken file must not break the scrape of everything else.
  constexpr size_t kMaxTextfileBytes = 256 * 1024;
  std::ifstream file(path);
  if (!file) return text;  // not written yet
  std::string extra(kMaxTextfileBytes + 1, '\0');
  file.read(extra.data(), static_cast<std::streamsize>(extra.size()));
  extra.resize(static_cast<size_t>(file.gcount()));
  std::string error;
  if (extra.size() > kMaxTextfileBytes) {
    LOG_EVERY_N(WARNING, 100) << "--metrics-textfile " << path << ": over " << kMaxTextfileBytes
                              << " bytes, not exported";
  } else if (std::optional<std::string> merged = metrics::MergeText(text, extra, &error)) {
    return std::move(*merged);
  } else {
    LOG_EVERY_N(WARNING, 100) << "--metrics-textfile " << path << ": not exported: " << error;
  }
  return text;
}

metrics::CorednsSources FrontendServer::CorednsSources() const {
  return {.server = "dns://:" + std::to_string(options_.flags.port),
          .queries = "kdns_frontend_queries_total",
          .duration = "kdns_frontend_answer_duration_seconds",
          .cache_hits = "kdns_frontend_cache_hits_total",
          .cache_misses = "kdns_frontend_cache_misses_total",
          .cache_entries = "kdns_frontend_cache_entries",
          .cache_negative_entries = "kdns_frontend_cache_negative_entries",
          .upstream_prefix = "kdns_frontend_upstream",
          .all_upstreams_down = R"(kdns_frontend_servfail_total{reason="upstream_down"})",
          .forward_rejected = "kdns_frontend_forward_rejected_total"};
}

std::string FrontendServer::StatsText() const {
  const CacheStats stats = cache_.Stats();
  std::ostringstream out;
  out << "cache size " << options_.flags.cache_size << ", " << stats.size << " entries, "
      << stats.evictions << "/" << stats.insertions
      << " cache insertions re-used unexpired cache entries; queries forwarded " << stats.misses
      << ", queries answered locally " << stats.hits << ", stale answers " << stats.stale_hits
      << ", prefetches " << stats.prefetches;
  for (const auto* entry : upstream_table_->Entries()) {
    out << "\nserver " << upstream::FormatUpstreamAddress(entry->address) << ": queries sent "
        << entry->sent.Value() << ", retried or failed " << entry->failed.Value() << ", timeouts "
        << entry->timeouts.Value() << (entry->loop_disabled.load() ? ", disabled: loop" : "");
  }
  return out.str();
}

void FrontendServer::RegisterMetrics() {
  limits::RegisterLimitMetrics(registry_);
  server::RegisterRateLimitMetrics(registry_, rate_limits_);
  metrics::RegisterProcessMetrics(registry_, "frontend-cache");
  auto cache_stat = [this](uint64_t CacheStats::*field) {
    return [this, field] { return static_cast<double>(cache_.Stats().*field); };
  };
  registry_.AddCallbackCounter("kdns_frontend_cache_hits_total",
                               "Answers served fresh from the cache.",
                               cache_stat(&CacheStats::hits));
  registry_.AddCallbackCounter("kdns_frontend_cache_misses_total",
                               "Cache lookups that found nothing fresh (forwarded).",
                               cache_stat(&CacheStats::misses));
  registry_.AddCallbackCounter("kdns_frontend_cache_stale_answers_total",
                               "Expired answers served because every upstream failed (RFC 8767).",
                               cache_stat(&CacheStats::stale_hits));
  registry_.AddCallbackCounter("kdns_frontend_cache_insertions_total", "Entries cached.",
                               cache_stat(&CacheStats::insertions));
  registry_.AddCallbackCounter("kdns_frontend_cache_evictions_total",
                               "Entries removed before their expiry to make room.",
                               cache_stat(&CacheStats::evictions));
  registry_.AddCallbackGauge("kdns_frontend_cache_negative_entries",
                             "Negative answers (NXDOMAIN, NODATA) held now.",
                             [this] { return static_cast<double>(cache_.negatives()); });
  registry_.AddCallbackCounter("kdns_frontend_notify_total",
                               "NOTIFY messages accepted (from --notify-from).",
                               [this] { return static_cast<double>(zone_serials_.notifies()); });
  registry_.AddCallbackCounter(
      "kdns_frontend_zone_serial_changes_total",
      "SOA serials of --serial-zones found changed (or first seen) by the poll.",
      [this] { return static_cast<double>(zone_serials_.serial_changes()); });
  registry_.AddCallbackCounter(
      "kdns_frontend_cache_negative_drops_total",
      "Negative answers dropped because their zone changed (NOTIFY or a new serial).",
      [this] { return static_cast<double>(zone_serials_.dropped()); });
  registry_.AddCallbackCounter("kdns_frontend_cache_prefetches_total",
                               "Popular entries refreshed shortly before they expire.",
                               cache_stat(&CacheStats::prefetches));
  registry_.AddCallbackGauge("kdns_frontend_cache_entries",
                             "Entries held (fresh, or expired and kept to serve stale).",
                             cache_stat(&CacheStats::size));
  registry_.AddCallbackGauge("kdns_frontend_cache_capacity_entries", "--cache-size.",
                             cache_stat(&CacheStats::capacity));
  registry_.AddCallbackGauge("kdns_frontend_cache_bytes",
                             "What the entries' answers take (counted against --cache-bytes).",
                             cache_stat(&CacheStats::bytes));
  registry_.AddCallbackGauge("kdns_frontend_cache_capacity_bytes", "--cache-bytes.",
                             cache_stat(&CacheStats::capacity_bytes));

  upstream::RegisterForwarderMetrics(registry_, "kdns_frontend_forward", forwarder_totals_);

  // Per upstream, from the table every thread's Forwarder shares.
  upstream::RegisterUpstreamMetrics(registry_, "kdns_frontend_upstream", upstream_table_);
  registry_.AddCallbackGauge("kdns_frontend_upstreams_loop_disabled",
                             "Upstreams disabled because our queries came back to us.", [this] {
                               double count = 0;
                               for (const auto* entry : upstream_table_->Entries()) {
                                 count += entry->loop_disabled.load() ? 1 : 0;
                               }
                               return count;
                             });
  registry_.AddCallbackGauge(
      "kdns_frontend_config_generation",
      "Routing configurations applied: 1 at start, +1 for each accepted reload and each "
      "hosts file change.",
      [this] {
        auto current = routing_.Current();
        return current ? static_cast<double>(current->generation) : 0.0;
      });
  metrics_reloads_ =
      &registry_.AddCounter("kdns_frontend_config_reloads_total", "Reloads (SIGHUP) applied.");
  metrics_reload_rejected_ =
      &registry_.AddCounter("kdns_frontend_config_reload_rejected_total",
                            "Reloads (SIGHUP) rejected; the previous configuration kept.");
  metrics_hosts_reloads_ = &registry_.AddCounter(
      "kdns_frontend_hosts_reloads_total",
      "Reads of the hosts files that changed their answers (a file changed, or SIGHUP).");
  metrics_hosts_rejected_ = &registry_.AddCounter(
      "kdns_frontend_hosts_reload_rejected_total",
      "Hosts files that could not be read or had a bad line; their previous version kept.");
}

}  // namespace kdns::frontend
