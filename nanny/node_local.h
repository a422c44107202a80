// NodeLocal: the nanny's node-local mode (-localip), kdns as the per-node DNS cache in
// place of the node-local-dns DaemonSet's node-cache. The Nanny owns one and calls it in
// this order:
//
//   SetUpInterface  before the sockets: the interface and the -localip addresses
//                   (interface.h; with -setupinterface);
//   (the Nanny binds UDP+TCP on every -localip address, IP_FREEBIND, and starts
//    frontend-cache with them)
//   Start           after the sockets are bound: net.ipv4.tcp_migrate_req turned on where
//                   it can be, the firewall backend chosen and every rule installed
//                   (firewall.h; with -setupiptables), /health served on -health-port of
//                   every address, the child probed, the sync timer armed;
//   Sync            every -syncinterval: addresses and rules checked, what another agent
//                   deleted or altered put back and counted;
//   StopRouting     at SIGTERM (and when the nanny gives up), unless -skipteardown: the
//                   rules that send queries our way are removed (Firewall::RemoveCapture;
//                   from our own nftables table always, shared rules, iptables', only when
//                   no other node cache is alive); the Nanny then stops the child, which
//                   answers what reached us, its replies still untracked;
//   Teardown        once the child exited: the rest of the rules and the addresses (the
//                   interface if we created it), what is shared only when no other node
//                   cache is alive (it serves them now).
//
// Other node caches (the two of a DaemonSet update with maxSurge) are seen through
// NodeCachePresence (node_cache_presence.h), announced before anything is set up.
//
// Health: GET /health is 200 "OK" while the child answered one of the probe queries sent
// in the last Options::healthy_within_ms (a CHAOS TXT version.bind. query to the first
// -localip address, which frontend-cache answers itself: the probe never reaches the
// central DNS), else 503.
//
// Thread: the nanny's loop. The commands run synchronously on it, each bounded by the
// runner's deadline (command_runner.h).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/ares/channel.h"
#include "common/base/ip_address.h"
#include "common/http/server.h"
#include "common/loop/loop.h"
#include "common/loop/timer.h"
#include "nanny/command_runner.h"
#include "nanny/firewall.h"
#include "nanny/interface.h"
#include "nanny/nanny_metrics.h"
#include "nanny/nft_session.h"
#include "nanny/node_cache_presence.h"

namespace kdns::nanny {

class NodeLocal {
 public:
  struct Options {
    std::vector<IpAddress> addresses;  // -localip
    uint16_t dns_port = 53;            // the child's --port
    bool setup_interface = true;
    std::string interface_name = "nodelocaldns";
    bool setup_firewall = true;  // -setupiptables
    FirewallChoice firewall = FirewallChoice::kAuto;
    bool skip_teardown = false;
    uint16_t health_port = 8080;
    uint64_t sync_interval_ms = 60'000;
    std::string ruleset_file;  // the nftables backend's `nft -f` input (in the run directory)
    uint64_t probe_interval_ms = 1'000;
    uint64_t healthy_within_ms = 3'000;
    // The nftables session that owns our table (tests: a fake, or none for the shared table).
    std::function<std::unique_ptr<NftSession>(std::string* error)> open_nft_session =
        &LoadLibNftables;
    std::string unix_listing = "/proc/net/unix";  // NodeCachePresence's
    // The network namespace's switch for moving the connections that wait in a closing
    // listener to another of its SO_REUSEPORT group (Linux 5.14): turned on at Start where
    // it can be, so an update resets no TCP connection (ListenSockets::LeaveReusePortGroup).
    std::string tcp_migrate_req_file = "/proc/sys/net/ipv4/tcp_migrate_req";
  };

  NodeLocal(loop::Loop& loop, Options options, CommandRunner& runner,
            InterfaceReader reader = &ReadInterface);
  ~NodeLocal();
  NodeLocal(const NodeLocal&) = delete;
  NodeLocal& operator=(const NodeLocal&) = delete;

  // False with a one-line *error (start-up problems).
  [[nodiscard]] bool SetUpInterface(std::string* error);
  [[nodiscard]] bool Start(std::string* error);
  // One check and repair of the addresses and rules (the timer's; tests call it).
  void Sync();
  // Both idempotent; with skip_teardown they only stop the timers. StopRouting returns
  // whether another node cache is alive (it serves the node from now on).
  bool StopRouting();
  void Teardown();

  // Runs after each change of metrics() (the Nanny rewrites its metrics file).
  void set_on_metrics_changed(std::function<void()> callback) {
    on_metrics_changed_ = std::move(callback);
  }
  const NodeLocalMetrics& metrics() const { return metrics_; }
  bool healthy() const;
  // The health endpoints' addresses (with the port the kernel chose for port 0).
  std::vector<loop::SocketAddress> health_addresses() const;
  FirewallBackend backend() const {
    return firewall_ ? firewall_->backend() : FirewallBackend::kNone;
  }

 private:
  // Reads net.ipv4.tcp_migrate_req and turns it on if off (it needs a writable /proc/sys:
  // the host, a privileged container); says which in the log. Whether it is on now.
  bool TurnOnTcpMigration();
  bool StartFirewall(std::string* error);
  // Shared rules (iptables, the shared nftables table) while another node cache is alive.
  bool RulesLeftToOthers() const;
  bool StartHealth(std::string* error);
  void Probe();
  void MetricsChanged();

  loop::Loop& loop_;
  Options options_;
  CommandRunner& runner_;
  NodeCachePresence presence_;
  std::unique_ptr<LocalInterface> interface_;
  std::unique_ptr<NftSession> nft_session_;  // before firewall_, which uses it
  std::unique_ptr<Firewall> firewall_;
  std::vector<std::unique_ptr<http::Server>> health_servers_;
  std::unique_ptr<ares::Channel> probe_channel_;
  std::vector<uint8_t> probe_query_;
  loop::Timer sync_timer_;
  loop::Timer probe_timer_;
  bool probe_in_flight_ = false;
  std::optional<uint64_t> last_answer_ms_;
  bool routing_stopped_ = false;
  bool others_alive_ = false;  // as StopRouting saw it
  bool torn_down_ = false;
  NodeLocalMetrics metrics_;
  std::function<void()> on_metrics_changed_;
};

}  // namespace kdns::nanny
