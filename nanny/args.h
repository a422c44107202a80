// The nanny's command line, as kube-dns's dnsmasq-nanny splits it: the nanny's own flags
// before a "--", the child's arguments after it (passed to the child first, before the
// generated --server arguments). And what the nanny must know about the child's arguments
// to hold its listening sockets: the dnsmasq options --port/-p and --listen-address/-a.
//
// Pure functions, no thread affinity.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/loop/socket_address.h"

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
// --listen-address A, -a A, -aA (repeatable; none: 0.0.0.0, every IPv4 address).
struct ListenSpec {
  uint16_t port = 53;
  std::vector<loop::SocketAddress> addresses;  // with `port`; in the order given, no repeats
};

// False with a one-line *error on a malformed port or address.
[[nodiscard]] bool ParseListenSpec(const std::vector<std::string>& child_args, ListenSpec* spec,
                                   std::string* error);

// Whether the child's arguments set the long option `name` (`--name`, `--name=...`).
bool HasLongOption(const std::vector<std::string>& child_args, std::string_view name);

}  // namespace kdns::nanny
