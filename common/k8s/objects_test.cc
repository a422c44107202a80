#include "common/k8s/objects.h"

#include <catch2/catch.hpp>

namespace kdns::k8s {
namespace {

TEST_CASE("Resource versions keep their text and parse decimal numbers as a hint", "[k8s]") {
  auto [text, number] = GENERATE(table<std::string, std::optional<uint64_t>>({
      {"107", 107},
      {"0", 0},
      {"18446744073709551615", UINT64_MAX},
      {"18446744073709551616", std::nullopt},  // one more than fits
      {"99999999999999999999", std::nullopt},
      {"", std::nullopt},
      {"abc", std::nullopt},
      {"-1", std::nullopt},
      {"+1", std::nullopt},
      {"1.5", std::nullopt},
      {"12 ", std::nullopt},
  }));
  ResourceVersion version = ResourceVersion::FromText(text);
  CHECK(version.text == text);
  CHECK(version.number == number);
  CHECK(version.empty() == text.empty());
}

TEST_CASE("Timestamps parse as RFC 3339 into seconds since the epoch", "[k8s]") {
  CHECK(ParseTimestampS("1970-01-01T00:00:00Z") == 0);
  CHECK(ParseTimestampS("2024-05-01T12:00:00Z") == 1714564800);
  CHECK(ParseTimestampS("2024-02-29T23:59:59Z") == 1709251199);  // a leap day
  CHECK(ParseTimestampS("2024-05-01T12:00:00.123456Z") == 1714564800);
  CHECK(ParseTimestampS("2024-05-01T14:00:00+02:00") == 1714564800);
  CHECK(ParseTimestampS("2024-05-01T10:30:00-01:30") == 1714564800);
  for (const char* bad :
       {"", "2024-05-01", "2024-05-01T12:00:00", "2024-13-01T12:00:00Z", "2024-05-01T24:00:00Z",
        "2024-05-01T12:00:00.Z", "2024/05/01T12:00:00Z", "2024-05-01T12:00:00+0200",
        "2024-05-01T12:00:00Zjunk", "x024-05-01T12:00:00Z"}) {
    CAPTURE(bad);
    CHECK_FALSE(ParseTimestampS(bad).has_value());
  }
}

TEST_CASE("Resource versions compare by their text only", "[k8s]") {
  CHECK(ResourceVersion::FromText("107") == ResourceVersion::FromText("107"));
  CHECK_FALSE(ResourceVersion::FromText("0107") == ResourceVersion::FromText("107"));
}

TEST_CASE("Enum names round-trip through the API's spelling", "[k8s]") {
  for (auto kind :
       {Kind::kService, Kind::kEndpointSlice, Kind::kEndpoints, Kind::kPod, Kind::kStatus}) {
    CHECK(KindFromString(ToString(kind)) == kind);
  }
  for (auto protocol : {Protocol::kTcp, Protocol::kUdp, Protocol::kSctp}) {
    CHECK(ProtocolFromString(ToString(protocol)) == protocol);
  }
  for (auto type : {ServiceType::kClusterIP, ServiceType::kNodePort, ServiceType::kLoadBalancer,
                    ServiceType::kExternalName}) {
    CHECK(ServiceTypeFromString(ToString(type)) == type);
  }
  for (auto type : {AddressType::kIPv4, AddressType::kIPv6, AddressType::kFqdn}) {
    CHECK(AddressTypeFromString(ToString(type)) == type);
  }
  for (auto phase : {PodPhase::kUnknown, PodPhase::kPending, PodPhase::kRunning,
                     PodPhase::kSucceeded, PodPhase::kFailed}) {
    CHECK(PodPhaseFromString(ToString(phase)) == phase);
  }
}

TEST_CASE("Enum parsing is case-sensitive, as the API is", "[k8s]") {
  CHECK_FALSE(ProtocolFromString("tcp"));
  CHECK_FALSE(ServiceTypeFromString("clusterip"));
  CHECK_FALSE(AddressTypeFromString("ipv4"));
  CHECK_FALSE(KindFromString("service"));
  CHECK_FALSE(KindFromString(""));
}

TEST_CASE("A Status summary names the code, reason and message", "[k8s]") {
  Status status;
  status.code = 410;
  status.reason = "Expired";
  status.message = "too old resource version: 142 (143)";
  CHECK(status.Summary() == "410 Expired: too old resource version: 142 (143)");
  CHECK(status.IsExpired());
  status.reason.clear();
  status.code = 500;
  CHECK(status.Summary() == "500: too old resource version: 142 (143)");
  CHECK_FALSE(status.IsExpired());
}

}  // namespace
}  // namespace kdns::k8s
