// Reads the default upstreams from a resolv.conf(5) file, as dnsmasq (without --no-resolv)
// and skydns (kube-dns without upstream nameservers) do: every `nameserver` line, IPv4 or
// IPv6, port 53; and the search list (the last `search` or `domain` line wins, as in the C
// library: kubedns's --autopath walks the node's domains); options and comments are
// ignored. Like the C library, a malformed nameserver line is skipped, not fatal; its text
// is reported so the caller can log it. frontend-cache and kubedns both read it. Start-up and
// reload paths only; no thread affinity.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "common/loop/socket_address.h"

namespace kdns::upstream {

struct ResolvConf {
  std::vector<loop::SocketAddress> nameservers;  // in file order, port 53
  std::vector<std::string> skipped_lines;
  std::vector<std::string> search;  // the domains of the last search or domain line, as written
};

ResolvConf ParseResolvConf(std::string_view text);

// Reads and parses `path`. False with a one-line error when the file cannot be read.
[[nodiscard]] bool LoadResolvConf(const std::string& path, ResolvConf* conf, std::string* error);

}  // namespace kdns::upstream
