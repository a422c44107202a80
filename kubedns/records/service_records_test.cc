#include "kubedns/records/service_records.h"

#include <catch2/catch.hpp>

namespace kdns::kubedns {
namespace {

std::shared_ptr<const ServiceInfo> HeadlessInfo(bool publish_not_ready = false) {
  auto info = std::make_shared<ServiceInfo>();
  info->kind = ServiceInfo::Kind::kHeadless;
  info->publish_not_ready_addresses = publish_not_ready;
  return info;
}

std::shared_ptr<const ServiceName> Name() {
  return std::make_shared<const ServiceName>(ServiceName{"ns", "web", nullptr});
}

// One endpoint of one address, as the API would deliver it.
k8s::Endpoint Addr(const char* ip, bool ready = true, const char* hostname = "") {
  k8s::Endpoint endpoint;
  endpoint.addresses = {*IpAddress::Parse(ip)};
  endpoint.ready = ready;
  endpoint.hostname = hostname;
  return endpoint;
}

std::shared_ptr<const SliceInfo> SliceOf(std::vector<k8s::Endpoint> endpoints,
                                         std::vector<k8s::EndpointPort> ports = {
                                             {"https", k8s::Protocol::kTcp, 443}}) {
  k8s::EndpointSlice slice;
  slice.endpoints = std::move(endpoints);
  slice.ports = std::move(ports);
  return std::make_shared<const SliceInfo>(SliceInfo::FromSlice(slice));
}

}  // namespace

TEST_CASE("headless hosts are the distinct ready addresses, named by hostname or dashed IP",
          "[kubedns][service_records]") {
  ServiceRecords records(
      Name(), HeadlessInfo(),
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
  ServiceRecords records(Name(), HeadlessInfo(true), {{"a", SliceOf({Addr("10.0.0.3", false)})}});
  CHECK(records.FindHost("10-0-0-3").size() == 1);
}

TEST_CASE("a host with a v4 and a v6 address is one SRV target", "[kubedns][service_records]") {
  ServiceRecords records(Name(), HeadlessInfo(),
                         {{"v4", SliceOf({Addr("10.0.0.1", true, "pet")})},
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
  ServiceRecords records(Name(), info, {});
  REQUIRE(records.srv_sets().size() == 1);
  CHECK(records.FindSrv("dns", "udp")->port == 53);
  CHECK(records.hosts().empty());
}

TEST_CASE("records without a Service answer nothing", "[kubedns][service_records]") {
  ServiceRecords records(Name(), nullptr, {{"a", SliceOf({Addr("10.0.0.1")})}});
  CHECK_FALSE(records.answerable());
  CHECK(records.hosts().empty());
  auto with = records.WithService(HeadlessInfo());
  CHECK(with->answerable());
  CHECK(with->hosts().size() == 1);
  auto without_slice = with->WithSlice("a", nullptr);
  CHECK(without_slice->hosts().empty());
  CHECK(without_slice->slices().empty());
}

TEST_CASE("a slice keeps its addresses flat and only the hostnames that exist",
          "[kubedns][service_records]") {
  k8s::Endpoint two = Addr("10.0.0.2", false, "Pet-1");
  two.addresses.push_back(*IpAddress::Parse("fd00::2"));  // a dual-stack endpoint
  auto slice = SliceOf({Addr("10.0.0.1"), two, Addr("10.0.0.3", true, "pet-3")});
  REQUIRE(slice->addresses.size() == 4);
  CHECK(slice->addresses[1].ip == *IpAddress::Parse("10.0.0.2"));
  CHECK_FALSE(slice->addresses[1].ready);
  CHECK(slice->addresses[2].ip == *IpAddress::Parse("fd00::2"));
  CHECK(slice->hostnames.size() == 3);
  CHECK(slice->hostname(0).empty());
  CHECK(slice->hostname(1) == "Pet-1");  // as given; the records lower-case labels
  CHECK(slice->hostname(2) == "Pet-1");
  CHECK(slice->hostname(3) == "pet-3");
  CHECK(slice->hostname(4).empty());

  k8s::EndpointSlice fqdn;
  fqdn.address_type = k8s::AddressType::kFqdn;
  fqdn.endpoints = {Addr("10.0.0.1", true, "x")};
  CHECK(SliceInfo::FromSlice(fqdn).addresses.empty());
}

TEST_CASE("hosts are found by address, and labels are lower case views that outlive copies",
          "[kubedns][service_records]") {
  auto records = std::make_shared<const ServiceRecords>(
      Name(), HeadlessInfo(),
      ServiceRecords::Slices{{"a", SliceOf({Addr("10.0.0.1", true, "WEB-0"), Addr("10.0.0.9")})}});
  const auto* host = records->FindHostByIp(*IpAddress::Parse("10.0.0.1"));
  REQUIRE(host != nullptr);
  CHECK(host->label == "web-0");
  REQUIRE(records->FindHostByIp(*IpAddress::Parse("10.0.0.9")) != nullptr);
  CHECK(records->FindHostByIp(*IpAddress::Parse("10.0.0.9"))->label == "10-0-0-9");
  CHECK(records->FindHostByIp(*IpAddress::Parse("10.0.0.2")) == nullptr);
  CHECK(records->name().name == "web");
  CHECK(records->address_count() == 2);
  // A newer version shares the slices and the name but has labels of its own.
  auto again = records->WithSlice("b", SliceOf({Addr("10.0.0.5")}));
  records.reset();
  CHECK(again->FindHost("web-0").size() == 1);
  CHECK(again->FindHost("10-0-0-5").size() == 1);
  CHECK(again->ModelBytes() > sizeof(ServiceRecords));
}

}  // namespace kdns::kubedns
