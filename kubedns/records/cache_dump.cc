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

// Sorts `items` (so the output is stable) and keeps the first `max`; true when some were cut.
template <typename T>
[[nodiscard]] bool SortAndCut(std::vector<T>& items, size_t max) {
  std::sort(items.begin(), items.end());
  if (items.size() <= max) return false;
  items.resize(max);
  return true;
}

// Writes the first `max_hosts` of `hosts`, each as `text(host)`, as an array; true when some
// were cut.
template <typename Hosts, typename Text>
[[nodiscard]] bool WriteHosts(Writer& writer, const Hosts& hosts, size_t max_hosts, Text text) {
  bool cut = false;
  writer.StartArray();
  size_t shown = 0;
  for (const auto& host : hosts) {
    if (shown++ == max_hosts) {
      cut = true;
      break;
    }
    String(writer, text(host));
  }
  writer.EndArray();
  return cut;
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

  // Sorted by namespace and name; only the first max_services.
  std::vector<std::tuple<std::string_view, std::string_view, const ServiceRecords*>> services;
  bool truncated = false;
  snapshot->namespaces().ForEach([&](const std::string& ns, const auto& space) {
    space->services.ForEach([&](const std::string& name, const auto& records) {
      if (records->answerable()) services.emplace_back(ns, name, records.get());
    });
  });
  truncated |= SortAndCut(services, max_services);

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
    truncated |= WriteHosts(writer, records->hosts(), max_hosts, [](const auto& host) {
      return std::string(host.label) + " " + host.ip.ToString();
    });
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
  truncated |= SortAndCut(imports, max_services);
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
    truncated |= WriteHosts(writer, records->hosts(), max_hosts, [](const auto& host) {
      return host.label + "." + host.cluster + " " + host.ip.ToString();
    });
    writer.EndObject();
  }
  writer.EndArray();
  std::vector<std::pair<std::string, const std::vector<IpAddress>*>> names;
  multicluster.kubeslice_names().ForEach([&](std::string name, const std::vector<IpAddress>& ips) {
    names.emplace_back(std::move(name), &ips);
  });
  truncated |= SortAndCut(names, max_services);
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
