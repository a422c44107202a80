#include "common/upstream/route_table.h"

#include <algorithm>

namespace kdns::upstream {
namespace {

std::string WireKey(const dns::Name& name) {
  const auto wire = name.wire();
  return std::string(reinterpret_cast<const char*>(wire.data()), wire.size());
}

}  // namespace

bool DomainIndex::Add(const dns::Name& domain, uint32_t index) {
  const dns::Name lower = domain.Lowercased();
  if (!by_domain_.emplace(WireKey(lower), index).second) return false;
  max_labels_ = std::max(max_labels_, lower.label_count());
  return true;
}

std::optional<uint32_t> DomainIndex::Find(const dns::Name& qname) const {
  const dns::Name lower = qname.Lowercased();
  const auto wire = lower.wire();
  const size_t labels = lower.label_count();
  const size_t first = labels > max_labels_ ? labels - max_labels_ : 0;
  size_t offset = lower.LabelOffset(first);
  for (size_t i = first; i <= labels; ++i) {
    const std::string_view suffix(reinterpret_cast<const char*>(wire.data()) + offset,
                                  wire.size() - offset);
    if (auto it = by_domain_.find(suffix); it != by_domain_.end()) return it->second;
    offset += 1 + wire[offset];
  }
  return std::nullopt;
}

}  // namespace kdns::upstream
