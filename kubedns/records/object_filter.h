// ObjectFilter: which Kubernetes objects kubedns serves, and how their endpoints are named,
// decided once where objects enter (the Publisher, serving/kubedns_server.cc) so that the
// record tree and the answerer never see an object that is not served.
//   --namespaces=a,b   (CoreDNS `kubernetes` ... `namespaces`) only Services, slices,
//                      Endpoints and Pods of these namespaces; names in any other namespace
//                      are NXDOMAIN, as CoreDNS answers them
//   --labels=SELECTOR  (CoreDNS `labels`) only Services whose labels match
//                      (common/k8s/label_selector.h); the API source also sends the selector
//                      with every Services LIST and WATCH, so the server filters first. The
//                      slices of a Service not served are kept and answer nothing, as slices
//                      that arrive before their Service do (records/record_tree.h)
//   --endpoint-pod-names (CoreDNS `endpoint_pod_names`) an endpoint without a hostname is
//                      named by its pod (targetRef.name of kind Pod) instead of its dashed
//                      IP, when the pod name is a DNS label (RFC 1123: at most 63 of
//                      [a-z0-9-], alphanumeric at both ends); otherwise the dashed IP stays
// An object that is not served is delivered to the tree as a delete, so an object that
// stops matching (a label changed) disappears.
//
// A value; lives on the source thread.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "common/k8s/label_selector.h"
#include "common/k8s/objects.h"

namespace kdns::kubedns {

struct ObjectFilterOptions {
  std::vector<std::string> namespaces;  // empty: every namespace
  k8s::LabelSelector labels;            // empty: every Service
  bool endpoint_pod_names = false;
};

class ObjectFilter {
 public:
  explicit ObjectFilter(ObjectFilterOptions options);

  // True when an object of namespace `ns` may be served.
  bool ServesNamespace(std::string_view ns) const;
  // True when `service` is served (its namespace and its labels).
  bool Serves(const k8s::Service& service) const;
  // True when endpoints are renamed (NamePods changes something).
  bool names_pods() const { return options_.endpoint_pod_names; }
  // With --endpoint-pod-names: gives every endpoint of `slice` without a hostname the name
  // of its pod, when that is a DNS label. Returns how many pod names were not DNS labels
  // (those endpoints keep their dashed IP).
  size_t NamePods(k8s::EndpointSlice& slice) const;

 private:
  ObjectFilterOptions options_;
};

}  // namespace kdns::kubedns
