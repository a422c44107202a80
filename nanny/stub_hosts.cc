#include "nanny/stub_hosts.h"

#include <glog/logging.h>

#include <algorithm>
#include <memory>
#include <utility>

namespace kdns::nanny {
namespace {

std::string_view WithoutDot(std::string_view name) {
  if (!name.empty() && name.back() == '.') name.remove_suffix(1);
  return name;
}

// The name as a key of the common memory; the configuration's host names always are one.
dns::Name Key(const std::string& name) { return dns::Name::FromText(name).value_or(dns::Name()); }

}  // namespace

StubHosts::StubHosts(ares::Channel& cluster, ares::Channel& system, std::string_view cluster_domain)
    : cluster_(cluster), system_(system), cluster_domain_(WithoutDot(cluster_domain)) {}

bool StubHosts::UnderDomain(std::string_view name, std::string_view domain) {
  name = WithoutDot(name);
  domain = WithoutDot(domain);
  if (domain.empty()) return false;
  if (name.size() == domain.size()) return name == domain;
  return name.size() > domain.size() && name.ends_with(domain) &&
         name[name.size() - domain.size() - 1] == '.';
}

bool StubHosts::Known(const std::vector<std::string>& names) const {
  return std::all_of(names.begin(), names.end(),
                     [this](const std::string& name) { return addresses_.count(name) > 0; });
}

void StubHosts::Resolve(const std::vector<std::string>& names, Done done) {
  std::vector<dns::Name> keys;
  keys.reserve(names.size());
  for (const std::string& name : names) keys.push_back(Key(name));
  known_.Retain(keys);
  for (auto it = addresses_.begin(); it != addresses_.end();) {
    if (std::find(names.begin(), names.end(), it->first) == names.end()) {
      it = addresses_.erase(it);
    } else {
      ++it;
    }
  }
  if (names.empty()) {
    done(false);
    return;
  }
  struct Batch {
    size_t outstanding;
    bool changed = false;
    Done done;
  };
  auto batch = std::make_shared<Batch>(Batch{names.size(), false, std::move(done)});
  for (const std::string& name : names) {
    const bool cluster = UnderDomain(name, cluster_domain_);
    ares::Channel& channel = cluster ? cluster_ : system_;
    channel.LookupAddresses(name, [this, batch, name, cluster](
                                      const std::vector<IpAddress>& addresses,
                                      const std::string& error) {
      const dns::Name key = Key(name);
      const config::HostUpdate update = known_.Record(key, addresses);
      if (update != config::HostUpdate::kKeptLast && update != config::HostUpdate::kUnresolved) {
        ++lookups_ok_;
        // kube-dns takes the first address Go's resolver returns, which prefers IPv4:
        // the first known one (they list IPv4 first).
        const IpAddress address = known_.Find(key).front();
        auto [it, inserted] = addresses_.try_emplace(name, address);
        if (inserted || it->second != address) {
          LOG(INFO) << "stub server " << name << " is " << address.ToString()
                    << (inserted ? "" : " (was " + it->second.ToString() + ")");
          it->second = address;
          batch->changed = true;
        }
      } else {
        ++lookups_failed_;
        auto known = addresses_.find(name);
        LOG(WARNING) << "cannot resolve stub server " << error
                     << (cluster ? " (asked kubedns)" : "")
                     << (known == addresses_.end()
                             ? ": no address known, left out"
                             : ": keeping its last address " + known->second.ToString());
      }
      if (--batch->outstanding == 0) batch->done(batch->changed);
    });
  }
}

}  // namespace kdns::nanny
