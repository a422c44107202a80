// frontend-cache: Caching DNS forwarder for the cluster (the dnsmasq role in a kube-dns pod).
// Flags and wiring only; the program's behaviour lives in FrontendServer, which tests drive.
//
// The dnsmasq options come first (our own parser: gflags cannot repeat --server); what it
// does not know goes to gflags (--v, --log_dir, ...).
//
// Signals: SIGTERM/SIGINT start the lameduck period (keep answering for --lameduck, then
// exit; a second signal exits at once); SIGHUP re-reads --servers-file and the resolv.conf
// file and the hosts files in place; SIGUSR1 logs the cache and upstream statistics.
//
// Inherited sockets (the nanny hands port 53 to a new child this way): the systemd
// protocol, LISTEN_PID = our pid and LISTEN_FDS = N bound sockets from fd 3, paired in order
// as UDP and TCP sockets: one pair per address, or, where the nanny runs us on more than
// two threads, a SO_REUSEPORT pair per thread, which then sets the thread count.
#include <gflags/gflags.h>
#include <glog/logging.h>
#include <grp.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <pwd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/app/program.h"
#include "common/base/version.h"
#include "common/loop/socket_util.h"
#include "common/server/debug_http.h"
#include "frontend-cache/frontend_server.h"
#include "frontend-cache/options.h"

DEFINE_bool(check_flags, false,
            "Validate the command line and exit 0 (for manifest checks); binds nothing.");

namespace {

using kdns::app::Fail;

// The host's interface addresses, for the check that no upstream is ourselves.
std::vector<kdns::IpAddress> LocalAddresses() {
  std::vector<kdns::IpAddress> out;
  ifaddrs* list = nullptr;
  if (getifaddrs(&list) != 0) return out;
  for (ifaddrs* entry = list; entry != nullptr; entry = entry->ifa_next) {
    if (entry->ifa_addr == nullptr) continue;
    socklen_t len =
        entry->ifa_addr->sa_family == AF_INET6 ? sizeof(sockaddr_in6) : sizeof(sockaddr_in);
    auto address = kdns::loop::SocketAddress::FromSockaddr(entry->ifa_addr, len);
    // A zoned (link-local) address cannot be named by an IpAddress: skipped.
    if (address && address->scope_id() == 0) out.push_back(kdns::loop::IpOf(*address));
  }
  freeifaddrs(list);
  return out;
}

// --interface: the addresses of the named interfaces (dnsmasq listens on them). Fails on
// a name the host does not have, as dnsmasq does ("unknown interface").
std::vector<kdns::IpAddress> InterfaceAddresses(const std::vector<std::string>& names) {
  std::vector<kdns::IpAddress> out;
  for (const std::string& name : names) {
    if (if_nametoindex(name.c_str()) == 0) Fail("--interface=" + name + ": unknown interface");
  }
  ifaddrs* list = nullptr;
  if (getifaddrs(&list) != 0) Fail("--interface: cannot list the interfaces");
  for (ifaddrs* entry = list; entry != nullptr; entry = entry->ifa_next) {
    if (entry->ifa_addr == nullptr || entry->ifa_name == nullptr) continue;
    const int family = entry->ifa_addr->sa_family;
    if (family != AF_INET && family != AF_INET6) continue;
    if (std::find(names.begin(), names.end(), entry->ifa_name) == names.end()) continue;
    socklen_t len = family == AF_INET6 ? sizeof(sockaddr_in6) : sizeof(sockaddr_in);
    auto address = kdns::loop::SocketAddress::FromSockaddr(entry->ifa_addr, len);
    if (!address) continue;
    // A link-local IPv6 address needs its scope to be bound; dnsmasq serves the others.
    if (family == AF_INET6 &&
        IN6_IS_ADDR_LINKLOCAL(&reinterpret_cast<const sockaddr_in6*>(entry->ifa_addr)->sin6_addr)) {
      continue;
    }
    if (address->scope_id() == 0) out.push_back(kdns::loop::IpOf(*address));
  }
  freeifaddrs(list);
  return out;
}

// --user: the account to run as once the sockets are bound, when started as root (dnsmasq
// does the same; unprivileged, it stays who it is). Looked up before anything starts.
struct RunAs {
  uid_t uid = 0;
  gid_t gid = 0;
  std::string name;
};
std::optional<RunAs> LookUpUser(const std::string& name) {
  if (name.empty() || geteuid() != 0) return std::nullopt;
  passwd* entry = getpwnam(name.c_str());
  if (entry == nullptr) Fail("--user=" + name + ": unknown user");
  return RunAs{entry->pw_uid, entry->pw_gid, name};
}
void DropPrivileges(const RunAs& user) {
  // glibc applies these to every thread of the process.
  if (setgroups(0, nullptr) != 0 || setgid(user.gid) != 0 || setuid(user.uid) != 0) {
    Fail("--user=" + user.name + ": cannot switch to it: " + std::strerror(errno));
  }
}

// sd_listen_fds(3)'s protocol, grouped by address: for each address a UDP and TCP pair, or
// a SO_REUSEPORT pair per thread, the pairs of one address handed one after the other.
// Empty when nothing was handed over.
std::vector<std::vector<kdns::server::DnsServer::InheritedSockets>> InheritedSockets() {
  std::vector<std::vector<kdns::server::DnsServer::InheritedSockets>> out;
  const char* pid = std::getenv("LISTEN_PID");
  const char* fds = std::getenv("LISTEN_FDS");
  if (pid == nullptr || fds == nullptr || std::atol(pid) != getpid()) return out;
  const int count = std::atoi(fds);
  std::vector<int> udp;
  std::vector<int> tcp;
  for (int fd = 3; fd < 3 + count; ++fd) {
    int type = 0;
    socklen_t len = sizeof(type);
    if (getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &len) != 0) {
      Fail("LISTEN_FDS: fd " + std::to_string(fd) + " is not a socket");
    }
    (type == SOCK_DGRAM ? udp : tcp).push_back(fd);
  }
  if (udp.size() != tcp.size()) {
    Fail("LISTEN_FDS: " + std::to_string(udp.size()) + " UDP and " + std::to_string(tcp.size()) +
         " TCP sockets; one of each per address is needed");
  }
  kdns::loop::SocketAddress last;
  for (size_t i = 0; i < udp.size(); ++i) {
    const kdns::loop::SocketAddress address = kdns::loop::internal::LocalAddressOf(udp[i]);
    if (out.empty() || !(address == last)) out.emplace_back();
    out.back().push_back({udp[i], tcp[i]});
    last = address;
  }
  unsetenv("LISTEN_PID");  // not for our children
  unsetenv("LISTEN_FDS");
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  kdns::app::SetProgram(
      {"frontend-cache",
       "Caching DNS forwarder for the cluster (the dnsmasq role in a kube-dns pod).\n"
       "Usage: frontend-cache [dnsmasq options: -k --cache-size=N --no-negcache --neg-ttl=S "
       "--dns-loop-detect --log-facility=- --no-resolv --resolv-file=F --dns-forward-max=N "
       "--listen-address=IP --port=N --server=[/domain/]ip[#port] --servers-file=F "
       "--local=/domain/[ip] --address=/domain/[ip|#] --addn-hosts=F --hosts-reload=D --no-hosts "
       "--local-ttl=S --domain-needed --bogus-priv --filter-AAAA --strict-order "
       "--use-stale-cache[=S] "
       "--all-servers --log-queries[=extra] --user=U --interface=IF --bind-interfaces "
       "--no-daemon --no-poll] "
       "[ours: --threads=N --receiver-threads=auto|on|off --max-cache-ttl=S --min-cache-ttl=S "
       "--cache-bytes=N --cache-entry-max-bytes=N --stale-max=S "
       "--lameduck=D --upstream-0x20=auto|on|off "
       "--prometheus-port=N --prometheus-addr=IP --prometheus-reuseport "
       "--metrics-compat=none|coredns "
       "--debug-address=IP:PORT "
       "--tcp-idle-timeout=D --tcp-frame-timeout=D --tcp-query-timeout=D "
       "--tcp-max-connections=N "
       "--tcp-max-connections-per-source=N --tcp-max-output-bytes-per-connection=N "
       "--tcp-max-output-bytes-total=N --max-waiting-queries=N "
       "--log-queries-rate=N --log-queries-sample=N]"});
  kdns::app::SetFlagTableLines(kdns::frontend::FlagTableLines());
  // Signals are taken synchronously by this thread, and every thread started later inherits
  // the mask. Blocked first thing, so a SIGHUP from the nanny while we start is queued, not
  // fatal.
  const sigset_t signals = kdns::app::BlockSignals({SIGTERM, SIGINT, SIGHUP, SIGUSR1});

  // The dnsmasq options first (gflags cannot repeat --server); the rest goes to gflags.
  std::vector<std::string_view> args(argv + 1, argv + argc);
  kdns::frontend::FrontendServer::Options options;
  std::vector<std::string> rest = {argv[0]};
  std::string error;
  if (!kdns::frontend::ParseOptions(args, &options.flags, &rest, &error)) Fail(error);
  kdns::app::ParseFlags(std::move(rest));
  // The user and the interfaces are the host's: --check-flags (a pre-flight, maybe on
  // another machine) checks the command line only.
  const std::optional<RunAs> run_as =
      FLAGS_check_flags ? std::nullopt : LookUpUser(options.flags.user);
  if (!options.flags.interfaces.empty() && !FLAGS_check_flags) {
    std::vector<kdns::IpAddress>& listen = options.flags.listen_addresses;
    for (const kdns::IpAddress& address : InterfaceAddresses(options.flags.interfaces)) {
      if (std::find(listen.begin(), listen.end(), address) == listen.end()) {
        listen.push_back(address);
      }
    }
  }
  kdns::app::ExitIfCheckingFlags(FLAGS_check_flags);
  kdns::app::InitProcess(argv[0]);
  for (const std::string& warning : options.flags.warnings) LOG(WARNING) << warning;
  if (options.flags.debug_address) {
    const std::string warning = kdns::server::DebugAddressWarning(kdns::server::kDebugAddressFlag,
                                                                  *options.flags.debug_address);
    if (!warning.empty()) LOG(WARNING) << warning;
  }

  options.inherited = InheritedSockets();
  options.local_addresses = LocalAddresses();

  const uint64_t lameduck_ms = options.flags.lameduck_ms;
  kdns::frontend::FrontendServer server(std::move(options));
  if (!server.Start(&error)) Fail(error);
  if (run_as) DropPrivileges(*run_as);
  std::string addresses;
  for (const auto& address : server.addresses()) {
    addresses += (addresses.empty() ? "" : ", ") + address.ToString();
  }
  LOG(INFO) << "frontend-cache " << kdns::kVersion << " serving DNS on " << addresses
            << " (UDP, TCP)"
            << (server.metrics_address().family() == AF_UNSPEC
                    ? std::string()
                    : ", metrics on " + server.metrics_address().ToString())
            << (server.debug_address().family() == AF_UNSPEC
                    ? std::string()
                    : ", debug data on " + server.debug_address().ToString());

  while (true) {
    const int number = sigwaitinfo(&signals, nullptr);
    if (number == SIGHUP) {
      if (!server.Reload(&error)) LOG(ERROR) << "reload rejected, configuration kept: " << error;
    } else if (number == SIGUSR1) {
      LOG(INFO) << server.StatsText();
    } else if (number == SIGTERM || number == SIGINT) {
      break;
    }
  }
  LOG(INFO) << "lameduck: answering for " << lameduck_ms << " ms more, then exiting";
  timespec wait{static_cast<time_t>(lameduck_ms / 1000),
                static_cast<long>(lameduck_ms % 1000) * 1000000};
  sigset_t stop;
  sigemptyset(&stop);
  sigaddset(&stop, SIGTERM);
  sigaddset(&stop, SIGINT);
  if (lameduck_ms > 0 && sigtimedwait(&stop, nullptr, &wait) > 0) {
    LOG(INFO) << "second signal: exiting now";
  }
  server.Stop();
  LOG(INFO) << server.StatsText();
  LOG(INFO) << "frontend-cache stopped";
  return 0;
}
