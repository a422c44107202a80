// StubHosts: the last known address of every stub server given as a host name.
//
// Names under the cluster domain are asked of kubedns (-kubednsServer), every other name of
// the system resolver, as kube-dns's nanny does: two c-ares channels (common/ares). The
// address kept is one, as kube-dns takes the first one Go's resolver returns: the first IPv4
// address when there is one, else the first IPv6 address. What a failed lookup, a name never
// resolved and a name that left the configuration leave known is the policy kubedns applies
// too, common/config/stub_hosts.h: a failed lookup keeps the last known address, a name
// never resolved stays unknown, names that left the configuration are forgotten at the next
// Resolve().
//
// Thread: the loop's thread only (the resolvers live on it).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "common/ares/channel.h"
#include "common/config/stub_hosts.h"
#include "nanny/translate.h"

namespace kdns::nanny {

class StubHosts {
 public:
  // Runs once per Resolve() when every name got its answer; `changed`: an address was
  // learnt or differs from before.
  using Done = std::function<void(bool changed)>;

  // The channels must outlive this object.
  StubHosts(ares::Channel& cluster, ares::Channel& system, std::string_view cluster_domain);

  // Looks up every name (at once: done runs synchronously when `names` is empty).
  void Resolve(const std::vector<std::string>& names, Done done);

  const HostAddresses& addresses() const { return addresses_; }
  bool Known(const std::vector<std::string>& names) const;
  uint64_t lookups_ok() const { return lookups_ok_; }
  uint64_t lookups_failed() const { return lookups_failed_; }

  // `name` is the cluster domain or below it (kube-dns: a "cluster.local" suffix).
  static bool UnderDomain(std::string_view name, std::string_view domain);

 private:
  ares::Channel& cluster_;
  ares::Channel& system_;
  std::string cluster_domain_;
  config::StubHostAddresses known_;  // every address of each name, by the common policy
  HostAddresses addresses_;          // the one of each that the child is given
  uint64_t lookups_ok_ = 0;
  uint64_t lookups_failed_ = 0;
};

}  // namespace kdns::nanny
