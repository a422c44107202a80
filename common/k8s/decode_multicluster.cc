// The ServiceImport decoders (see decode_objects.h): the Multi-Cluster Services API's
// (KEP-1645) and kubeslice's. Field rules as for the other kinds (json_fields.h): unknown
// fields ignored, null as absent, a wrong JSON type fails the object, a bad address or port
// is dropped with a warning.
#include <algorithm>
#include <utility>

#include "common/k8s/decode_objects.h"

namespace kdns::k8s::internal {
namespace {

// A DNS name as the API spells it, in the form the record code keys on: lower case, without
// the trailing dot of a fully qualified spelling.
std::string CanonicalName(std::string_view text) {
  if (!text.empty() && text.back() == '.') text.remove_suffix(1);
  std::string name(text);
  std::transform(name.begin(), name.end(), name.begin(),
                 [](unsigned char c) { return c >= 'A' && c <= 'Z' ? c + ('a' - 'A') : c; });
  return name;
}

bool NotAnObject(FieldContext& ctx, const FieldPath& path, const JsonValue& value) {
  return ctx.Fail(path, "not an object: " + Describe(value));
}

// The MCS fields from `fields` (spec in v1alpha1, the object itself in v1beta1).
bool DecodeImportFields(FieldContext& ctx, const JsonValue& fields, const FieldPath& path,
                        ServiceImport* out) {
  std::string_view type;
  if (!ReadStringView(ctx, fields, "type", path, &type)) return false;
  if (!type.empty()) {
    std::optional<ServiceImportType> parsed = ServiceImportTypeFromString(type);
    FieldPath type_path = path.Field("type");
    if (!parsed) return ctx.Fail(type_path, "unknown ServiceImport type " + Quote(type));
    out->type = *parsed;
  }
  const JsonValue* ips;
  if (!ReadArray(ctx, fields, "ips", path, &ips)) return false;
  if (ips != nullptr) {
    FieldPath ips_path = path.Field("ips");
    out->ips.reserve(ips->Size());
    for (rapidjson::SizeType i = 0; i < ips->Size(); ++i) {
      std::string_view ip;
      if (!ArrayString(ctx, *ips, i, ips_path, &ip)) return false;
      AddIpAddress(ctx, ip, ips_path.Index(i), &out->ips);
    }
  }
  return DecodeServicePorts(ctx, fields, path, &out->ports);
}

// metadata.creationTimestamp into `out` (DecodeMeta has checked that metadata is an object);
// a malformed one is warned about and left unset.
bool DecodeCreationTimestamp(FieldContext& ctx, const JsonValue& json,
                             std::optional<int64_t>* out) {
  const FieldPath root;
  const FieldPath path = root.Field("metadata");
  std::string_view text;
  if (!ReadStringView(ctx, json["metadata"], "creationTimestamp", path, &text)) return false;
  if (text.empty()) return true;
  *out = ParseTimestampS(text);
  if (!*out) {
    FieldPath field = path.Field("creationTimestamp");
    ctx.Warn(field, "not an RFC 3339 time: " + Quote(text));
  }
  return true;
}

}  // namespace

bool DecodeServiceImportInto(FieldContext& ctx, const JsonValue& json, ServiceImport* out) {
  const FieldPath root;
  if (!json.IsObject()) return NotAnObject(ctx, root, json);
  if (!DecodeMeta(ctx, json, &out->meta)) return false;
  const JsonValue* spec;
  if (!ReadObject(ctx, json, "spec", root, &spec)) return false;
  if (spec != nullptr) {
    FieldPath spec_path = root.Field("spec");
    if (!DecodeImportFields(ctx, *spec, spec_path, out)) return false;
  } else if (!DecodeImportFields(ctx, json, root, out)) {
    return false;
  }
  // A headless import has no ClusterSetIP; one listed anyway is not served.
  if (out->type == ServiceImportType::kHeadless) out->ips.clear();
  return true;
}

bool DecodeKubesliceServiceImportInto(FieldContext& ctx, const JsonValue& json,
                                      KubesliceServiceImport* out) {
  const FieldPath root;
  if (!json.IsObject()) return NotAnObject(ctx, root, json);
  if (!DecodeMeta(ctx, json, &out->meta) ||
      !DecodeCreationTimestamp(ctx, json, &out->creation_unix_s)) {
    return false;
  }
  const JsonValue* spec;
  if (!ReadObject(ctx, json, "spec", root, &spec)) return false;
  if (spec != nullptr) {
    FieldPath spec_path = root.Field("spec");
    std::string_view dns_name;
    if (!ReadStringView(ctx, *spec, "dnsName", spec_path, &dns_name)) return false;
    out->dns_name = CanonicalName(dns_name);
    const JsonValue* aliases;
    if (!ReadArray(ctx, *spec, "aliases", spec_path, &aliases)) return false;
    if (aliases != nullptr) {
      FieldPath aliases_path = spec_path.Field("aliases");
      out->aliases.reserve(aliases->Size());
      for (rapidjson::SizeType i = 0; i < aliases->Size(); ++i) {
        std::string_view alias;
        if (!ArrayString(ctx, *aliases, i, aliases_path, &alias)) return false;
        std::string name = CanonicalName(alias);
        if (!name.empty()) out->aliases.push_back(std::move(name));
      }
    }
  }
  const JsonValue* status;
  if (!ReadObject(ctx, json, "status", root, &status)) return false;
  if (status == nullptr) return true;
  FieldPath status_path = root.Field("status");
  const JsonValue* endpoints;
  if (!ReadArray(ctx, *status, "endpoints", status_path, &endpoints)) return false;
  if (endpoints == nullptr) return true;
  FieldPath endpoints_path = status_path.Field("endpoints");
  out->endpoints.resize(endpoints->Size());
  for (rapidjson::SizeType i = 0; i < endpoints->Size(); ++i) {
    const JsonValue& endpoint = (*endpoints)[i];
    FieldPath endpoint_path = endpoints_path.Index(i);
    if (!endpoint.IsObject()) return NotAnObject(ctx, endpoint_path, endpoint);
    std::string_view ip;
    std::string_view dns_name;
    if (!ReadStringView(ctx, endpoint, "ip", endpoint_path, &ip) ||
        !ReadStringView(ctx, endpoint, "dnsName", endpoint_path, &dns_name)) {
      return false;
    }
    out->endpoints[i].dns_name = CanonicalName(dns_name);
    if (ip.empty()) continue;  // not connected yet: only its name is known
    std::vector<IpAddress> parsed;
    FieldPath ip_path = endpoint_path.Field("ip");
    AddIpAddress(ctx, ip, ip_path, &parsed);
    if (!parsed.empty()) out->endpoints[i].ip = parsed.front();
  }
  return true;
}

}  // namespace kdns::k8s::internal
