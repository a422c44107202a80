#include "kubedns/records/cache_dump.h"

#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <algorithm>
#include <string_view>
#include <tuple>
#include <vector>

namespace kdns::kubedns {

namespace {

std::string_view KindName(ServiceInfo::Kind kind) {
  switch (kind) {
    case ServiceInfo::Kind::kClusterIP:
      return "ClusterIP";
    case ServiceInfo::Kind::kHeadless:
      return "Headless";
    case ServiceInfo::Kind::kExternalName:
      return "ExternalName";
  }
  return "";
}

using Writer = rapidjson::Writer<rapidjson::StringBuffer>;

void String(Writer& writer, std::string_view text) {
  writer.String(text.data(), static_cast<rapidjson::SizeType>(text.size()));
}

}  // namespace

std::string CacheJson(const Snapshot* snapshot, size_t max_services, size_t max_hosts) {
  rapidjson::StringBuffer buffer;
  Writer writer(buffer);
  writer.StartObject();
  writer.Key("generation");
  writer.Uint64(snapshot ? snapshot->generation() : 0);
  writer.Key("synced");
  writer.Bool(snapshot && snapshot->synced());
  if (snapshot == nullptr) {
    writer.EndObject();
    return buffer.GetString();
  }
  writer.Key("stats");
  writer.StartObject();
  writer.Key("services");
  writer.Uint64(snapshot->stats().services);
  writer.Key("endpoints");
  writer.Uint64(snapshot->stats().endpoints);
  writer.Key("reverse_entries");
  writer.Uint64(snapshot->stats().reverse_entries);
  writer.Key("pod_ips");
  writer.Uint64(snapshot->stats().pod_ips);
  writer.EndObject();

  // Sorted by namespace and name so the output is stable; only the first max_services.
  std::vector<std::tuple<std::string_view, std::string_view, const ServiceRecords*>> services;
  bool truncated = false;
  snapshot->namespaces().ForEach([&](const std::string& ns, const auto& space) {
    space->services.ForEach([&](const std::string& name, const auto& records) {
      if (records->answerable()) services.emplace_back(ns, name, records.get());
    });
  });
  std::sort(services.begin(), services.end());
  if (services.size() > max_services) {
    services.resize(max_services);
    truncated = true;
  }

  writer.Key("services");
  writer.StartArray();
  for (const auto& [ns, name, records] : services) {
    const ServiceInfo& info = *records->service();
    writer.StartObject();
    writer.Key("namespace");
    String(writer, ns);
    writer.Key("name");
    String(writer, name);
    writer.Key("kind");
    String(writer, KindName(info.kind));
    if (info.kind == ServiceInfo::Kind::kExternalName) {
      writer.Key("externalName");
      String(writer, info.external_name);
    }
    writer.Key("clusterIPs");
    writer.StartArray();
    for (const auto& ip : info.cluster_ips) String(writer, ip.ToString());
    writer.EndArray();
    writer.Key("hosts");
    writer.StartArray();
    size_t shown = 0;
    for (const auto& host : records->hosts()) {
      if (shown++ == max_hosts) {
        truncated = true;
        break;
      }
      String(writer, std::string(host.label) + " " + host.ip.ToString());
    }
    writer.EndArray();
    writer.Key("srv");
    writer.StartArray();
    for (const auto& set : records->srv_sets()) {
      uint16_t port = set.port;
      if (port == 0 && !set.targets.empty()) port = set.targets.front().port;
      std::string proto = set.protocol == k8s::Protocol::kTcp   ? "tcp"
                          : set.protocol == k8s::Protocol::kUdp ? "udp"
                                                                : "sctp";
      String(writer, "_" + set.port_name + "._" + proto + ":" + std::to_string(port));
    }
    writer.EndArray();
    writer.EndObject();
  }
  writer.EndArray();

  // The multicluster zones (empty when off), bounded and sorted the same way.
  const MulticlusterSnapshot& multicluster = snapshot->multicluster();
  std::vector<std::pair<std::string_view, const McsImportRecords*>> imports;
  multicluster.imports().ForEach([&](const std::string& key, const auto& records) {
    if (records->answerable()) imports.emplace_back(key, records.get());
  });
  std::sort(imports.begin(), imports.end());
  if (imports.size() > max_services) {
    imports.resize(max_services);
    truncated = true;
  }
  writer.Key("service_imports");
  writer.StartArray();
  for (const auto& [key, records] : imports) {
    writer.StartObject();
    writer.Key("namespace");
    String(writer, records->import()->meta.ns);
    writer.Key("name");
    String(writer, records->import()->meta.name);
    writer.Key("kind");
    String(writer, k8s::ToString(records->import()->type));
    writer.Key("ips");
    writer.StartArray();
    for (const auto& ip : records->import()->ips) String(writer, ip.ToString());
    writer.EndArray();
    writer.Key("hosts");  // "label.cluster ip"
    writer.StartArray();
    size_t shown = 0;
    for (const auto& host : records->hosts()) {
      if (shown++ == max_hosts) {
        truncated = true;
        break;
      }
      String(writer, host.label + "." + host.cluster + " " + host.ip.ToString());
    }
    writer.EndArray();
    writer.EndObject();
  }
  writer.EndArray();
  std::vector<std::pair<std::string, const std::vector<IpAddress>*>> names;
  multicluster.kubeslice_names().ForEach([&](std::string name, const std::vector<IpAddress>& ips) {
    names.emplace_back(std::move(name), &ips);
  });
  std::sort(names.begin(), names.end());
  if (names.size() > max_services) {
    names.resize(max_services);
    truncated = true;
  }
  writer.Key("kubeslice_names");  // kubeslice: {"name": [ips]}
  writer.StartObject();
  for (const auto& [name, ips] : names) {
    writer.Key(name.data(), static_cast<rapidjson::SizeType>(name.size()));
    writer.StartArray();
    for (const auto& ip : *ips) String(writer, ip.ToString());
    writer.EndArray();
  }
  writer.EndObject();

  writer.Key("truncated");
  writer.Bool(truncated);
  writer.EndObject();
  return buffer.GetString();
}

}  // namespace kdns::kubedns
