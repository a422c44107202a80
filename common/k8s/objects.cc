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

namespace {

// Days from 1970-01-01 to the given date of the proleptic Gregorian calendar (H. Hinnant's
// days_from_civil), so no time zone or libc state is involved.
int64_t DaysFromCivil(int64_t year, int64_t month, int64_t day) {
  year -= month <= 2 ? 1 : 0;
  const int64_t era = (year >= 0 ? year : year - 399) / 400;
  const int64_t year_of_era = year - era * 400;
  const int64_t day_of_year = (153 * (month + (month > 2 ? -3 : 9)) + 2) / 5 + day - 1;
  const int64_t day_of_era = year_of_era * 365 + year_of_era / 4 - year_of_era / 100 + day_of_year;
  return era * 146097 + day_of_era - 719468;
}

// `count` decimal digits at text[at...], or -1.
int64_t Digits(std::string_view text, size_t at, size_t count) {
  if (at + count > text.size()) return -1;
  int64_t value = 0;
  for (size_t i = at; i < at + count; ++i) {
    if (text[i] < '0' || text[i] > '9') return -1;
    value = value * 10 + (text[i] - '0');
  }
  return value;
}

}  // namespace

std::optional<int64_t> ParseTimestampS(std::string_view text) {
  // YYYY-MM-DDTHH:MM:SS[.fraction](Z|+hh:mm|-hh:mm)
  if (text.size() < 20 || text[4] != '-' || text[7] != '-' ||
      (text[10] != 'T' && text[10] != 't') || text[13] != ':' || text[16] != ':') {
    return std::nullopt;
  }
  const int64_t year = Digits(text, 0, 4), month = Digits(text, 5, 2), day = Digits(text, 8, 2);
  const int64_t hour = Digits(text, 11, 2), minute = Digits(text, 14, 2);
  const int64_t second = Digits(text, 17, 2);
  if (year < 0 || month < 1 || month > 12 || day < 1 || day > 31 || hour < 0 || hour > 23 ||
      minute < 0 || minute > 59 || second < 0 || second > 60) {
    return std::nullopt;
  }
  size_t at = 19;
  if (text[at] == '.') {
    ++at;
    const size_t digits_start = at;
    while (at < text.size() && text[at] >= '0' && text[at] <= '9') ++at;
    if (at == digits_start) return std::nullopt;
  }
  int64_t offset_s = 0;
  const std::string_view zone = text.substr(at);
  if (zone == "Z" || zone == "z") {
    offset_s = 0;
  } else if (zone.size() == 6 && (zone[0] == '+' || zone[0] == '-') && zone[3] == ':') {
    const int64_t zone_hours = Digits(zone, 1, 2), zone_minutes = Digits(zone, 4, 2);
    if (zone_hours < 0 || zone_hours > 23 || zone_minutes < 0 || zone_minutes > 59) {
      return std::nullopt;
    }
    offset_s = (zone_hours * 60 + zone_minutes) * 60 * (zone[0] == '-' ? -1 : 1);
  } else {
    return std::nullopt;
  }
  return DaysFromCivil(year, month, day) * 86400 + hour * 3600 + minute * 60 + second - offset_s;
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
