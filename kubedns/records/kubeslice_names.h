// The kubeslice zone's names (DESIGN.md section 8): every name of every kubeslice
// ServiceImport with its addresses, built from imports that are untrusted input (section 7,
// "Tenants").
//
// KubesliceNames is the published index: one sorted vector holding each name once, keyed by
// its labels in reverse order ("local.slice.svc.iperf.iperf-server"), so a name is found by
// binary search and an empty non-terminal (a parent of a name: it exists, so NODATA and not
// NXDOMAIN, RFC 8020) is found as the prefix of a key; parents are never stored. Why: storing
// each parent as a string of its own costs the square of a name's length (one alias of 20,000
// one-letter labels held 400 MB). All the names of one import share one address vector, so
// an import costs its names plus its addresses, not their product.
//
// KubesliceNamesWriter keeps the checked imports and rebuilds the index on each change:
//  - Check: each name (spec.dnsName, spec.aliases[], status.endpoints[].dnsName) must be a
//    DNS-1123 name (at most 253 characters, labels of at most 63) strictly inside the zone;
//    a bad name is skipped (import_invalid). An import over a cap (ImportLimits: aliases,
//    endpoints, bytes of names) is not served at all (import_too_large): half an import
//    would answer some of its names and not others, with nothing to tell which.
//  - Claim: a name belongs to the namespace whose import named it first, in the order
//    (metadata.creationTimestamp, namespace, name), which every replica computes the same
//    way, before and after a restart; an import without a creation time comes after those
//    with one. Imports of another namespace do not add to the name (import_name_conflict,
//    counted once when the conflict appears); when the claimant's import goes or stops
//    naming it, the next import in that order takes the name.
// Each change rebuilds the whole index: O(names in the zone), as before (kubeslice imports
// are few: one per exported service of a slice).
//
// Threads: KubesliceNames is immutable and read by every DNS thread; KubesliceNamesWriter
// lives on the source thread inside MulticlusterWriter.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/base/ip_address.h"
#include "common/dns/name.h"
#include "common/k8s/objects.h"
#include "kubedns/records/import_limits.h"

namespace kdns::kubedns {

class KubesliceNames {
 public:
  struct Entry {
    std::string key;  // the labels in reverse order, joined by '.'
    std::shared_ptr<const std::vector<IpAddress>> ips;  // not empty
  };

  KubesliceNames() = default;
  // `entries` sorted by key, keys distinct.
  explicit KubesliceNames(std::vector<Entry> entries);
  // True when the names are exactly `entries`, keys and addresses: a rebuild that changed
  // nothing keeps the names published, so the records' version stays (record_tree.h).
  bool Holds(const std::vector<Entry>& entries) const;

  // `lower` (a lower-cased name): its addresses; an empty vector for an empty non-terminal;
  // nullptr when no name is there or below. No allocation.
  const std::vector<IpAddress>* Find(const dns::Name& lower) const;
  size_t size() const { return entries_.size(); }
  // f(name, ips) for each name in key order; `name` as text, without the trailing dot.
  template <class F>
  void ForEach(F&& f) const {
    for (const auto& entry : entries_) f(NameOfKey(entry.key), *entry.ips);
  }

  // "a.b.slice.local" → "local.slice.b.a", and back.
  static std::string KeyOfName(std::string_view name);
  static std::string NameOfKey(std::string_view key);

 private:
  std::vector<Entry> entries_;
};

class KubesliceNamesWriter {
 public:
  // The zone in lower case without the trailing dot ("slice.local"); empty: the zone is off
  // and nothing is kept. Set both before the first import.
  void SetZone(std::string zone) { zone_ = std::move(zone); }
  void SetLimits(const ImportLimits& limits) { limits_ = limits; }

  void Upsert(const k8s::KubesliceServiceImport& import);
  void Delete(std::string_view ns, std::string_view name);
  void Replace(const std::vector<k8s::KubesliceServiceImport>& imports);

  const std::shared_ptr<const KubesliceNames>& names() const { return names_; }
  uint64_t imports() const { return imports_.size(); }  // served (checked and under the caps)
  uint64_t endpoints() const { return endpoints_; }     // status.endpoints[] with an IP

 private:
  // What is kept of an import that passed its checks: only its valid names, as keys.
  struct Import {
    std::string ns;
    std::string name;
    std::optional<int64_t> creation_unix_s;
    std::vector<std::string> keys;                             // spec.dnsName, spec.aliases[]
    std::shared_ptr<const std::vector<IpAddress>> ips;         // every endpoint's, distinct
    std::vector<std::pair<std::string, IpAddress>> endpoints;  // status.endpoints[].dnsName
    uint64_t endpoint_ips = 0;
  };
  // The import as kept, or nullopt when it is over a cap (counted and logged here).
  std::optional<Import> Check(const k8s::KubesliceServiceImport& import) const;
  // The key of `name` when it is a valid name strictly inside the zone; else counted.
  std::optional<std::string> CheckedKey(const k8s::KubesliceServiceImport& import,
                                        std::string_view field, std::string_view name) const;
  // Adds (or replaces) without rebuilding; a refused import removes the old version.
  void Put(const k8s::KubesliceServiceImport& import);
  void Rebuild();

  std::string zone_;
  ImportLimits limits_;
  std::map<std::string, Import> imports_;  // by "ns/name"
  uint64_t endpoints_ = 0;
  // (import "ns/name", name key) pairs refused for another namespace's claim at the last
  // rebuild, so each conflict is counted once when it appears.
  std::set<std::pair<std::string, std::string>> conflicts_;
  std::shared_ptr<const KubesliceNames> names_ = std::make_shared<const KubesliceNames>();
};

}  // namespace kdns::kubedns
