#include "kubedns/records/record_tree.h"

#include <catch2/catch.hpp>
#include <map>
#include <random>
#include <string>

#include "common/k8s/decode.h"

namespace kdns::kubedns {
namespace {

k8s::Service ClusterIp(const std::string& ns, const std::string& name, const std::string& ip) {
  auto service = k8s::DecodeService(R"({"metadata":{"name":")" + name + R"(","namespace":")" + ns +
                                    R"("},"spec":{"clusterIP":")" + ip +
                                    R"(","ports":[{"name":"http","port":80}]}})");
  REQUIRE(service.ok());
  return service.value();
}

k8s::Service Headless(const std::string& ns, const std::string& name) {
  return ClusterIp(ns, name, "None");
}

// A LoadBalancer Service reached from outside at `external` (its first IP as an externalIP,
// the rest as load balancer ingress IPs).
k8s::Service LoadBalancer(const std::string& ns, const std::string& name, const std::string& ip,
                          const std::vector<std::string>& external) {
  std::string external_ips, ingress;
  for (size_t i = 0; i < external.size(); ++i) {
    if (i == 0) {
      external_ips = R"(")" + external[i] + R"(")";
    } else {
      ingress += std::string(ingress.empty() ? "" : ",") + R"({"ip":")" + external[i] + R"("})";
    }
  }
  auto service = k8s::DecodeService(
      R"({"metadata":{"name":")" + name + R"(","namespace":")" + ns +
      R"("},"spec":{"type":"LoadBalancer","clusterIP":")" + ip + R"(","externalIPs":[)" +
      external_ips + R"(],"ports":[{"name":"http","port":80}]},"status":{"loadBalancer":)" +
      R"({"ingress":[)" + ingress + "]}}}");
  REQUIRE(service.ok());
  return service.value();
}

k8s::EndpointSlice Slice(const std::string& ns, const std::string& name, const std::string& service,
                         const std::vector<std::string>& ips) {
  std::string endpoints;
  for (const auto& ip : ips) {
    if (!endpoints.empty()) endpoints += ",";
    endpoints += R"({"addresses":[")" + ip + R"("]})";
  }
  auto slice = k8s::DecodeEndpointSlice(R"({"metadata":{"name":")" + name + R"(","namespace":")" +
                                        ns + R"(","labels":{"kubernetes.io/service-name":")" +
                                        service + R"("}},"addressType":"IPv4","endpoints":[)" +
                                        endpoints + R"(],"ports":[{"name":"http","port":8080}]})");
  REQUIRE(slice.ok());
  return slice.value();
}

k8s::Pod MakePod(const std::string& ns, const std::string& name, const std::string& phase,
                 const std::vector<std::string>& ips) {
  std::string pod_ips;
  for (const auto& ip : ips) {
    if (!pod_ips.empty()) pod_ips += ",";
    pod_ips += R"({"ip":")" + ip + R"("})";
  }
  auto pod =
      k8s::DecodePod(R"({"metadata":{"name":")" + name + R"(","namespace":")" + ns +
                     R"("},"status":{"phase":")" + phase + R"(","podIPs":[)" + pod_ips + "]}}");
  REQUIRE(pod.ok());
  return pod.value();
}

bool HasPod(const Snapshot& snapshot, const std::string& ns, const std::string& ip) {
  return snapshot.HasPodIp(ns, *IpAddress::Parse(ip));
}

// The PTR targets of `ip`, '\n'-separated.
std::string Ptr(const Snapshot& snapshot, const std::string& ip) {
  std::string names;
  snapshot.ForEachPtr(*IpAddress::Parse(ip), [&](std::string_view relative) {
    if (!names.empty()) names += "\n";
    names += relative;
  });
  return names;
}

// The services that have `ip` as an external address, '\n'-separated "name.ns".
std::string ExternalOwners(const Snapshot& snapshot, const std::string& ip) {
  std::string names;
  snapshot.ForEachExternalOwner(*IpAddress::Parse(ip), [&](const ServiceName& owner) {
    if (!names.empty()) names += "\n";
    names += owner.name + "." + owner.ns;
  });
  return names;
}

}  // namespace

TEST_CASE("a service appears, changes kind and disappears", "[kubedns][record_tree]") {
  RecordTreeWriter writer;
  writer.UpsertService(ClusterIp("ns", "web", "10.96.0.5"));
  auto v1 = writer.Publish();
  REQUIRE(v1->FindService("ns", "web") != nullptr);
  CHECK(v1->FindService("ns", "web")->service()->cluster_ips.size() == 1);
  CHECK(v1->HasNamespace("ns"));
  CHECK(Ptr(*v1, "10.96.0.5") == "web.ns");

  writer.UpsertSlice(Slice("ns", "web-1", "web", {"10.0.0.1", "10.0.0.2"}));
  writer.UpsertService(Headless("ns", "web"));
  auto v2 = writer.Publish();
  CHECK(v2->FindService("ns", "web")->headless());
  CHECK(v2->FindService("ns", "web")->hosts().size() == 2);
  CHECK(Ptr(*v2, "10.96.0.5").empty());  // the cluster IP's PTR went with it
  CHECK(Ptr(*v2, "10.0.0.1") == "10-0-0-1.web.ns");
  CHECK(v2->generation() == v1->generation() + 1);

  writer.DeleteService("ns", "web");
  auto v3 = writer.Publish();
  // The slice is still there (it has its own delete event), but nothing answers.
  REQUIRE(v3->FindService("ns", "web") != nullptr);
  CHECK_FALSE(v3->FindService("ns", "web")->answerable());
  CHECK_FALSE(v3->HasNamespace("ns"));
  CHECK(Ptr(*v3, "10.0.0.1").empty());
  writer.DeleteSlice("ns", "web-1");
  auto v4 = writer.Publish();
  CHECK(v4->FindService("ns", "web") == nullptr);
  CHECK(v4->stats().endpoints == 0);
  // Older snapshots are untouched.
  CHECK(v2->FindService("ns", "web")->hosts().size() == 2);
}

TEST_CASE("the records version grows only with a publish that changed something",
          "[kubedns][record_tree]") {
  RecordTreeWriter writer;
  auto v1 = writer.Publish();
  CHECK(v1->records_version() == 1);
  CHECK(writer.Publish()->records_version() == 1);  // nothing changed

  writer.UpsertService(ClusterIp("ns", "web", "10.96.0.5"));
  auto v2 = writer.Publish();
  CHECK(v2->records_version() == 2);
  // The same object again, and a whole set that is what the tree holds: no change.
  writer.UpsertService(ClusterIp("ns", "web", "10.96.0.5"));
  CHECK(writer.Publish()->records_version() == 2);
  RecordTreeWriter::ObjectSet same;
  same.services.push_back(ClusterIp("ns", "web", "10.96.0.5"));
  writer.ReplaceAll(same);
  CHECK(writer.Publish()->records_version() == 2);
  writer.DeleteService("ns", "absent");
  CHECK(writer.Publish()->records_version() == 2);

  SECTION("an endpoint appearing in a headless service changes it") {
    writer.UpsertService(Headless("ns", "db"));
    CHECK(writer.Publish()->records_version() == 3);
    writer.UpsertSlice(Slice("ns", "db-1", "db", {"10.0.0.7"}));
    CHECK(writer.Publish()->records_version() == 4);
  }
  SECTION("a deleted service changes it") {
    writer.DeleteService("ns", "web");
    CHECK(writer.Publish()->records_version() == 3);
  }
  SECTION("becoming synced changes it (answers go from SERVFAIL to records)") {
    writer.MarkSynced();
    CHECK(writer.Publish()->records_version() == 3);
    CHECK(writer.Publish()->records_version() == 3);
  }
}

TEST_CASE("slices that arrive before their service are kept until it comes",
          "[kubedns][record_tree]") {
  RecordTreeWriter writer;
  writer.UpsertSlice(Slice("ns", "db-1", "db", {"10.0.1.1"}));
  auto before = writer.Publish();
  CHECK_FALSE(before->HasNamespace("ns"));
  writer.UpsertService(Headless("ns", "db"));
  auto after = writer.Publish();
  REQUIRE(after->FindService("ns", "db") != nullptr);
  CHECK(after->FindService("ns", "db")->hosts().size() == 1);
}

TEST_CASE("a slice moving to another service leaves the first", "[kubedns][record_tree]") {
  RecordTreeWriter writer;
  writer.UpsertService(Headless("ns", "a"));
  writer.UpsertService(Headless("ns", "b"));
  writer.UpsertSlice(Slice("ns", "s", "a", {"10.0.2.1"}));
  CHECK(writer.Publish()->FindService("ns", "a")->hosts().size() == 1);
  writer.UpsertSlice(Slice("ns", "s", "b", {"10.0.2.1"}));
  auto moved = writer.Publish();
  CHECK(moved->FindService("ns", "a")->hosts().empty());
  CHECK(moved->FindService("ns", "b")->hosts().size() == 1);
  CHECK(Ptr(*moved, "10.0.2.1") == "10-0-2-1.b.ns");
}

TEST_CASE("an IP shared by two services has both PTR names", "[kubedns][record_tree]") {
  RecordTreeWriter writer;
  writer.UpsertService(Headless("ns", "a"));
  writer.UpsertService(Headless("ns", "b"));
  writer.UpsertSlice(Slice("ns", "sa", "a", {"10.0.3.1"}));
  writer.UpsertSlice(Slice("ns", "sb", "b", {"10.0.3.1"}));
  CHECK(Ptr(*writer.Publish(), "10.0.3.1") == "10-0-3-1.a.ns\n10-0-3-1.b.ns");
  writer.DeleteSlice("ns", "sa");
  CHECK(Ptr(*writer.Publish(), "10.0.3.1") == "10-0-3-1.b.ns");
}

TEST_CASE("the external index follows the services' external addresses", "[kubedns][record_tree]") {
  RecordTreeWriter writer;
  writer.UpsertService(LoadBalancer("ns", "a", "10.96.0.1", {"192.0.2.1", "198.51.100.1"}));
  writer.UpsertService(LoadBalancer("ns", "b", "10.96.0.2", {"192.0.2.1"}));
  auto first = writer.Publish();
  CHECK(ExternalOwners(*first, "192.0.2.1") == "a.ns\nb.ns");
  CHECK(ExternalOwners(*first, "198.51.100.1") == "a.ns");
  CHECK(ExternalOwners(*first, "10.96.0.1").empty());  // a cluster IP is not external
  CHECK(Ptr(*first, "192.0.2.1").empty());             // nor an external IP a cluster PTR
  CHECK(first->stats().reverse_entries == 2 + 2);
  // a's load balancer moves; b stops being reachable from outside.
  writer.UpsertService(LoadBalancer("ns", "a", "10.96.0.1", {"192.0.2.1", "198.51.100.2"}));
  writer.UpsertService(ClusterIp("ns", "b", "10.96.0.2"));
  auto second = writer.Publish();
  CHECK(second->records_version() == first->records_version() + 1);
  CHECK(ExternalOwners(*second, "192.0.2.1") == "a.ns");
  CHECK(ExternalOwners(*second, "198.51.100.1").empty());
  CHECK(ExternalOwners(*second, "198.51.100.2") == "a.ns");
  writer.DeleteService("ns", "a");
  CHECK(ExternalOwners(*writer.Publish(), "192.0.2.1").empty());
  // The same objects loaded at once build the same index.
  RecordTreeWriter fresh;
  RecordTreeWriter::ObjectSet objects;
  objects.services = {LoadBalancer("ns", "a", "10.96.0.1", {"192.0.2.1", "198.51.100.2"}),
                      ClusterIp("ns", "b", "10.96.0.2")};
  fresh.ReplaceAll(objects);
  auto loaded = fresh.Publish();
  CHECK(ExternalOwners(*loaded, "192.0.2.1") == "a.ns");
  CHECK(ExternalOwners(*loaded, "198.51.100.2") == "a.ns");
  CHECK(loaded->stats().reverse_entries == second->stats().reverse_entries);
}

TEST_CASE("an update shares every untouched service with the previous snapshot",
          "[kubedns][record_tree]") {
  RecordTreeWriter writer;
  RecordTreeWriter::ObjectSet objects;
  for (int i = 0; i < 2000; ++i) {
    objects.services.push_back(
        ClusterIp("big", "svc-" + std::to_string(i),
                  "10.96." + std::to_string(i / 250) + "." + std::to_string(i % 250 + 1)));
  }
  writer.ReplaceAll(objects);
  auto before = writer.Publish();
  writer.UpsertService(ClusterIp("big", "svc-7", "10.97.0.7"));
  auto after = writer.Publish();
  size_t shared = 0;
  for (int i = 0; i < 2000; ++i) {
    std::string name = "svc-" + std::to_string(i);
    if (before->FindService("big", name) == after->FindService("big", name)) ++shared;
  }
  CHECK(shared == 1999);  // only svc-7's records were rebuilt
  CHECK(after->stats().services == 2000);
  CHECK(Ptr(*after, "10.97.0.7") == "svc-7.big");
}

TEST_CASE("ReplaceAll drops what the new set does not have", "[kubedns][record_tree]") {
  RecordTreeWriter writer;
  writer.UpsertService(ClusterIp("ns", "old", "10.96.9.9"));
  writer.UpsertSlice(Slice("ns", "old-1", "old", {"10.0.9.9"}));
  RecordTreeWriter::ObjectSet objects;
  objects.services.push_back(ClusterIp("ns", "new", "10.96.8.8"));
  writer.ReplaceAll(objects);
  auto snapshot = writer.Publish();
  CHECK(snapshot->FindService("ns", "old") == nullptr);
  CHECK(snapshot->FindService("ns", "new") != nullptr);
  CHECK(Ptr(*snapshot, "10.96.9.9").empty());
  CHECK(Ptr(*snapshot, "10.96.8.8") == "new.ns");
  CHECK(snapshot->stats().services == 1);
  CHECK(snapshot->stats().endpoints == 0);
  // The slice index was rebuilt too: deleting the old slice now is a no-op.
  writer.DeleteSlice("ns", "old-1");
  CHECK(writer.Publish()->FindService("ns", "new") != nullptr);
}

TEST_CASE("v1 Endpoints objects replace all the slices they produced at once",
          "[kubedns][record_tree]") {
  auto endpoints = k8s::DecodeEndpoints(R"({"metadata":{"name":"web","namespace":"ns"},
    "subsets":[{"addresses":[{"ip":"10.0.4.1"}],"ports":[{"name":"http","port":80}]},
               {"addresses":[{"ip":"10.0.4.2"}],"ports":[{"name":"alt","port":81}]}]})");
  REQUIRE(endpoints.ok());
  RecordTreeWriter writer;
  writer.UpsertService(Headless("ns", "web"));
  writer.UpsertEndpoints(endpoints.value());
  CHECK(writer.Publish()->FindService("ns", "web")->hosts().size() == 2);
  auto fewer = k8s::DecodeEndpoints(R"({"metadata":{"name":"web","namespace":"ns"},
    "subsets":[{"addresses":[{"ip":"10.0.4.2"}],"ports":[{"name":"alt","port":81}]}]})");
  REQUIRE(fewer.ok());
  writer.UpsertEndpoints(fewer.value());
  auto snapshot = writer.Publish();
  REQUIRE(snapshot->FindService("ns", "web")->hosts().size() == 1);
  CHECK(snapshot->FindService("ns", "web")->hosts()[0].label == "10-0-4-2");
  writer.DeleteEndpoints("ns", "web");
  CHECK(writer.Publish()->FindService("ns", "web")->hosts().empty());
}

}  // namespace kdns::kubedns

namespace kdns::kubedns {

TEST_CASE("a re-LIST of one kind replaces only that kind and keeps unchanged records shared",
          "[kubedns][record_tree]") {
  RecordTreeWriter writer;
  writer.UpsertService(Headless("ns", "keep"));
  writer.UpsertService(ClusterIp("ns", "gone", "10.96.1.1"));
  writer.UpsertService(ClusterIp("ns", "changes", "10.96.1.2"));
  writer.UpsertSlice(Slice("ns", "keep-1", "keep", {"10.0.5.1"}));
  writer.UpsertSlice(Slice("ns", "keep-2", "keep", {"10.0.5.2"}));
  auto before = writer.Publish();

  writer.ReplaceServices({Headless("ns", "keep"), ClusterIp("ns", "changes", "10.96.1.3"),
                          ClusterIp("ns", "new", "10.96.1.4")});
  auto services = writer.Publish();
  CHECK(services->FindService("ns", "keep") == before->FindService("ns", "keep"));
  CHECK(services->FindService("ns", "gone") == nullptr);
  CHECK(Ptr(*services, "10.96.1.1").empty());
  CHECK(Ptr(*services, "10.96.1.3") == "changes.ns");
  CHECK(services->FindService("ns", "new") != nullptr);
  CHECK(services->FindService("ns", "keep")->hosts().size() == 2);  // slices untouched

  writer.ReplaceSlices({Slice("ns", "keep-2", "keep", {"10.0.5.2"})});
  auto slices = writer.Publish();
  REQUIRE(slices->FindService("ns", "keep")->hosts().size() == 1);
  CHECK(slices->FindService("ns", "keep")->hosts()[0].label == "10-0-5-2");
  CHECK(Ptr(*slices, "10.0.5.1").empty());
  // The same list again changes nothing.
  writer.ReplaceSlices({Slice("ns", "keep-2", "keep", {"10.0.5.2"})});
  CHECK(writer.Publish()->FindService("ns", "keep") == slices->FindService("ns", "keep"));
}

TEST_CASE("a streamed list deletes what it did not deliver, keeps the unchanged, and restarts",
          "[kubedns][record_tree]") {
  using Kind = RecordTreeWriter::ListKind;
  RecordTreeWriter writer;
  writer.UpsertService(Headless("ns", "web"));
  writer.UpsertService(ClusterIp("ns", "gone", "10.96.2.1"));
  writer.UpsertSlice(Slice("ns", "web-1", "web", {"10.0.7.1"}));
  writer.UpsertSlice(Slice("ns", "web-2", "web", {"10.0.7.2"}));
  auto before = writer.Publish();

  CHECK_FALSE(writer.listing(Kind::kServices));
  writer.BeginList(Kind::kServices);
  CHECK(writer.listing(Kind::kServices));
  CHECK_FALSE(writer.listing(Kind::kSlices));
  writer.UpsertService(Headless("ns", "web"));  // unchanged: the same records stay
  CHECK(writer.Publish()->FindService("ns", "gone") != nullptr);  // not deleted before the end
  writer.EndList(Kind::kServices);
  CHECK_FALSE(writer.listing(Kind::kServices));
  auto services = writer.Publish();
  CHECK(services->FindService("ns", "web") == before->FindService("ns", "web"));
  CHECK(services->FindService("ns", "gone") == nullptr);
  CHECK(Ptr(*services, "10.96.2.1").empty());

  // A list restarted from its first page (a 410 on a continue token) starts over: what the
  // first attempt delivered counts only if the second delivers it again.
  writer.BeginList(Kind::kSlices);
  writer.UpsertSlice(Slice("ns", "web-1", "web", {"10.0.7.1"}));
  writer.BeginList(Kind::kSlices);
  writer.UpsertSlice(Slice("ns", "web-2", "web", {"10.0.7.3"}));
  writer.EndList(Kind::kSlices);
  auto slices = writer.Publish();
  REQUIRE(slices->FindService("ns", "web")->hosts().size() == 1);
  CHECK(slices->FindService("ns", "web")->hosts()[0].label == "10-0-7-3");
  CHECK(Ptr(*slices, "10.0.7.1").empty());
  CHECK(Ptr(*slices, "10.0.7.2").empty());
  // An EndList without a BeginList, and a delete during the list, change nothing else.
  writer.EndList(Kind::kSlices);
  writer.BeginList(Kind::kSlices);
  writer.DeleteSlice("ns", "web-2");
  writer.EndList(Kind::kSlices);
  CHECK(writer.Publish()->FindService("ns", "web")->hosts().empty());
}

TEST_CASE("a re-LIST of slices leaves the slices of v1 Endpoints alone", "[kubedns][record_tree]") {
  auto endpoints = k8s::DecodeEndpoints(R"({"metadata":{"name":"legacy","namespace":"ns"},
    "subsets":[{"addresses":[{"ip":"10.0.6.1"}]}]})");
  REQUIRE(endpoints.ok());
  RecordTreeWriter writer;
  writer.UpsertService(Headless("ns", "legacy"));
  writer.UpsertEndpoints(endpoints.value());
  writer.ReplaceSlices({});
  CHECK(writer.Publish()->FindService("ns", "legacy")->hosts().size() == 1);
  writer.ReplaceEndpoints({});
  CHECK(writer.Publish()->FindService("ns", "legacy")->hosts().empty());
}

}  // namespace kdns::kubedns

namespace kdns::kubedns {

TEST_CASE("the pod index holds the IPs of live pods by namespace", "[kubedns][record_tree]") {
  RecordTreeWriter writer;
  writer.UpsertPod(MakePod("a", "web-1", "Running", {"10.1.0.5", "fd00::5"}));
  writer.UpsertPod(MakePod("a", "web-2", "Pending", {}));  // no IP yet: nothing to index
  auto first = writer.Publish();
  CHECK(HasPod(*first, "a", "10.1.0.5"));
  CHECK(HasPod(*first, "a", "fd00::5"));
  CHECK_FALSE(HasPod(*first, "b", "10.1.0.5"));  // the namespace is part of the key
  CHECK_FALSE(HasPod(*first, "a", "10.1.0.6"));
  CHECK(first->stats().pod_ips == 2);

  SECTION("an IP shared by two pods stays until the last one goes") {
    writer.UpsertPod(MakePod("a", "host-net", "Running", {"10.1.0.5"}));
    writer.DeletePod("a", "web-1");
    auto snapshot = writer.Publish();
    CHECK(HasPod(*snapshot, "a", "10.1.0.5"));
    CHECK_FALSE(HasPod(*snapshot, "a", "fd00::5"));
    writer.DeletePod("a", "host-net");
    CHECK_FALSE(HasPod(*writer.Publish(), "a", "10.1.0.5"));
    CHECK(HasPod(*first, "a", "10.1.0.5"));  // published snapshots never change
  }
  SECTION("a pod that gets a new IP or finishes drops its old one") {
    writer.UpsertPod(MakePod("a", "web-2", "Running", {"10.1.0.7"}));
    writer.UpsertPod(MakePod("a", "web-1", "Running", {"10.1.0.5"}));  // lost its v6 address
    auto snapshot = writer.Publish();
    CHECK(HasPod(*snapshot, "a", "10.1.0.7"));
    CHECK(HasPod(*snapshot, "a", "10.1.0.5"));
    CHECK_FALSE(HasPod(*snapshot, "a", "fd00::5"));
    writer.UpsertPod(MakePod("a", "web-1", "Succeeded", {"10.1.0.5"}));
    writer.UpsertPod(MakePod("a", "web-2", "Failed", {"10.1.0.7"}));
    snapshot = writer.Publish();
    CHECK_FALSE(HasPod(*snapshot, "a", "10.1.0.5"));
    CHECK_FALSE(HasPod(*snapshot, "a", "10.1.0.7"));
    CHECK(snapshot->stats().pod_ips == 0);
  }
  SECTION("a complete list removes the pods missing from it") {
    writer.ReplacePods({MakePod("a", "web-2", "Running", {"10.1.0.9"}),
                        MakePod("b", "db", "Running", {"10.1.0.5"})});
    auto snapshot = writer.Publish();
    CHECK_FALSE(HasPod(*snapshot, "a", "10.1.0.5"));
    CHECK(HasPod(*snapshot, "a", "10.1.0.9"));
    CHECK(HasPod(*snapshot, "b", "10.1.0.5"));
    CHECK(snapshot->stats().pod_ips == 2);
    writer.DeletePod("a", "missing");  // deleting an unknown pod changes nothing
    CHECK(writer.Publish()->stats().pod_ips == 2);
  }
}

}  // namespace kdns::kubedns

namespace kdns::kubedns {
namespace {

// Everything a snapshot answers for the given names and IPs, as text: hosts, SRV targets
// and PTR names (the compact model must answer as a build from scratch does).
std::string Answers(const Snapshot& snapshot, const std::vector<std::string>& services,
                    const std::vector<std::string>& ips) {
  std::string out;
  for (const auto& name : services) {
    const ServiceRecords* records = snapshot.FindService("ns", name);
    out += name + ":";
    if (records == nullptr) {
      out += " none\n";
      continue;
    }
    out += records->answerable() ? (records->headless() ? " headless" : " clusterip") : " orphan";
    for (const auto& host : records->hosts()) {
      out += " " + std::string(host.label) + "=" + host.ip.ToString();
    }
    for (const auto& set : records->srv_sets()) {
      out += " _" + set.port_name + ":";
      for (const auto& target : set.targets) {
        out += std::string(records->hosts()[target.host].label) + "/" +
               std::to_string(target.port) + ",";
      }
    }
    out += "\n";
  }
  for (const auto& ip : ips) {
    out += ip + " -> " + Ptr(snapshot, ip) + " external " + ExternalOwners(snapshot, ip) + "\n";
  }
  out += "endpoints " + std::to_string(snapshot.stats().endpoints) + " reverse " +
         std::to_string(snapshot.stats().reverse_entries) + "\n";
  return out;
}

}  // namespace

TEST_CASE("random changes applied one by one answer as the same objects loaded at once",
          "[kubedns][record_tree]") {
  const uint32_t seed = GENERATE(1u, 2u, 3u, 4u, 5u);
  INFO("seed " << seed);
  std::mt19937 random(seed);
  auto pick = [&](size_t n) { return static_cast<size_t>(random() % n); };
  const std::vector<std::string> names = {"a", "b", "c", "d"};
  const std::vector<std::string> slice_names = {"s1", "s2", "s3", "s4", "s5"};
  // Few IPs, so services share them (chained reverse entries) and slices overlap.
  std::vector<std::string> ips;
  for (int i = 1; i <= 6; ++i) ips.push_back("10.0.9." + std::to_string(i));
  ips.push_back("10.96.9.1");
  ips.push_back("10.96.9.2");
  ips.push_back("192.0.2.1");  // external addresses, shared between services
  ips.push_back("192.0.2.2");

  RecordTreeWriter writer;
  std::map<std::string, k8s::Service> services;
  std::map<std::string, k8s::EndpointSlice> slices;
  for (int step = 0; step < 300; ++step) {
    const std::string& name = names[pick(names.size())];
    const std::string& slice_name = slice_names[pick(slice_names.size())];
    switch (pick(5)) {
      case 0: {  // a service appears or changes kind, cluster IP or external addresses
        k8s::Service service =
            pick(2) == 0 ? Headless("ns", name) : ClusterIp("ns", name, ips[6 + pick(2)]);
        if (pick(3) == 0) {
          service =
              LoadBalancer("ns", name, ips[6 + pick(2)], {ips[8 + pick(2)], ips[8 + pick(2)]});
        }
        writer.UpsertService(service);
        services[name] = service;
        break;
      }
      case 1:
        writer.DeleteService("ns", name);
        services.erase(name);
        break;
      case 2:
      case 3: {  // a slice appears, changes or moves to another service
        std::vector<std::string> addresses;
        for (size_t n = pick(4); n > 0; --n) addresses.push_back(ips[pick(6)]);
        auto slice = Slice("ns", slice_name, name, addresses);
        if (pick(3) == 0 && !slice.endpoints.empty()) {
          slice.endpoints[0].hostname = pick(2) == 0 ? "Pet" : "pet-" + name;
        }
        if (pick(4) == 0 && !slice.endpoints.empty()) slice.endpoints.back().ready = false;
        writer.UpsertSlice(slice);
        slices[slice_name] = slice;
        break;
      }
      case 4:
        writer.DeleteSlice("ns", slice_name);
        slices.erase(slice_name);
        break;
    }
    if (step % 10 != 9) continue;
    RecordTreeWriter::ObjectSet objects;
    for (const auto& [key, service] : services) objects.services.push_back(service);
    for (const auto& [key, slice] : slices) objects.slices.push_back(slice);
    RecordTreeWriter fresh;
    fresh.ReplaceAll(objects);
    auto incremental = writer.Publish();
    auto loaded = fresh.Publish();
    INFO("step " << step);
    REQUIRE(Answers(*incremental, names, ips) == Answers(*loaded, names, ips));
  }
}

}  // namespace kdns::kubedns

namespace kdns::kubedns {

TEST_CASE(
    "a load ends like a complete set; an aborted one keeps what it delivered, deleting nothing",
    "[kubedns][record_tree]") {
  auto legacy = k8s::DecodeEndpoints(R"({"metadata":{"name":"legacy","namespace":"ns"},
    "subsets":[{"addresses":[{"ip":"10.0.6.1"}]}]})");
  REQUIRE(legacy.ok());
  RecordTreeWriter writer;
  writer.BeginLoad();
  CHECK(writer.loading());
  writer.UpsertService(Headless("ns", "web"));
  writer.UpsertService(ClusterIp("ns", "api", "10.96.3.1"));
  writer.UpsertService(Headless("ns", "legacy"));
  writer.UpsertSlice(Slice("ns", "web-1", "web", {"10.0.8.1"}));
  writer.UpsertEndpoints(legacy.value());
  writer.UpsertPod(MakePod("ns", "web-0", "Running", {"10.0.8.1"}));
  writer.EndLoad();
  CHECK_FALSE(writer.loading());
  auto good = writer.Publish();
  REQUIRE(good->stats().services == 3);
  REQUIRE(good->stats().endpoints == 2);

  // A load that stops after changing and adding some objects (its file changed under the
  // source): those are in their new version, the rest in their old one, nothing is deleted.
  writer.BeginLoad();
  writer.UpsertService(ClusterIp("ns", "api", "10.96.3.2"));
  writer.UpsertService(ClusterIp("ns", "new", "10.96.3.3"));
  writer.UpsertSlice(Slice("ns", "new-1", "new", {"10.0.8.3"}));
  writer.AbortLoad();
  CHECK_FALSE(writer.loading());
  for (auto kind : {RecordTreeWriter::ListKind::kServices, RecordTreeWriter::ListKind::kSlices,
                    RecordTreeWriter::ListKind::kEndpoints, RecordTreeWriter::ListKind::kPods}) {
    CHECK_FALSE(writer.listing(kind));
  }
  auto kept = writer.Publish();
  CHECK(kept->FindService("ns", "web") == good->FindService("ns", "web"));  // the same records
  CHECK(kept->FindService("ns", "legacy") == good->FindService("ns", "legacy"));
  CHECK(kept->FindService("ns", "new") != nullptr);
  CHECK(kept->stats().services == 4);
  CHECK(kept->stats().endpoints == 3);
  CHECK(Ptr(*kept, "10.96.3.1").empty());
  CHECK(Ptr(*kept, "10.96.3.2") == "api.ns");
  CHECK(Ptr(*kept, "10.0.8.1") == "10-0-8-1.web.ns");
  CHECK(HasPod(*kept, "ns", "10.0.8.1"));

  // The next load removes exactly what it lacks.
  writer.BeginLoad();
  writer.UpsertService(Headless("ns", "web"));
  writer.UpsertService(Headless("ns", "legacy"));
  writer.EndLoad();
  auto next = writer.Publish();
  CHECK(next->FindService("ns", "api") == nullptr);
  CHECK(next->FindService("ns", "new") == nullptr);
  CHECK(next->FindService("ns", "web")->hosts().empty());  // its slice is gone with the set
  CHECK(next->FindService("ns", "legacy")->hosts().empty());
  CHECK(next->stats().endpoints == 0);
  CHECK(next->stats().pod_ips == 0);
  CHECK(Ptr(*next, "10.0.8.1").empty());
  CHECK(Ptr(*next, "10.0.6.1").empty());
}

TEST_CASE("a publish is due inside a list once enough new records wait, never outside one",
          "[kubedns][record_tree]") {
  RecordTreeWriter writer(/*list_publish_bytes=*/1);
  writer.UpsertService(ClusterIp("ns", "api", "10.96.3.1"));
  CHECK_FALSE(writer.PublishDue());  // no list open: single changes publish anyway
  writer.Publish();
  writer.BeginLoad();
  CHECK_FALSE(writer.PublishDue());  // nothing new yet
  writer.UpsertService(ClusterIp("ns", "api", "10.96.3.1"));
  CHECK_FALSE(writer.PublishDue());  // unchanged: its records are shared, nothing new
  writer.UpsertService(ClusterIp("ns", "api", "10.96.3.2"));
  CHECK(writer.PublishDue());
  auto middle = writer.Publish();
  CHECK_FALSE(writer.PublishDue());
  CHECK(Ptr(*middle, "10.96.3.2") == "api.ns");
  writer.EndLoad();
  writer.UpsertService(ClusterIp("ns", "web", "10.96.3.5"));
  CHECK_FALSE(writer.PublishDue());

  RecordTreeWriter large;  // the default: a few small services are not worth a publish
  large.BeginList(RecordTreeWriter::ListKind::kServices);
  large.UpsertService(ClusterIp("ns", "api", "10.96.3.1"));
  CHECK_FALSE(large.PublishDue());
  large.EndList(RecordTreeWriter::ListKind::kServices);
}

}  // namespace kdns::kubedns
