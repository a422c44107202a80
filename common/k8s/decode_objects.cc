#include "common/k8s/decode_objects.h"

#include <algorithm>
#include <cctype>
#include <limits>
#include <utility>

namespace kdns::k8s::internal {
namespace {

constexpr int64_t kMinPort = 1;
constexpr int64_t kMaxPort = 65535;

bool NotAnObject(FieldContext& ctx, const FieldPath& path, const JsonValue& value) {
  return ctx.Fail(path, "not an object: " + Describe(value));
}

// Reads `protocol` (absent: TCP). An unknown protocol warns and returns false in *known, so
// the caller drops that port only.
bool ReadProtocol(FieldContext& ctx, const JsonValue& port, const FieldPath& path,
                  Protocol* protocol, bool* known) {
  std::string_view text;
  if (!ReadStringView(ctx, port, "protocol", path, &text)) return false;
  *known = true;
  if (text.empty()) return true;
  std::optional<Protocol> parsed = ProtocolFromString(text);
  if (!parsed) {
    FieldPath field = path.Field("protocol");
    ctx.Warn(field, "unknown protocol " + Quote(text) + ", port dropped");
    *known = false;
    return true;
  }
  *protocol = *parsed;
  return true;
}

// ports[] of a Service's spec (ServicePort, port required), an EndpointSlice (EndpointPort,
// port optional) or a v1 Endpoints subset (EndpointPort, port required). A port with an
// unknown protocol is dropped with a warning; the rest are kept.
template <class Port>
bool DecodePorts(FieldContext& ctx, const JsonValue& parent, const FieldPath& path,
                 bool port_required, std::vector<Port>* out) {
  const JsonValue* ports;
  if (!ReadArray(ctx, parent, "ports", path, &ports)) return false;
  if (ports == nullptr) return true;
  FieldPath ports_path = path.Field("ports");
  out->reserve(ports->Size());
  for (rapidjson::SizeType i = 0; i < ports->Size(); ++i) {
    const JsonValue& port = (*ports)[i];
    FieldPath port_path = ports_path.Index(i);
    if (!port.IsObject()) return NotAnObject(ctx, port_path, port);
    Port decoded;
    bool known = true;
    std::optional<int64_t> number;
    if (!ReadString(ctx, port, "name", port_path, &decoded.name) ||
        !ReadProtocol(ctx, port, port_path, &decoded.protocol, &known) ||
        !ReadInt(ctx, port, "port", port_path, kMinPort, kMaxPort, &number)) {
      return false;
    }
    if (port_required && !number) {
      FieldPath field = port_path.Field("port");
      return ctx.Fail(field, "missing");
    }
    if (number) decoded.port = static_cast<uint16_t>(*number);
    if (known) out->push_back(std::move(decoded));
  }
  return true;
}

// Adds `text` to `addresses` if it is an IP of `family` (any family when nullopt); warns
// otherwise.
void AddAddress(FieldContext& ctx, std::string_view text, const FieldPath& path,
                std::optional<IpFamily> family, std::vector<IpAddress>* addresses) {
  std::optional<IpAddress> address = IpAddress::Parse(text);
  if (!address) {
    ctx.Warn(path, "not an IP address: " + Quote(text));
  } else if (family && address->family() != *family) {
    ctx.Warn(path, std::string("not an ") + (*family == IpFamily::kV4 ? "IPv4" : "IPv6") +
                       " address: " + Quote(text));
  } else {
    addresses->push_back(*address);
  }
}

// targetRef.name when targetRef.kind is "Pod" (an endpoint's pod, for --endpoint-pod-names).
// A targetRef of another shape is ignored, not an error: only that option uses it, and a
// slice must not be dropped for a field most answers do not need.
void DecodePodRef(const JsonValue& json, std::string* pod_name) {
  const JsonValue* ref = Member(json, "targetRef");
  if (ref == nullptr || !ref->IsObject()) return;
  const JsonValue* kind = Member(*ref, "kind");
  const JsonValue* name = Member(*ref, "name");
  if (kind == nullptr || !kind->IsString() || View(*kind) != "Pod") return;
  if (name == nullptr || !name->IsString()) return;
  *pod_name = View(*name);
}

bool DecodeEndpoint(FieldContext& ctx, const JsonValue& json, const FieldPath& path,
                    AddressType address_type, Endpoint* out) {
  if (!json.IsObject()) return NotAnObject(ctx, path, json);
  const JsonValue* addresses;
  if (!ReadArray(ctx, json, "addresses", path, &addresses)) return false;
  if (addresses != nullptr) {
    FieldPath addresses_path = path.Field("addresses");
    if (address_type != AddressType::kFqdn) out->addresses.reserve(addresses->Size());
    std::optional<IpFamily> family =
        address_type == AddressType::kIPv4 ? IpFamily::kV4 : IpFamily::kV6;
    for (rapidjson::SizeType i = 0; i < addresses->Size(); ++i) {
      std::string_view text;
      if (!ArrayString(ctx, *addresses, i, addresses_path, &text)) return false;
      if (address_type == AddressType::kFqdn) continue;  // DNS does not serve FQDN slices
      FieldPath address_path = addresses_path.Index(i);
      AddAddress(ctx, text, address_path, family, &out->addresses);
    }
  }
  const JsonValue* conditions;
  if (!ReadObject(ctx, json, "conditions", path, &conditions)) return false;
  if (conditions != nullptr) {
    FieldPath conditions_path = path.Field("conditions");
    std::optional<bool> ready;
    if (!ReadBool(ctx, *conditions, "ready", conditions_path, &ready)) return false;
    // discovery/v1 EndpointConditions: "A nil value indicates an unknown state. In most cases
    // consumers should interpret this unknown state as ready."
    out->ready = ready.value_or(true);
  }
  // Read leniently: a zone of the wrong shape costs only zonal answers, never the slice.
  if (const JsonValue* zone = Member(json, "zone"); zone != nullptr) {
    if (zone->IsString()) {
      out->zone = View(*zone);
    } else {
      ctx.Warn(path.Field("zone"), "not a string: " + Describe(*zone));
    }
  }
  DecodePodRef(json, &out->pod_name);
  return ReadString(ctx, json, "hostname", path, &out->hostname);
}

// One v1 EndpointAddress into the slice of its family.
bool DecodeEndpointAddress(FieldContext& ctx, const JsonValue& json, const FieldPath& path,
                           bool ready, EndpointSlice* v4, EndpointSlice* v6) {
  if (!json.IsObject()) return NotAnObject(ctx, path, json);
  std::string_view ip;
  if (!ReadStringView(ctx, json, "ip", path, &ip)) return false;
  FieldPath ip_path = path.Field("ip");
  if (ip.empty()) return ctx.Fail(ip_path, "missing");
  Endpoint endpoint;
  endpoint.ready = ready;
  if (!ReadString(ctx, json, "hostname", path, &endpoint.hostname)) return false;
  DecodePodRef(json, &endpoint.pod_name);
  AddAddress(ctx, ip, ip_path, std::nullopt, &endpoint.addresses);
  if (endpoint.addresses.empty()) return true;
  EndpointSlice* slice = endpoint.addresses[0].is_v4() ? v4 : v6;
  slice->endpoints.push_back(std::move(endpoint));
  return true;
}

// metadata.labels (string values only, as the API has them) for the --labels filter.
bool DecodeLabels(FieldContext& ctx, const JsonValue& json,
                  std::vector<std::pair<std::string, std::string>>* out) {
  const JsonValue* metadata = Member(json, "metadata");
  if (metadata == nullptr || !metadata->IsObject()) return true;  // DecodeMeta checked it
  const FieldPath root;
  const FieldPath metadata_path = root.Field("metadata");
  const JsonValue* labels;
  if (!ReadObject(ctx, *metadata, "labels", metadata_path, &labels)) return false;
  if (labels == nullptr) return true;
  out->reserve(labels->MemberCount());
  for (auto it = labels->MemberBegin(); it != labels->MemberEnd(); ++it) {
    if (!it->value.IsString()) {
      FieldPath labels_path = metadata_path.Field("labels");
      FieldPath field = labels_path.Field(View(it->name));
      return ctx.Fail(field, "not a string: " + Describe(it->value));
    }
    out->emplace_back(View(it->name), View(it->value));
  }
  return true;
}

// spec.externalIPs and status.loadBalancer.ingress[] (ip, else hostname), the addresses
// k8s_external-style names answer (--external-zone).
bool DecodeExternalAddresses(FieldContext& ctx, const JsonValue& json, const JsonValue& spec,
                             const FieldPath& spec_path, Service* out) {
  const JsonValue* ips;
  if (!ReadArray(ctx, spec, "externalIPs", spec_path, &ips)) return false;
  if (ips != nullptr) {
    FieldPath ips_path = spec_path.Field("externalIPs");
    for (rapidjson::SizeType i = 0; i < ips->Size(); ++i) {
      std::string_view text;
      if (!ArrayString(ctx, *ips, i, ips_path, &text)) return false;
      FieldPath ip_path = ips_path.Index(i);
      AddAddress(ctx, text, ip_path, std::nullopt, &out->external_ips);
    }
  }
  const FieldPath root;
  const JsonValue* status;
  if (!ReadObject(ctx, json, "status", root, &status)) return false;
  if (status == nullptr) return true;
  const FieldPath status_path = root.Field("status");
  const JsonValue* load_balancer;
  if (!ReadObject(ctx, *status, "loadBalancer", status_path, &load_balancer)) return false;
  if (load_balancer == nullptr) return true;
  const FieldPath lb_path = status_path.Field("loadBalancer");
  const JsonValue* ingress;
  if (!ReadArray(ctx, *load_balancer, "ingress", lb_path, &ingress)) return false;
  if (ingress == nullptr) return true;
  const FieldPath ingress_path = lb_path.Field("ingress");
  for (rapidjson::SizeType i = 0; i < ingress->Size(); ++i) {
    const JsonValue& entry = (*ingress)[i];
    FieldPath entry_path = ingress_path.Index(i);
    if (!entry.IsObject()) return NotAnObject(ctx, entry_path, entry);
    std::string_view ip, hostname;
    if (!ReadStringView(ctx, entry, "ip", entry_path, &ip) ||
        !ReadStringView(ctx, entry, "hostname", entry_path, &hostname)) {
      return false;
    }
    if (!ip.empty()) {
      FieldPath ip_path = entry_path.Field("ip");
      AddAddress(ctx, ip, ip_path, std::nullopt, &out->external_ips);
    } else if (!hostname.empty()) {
      std::string name(hostname);
      if (name.back() == '.') name.pop_back();
      std::transform(name.begin(), name.end(), name.begin(),
                     [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
      out->external_hostnames.push_back(std::move(name));
    }
  }
  return true;
}

void AddClusterIp(FieldContext& ctx, std::string_view text, const FieldPath& path, Service* out) {
  if (text.empty()) return;  // not allocated (ExternalName, or not yet)
  if (text == "None") {
    out->headless = true;
    return;
  }
  AddAddress(ctx, text, path, std::nullopt, &out->cluster_ips);
}

}  // namespace

bool ArrayString(FieldContext& ctx, const JsonValue& array, size_t i, const FieldPath& path,
                 std::string_view* out) {
  const JsonValue& value = array[static_cast<rapidjson::SizeType>(i)];
  if (!value.IsString()) {
    FieldPath item = path.Index(i);
    return ctx.Fail(item, "not a string: " + Describe(value));
  }
  *out = View(value);
  return true;
}

bool DecodeServicePorts(FieldContext& ctx, const JsonValue& parent, const FieldPath& path,
                        std::vector<ServicePort>* out) {
  return DecodePorts(ctx, parent, path, /*port_required=*/true, out);
}

void AddIpAddress(FieldContext& ctx, std::string_view text, const FieldPath& path,
                  std::vector<IpAddress>* addresses) {
  AddAddress(ctx, text, path, std::nullopt, addresses);
}

bool DecodeMeta(FieldContext& ctx, const JsonValue& object, ObjectMeta* meta,
                EndpointSlice* slice_labels) {
  const FieldPath root;
  const JsonValue* metadata;
  if (!ReadObject(ctx, object, "metadata", root, &metadata)) return false;
  FieldPath path = root.Field("metadata");
  if (metadata == nullptr) return ctx.Fail(path, "missing");
  std::string_view version;
  if (!ReadString(ctx, *metadata, "name", path, &meta->name) ||
      !ReadString(ctx, *metadata, "namespace", path, &meta->ns) ||
      !ReadString(ctx, *metadata, "uid", path, &meta->uid) ||
      !ReadStringView(ctx, *metadata, "resourceVersion", path, &version)) {
    return false;
  }
  meta->resource_version = ResourceVersion::FromText(version);
  if (meta->name.empty()) {
    FieldPath field = path.Field("name");
    return ctx.Fail(field, "missing");
  }
  if (meta->ns.empty()) {
    FieldPath field = path.Field("namespace");
    return ctx.Fail(field, "missing");
  }
  if (slice_labels == nullptr) return true;
  const JsonValue* labels;
  if (!ReadObject(ctx, *metadata, "labels", path, &labels)) return false;
  if (labels == nullptr) return true;
  FieldPath labels_path = path.Field("labels");
  return ReadString(ctx, *labels, kServiceNameLabel, labels_path, &slice_labels->service_name) &&
         ReadString(ctx, *labels, kMulticlusterServiceNameLabel, labels_path,
                    &slice_labels->multicluster_service_name) &&
         ReadString(ctx, *labels, kSourceClusterLabel, labels_path, &slice_labels->source_cluster);
}

bool DecodeServiceInto(FieldContext& ctx, const JsonValue& json, Service* out) {
  const FieldPath root;
  if (!json.IsObject()) return NotAnObject(ctx, root, json);
  if (!DecodeMeta(ctx, json, &out->meta)) return false;
  const JsonValue* spec;
  if (!ReadObject(ctx, json, "spec", root, &spec)) return false;
  FieldPath spec_path = root.Field("spec");
  if (spec == nullptr) return ctx.Fail(spec_path, "missing");

  std::string_view type;
  if (!ReadStringView(ctx, *spec, "type", spec_path, &type)) return false;
  if (!type.empty()) {
    std::optional<ServiceType> parsed = ServiceTypeFromString(type);
    FieldPath type_path = spec_path.Field("type");
    if (!parsed) return ctx.Fail(type_path, "unknown service type " + Quote(type));
    out->type = *parsed;
  }

  // spec.clusterIPs supersedes spec.clusterIP (its first entry is always the same address).
  const JsonValue* ips;
  if (!ReadArray(ctx, *spec, "clusterIPs", spec_path, &ips)) return false;
  if (ips != nullptr && !ips->Empty()) {
    FieldPath ips_path = spec_path.Field("clusterIPs");
    out->cluster_ips.reserve(ips->Size());
    for (rapidjson::SizeType i = 0; i < ips->Size(); ++i) {
      std::string_view text;
      if (!ArrayString(ctx, *ips, i, ips_path, &text)) return false;
      FieldPath ip_path = ips_path.Index(i);
      AddClusterIp(ctx, text, ip_path, out);
    }
  } else {
    std::string_view text;
    if (!ReadStringView(ctx, *spec, "clusterIP", spec_path, &text)) return false;
    FieldPath ip_path = spec_path.Field("clusterIP");
    AddClusterIp(ctx, text, ip_path, out);
  }
  if (out->headless) out->cluster_ips.clear();  // "None" is only valid alone

  std::optional<bool> publish_not_ready;
  if (!ReadString(ctx, *spec, "externalName", spec_path, &out->external_name) ||
      !ReadBool(ctx, *spec, "publishNotReadyAddresses", spec_path, &publish_not_ready)) {
    return false;
  }
  out->publish_not_ready_addresses = publish_not_ready.value_or(false);
  if (out->type == ServiceType::kExternalName && out->external_name.empty()) {
    FieldPath field = spec_path.Field("externalName");
    return ctx.Fail(field, "missing for an ExternalName service");
  }

  return DecodePorts(ctx, *spec, spec_path, /*port_required=*/true, &out->ports) &&
         DecodeExternalAddresses(ctx, json, *spec, spec_path, out) &&
         DecodeLabels(ctx, json, &out->labels);
}

bool DecodeEndpointSliceInto(FieldContext& ctx, const JsonValue& json, EndpointSlice* out) {
  const FieldPath root;
  if (!json.IsObject()) return NotAnObject(ctx, root, json);
  if (!DecodeMeta(ctx, json, &out->meta, out)) return false;
  out->source = SliceSource::kEndpointSlice;

  std::string_view type;
  if (!ReadStringView(ctx, json, "addressType", root, &type)) return false;
  FieldPath type_path = root.Field("addressType");
  if (type.empty()) return ctx.Fail(type_path, "missing");
  std::optional<AddressType> address_type = AddressTypeFromString(type);
  if (!address_type) return ctx.Fail(type_path, "unknown address type " + Quote(type));
  out->address_type = *address_type;

  const JsonValue* endpoints;
  if (!ReadArray(ctx, json, "endpoints", root, &endpoints)) return false;
  if (endpoints != nullptr) {
    FieldPath endpoints_path = root.Field("endpoints");
    out->endpoints.resize(endpoints->Size());
    for (rapidjson::SizeType i = 0; i < endpoints->Size(); ++i) {
      FieldPath endpoint_path = endpoints_path.Index(i);
      if (!DecodeEndpoint(ctx, (*endpoints)[i], endpoint_path, out->address_type,
                          &out->endpoints[i])) {
        return false;
      }
    }
  }
  return DecodePorts(ctx, json, root, /*port_required=*/false, &out->ports);
}

bool DecodeEndpointsInto(FieldContext& ctx, const JsonValue& json, Endpoints* out) {
  const FieldPath root;
  if (!json.IsObject()) return NotAnObject(ctx, root, json);
  if (!DecodeMeta(ctx, json, &out->meta)) return false;
  const JsonValue* subsets;
  if (!ReadArray(ctx, json, "subsets", root, &subsets)) return false;
  if (subsets == nullptr) return true;
  FieldPath subsets_path = root.Field("subsets");
  for (rapidjson::SizeType i = 0; i < subsets->Size(); ++i) {
    const JsonValue& subset = (*subsets)[i];
    FieldPath subset_path = subsets_path.Index(i);
    if (!subset.IsObject()) return NotAnObject(ctx, subset_path, subset);
    EndpointSlice v4;
    v4.address_type = AddressType::kIPv4;
    EndpointSlice v6;
    v6.address_type = AddressType::kIPv6;
    for (bool ready : {true, false}) {
      std::string_view key = ready ? "addresses" : "notReadyAddresses";
      const JsonValue* addresses;
      if (!ReadArray(ctx, subset, key, subset_path, &addresses)) return false;
      if (addresses == nullptr) continue;
      FieldPath addresses_path = subset_path.Field(key);
      for (rapidjson::SizeType j = 0; j < addresses->Size(); ++j) {
        FieldPath address_path = addresses_path.Index(j);
        if (!DecodeEndpointAddress(ctx, (*addresses)[j], address_path, ready, &v4, &v6)) {
          return false;
        }
      }
    }
    std::vector<EndpointPort> ports;
    if (!DecodePorts(ctx, subset, subset_path, /*port_required=*/true, &ports)) {
      return false;
    }
    for (EndpointSlice* slice : {&v4, &v6}) {
      if (slice->endpoints.empty()) continue;
      slice->meta = out->meta;
      slice->meta.name.append("/subset-").append(std::to_string(i));
      slice->meta.name.append(slice == &v4 ? "-ipv4" : "-ipv6");
      slice->service_name = out->meta.name;
      slice->ports = ports;
      slice->source = SliceSource::kEndpoints;
      out->slices.push_back(std::move(*slice));
    }
  }
  return true;
}

bool DecodePodInto(FieldContext& ctx, const JsonValue& json, Pod* out) {
  const FieldPath root;
  if (!json.IsObject()) return NotAnObject(ctx, root, json);
  if (!DecodeMeta(ctx, json, &out->meta)) return false;
  const JsonValue* status;
  if (!ReadObject(ctx, json, "status", root, &status)) return false;
  if (status == nullptr) return true;
  FieldPath status_path = root.Field("status");
  std::string_view phase;
  if (!ReadStringView(ctx, *status, "phase", status_path, &phase)) return false;
  out->phase = PodPhaseFromString(phase).value_or(PodPhase::kUnknown);

  const JsonValue* ips;
  if (!ReadArray(ctx, *status, "podIPs", status_path, &ips)) return false;
  if (ips != nullptr && !ips->Empty()) {
    FieldPath ips_path = status_path.Field("podIPs");
    out->pod_ips.reserve(ips->Size());
    for (rapidjson::SizeType i = 0; i < ips->Size(); ++i) {
      const JsonValue& entry = (*ips)[i];
      FieldPath entry_path = ips_path.Index(i);
      if (!entry.IsObject()) return NotAnObject(ctx, entry_path, entry);
      std::string_view ip;
      if (!ReadStringView(ctx, entry, "ip", entry_path, &ip)) return false;
      FieldPath ip_path = entry_path.Field("ip");
      AddAddress(ctx, ip, ip_path, std::nullopt, &out->pod_ips);
    }
    return true;
  }
  std::string_view ip;
  if (!ReadStringView(ctx, *status, "podIP", status_path, &ip)) return false;
  FieldPath ip_path = status_path.Field("podIP");
  if (!ip.empty()) AddAddress(ctx, ip, ip_path, std::nullopt, &out->pod_ips);
  return true;
}

bool DecodeStatusInto(FieldContext& ctx, const JsonValue& json, Status* out) {
  const FieldPath root;
  if (!json.IsObject()) return NotAnObject(ctx, root, json);
  std::string_view kind;
  if (!ReadStringView(ctx, json, "kind", root, &kind)) return false;
  if (!kind.empty() && kind != "Status") {
    FieldPath kind_path = root.Field("kind");
    return ctx.Fail(kind_path, "not a Status: " + Quote(kind));
  }
  constexpr int64_t kMaxInt32 = std::numeric_limits<int32_t>::max();
  constexpr int64_t kMinInt32 = std::numeric_limits<int32_t>::min();
  std::optional<int64_t> code;
  if (!ReadInt(ctx, json, "code", root, kMinInt32, kMaxInt32, &code) ||
      !ReadString(ctx, json, "status", root, &out->status) ||
      !ReadString(ctx, json, "reason", root, &out->reason) ||
      !ReadString(ctx, json, "message", root, &out->message)) {
    return false;
  }
  out->code = static_cast<int32_t>(code.value_or(0));

  const JsonValue* metadata;
  if (!ReadObject(ctx, json, "metadata", root, &metadata)) return false;
  FieldPath metadata_path = root.Field("metadata");
  if (metadata != nullptr &&
      !ReadString(ctx, *metadata, "continue", metadata_path, &out->continue_token)) {
    return false;
  }

  const JsonValue* details;
  if (!ReadObject(ctx, json, "details", root, &details)) return false;
  if (details == nullptr) return true;
  FieldPath details_path = root.Field("details");
  std::optional<int64_t> retry_after;
  if (!ReadInt(ctx, *details, "retryAfterSeconds", details_path, 0, kMaxInt32, &retry_after)) {
    return false;
  }
  if (retry_after) out->retry_after_seconds = static_cast<int32_t>(*retry_after);
  const JsonValue* causes;
  if (!ReadArray(ctx, *details, "causes", details_path, &causes)) return false;
  if (causes == nullptr) return true;
  FieldPath causes_path = details_path.Field("causes");
  out->causes.resize(causes->Size());
  for (rapidjson::SizeType i = 0; i < causes->Size(); ++i) {
    const JsonValue& cause = (*causes)[i];
    FieldPath cause_path = causes_path.Index(i);
    if (!cause.IsObject()) return NotAnObject(ctx, cause_path, cause);
    if (!ReadString(ctx, cause, "reason", cause_path, &out->causes[i].reason) ||
        !ReadString(ctx, cause, "message", cause_path, &out->causes[i].message) ||
        !ReadString(ctx, cause, "field", cause_path, &out->causes[i].field)) {
      return false;
    }
  }
  return true;
}

}  // namespace kdns::k8s::internal
