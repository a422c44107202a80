// Hosts files (hosts(5)): what frontend-cache reads from /etc/hosts (unless --no-hosts) and
// every --addn-hosts file, as dnsmasq does: "address name [aliases...]" per line, `#`
// starts a comment, IPv4 and IPv6 addresses. A bad line (a bad address or name) is
// skipped and reported, never fatal: the file is outside input and dnsmasq carries on too.
// Pure: parses text, reads no file (LoadHostsFile reads one).
//
// Thread: any; no state.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "common/base/ip_address.h"
#include "common/dns/name.h"

namespace kdns::frontend {

struct HostsEntry {
  IpAddress address;
  std::vector<dns::Name> names;  // names[0] is the canonical name (the PTR answer)

  friend bool operator==(const HostsEntry&, const HostsEntry&) = default;
};

struct HostsFile {
  std::vector<HostsEntry> entries;
  // "line N: why" for each line skipped.
  std::vector<std::string> skipped;
};

HostsFile ParseHostsFile(std::string_view text);

// Reads and parses `path`; false with a one-line *error when it cannot be read.
[[nodiscard]] bool LoadHostsFile(const std::string& path, HostsFile* file, std::string* error);

}  // namespace kdns::frontend
