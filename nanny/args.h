// The nanny's command line, as kube-dns's dnsmasq-nanny splits it: the nanny's own flags
// before a "--", the child's arguments after it (passed to the child first, before the
// generated --server arguments). And what the nanny must know about the child's arguments
// to hold its listening sockets: the dnsmasq options --port/-p and --listen-address/-a.
// And the nanny's own flags (kube-dns's dnsmasq-nanny names: -configDir, -syncInterval, ...)
// checked and turned into the Nanny's options, each bad value one line naming the flag.
//
// Pure functions (BuildOptions only looks for the child's executable), no thread affinity.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/loop/socket_address.h"
#include "nanny/nanny.h"

namespace kdns::nanny {

struct SplitArgs {
  std::vector<std::string> own;    // argv[0] and the nanny's flags (for gflags)
  std::vector<std::string> child;  // everything after the first "--"
};

// kube-dns's ExtractDnsmasqArgs: the first "--" ends the nanny's arguments; it belongs to
// neither part. Without a "--" the child gets no arguments.
SplitArgs SplitAtDoubleDash(int argc, const char* const* argv);

// The addresses the child serves DNS on, from its dnsmasq options: --port=N, --port N,
// -p N, -pN (default 53; 0 lets the kernel pick) and --listen-address=A[,B...],
// --listen-address A, -a A, -aA (repeatable; none: 0.0.0.0, every IPv4 address), and the
// child's thread count (--threads=N, --threads N), which says how many sockets it serves.
struct ListenSpec {
  uint16_t port = 53;
  std::vector<loop::SocketAddress> addresses;  // with `port`; in the order given, no repeats
  size_t threads = 0;                          // --threads; 0: the child's default
};

// False with a one-line *error on a malformed port or address.
[[nodiscard]] bool ParseListenSpec(const std::vector<std::string>& child_args, ListenSpec* spec,
                                   std::string* error);

// Whether the child's arguments set the long option `name` (`--name`, `--name=...`).
bool HasLongOption(const std::vector<std::string>& child_args, std::string_view name);

// The nanny's flags as gflags holds them, before validation. Defaults are main.cc's.
struct FlagValues {
  std::string config_dir = "/etc/k8s/dns/dnsmasq-nanny";
  std::string sync_interval = "10s";
  bool restart_dnsmasq = false;
  std::string dnsmasq_exec = "frontend-cache";
  std::string kubedns_server = "127.0.0.1:10053";
  std::string log_interval = "0";
  std::string child_mode = "auto";
  std::string cluster_domain = "cluster.local";
  std::string kubedns_zones;  // comma-separated, e.g. "clusterset.local,slice.local"
  std::string stub_resolve_interval = "60s";
  int64_t crash_loop_restarts = 5;
  std::string crash_loop_runtime = "10s";
  std::string child_stop_timeout = "30s";
};

// Where BuildOptions looks for -dnsmasqExec: a name with a '/' is kept as it is; any other
// is looked up beside the nanny's own executable, then in $PATH.
struct ExecutableSearch {
  std::string self;  // the nanny's executable (/proc/self/exe)
  std::string path;  // $PATH ("/usr/local/bin:/usr/bin:/bin" when unset)
};

// Checks the flags and the child's arguments (`split.child`) and fills everything of
// *options but run_dir and on_child_line. False with a one-line *error naming the first
// bad flag.
[[nodiscard]] bool BuildOptions(const FlagValues& flags, const std::vector<std::string>& child_args,
                                const ExecutableSearch& search, Nanny::Options* options,
                                std::string* error);

}  // namespace kdns::nanny
