#include "nanny/node_local.h"

#include <glog/logging.h>

#include <array>
#include <fstream>

#include "common/dns/builder.h"
#include "common/dns/name.h"
#include "common/dns/types.h"
#include "common/loop/socket_address.h"

namespace kdns::nanny {
namespace {

// CHAOS TXT version.bind.: answered by frontend-cache itself (chaos.h), never forwarded.
std::vector<uint8_t> ProbeQuery() {
  std::array<uint8_t, dns::kMaxUdpSizeWithoutEdns> buffer{};
  dns::MessageBuilder builder(buffer);
  builder.header().rd = false;
  const dns::BuildError error = builder.AddQuestion(*dns::Name::FromText("version.bind."),
                                                    dns::RrType::kTxt, dns::RrClass::kCh);
  CHECK(error == dns::BuildError::kOk) << "a question always fits 512 bytes";
  std::span<const uint8_t> query = builder.Finish();
  return {query.begin(), query.end()};
}

}  // namespace

NodeLocal::NodeLocal(loop::Loop& loop, Options options, CommandRunner& runner,
                     InterfaceReader reader)
    : loop_(loop),
      options_(std::move(options)),
      runner_(runner),
      presence_(options_.unix_listing),
      sync_timer_(loop),
      probe_timer_(loop) {
  if (options_.setup_interface) {
    interface_ = std::make_unique<LocalInterface>(options_.interface_name, options_.addresses,
                                                  runner_, std::move(reader));
  }
}

NodeLocal::~NodeLocal() = default;

bool NodeLocal::SetUpInterface(std::string* error) {
  // Before anything of the node is touched: an older node cache stopping now sees us.
  if (!presence_.Announce(error)) return false;
  if (!interface_) return true;
  if (!interface_->Setup(error)) return false;
  metrics_.interface_ok = interface_->ok();
  LOG(INFO) << "node-local addresses on " << interface_->name()
            << (interface_->created() ? " (a dummy link created for them)" : "");
  return true;
}

bool NodeLocal::Start(std::string* error) {
  metrics_.tcp_migrate_req = TurnOnTcpMigration();
  if (options_.setup_firewall && !StartFirewall(error)) return false;
  metrics_.firewall_backend = std::string(FirewallBackendName(backend()));
  if (!StartHealth(error)) return false;
  ares::Channel::Options probe;
  probe.servers = {loop::SocketAddressOf(options_.addresses.front(), options_.dns_port)};
  probe.timeout_ms = options_.probe_interval_ms;
  probe_channel_ = ares::Channel::Create(loop_, probe, error);
  if (!probe_channel_) return false;
  probe_query_ = ProbeQuery();
  probe_timer_.StartRepeating(options_.probe_interval_ms, [this] { Probe(); });
  Probe();
  sync_timer_.StartRepeating(options_.sync_interval_ms, [this] { Sync(); });
  MetricsChanged();
  return true;
}

bool NodeLocal::TurnOnTcpMigration() {
  const std::string& file = options_.tcp_migrate_req_file;
  std::string value;
  {
    std::ifstream in(file);
    if (!(in >> value)) {
      LOG(WARNING) << "no " << file << " (Linux before 5.14): at an update, TCP connections "
                   << "not yet accepted by this node cache are reset when it hands over";
      return false;
    }
  }
  if (value != "0") {
    LOG(INFO) << "net.ipv4.tcp_migrate_req is on: at an update, TCP connections not yet "
              << "accepted move to the next node cache";
    return true;
  }
  std::ofstream out(file);
  out << "1\n";
  out.flush();
  if (out) {
    LOG(INFO) << "turned net.ipv4.tcp_migrate_req on (it was off): at an update, TCP "
              << "connections not yet accepted move to the next node cache";
    return true;
  }
  LOG(WARNING) << "net.ipv4.tcp_migrate_req is off and " << file << " is not writable here: "
               << "at an update, TCP connections not yet accepted by this node cache are "
               << "reset when it hands over (set net.ipv4.tcp_migrate_req=1 on the node, "
               << "docs/operators.md \"Lifecycle\")";
  return false;
}

bool NodeLocal::StartFirewall(std::string* error) {
  std::string chosen_error;
  const BackendFacts facts = GatherBackendFacts(runner_);
  const std::optional<FirewallBackend> backend =
      ChooseBackend(options_.firewall, facts, &chosen_error);
  if (!backend) {
    *error = chosen_error;
    return false;
  }
  const RuleSpec spec{options_.addresses, options_.dns_port, options_.health_port};
  const std::string backend_name(FirewallBackendName(*backend));
  // Our own table, owned by our socket, dies with us (Linux >= 5.12); -skipteardown asks for
  // rules that outlive us, so the shared table.
  if (*backend == FirewallBackend::kNftables && options_.open_nft_session &&
      !options_.skip_teardown) {
    std::string why;
    nft_session_ = options_.open_nft_session(&why);
    const std::string table = std::string(kNftTable) + "-" + presence_.id();
    if (nft_session_) {
      firewall_ = MakeFirewall(*backend, spec, runner_, options_.ruleset_file,
                               OwnedNftTable{nft_session_.get(), table});
      if (firewall_->Install(&why)) {
        metrics_.rules_ok = true;
        LOG(INFO) << "node-local rules installed with nftables, in table inet " << table
                  << " (owned: the kernel removes it when this process dies)";
        return true;
      }
      nft_session_.reset();
    }
    LOG(WARNING) << "no nftables table of our own (" << why << "): the shared table inet "
                 << kNftTable << " instead, which outlives a killed node cache until the next "
                 << "one starts (kernels before 5.12 have no owner flag)";
  }
  firewall_ = MakeFirewall(*backend, spec, runner_, options_.ruleset_file);
  if (!firewall_->Install(error)) {
    *error = "installing the node-local rules (" + backend_name + "): " + *error;
    return false;
  }
  metrics_.rules_ok = true;
  LOG(INFO) << "node-local rules installed with " << backend_name;
  return true;
}

bool NodeLocal::StartHealth(std::string* error) {
  for (const IpAddress& address : options_.addresses) {
    http::Server::Options health;
    health.bind_address = loop::SocketAddressOf(address, options_.health_port);
    // The next node cache of an update binds it beside us (maxSurge).
    health.reuse_port = loop::ReusePort::kYes;
    auto server = std::make_unique<http::Server>(loop_, health);
    server->Handle("/health", [this](const http::Request&) {
      return healthy() ? http::Response::Text(200, "OK")
                       : http::Response::Text(503, "the cache does not answer");
    });
    if (!server->Start(error)) {
      *error = "-health-port: " + *error;
      return false;
    }
    health_servers_.push_back(std::move(server));
  }
  return true;
}

std::vector<loop::SocketAddress> NodeLocal::health_addresses() const {
  std::vector<loop::SocketAddress> out;
  for (const auto& server : health_servers_) out.push_back(server->GetLocalAddress());
  return out;
}

bool NodeLocal::healthy() const {
  return last_answer_ms_ && loop_.now_ms() - *last_answer_ms_ <= options_.healthy_within_ms;
}

void NodeLocal::Probe() {
  if (probe_in_flight_ || !probe_channel_) return;
  probe_in_flight_ = true;
  probe_channel_->Send(probe_query_, [this](const ares::Channel::Reply& reply) {
    probe_in_flight_ = false;
    // Any reply is an answer: the child reads its sockets.
    if (reply.status == ARES_SUCCESS) last_answer_ms_ = loop_.now_ms();
  });
}

void NodeLocal::Sync() {
  if (routing_stopped_) return;
  std::string error;
  if (interface_) {
    switch (interface_->Sync(&error)) {
      case SyncOutcome::kInPlace:
        break;
      case SyncOutcome::kRepaired:
        ++metrics_.address_repairs;
        LOG(WARNING) << "node-local addresses on " << interface_->name()
                     << " were missing or the link was down: put back";
        break;
      case SyncOutcome::kFailed:
        ++metrics_.sync_errors;
        LOG(ERROR) << "node-local interface check failed: " << error;
        break;
    }
    metrics_.interface_ok = interface_->ok();
  }
  if (firewall_) {
    switch (firewall_->Sync(&error)) {
      case SyncOutcome::kInPlace:
        metrics_.rules_ok = true;
        break;
      case SyncOutcome::kRepaired:
        metrics_.rules_ok = true;
        ++metrics_.rule_repairs;
        LOG(WARNING) << "node-local rules (" << FirewallBackendName(firewall_->backend())
                     << ") were missing or altered: put back";
        break;
      case SyncOutcome::kFailed:
        metrics_.rules_ok = false;
        ++metrics_.sync_errors;
        LOG(ERROR) << "node-local rules check failed: " << error;
        break;
    }
  }
  MetricsChanged();
}

bool NodeLocal::StopRouting() {
  if (routing_stopped_) return others_alive_;
  routing_stopped_ = true;
  sync_timer_.Stop();
  probe_timer_.Stop();
  if (options_.skip_teardown) {
    LOG(INFO) << "-skipteardown: the node-local rules and addresses stay";
    return false;
  }
  // Withdrawn before looking: of two node caches stopping at once, one sees the other gone.
  presence_.Withdraw();
  others_alive_ = presence_.OthersAlive();
  if (others_alive_) LOG(INFO) << "another node cache is alive on this node: it serves it now";
  // The rules that capture queries first: while they stand, traffic to the ClusterIP is
  // ours; once they are gone kube-proxy's DNAT takes it to the central DNS again (or the
  // other node cache's rules take it). Our replies' rules stay until the child exited.
  if (firewall_ && RulesLeftToOthers()) {
    LOG(INFO) << "node-local rules (" << FirewallBackendName(firewall_->backend())
              << ", shared) left to the other node cache";
  } else if (firewall_) {
    std::string error;
    if (firewall_->RemoveCapture(&error)) {
      LOG(INFO) << "node-local rules that send queries here removed";
    } else {
      LOG(ERROR) << "removing the node-local rules that send queries here: " << error;
    }
    metrics_.rules_ok = false;
  }
  MetricsChanged();
  return others_alive_;
}

bool NodeLocal::RulesLeftToOthers() const {
  return firewall_ && firewall_->shared() && others_alive_;
}

void NodeLocal::Teardown() {
  if (torn_down_) return;
  StopRouting();
  torn_down_ = true;
  if (options_.skip_teardown) return;
  if (firewall_ && !RulesLeftToOthers()) {
    std::string error;
    if (firewall_->Remove(&error)) {
      LOG(INFO) << "node-local rules removed";
    } else {
      LOG(ERROR) << "removing the node-local rules: " << error;
    }
  }
  if (interface_ && others_alive_) {
    LOG(INFO) << "node-local addresses left on " << interface_->name()
              << " for the other node cache";
  } else if (interface_) {
    std::string error;
    if (interface_->Teardown(&error)) {
      LOG(INFO) << "node-local addresses removed from " << interface_->name()
                << (interface_->created() ? " (and the link)" : "");
    } else {
      LOG(ERROR) << "removing the node-local addresses: " << error;
    }
    metrics_.interface_ok = false;
  }
  MetricsChanged();
}

void NodeLocal::MetricsChanged() {
  if (on_metrics_changed_) on_metrics_changed_();
}

}  // namespace kdns::nanny
