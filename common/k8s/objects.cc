#include "common/k8s/objects.h"

#include <array>
#include <utility>

namespace kdns::k8s {
namespace {

template <typename Enum, size_t N>
using NameTable = std::array<std::pair<Enum, std::string_view>, N>;

// KindFromString reads only the first five; the two ServiceImports need their apiVersion.
constexpr NameTable<Kind, 7> kKindNames{{
    {Kind::kService, "Service"},
    {Kind::kEndpointSlice, "EndpointSlice"},
    {Kind::kEndpoints, "Endpoints"},
    {Kind::kPod, "Pod"},
    {Kind::kStatus, "Status"},
    {Kind::kServiceImport, "ServiceImport"},
    {Kind::kKubesliceServiceImport, "KubesliceServiceImport"},
}};
constexpr std::string_view kServiceImportKind = "ServiceImport";
constexpr std::array<std::string_view, 1> kMcsGroups{"multicluster.x-k8s.io"};
constexpr std::array<std::string_view, 2> kKubesliceGroups{"networking.kubeslice.io",
                                                           "mesh.avesha.io"};
constexpr NameTable<ServiceImportType, 2> kServiceImportTypeNames{{
    {ServiceImportType::kClusterSetIP, "ClusterSetIP"},
    {ServiceImportType::kHeadless, "Headless"},
}};
constexpr NameTable<Protocol, 3> kProtocolNames{{
    {Protocol::kTcp, "TCP"},
    {Protocol::kUdp, "UDP"},
    {Protocol::kSctp, "SCTP"},
}};
constexpr NameTable<ServiceType, 4> kServiceTypeNames{{
    {ServiceType::kClusterIP, "ClusterIP"},
    {ServiceType::kNodePort, "NodePort"},
    {ServiceType::kLoadBalancer, "LoadBalancer"},
    {ServiceType::kExternalName, "ExternalName"},
}};
constexpr NameTable<AddressType, 3> kAddressTypeNames{{
    {AddressType::kIPv4, "IPv4"},
    {AddressType::kIPv6, "IPv6"},
    {AddressType::kFqdn, "FQDN"},
}};
constexpr NameTable<PodPhase, 5> kPodPhaseNames{{
    {PodPhase::kUnknown, "Unknown"},
    {PodPhase::kPending, "Pending"},
    {PodPhase::kRunning, "Running"},
    {PodPhase::kSucceeded, "Succeeded"},
    {PodPhase::kFailed, "Failed"},
}};

template <typename Enum, size_t N>
std::string_view NameOf(const NameTable<Enum, N>& table, Enum value) {
  for (const auto& [entry, name] : table) {
    if (entry == value) return name;
  }
  return "?";
}

template <typename Enum, size_t N>
std::optional<Enum> ValueOf(const NameTable<Enum, N>& table, std::string_view text) {
  for (const auto& [entry, name] : table) {
    if (name == text) return entry;
  }
  return std::nullopt;
}

}  // namespace

ResourceVersion ResourceVersion::FromText(std::string_view text) {
  ResourceVersion version{std::string(text), std::nullopt};
  if (text.empty() || text.size() > 20) return version;
  uint64_t number = 0;
  for (char c : text) {
    if (c < '0' || c > '9') return version;
    uint64_t digit = static_cast<uint64_t>(c - '0');
    if (number > (UINT64_MAX - digit) / 10) return version;
    number = number * 10 + digit;
  }
  version.number = number;
  return version;
}

std::string Status::Summary() const {
  std::string summary = std::to_string(code);
  if (!reason.empty()) summary.append(" ").append(reason);
  if (!message.empty()) summary.append(": ").append(message);
  return summary;
}

std::string_view ToString(Kind kind) { return NameOf(kKindNames, kind); }
std::string_view ToString(Protocol protocol) { return NameOf(kProtocolNames, protocol); }
std::string_view ToString(ServiceType type) { return NameOf(kServiceTypeNames, type); }
std::string_view ToString(AddressType type) { return NameOf(kAddressTypeNames, type); }
std::string_view ToString(PodPhase phase) { return NameOf(kPodPhaseNames, phase); }

std::string_view ToString(ServiceImportType type) { return NameOf(kServiceImportTypeNames, type); }

std::optional<Kind> KindFromString(std::string_view text) {
  std::optional<Kind> kind = ValueOf(kKindNames, text);
  if (kind == Kind::kServiceImport || kind == Kind::kKubesliceServiceImport) return std::nullopt;
  return kind;
}

std::string_view GroupOf(std::string_view api_version) {
  size_t slash = api_version.find('/');
  return slash == std::string_view::npos ? std::string_view() : api_version.substr(0, slash);
}

std::optional<Kind> KindOf(std::string_view kind, std::string_view api_version) {
  if (kind != kServiceImportKind) {
    std::optional<Kind> parsed = KindFromString(kind);
    if (parsed == Kind::kStatus) return std::nullopt;
    return parsed;
  }
  std::string_view group = GroupOf(api_version);
  for (std::string_view mcs : kMcsGroups) {
    if (group == mcs) return Kind::kServiceImport;
  }
  for (std::string_view kubeslice : kKubesliceGroups) {
    if (group == kubeslice) return Kind::kKubesliceServiceImport;
  }
  return std::nullopt;
}
std::optional<Protocol> ProtocolFromString(std::string_view text) {
  return ValueOf(kProtocolNames, text);
}
std::optional<ServiceType> ServiceTypeFromString(std::string_view text) {
  return ValueOf(kServiceTypeNames, text);
}
std::optional<AddressType> AddressTypeFromString(std::string_view text) {
  return ValueOf(kAddressTypeNames, text);
}
std::optional<PodPhase> PodPhaseFromString(std::string_view text) {
  return ValueOf(kPodPhaseNames, text);
}
std::optional<ServiceImportType> ServiceImportTypeFromString(std::string_view text) {
  return ValueOf(kServiceImportTypeNames, text);
}

}  // namespace kdns::k8s
