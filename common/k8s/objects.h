// The compact model of what cluster DNS needs from Kubernetes objects: Services,
// EndpointSlices (v1 Endpoints are converted into the same shape), Pods, the multicluster
// ServiceImports (MCS and kubeslice), and the Status objects the API server sends for errors. These
// are plain values, not API objects: every field DNS does not use is dropped at decode time (see
// decode.h). Immutable once decoded; safe to copy and share between threads.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/base/ip_address.h"

namespace kdns::k8s {

// metadata.resourceVersion. The API contract is that resource versions are opaque strings
// that clients compare only for equality and pass back to the server ("Clients must treat
// these values as opaque", API concepts: resource versions). `text` is what the server sent
// and the only thing ever sent back. `number` is the decimal value when the text is one
// (it is etcd's revision on every server we know): use it only as an ordering hint, such as
// "this bookmark is not older than our list", never for correctness.
struct ResourceVersion {
  std::string text;                // empty when the object carried none
  std::optional<uint64_t> number;  // set when `text` is a decimal number that fits

  static ResourceVersion FromText(std::string_view text);
  bool empty() const { return text.empty(); }
  friend bool operator==(const ResourceVersion& a, const ResourceVersion& b) {
    return a.text == b.text;
  }
};

// metadata.creationTimestamp (a metav1.Time: RFC 3339, "2024-05-01T12:00:00Z", in UTC with
// seconds as the server writes it; a fraction and a numeric offset are accepted too) as
// seconds since the Unix epoch. nullopt for anything else.
std::optional<int64_t> ParseTimestampS(std::string_view text);

struct ObjectMeta {
  std::string ns;  // metadata.namespace
  std::string name;
  std::string uid;  // a delete followed by a create keeps the name but changes the uid
  ResourceVersion resource_version;
};

// Kinds this module decodes. kStatus appears only in ERROR watch events and error bodies.
// Two API groups call their kind "ServiceImport": the apiVersion's group tells them apart
// (KindOf below). kServiceImport is the Multi-Cluster Services API's
// (multicluster.x-k8s.io), kKubesliceServiceImport kubeslice's (networking.kubeslice.io, and
// mesh.avesha.io on older clusters).
enum class Kind : uint8_t {
  kService,
  kEndpointSlice,
  kEndpoints,
  kPod,
  kStatus,
  kServiceImport,
  kKubesliceServiceImport,
};

enum class Protocol : uint8_t { kTcp, kUdp, kSctp };

// spec.type. An absent type defaults to ClusterIP, as the API server's defaulting does.
enum class ServiceType : uint8_t { kClusterIP, kNodePort, kLoadBalancer, kExternalName };

struct ServicePort {
  std::string name;  // empty for a single unnamed port (no SRV record for it)
  Protocol protocol = Protocol::kTcp;
  uint16_t port = 0;  // 1..65535

  friend bool operator==(const ServicePort&, const ServicePort&) = default;
};

struct Service {
  ObjectMeta meta;
  ServiceType type = ServiceType::kClusterIP;
  // clusterIP "None": the service has no virtual IP and DNS answers with its endpoints.
  bool headless = false;
  // spec.clusterIPs (dual-stack, primary family first), or spec.clusterIP when clusterIPs is
  // absent. Empty for headless services, ExternalName services, and services whose IP is
  // not allocated yet. Entries that are not IP addresses are dropped with a warning.
  std::vector<IpAddress> cluster_ips;
  std::string external_name;  // spec.externalName; only meaningful for kExternalName
  std::vector<ServicePort> ports;
  bool publish_not_ready_addresses = false;
  // The addresses the service is reached at from outside the cluster, in CoreDNS's order
  // (k8s_external): spec.externalIPs, then status.loadBalancer.ingress[].ip. Entries that are
  // not IP addresses are dropped with a warning.
  std::vector<IpAddress> external_ips;
  // status.loadBalancer.ingress[].hostname of the entries without an ip (cloud load
  // balancers known by name), lower case, without a trailing dot.
  std::vector<std::string> external_hostnames;
  // metadata.labels, for the --labels filter (label_selector.h); records do not keep them.
  std::vector<std::pair<std::string, std::string>> labels;
};

// An EndpointSlice's addressType. FQDN slices are decoded (metadata and ports only, no
// addresses) so callers can see and ignore them: DNS does not serve them.
enum class AddressType : uint8_t { kIPv4, kIPv6, kFqdn };

struct Endpoint {
  // Each address has the slice's family. An address that does not parse, or has the other
  // family, is dropped with a warning; the endpoint is kept.
  std::vector<IpAddress> addresses;
  // conditions.ready with the discovery/v1 defaulting applied: absent or null means ready.
  // From the EndpointConditions API reference: "ready indicates that this endpoint is
  // prepared to receive traffic ... A nil value indicates an unknown state. In most cases
  // consumers should interpret this unknown state as ready."
  bool ready = true;
  std::string hostname;  // empty when absent
  // endpoints[].zone (the topology zone, "us-east-1a"), as given; empty when absent or not
  // a string. Only --zonal answers use it (kubedns keeps it only then). v1 Endpoints have
  // no zone.
  std::string zone;
  // targetRef.name when targetRef.kind is "Pod", else empty: the endpoint's name under
  // --endpoint-pod-names. Records keep it only then (kubedns/records/object_filter.h).
  std::string pod_name;
  // Nothing else: no record uses nodeName or the serving and terminating conditions, so
  // they are not decoded (DESIGN section 9: keep only what an answer needs).
};

struct EndpointPort {
  std::string name;
  Protocol protocol = Protocol::kTcp;
  // nullopt when absent or null: the API reference says "If this is not specified, ports
  // are not restricted and must be interpreted in the context of the specific consumer."
  std::optional<uint16_t> port;

  friend bool operator==(const EndpointPort&, const EndpointPort&) = default;
};

// Where a slice came from: a discovery.k8s.io/v1 EndpointSlice, or one subset of a v1
// Endpoints object (see Endpoints below).
enum class SliceSource : uint8_t { kEndpointSlice, kEndpoints };

struct EndpointSlice {
  ObjectMeta meta;
  // The `kubernetes.io/service-name` label. Empty: the slice belongs to no service.
  std::string service_name;
  // The MCS labels (KEP-1645) of a slice an MCS controller imported from another cluster:
  // `multicluster.kubernetes.io/service-name` (the ServiceImport it belongs to; empty for
  // ordinary slices) and `multicluster.kubernetes.io/source-cluster` (the cluster id).
  std::string multicluster_service_name;
  std::string source_cluster;
  AddressType address_type = AddressType::kIPv4;
  std::vector<Endpoint> endpoints;
  std::vector<EndpointPort> ports;
  SliceSource source = SliceSource::kEndpointSlice;
};

// A v1 Endpoints object in slice form. A v1 Endpoints object has several subsets, each with
// its own addresses and ports, and a subset may mix IPv4 and IPv6 addresses, while a slice has
// one port list and one address family. So every (subset, family) pair that has at least one
// address becomes one slice, in subset order, IPv4 before IPv6:
//   meta.name     "<endpoints name>/subset-<i>-ipv4" or "...-ipv6" (i counts from 0); the
//                 '/' cannot occur in real object names, so these never collide with them
//   meta.ns, uid, resource_version   the Endpoints object's
//   service_name  the Endpoints object's name (v1 Endpoints are named after their service)
//   endpoints     subset.addresses (ready) then subset.notReadyAddresses (not ready), with
//                 their hostname, nodeName and Pod targetRef; serving/terminating unset
//   ports         subset.ports
//   source        kEndpoints
// A watch event for an Endpoints object replaces all slices derived from it at once.
struct Endpoints {
  ObjectMeta meta;
  std::vector<EndpointSlice> slices;
};

// spec.type of an MCS ServiceImport.
enum class ServiceImportType : uint8_t { kClusterSetIP, kHeadless };

// A multicluster.x-k8s.io ServiceImport (v1alpha1, and v1beta1, which moved the fields from
// spec to the object's top level: both are read, spec first). Its endpoints are the
// EndpointSlices labelled with its name (EndpointSlice::multicluster_service_name).
struct ServiceImport {
  ObjectMeta meta;
  ServiceImportType type = ServiceImportType::kClusterSetIP;
  // spec.ips: the ClusterSetIPs (empty for a headless import, or not allocated yet). Entries
  // that are not IP addresses are dropped with a warning.
  std::vector<IpAddress> ips;
  std::vector<ServicePort> ports;  // spec.ports; a port with an unknown protocol is dropped
};

// One status.endpoints[] entry of a kubeslice ServiceImport.
struct KubesliceEndpoint {
  std::string dns_name;  // status.endpoints[].dnsName, lower case, no trailing dot; may be empty
  std::optional<IpAddress> ip;  // status.endpoints[].ip; unset when absent or not an IP
};

// A networking.kubeslice.io/v1beta1 (or mesh.avesha.io/v1beta1) ServiceImport: the names
// of spec.dnsName and spec.aliases[] (lower case, without trailing dot) stand for every
// endpoint's IP, each endpoint's dnsName for its own.
struct KubesliceServiceImport {
  ObjectMeta meta;
  // metadata.creationTimestamp (ParseTimestampS); unset when absent or malformed (warned).
  // Orders the claims of names between namespaces (kubedns/records/kubeslice_names.h).
  std::optional<int64_t> creation_unix_s;
  std::string dns_name;
  std::vector<std::string> aliases;
  std::vector<KubesliceEndpoint> endpoints;
};

enum class PodPhase : uint8_t { kUnknown, kPending, kRunning, kSucceeded, kFailed };

// For `--pod-records=verified`: does a pod with this IP exist in this namespace.
struct Pod {
  ObjectMeta meta;
  std::vector<IpAddress> pod_ips;       // status.podIPs, or status.podIP when podIPs is absent
  PodPhase phase = PodPhase::kUnknown;  // absent or unrecognised: kUnknown
};

struct StatusCause {
  std::string reason;  // e.g. "ResourceVersionTooLarge", "FieldValueForbidden"
  std::string message;
  std::string field;
};

// A meta/v1 Status: the body of every API error response, and the object of an ERROR watch
// event. A watch from a too-old resourceVersion is an HTTP 200 stream whose ERROR event has
// code 410 and reason "Expired"; the client must then re-list.
struct Status {
  int32_t code = 0;     // the HTTP status it stands for (410, 500, ...); 0 if absent
  std::string status;   // "Failure" or "Success"
  std::string reason;   // "Expired", "NotFound", ...; empty when absent (the 500s have none)
  std::string message;  // human readable
  // metadata.continue of a 410 on a paginated list: a token that continues the list
  // *inconsistently* from the current state. Restarting the list is usually better.
  std::string continue_token;
  std::optional<int32_t> retry_after_seconds;  // details.retryAfterSeconds
  std::vector<StatusCause> causes;             // details.causes

  bool IsExpired() const { return code == 410; }
  // "410 Expired: too old resource version: 142 (143)", for log lines.
  std::string Summary() const;
};

// The /version document.
struct VersionInfo {
  std::string git_version;  // "v1.25.0-k3s1"
  std::string major;
  std::string minor;
  std::string platform;
};

std::string_view ToString(Kind kind);
std::string_view ToString(Protocol protocol);
std::string_view ToString(ServiceType type);
std::string_view ToString(AddressType type);
std::string_view ToString(PodPhase phase);
std::string_view ToString(ServiceImportType type);

// Parses the API's spelling ("TCP", "ClusterIP", "IPv4", "Running", "EndpointSlice").
// nullopt for anything else; case-sensitive, as the API is.
std::optional<Kind> KindFromString(std::string_view text);
std::optional<Protocol> ProtocolFromString(std::string_view text);
std::optional<ServiceType> ServiceTypeFromString(std::string_view text);
std::optional<AddressType> AddressTypeFromString(std::string_view text);
std::optional<PodPhase> PodPhaseFromString(std::string_view text);
std::optional<ServiceImportType> ServiceImportTypeFromString(std::string_view text);

// The kind of an object or list item from its `kind` and `apiVersion` ("ServiceImport" and
// "multicluster.x-k8s.io/v1alpha1" → kServiceImport). The apiVersion matters only for
// ServiceImports, whose group decides; for them an unknown or empty group is nullopt (an
// item of a kind we do not use). Never kStatus.
std::optional<Kind> KindOf(std::string_view kind, std::string_view api_version);
// The API group of an apiVersion ("discovery.k8s.io/v1" → "discovery.k8s.io", "v1" → "").
std::string_view GroupOf(std::string_view api_version);

}  // namespace kdns::k8s
