// StubHostAddresses: what kubedns and the nanny know of the stub servers the kube-dns
// ConfigMap names by host name (stubDomains: {"corp": ["dns.corp.example"]}), and the one
// failure policy both apply to them:
//
//   - a name that resolves: its addresses replace what was known (IPv4 first, then IPv6,
//     each in the resolver's order);
//   - a lookup that fails (no such name, no answer, a resolver down) keeps the last known
//     addresses: a kubedns restart or a flaky resolver must not take a stub domain away,
//     and the stub server itself most likely still answers at its old address;
//   - a name that never resolved has no address: its stub domain goes without it (the
//     caller warns, and asks again at its next pass);
//   - a name that left the ConfigMap is forgotten (Retain), so a later return starts over.
//
// The lookups themselves are the caller's (each program's c-ares channels); this is the
// memory between them. Not thread-safe: used from the one thread that does the lookups.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "common/base/ip_address.h"
#include "common/dns/name.h"

namespace kdns::config {

// What one lookup's answer changed.
enum class HostUpdate : uint8_t {
  kLearnt,     // resolved, and nothing was known before
  kChanged,    // resolved to other addresses than the ones known
  kSame,       // resolved to the addresses known
  kKeptLast,   // failed: the last known addresses stay
  kUnresolved  // failed, and nothing is known
};

class StubHostAddresses {
 public:
  // Forgets every name not in `names` (they left the configuration).
  void Retain(std::span<const dns::Name> names);

  // Records a lookup of `name`: `addresses` (empty: the lookup failed) by the policy above.
  HostUpdate Record(const dns::Name& name, std::vector<IpAddress> addresses);

  // The addresses known for `name`, IPv4 first; empty when it never resolved.
  std::span<const IpAddress> Find(const dns::Name& name) const;
  bool Known(const dns::Name& name) const { return !Find(name).empty(); }

 private:
  std::unordered_map<dns::Name, std::vector<IpAddress>, dns::NameHash> known_;
};

}  // namespace kdns::config
