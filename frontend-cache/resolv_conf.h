// Reads the default upstreams from a resolv.conf(5) file, as dnsmasq does without
// --no-resolv: every `nameserver` line (IPv4 or IPv6, port 53); search, options, domain and
// comments are ignored. Like the C library, a malformed nameserver line is skipped, not
// fatal; its text is reported so the caller can log it. Start-up only, no thread affinity.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "frontend-cache/upstream_address.h"

namespace kdns::frontend {

struct ResolvConf {
  std::vector<UpstreamAddress> nameservers;
  std::vector<std::string> skipped_lines;
};

ResolvConf ParseResolvConf(std::string_view text);

// Reads and parses `path`. False with a one-line error when the file cannot be read.
[[nodiscard]] bool LoadResolvConf(const std::string& path, ResolvConf* conf, std::string* error);

}  // namespace kdns::frontend
