// frontend-cache's command line: the dnsmasq options a kube-dns Deployment passes (through
// the nanny) plus our own. gflags cannot repeat a flag (--server is repeated), so this is a
// small parser of its own: `--opt=value` and `--opt value`, dnsmasq's short forms, and
// every malformed value rejected with one line naming the flag. Arguments it does not know
// are handed back in order for gflags (--v, --logtostderr, ...). Pure: reads no file.
//
// The code: options.cc (the scan of the arguments, the checks across options, the dnsmasq
// options refused), option_table.cc (every option's name, short letter and setter),
// server_option.h (the --server and --address values, and the servers file).
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/base/ip_address.h"
#include "common/base/ip_prefix.h"
#include "common/dns/client_address.h"
#include "common/dns/loadbalance.h"
#include "common/dns/name.h"
#include "common/loop/socket_address.h"
#include "common/metrics/coredns_compat.h"
#include "common/server/admission.h"
#include "common/server/loop_server.h"
#include "common/server/query_log.h"
#include "common/server/rate_limits.h"
#include "common/upstream/dns0x20.h"
#include "common/upstream/forward_budgets.h"
#include "common/upstream/route_options.h"
#include "common/upstream/upstream_address.h"
#include "frontend-cache/cache.h"
#include "frontend-cache/server_option.h"

namespace kdns::frontend {

inline constexpr uint32_t kMaxCacheSize = 1'000'000;
// dnsmasq caps --min-cache-ttl at one hour (TTL_FLOOR_LIMIT), silently; so do we.
inline constexpr uint32_t kMinCacheTtlLimitS = 3600;
// dnsmasq has no cap by default; an hour bounds how long a poisoned or mistaken answer with
// a huge TTL can stay (DESIGN §7) while costing a popular name one refresh an hour.
inline constexpr uint32_t kDefaultMaxCacheTtlS = 3600;
// --cache-bytes bounds: the largest entry (a 64 KiB reply) must fit the smallest budget.
inline constexpr uint64_t kMinCacheBytes = uint64_t{1} << 20;
inline constexpr uint64_t kMaxCacheBytes = uint64_t{1} << 40;

enum class ReceiverThreads : uint8_t { kAuto, kOn, kOff };

struct Options {
  std::vector<ServerOption> servers;             // --server, -S (repeatable)
  uint32_t cache_size = 150;                     // --cache-size, -c (dnsmasq's default)
  bool no_negcache = false;                      // --no-negcache, -N
  std::optional<uint32_t> neg_ttl_s;             // --neg-ttl
  bool dns_loop_detect = false;                  // --dns-loop-detect
  std::string log_facility;                      // --log-facility, -8 ("-": stderr)
  bool no_resolv = false;                        // --no-resolv, -R
  std::string resolv_file = "/etc/resolv.conf";  // --resolv-file, -r
  uint32_t dns_forward_max = 4096;               // --dns-forward-max, -0 (whole process)
  std::vector<IpAddress> listen_addresses;       // --listen-address, -a (empty: all)
  uint16_t port = upstream::kDnsPort;            // --port, -p (0: any free port)
  // -k, --keep-in-foreground; -d, --no-daemon: we are always in the foreground.
  bool keep_in_foreground = false;
  // Static answers and hosts files (local_answers.h).
  std::vector<AddressOption> addresses;  // --address, -A (repeatable)
  bool no_hosts = false;                 // --no-hosts, -h: do not read /etc/hosts
  std::vector<std::string> addn_hosts;   // --addn-hosts, -H (repeatable)
  // Ours: --hosts-reload, how often the hosts files are checked for a change besides
  // inotify (CoreDNS's hosts `reload`, 5 s); 0: re-read on SIGHUP only (dnsmasq's way).
  uint64_t hosts_reload_ms = 5000;
  uint32_t local_ttl_s = 0;    // --local-ttl, -T: TTL of local answers
  bool domain_needed = false;  // --domain-needed, -D
  bool bogus_priv = false;     // --bogus-priv, -b
  bool filter_aaaa = false;    // --filter-AAAA
  // Forwarding: --strict-order (-o) asks the servers in the order given (by default the
  // fastest first); --all-servers sends a query's first try to every server at once.
  bool strict_order = false;
  bool all_servers = false;
  // Accepted for dnsmasq command lines, with dnsmasq's effect where one applies here:
  std::string user;                     // --user, -u: drop root to this user after binding
  std::vector<std::string> interfaces;  // --interface, -i: listen on its addresses
  bool bind_interfaces = false;         // --bind-interfaces, -z (we always bind each address)
  bool no_poll = false;                 // --no-poll, -n (resolv.conf is re-read on SIGHUP only)
  // --log-queries[=extra] (-q): one line per query (common/server/query_log.h); ours:
  // --log-queries-rate=N lines a second at most (0: no limit), --log-queries-sample=N (log
  // one query in N).
  server::QueryLogOptions log_queries;
  // Ours.
  std::string servers_file;  // --servers-file: more --server lines, re-read on SIGHUP
  // --tls-ca-file: the CA bundle (PEM) tls:// upstreams are verified against; empty: the
  // system's.
  std::string tls_ca_file;
  uint32_t threads = 0;  // --threads (0: DefaultThreads(), cpu_quota.h)
  // --route-options (repeatable): force_tcp, prefer_udp, policy, max_fails, health_check per
  // route (common/upstream/route_options.h).
  std::vector<upstream::RouteOptionsEntry> route_options;
  // --receiver-threads=auto|on|off: a receiver thread per UDP socket that answers cache
  // hits itself, or UDP received on the serving loops (epoll). auto (the default) is on,
  // for sockets bound here and inherited ones alike, except that a receiver of its own
  // (one serving thread) that hands off most datagrams, cache misses, leaves the socket to
  // its loop until the loop answers most of them from the cache (see README.md).
  ReceiverThreads receiver_threads = ReceiverThreads::kAuto;
  // The cache's bounds (see docs/operators.md, "Limits").
  uint32_t max_cache_ttl_s = kDefaultMaxCacheTtlS;              // --max-cache-ttl (0: no cap)
  uint32_t min_cache_ttl_s = 0;                                 // --min-cache-ttl
  uint64_t cache_bytes = kDefaultCacheBytes;                    // --cache-bytes
  uint32_t cache_entry_max_bytes = kDefaultCacheEntryMaxBytes;  // --cache-entry-max-bytes
  uint32_t stale_max_s = 86400;                                 // --stale-max (0: no stale answers)
  uint64_t lameduck_ms = 5000;   // --lameduck (Go duration or seconds)
  uint16_t prometheus_port = 0;  // --prometheus-port (0: off)
  IpAddress prometheus_address = *IpAddress::Parse("0.0.0.0");  // --prometheus-addr
  // --prometheus-reuseport: the port may be bound by another process too (the nanny sets it
  // in node-local mode, where the next node cache of an update serves beside this one).
  bool prometheus_reuse_port = false;
  // --debug-address=IP:PORT: /debug/top-clients on an HTTP port of its own, off by
  // default (common/server/debug_http.h); never on --prometheus-port, which every pod
  // can reach.
  std::optional<loop::SocketAddress> debug_address;
  // --metrics-textfile: Prometheus text appended to /metrics at every scrape (node
  // exporter's textfile idea); the nanny writes its own figures there.
  std::string metrics_textfile;
  // --metrics-compat=coredns: /metrics also carries CoreDNS's families, derived from ours
  // at scrape time (common/metrics/coredns_compat.h); none (the default): only ours.
  metrics::MetricsCompat metrics_compat = metrics::MetricsCompat::kNone;
  // What main logs as warnings once logging is set up: a deprecated flag used, once each.
  std::vector<std::string> warnings;
  // Forwarding budgets (common/upstream/forward_budgets.h), under --dns-forward-max; 0: a
  // quarter of it.
  uint32_t forward_max_per_route = 0;     // --forward-max-per-route
  uint32_t forward_max_per_upstream = 0;  // --forward-max-per-upstream
  // --upstream-0x20=auto|on|off: random case in forwarded names (common/upstream/dns0x20.h).
  upstream::Dns0x20 upstream_0x20 = upstream::Dns0x20::kAuto;
  // --loadbalance=round_robin|off (common/dns/loadbalance.h): cache hits rotate their A/AAAA
  // RRsets, as dnsmasq's cache did in kube-dns's pod; --no-round-robin is off.
  dns::LoadBalance loadbalance = dns::LoadBalance::kRoundRobin;
  // --forward-client-reserve: the percent of each route and upstream budget kept for
  // clients holding less than the average (each client's fair share); 0: off.
  uint32_t forward_client_reserve = upstream::ForwardBudgets::kDefaultClientReservePercent;
  // DNS over TCP limits (docs/operators.md, "Limits"); defaults are server::TcpOptions':
  //   --tcp-idle-timeout, --tcp-frame-timeout,
  //   --tcp-query-timeout                                Go duration or seconds; 0: none
  //   --tcp-max-connections, --tcp-max-connections-per-source
  //   --tcp-max-output-bytes-per-connection, --tcp-max-output-bytes-total
  server::TcpOptions tcp;
  // Waiting queries (common/server/waiting_queries.h).
  // --max-waiting-queries: queries waiting for an upstream in the whole process; beyond
  // it a miss is answered at once, stale if cached, else SERVFAIL.
  uint32_t max_waiting_queries = 10'000;
  // Per-client rate limit, slip, exempt prefixes and RRL (--client-rate-*,
  // --rrl-responses-per-second); shedding under overload is always on.
  server::RateLimitFlags rate_limits;
  // --client-address-to: the upstreams (prefixes) whose queries carry the asking client's
  // address (kubedns, on loopback: server/admission.h); empty: none.
  // --client-address-option: that EDNS option's code.
  std::vector<IpPrefix> client_address_to = server::DefaultClientAddressPeers();
  uint16_t client_address_option = dns::kDefaultClientAddressOption;
  // Exact negative caching (docs/design.md, "Negative answers without staleness"):
  // --notify-from: who may send NOTIFY (RFC 1996): on one for a zone, the zone's cached
  // negative answers are dropped; kubedns, on loopback; empty: NOTIFY is refused from all.
  std::vector<IpPrefix> notify_from = server::DefaultClientAddressPeers();
  // --serial-zones: zones whose SOA serial is asked for every --serial-poll while the
  // cache holds negative answers; a changed serial drops the zone's negatives as a NOTIFY
  // does, so a lost NOTIFY costs at most one poll interval. Their negative answers are
  // cached even under --no-negcache (they are exact). Empty (the default): none.
  std::vector<dns::Name> serial_zones;
  uint64_t serial_poll_ms = 1000;  // --serial-poll (Go duration or seconds; 0: no polling)
};

// Where the debug data is served when the kube-dns ConfigMap's kdns.debugData asks for it
// without --debug-address, on server::kDefaultDebugHost (kubedns's is 10057 in the same pod).
inline constexpr uint16_t kDefaultDebugPort = 10058;

// dnsmasq reads this hosts file unless --no-hosts.
inline constexpr std::string_view kDefaultHostsFile = "/etc/hosts";

// Parses `args` (without the program name). Unknown arguments go to `rest`, in order, and
// everything after a "--". False with a one-line `error` on the first bad option, or on
// a dnsmasq option frontend-cache refuses (RefusedOptionReason).
[[nodiscard]] bool ParseOptions(std::span<const std::string_view> args, Options* options,
                                std::vector<std::string>* rest, std::string* error);

// Why frontend-cache refuses a dnsmasq option it recognises (`name` is the long name
// without "--", or the short letter), as the one line start-up prints, saying what to do
// instead; empty for an option that is not a refused dnsmasq option.
std::string RefusedOptionReason(std::string_view name);

// Every option ParseOptions takes and every dnsmasq option it refuses, as --flag-table's
// "option" and "refused" lines (common/app/flag_table.h).
std::string FlagTableLines();

// The cache's settings from the options. --neg-ttl=0 counts as unset (dnsmasq's default),
// not as "cache negative answers for 0 seconds"; so does --max-cache-ttl=0 (dnsmasq's
// meaning: no cap).
CacheOptions ToCacheOptions(const Options& options);

}  // namespace kdns::frontend
