#include "kubedns/records/object_filter.h"

#include <algorithm>
#include <utility>

namespace kdns::kubedns {
namespace {

// RFC 1123 label, as Kubernetes validates hostnames (IsDNS1123Label).
bool IsDnsLabel(std::string_view name) {
  constexpr size_t kMaxLabel = 63;
  if (name.empty() || name.size() > kMaxLabel) return false;
  auto alnum = [](char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); };
  if (!alnum(name.front()) || !alnum(name.back())) return false;
  return std::all_of(name.begin(), name.end(), [&](char c) { return alnum(c) || c == '-'; });
}

}  // namespace

ObjectFilter::ObjectFilter(ObjectFilterOptions options) : options_(std::move(options)) {}

bool ObjectFilter::ServesNamespace(std::string_view ns) const {
  return options_.namespaces.empty() ||
         std::find(options_.namespaces.begin(), options_.namespaces.end(), ns) !=
             options_.namespaces.end();
}

bool ObjectFilter::Serves(const k8s::Service& service) const {
  return ServesNamespace(service.meta.ns) &&
         (options_.labels.empty() || options_.labels.Matches(service.labels));
}

size_t ObjectFilter::NamePods(k8s::EndpointSlice& slice) const {
  if (!options_.endpoint_pod_names) return 0;
  size_t invalid = 0;
  for (k8s::Endpoint& endpoint : slice.endpoints) {
    if (!endpoint.hostname.empty() || endpoint.pod_name.empty()) continue;
    if (IsDnsLabel(endpoint.pod_name)) {
      endpoint.hostname = endpoint.pod_name;
    } else {
      ++invalid;
    }
  }
  return invalid;
}

}  // namespace kdns::kubedns
