#include "common/k8s/objects.h"

#include <array>
#include <utility>

namespace kdns::k8s {
namespace {

template <typename Enum, size_t N>
using NameTable = std::array<std::pair<Enum, std::string_view>, N>;

constexpr NameTable<Kind, 5> kKindNames{{
    {Kind::kService, "Service"},
    {Kind::kEndpointSlice, "EndpointSlice"},
    {Kind::kEndpoints, "Endpoints"},
    {Kind::kPod, "Pod"},
    {Kind::kStatus, "Status"},
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

std::optional<Kind> KindFromString(std::string_view text) { return ValueOf(kKindNames, text); }
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

}  // namespace kdns::k8s
