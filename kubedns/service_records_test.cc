#include "kubedns/service_records.h"

#include <catch2/catch.hpp>

namespace kdns::kubedns {
namespace {

std::shared_ptr<const ServiceInfo> HeadlessInfo(bool publish_not_ready = false) {
  auto info = std::make_shared<ServiceInfo>();
  info->kind = ServiceInfo::Kind::kHeadless;
  info->publish_not_ready_addresses = publish_not_ready;
  return info;
}

std::shared_ptr<const SliceInfo> SliceOf(std::vector<SliceInfo::Address> addresses,
                                         std::vector<k8s::EndpointPort> ports = {
                                             {"https", k8s::Protocol::kTcp, 443}}) {
  auto slice = std::make_shared<SliceInfo>();
  slice->addresses = std::move(addresses);
  slice->ports = std::move(ports);
  return slice;
}

SliceInfo::Address Addr(const char* ip, bool ready = true, const char* hostname = "") {
  return {*IpAddress::Parse(ip), ready, hostname};
}

}  // namespace

TEST_CASE("headless hosts are the distinct ready addresses, named by hostname or dashed IP",
          "[kubedns][service_records]") {
  ServiceRecords records(
      HeadlessInfo(),
      {{"a", SliceOf({Addr("10.0.0.1", true, "web-0"), Addr("10.0.0.2"), Addr("10.0.0.3", false)})},
       {"b", SliceOf({Addr("10.0.0.2", true, "web-1"), Addr("fd00::2")})}});
  REQUIRE(records.hosts().size() == 3);
  CHECK(records.FindHost("web-0").size() == 1);
  // 10.0.0.2 is in both slices: it appears once, and the hostname wins over the dashed IP.
  CHECK(records.FindHost("web-1").size() == 1);
  CHECK(records.FindHost("10-0-0-2").empty());
  CHECK(records.FindHost("fd00--2").size() == 1);
  CHECK(records.FindHost("10-0-0-3").empty());  // not ready
}

TEST_CASE("publishNotReadyAddresses includes endpoints that are not ready",
          "[kubedns][service_records]") {
  ServiceRecords records(HeadlessInfo(true), {{"a", SliceOf({Addr("10.0.0.3", false)})}});
  CHECK(records.FindHost("10-0-0-3").size() == 1);
}

TEST_CASE("a host with a v4 and a v6 address is one SRV target", "[kubedns][service_records]") {
  ServiceRecords records(HeadlessInfo(), {{"v4", SliceOf({Addr("10.0.0.1", true, "pet")})},
                                          {"v6", SliceOf({Addr("fd00::1", true, "pet")})}});
  CHECK(records.FindHost("pet").size() == 2);
  const auto* set = records.FindSrv("https", "tcp");
  REQUIRE(set != nullptr);
  CHECK(set->targets.size() == 1);
  CHECK(set->targets[0].port == 443);
  CHECK(records.FindSrv("HTTPS", "TCP") == set);
  CHECK(records.FindSrv("https", "udp") == nullptr);
  CHECK(records.HasSrvProtocol("tcp"));
}

TEST_CASE("ClusterIP SRV sets come from the service's named ports", "[kubedns][service_records]") {
  auto info = std::make_shared<ServiceInfo>();
  info->kind = ServiceInfo::Kind::kClusterIP;
  info->cluster_ips = {*IpAddress::Parse("10.96.0.10")};
  info->ports = {{"dns", k8s::Protocol::kUdp, 53}, {"", k8s::Protocol::kTcp, 80}};
  ServiceRecords records(info, {});
  REQUIRE(records.srv_sets().size() == 1);
  CHECK(records.FindSrv("dns", "udp")->port == 53);
  CHECK(records.hosts().empty());
}

TEST_CASE("records without a Service answer nothing", "[kubedns][service_records]") {
  ServiceRecords records(nullptr, {{"a", SliceOf({Addr("10.0.0.1")})}});
  CHECK_FALSE(records.answerable());
  CHECK(records.hosts().empty());
  auto with = records.WithService(HeadlessInfo());
  CHECK(with->answerable());
  CHECK(with->hosts().size() == 1);
  auto without_slice = with->WithSlice("a", nullptr);
  CHECK(without_slice->hosts().empty());
  CHECK(without_slice->slices().empty());
}

}  // namespace kdns::kubedns
