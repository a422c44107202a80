// UpstreamSet: the ordered list of upstream DNS servers that serves one route (the default
// upstreams, or one `--server=/domain/ip#port` stub). Which set serves which name is the
// caller's routing decision; the Forwarder only receives the set with each query.
//
// Upstreams print the dnsmasq way, `ip#port` (`10.0.0.10#53`, `fd00::10#5353`,
// `tcp://10.0.0.10#53`). A set is a value: compare and hash it to coalesce identical queries sent
// to the same servers. A set carries its route's RouteOptions (route_options.h): two routes to
// the same servers asked differently are two sets. No thread affinity.
#pragma once

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/loop/socket_address.h"
#include "common/upstream/route_options.h"
#include "common/upstream/upstream_address.h"

namespace kdns::upstream {

class UpstreamSet {
 public:
  UpstreamSet() = default;
  explicit UpstreamSet(std::vector<Upstream> addresses);
  // With `options`: under force_tcp, every upstream is asked over TCP (as if `tcp://`).
  UpstreamSet(std::vector<Upstream> addresses, const RouteOptions& options);
  UpstreamSet(std::initializer_list<Upstream> addresses)
      : UpstreamSet(std::vector<Upstream>(addresses)) {}

  // Comma- or space-separated addresses in dnsmasq's syntax (kDnsmasqSyntax); nullopt if
  // any is invalid.
  static std::optional<UpstreamSet> Parse(std::string_view text);

  const std::vector<Upstream>& addresses() const { return addresses_; }
  const RouteOptions& options() const { return options_; }
  size_t size() const { return addresses_.size(); }
  bool empty() const { return addresses_.empty(); }
  size_t Hash() const { return hash_; }
  std::string ToString() const;

  friend bool operator==(const UpstreamSet& a, const UpstreamSet& b) {
    return a.hash_ == b.hash_ && a.addresses_ == b.addresses_ && a.options_ == b.options_;
  }

 private:
  std::vector<Upstream> addresses_;
  RouteOptions options_;
  size_t hash_ = 0;
};

// For unordered containers keyed by a set.
struct UpstreamSetHash {
  size_t operator()(const UpstreamSet& set) const { return set.Hash(); }
};

}  // namespace kdns::upstream
