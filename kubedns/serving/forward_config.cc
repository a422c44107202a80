#include "kubedns/serving/forward_config.h"

#include <glog/logging.h>

#include <algorithm>
#include <functional>
#include <memory>
#include <string_view>
#include <unordered_map>
#include <utility>

#include "common/ares/channel.h"
#include "common/base/thread_name.h"
#include "common/loop/file_watcher.h"
#include "common/upstream/resolv_conf.h"

namespace kdns::kubedns {

ForwardConfig::ForwardConfig(Options options, ForwardMetrics& metrics, PublishFn publish)
    : options_(std::move(options)), metrics_(metrics), publish_(std::move(publish)) {}

ForwardConfig::~ForwardConfig() { Stop(); }

std::shared_ptr<const UpstreamRoutes> ForwardConfig::routes() const {
  std::lock_guard lock(routes_mu_);
  return routes_ ? routes_ : std::make_shared<const UpstreamRoutes>();
}

void ForwardConfig::ReadConfigMap() {
  const std::string& dir = options_.config_dir;
  config::ConfigDirData data;
  std::string error;
  if (!config::ReadConfigDir(dir, &data, &error)) {
    if (error != last_read_error_) {
      LOG(ERROR) << "--config-dir: " << error
                 << (seen_data_ ? "; keeping the previous configuration"
                                : "; forwarding without it until it can be read");
      metrics_.ConfigLoaded(ConfigReload::kUnreadable);
      last_read_error_ = error;
    }
    metrics_.SetConfigError(true);
    return;
  }
  last_read_error_.clear();
  if (!seen_data_ || !(data == last_data_)) {
    seen_data_ = true;
    last_data_ = data;
    config::KubeDnsConfig parsed;
    data_valid_ = config::ParseKubeDnsConfig(data, &parsed, &error);
    if (!data_valid_) {
      LOG(ERROR) << "--config-dir " << dir
                 << ": invalid configuration rejected, keeping the previous one: " << error;
      metrics_.ConfigLoaded(ConfigReload::kRejected);
    } else {
      metrics_.ConfigLoaded(ConfigReload::kApplied);
      if (!(parsed == config_) || config_.empty()) {
        LOG(INFO) << "--config-dir " << dir << ": " << parsed.ToString();
      }
      const bool switches_changed = !switches_told_ || !(parsed.switches == config_.switches);
      config_ = std::move(parsed);
      if (switches_changed && options_.on_switches) {
        switches_told_ = true;
        options_.on_switches(config_.switches);
      }
    }
  }
  metrics_.SetConfigError(!data_valid_);
}

void ForwardConfig::ReadResolvConf() {
  upstream::ResolvConf conf;
  std::string error;
  if (!upstream::LoadResolvConf(options_.resolv_conf, &conf, &error)) {
    if (error != resolv_error_ && config_.upstream_nameservers.empty()) {
      LOG(WARNING) << error << (resolv_conf_.empty() ? "" : "; keeping its last nameservers");
      resolv_error_ = error;
    }
    return;
  }
  resolv_error_.clear();
  if (conf.nameservers != resolv_conf_) {
    for (const auto& line : conf.skipped_lines) {
      LOG(WARNING) << options_.resolv_conf << ": skipped \"" << line << "\"";
    }
    resolv_conf_ = std::move(conf.nameservers);
  }
}

void ForwardConfig::Poll(const HostResolver& resolver) {
  ReadInputs();
  Publish(resolver);
}

void ForwardConfig::ReadInputs() {
  if (!options_.config_dir.empty()) ReadConfigMap();
  if (options_.flag_nameservers.empty()) ReadResolvConf();
}

void ForwardConfig::Publish(const HostResolver& resolver) {
  RoutingInputs inputs;
  inputs.cluster_zone = options_.cluster_zone;
  inputs.config = config_;
  inputs.flag_nameservers = options_.flag_nameservers;
  inputs.flag_route_options = options_.flag_route_options;
  inputs.resolv_conf = resolv_conf_;
  std::vector<std::string> warnings;
  auto routes = std::make_shared<const UpstreamRoutes>(BuildRoutes(inputs, resolver, &warnings));
  if (resolver && warnings != last_warnings_) {
    for (const auto& warning : warnings) LOG(WARNING) << warning;
    last_warnings_ = std::move(warnings);
  }
  {
    std::lock_guard lock(routes_mu_);
    if (routes_ && *routes_ == *routes) return;
    routes_ = routes;
  }
  LOG(INFO) << "forwarding: " << routes->ToString();
  if (routes->default_route().upstreams.empty()) {
    LOG(WARNING) << "no upstream nameserver (upstreamNameservers, --nameservers or "
                 << options_.resolv_conf << "): names outside the cluster get SERVFAIL";
  }
  metrics_.SetRoutes(*routes);
  publish_(routes);
}

std::vector<dns::Name> ForwardConfig::StubHostNames() const {
  std::vector<dns::Name> names;
  for (const config::StubDomain& stub : config_.stub_domains) {
    for (const config::StubServer& server : stub.servers) {
      if (server.is_host() && std::find(names.begin(), names.end(), server.host) == names.end()) {
        names.push_back(server.host);
      }
    }
  }
  return names;
}

void ForwardConfig::Start(const loop::SocketAddress& resolver_server) {
  std::promise<loop::TaskQueue::Poster> started;
  std::future<loop::TaskQueue::Poster> poster = started.get_future();
  thread_ = std::thread([this, resolver_server, &started] { Run(resolver_server, &started); });
  poster_ = poster.get();
}

void ForwardConfig::Stop() {
  // Post fails (harmlessly) when the thread never started or already ended.
  poster_.Post([this] { run_loop_->Stop(); });
  if (thread_.joinable()) thread_.join();
}

namespace {

// The failures of one pass's lookups, by name (the addresses go to stub_hosts_).
struct LookupRound {
  std::unordered_map<dns::Name, std::string, dns::NameHash> errors;
  size_t outstanding = 0;
};

}  // namespace

void ForwardConfig::Run(const loop::SocketAddress& resolver_server,
                        std::promise<loop::TaskQueue::Poster>* started) {
  SetThreadName("forward-config");
  loop::Loop loop;
  {
    run_loop_ = &loop;
    loop::TaskQueue tasks(loop);
    ares::Channel::Options lookups;
    lookups.servers = {resolver_server};
    lookups.timeout_ms = kLookupTimeoutMs;
    lookups.tries = 1;
    std::string error;
    std::unique_ptr<ares::Channel> channel = ares::Channel::Create(loop, lookups, &error);
    if (channel == nullptr) LOG(ERROR) << "stub server host names cannot be resolved: " << error;
    std::shared_ptr<LookupRound> round;  // the pass waiting for answers, if any
    bool again = false;                  // a pass came due while `round` was out

    std::function<void()> pass = [&] {
      if (round != nullptr) {
        again = true;
        return;
      }
      ReadInputs();
      std::vector<dns::Name> names = StubHostNames();
      stub_hosts_.Retain(names);
      if (names.empty() || channel == nullptr) {
        Publish(HostResolver());
        return;
      }
      // A name in the hosts file could answer at once, so the round is complete only when
      // every name answered, and each callback holds the round itself.
      auto current = std::make_shared<LookupRound>();
      current->outstanding = names.size();
      round = current;
      for (const dns::Name& name : names) {
        const std::string text = name.ToText();
        channel->LookupAddresses(
            text, [&, this_round = current, name, text](const std::vector<IpAddress>& addresses,
                                                        const std::string& lookup_error) {
              if (addresses.empty()) {
                // The channel's error names the host; the route warning names it already.
                std::string_view reason = lookup_error;
                if (reason.starts_with(text + ": ")) reason.remove_prefix(text.size() + 2);
                this_round->errors[name] = std::string(reason);
              }
              (void)stub_hosts_.Record(name, addresses);
              if (--this_round->outstanding > 0) return;
              round.reset();
              Publish([this, this_round](const dns::Name& host, std::string* resolve_error) {
                auto failed = this_round->errors.find(host);
                if (failed != this_round->errors.end()) *resolve_error = failed->second;
                const auto known = stub_hosts_.Find(host);
                return std::vector<IpAddress>(known.begin(), known.end());
              });
              if (again) {
                again = false;
                pass();
              }
            });
      }
    };
    loop::FileWatcher::Options watch;
    watch.dir = options_.config_dir;
    watch.mode = options_.config_dir.empty() ? loop::FileWatcher::Mode::kPollOnly
                                             : loop::FileWatcher::Mode::kInotify;
    watch.poll_interval_ms = options_.period_ms;
    loop::FileWatcher watcher(loop, watch, [&](loop::FileWatcher::Trigger) { pass(); });
    watcher.Start();
    started->set_value(tasks.poster());
    pass();
    loop.Run();  // until Stop()
  }
  run_loop_ = nullptr;
  CHECK(loop.Close()) << "the forward config loop leaked a handle";
}

}  // namespace kdns::kubedns
