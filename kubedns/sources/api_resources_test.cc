#include "kubedns/sources/api_resources.h"

#include <catch2/catch.hpp>
#include <string>
#include <utility>
#include <vector>

#include "kubedns/sources/recording_sink_testing.h"

namespace kdns::kubedns {
namespace {

using Resource = ApiSource::Resource;
using testing::RecordingSink;

k8s::ObjectMeta Meta(std::string ns, std::string name) {
  k8s::ObjectMeta meta;
  meta.ns = std::move(ns);
  meta.name = std::move(name);
  return meta;
}

TEST_CASE("each resource's reflector asks for its own path with the source's options",
          "[api_source]") {
  ApiSource::Options options;
  options.page_size = 100;
  options.watch_list = true;
  options.relist_jitter_ms = 7;

  k8s::ReflectorOptions services = ReflectorOptionsFor(Resource::kServices, options);
  CHECK(services.path == "/api/v1/services");
  CHECK(services.kind == k8s::Kind::kService);
  CHECK(services.page_size == 100);
  CHECK(services.watch_list);
  CHECK(services.relist_jitter_ms == 7);
  CHECK(services.other_paths.empty());
  CHECK_FALSE(services.quiet_not_found);
  CHECK(services.label_selector.empty());

  // A CRD may be served at another version; its 404 is the source's to log, once.
  k8s::ReflectorOptions imports = ReflectorOptionsFor(Resource::kServiceImports, options);
  CHECK(imports.path == "/apis/multicluster.x-k8s.io/v1alpha1/serviceimports");
  CHECK(imports.other_paths ==
        std::vector<std::string>{"/apis/multicluster.x-k8s.io/v1beta1/serviceimports"});
  CHECK(imports.quiet_not_found);

  // The MCS slices are a second watch of EndpointSlices, of the labelled ones only.
  k8s::ReflectorOptions mcs_slices = ReflectorOptionsFor(Resource::kMulticlusterSlices, options);
  CHECK(mcs_slices.path == "/apis/discovery.k8s.io/v1/endpointslices");
  CHECK(mcs_slices.kind == k8s::Kind::kEndpointSlice);
  CHECK(mcs_slices.label_selector == "multicluster.kubernetes.io/service-name");

  // --labels selects Services on the server; the cluster's EndpointSlices stay unselected.
  options.service_label_selector = "app in (api,web)";
  CHECK(ReflectorOptionsFor(Resource::kServices, options).label_selector == "app in (api,web)");
  CHECK(ReflectorOptionsFor(Resource::kEndpointSlices, options).label_selector.empty());
  CHECK(ReflectorOptionsFor(Resource::kMulticlusterSlices, options).label_selector ==
        "multicluster.kubernetes.io/service-name");
}

TEST_CASE("the multicluster resources feed their zones and are replaced whole", "[api_source]") {
  CHECK_FALSE(IsMulticluster(Resource::kEndpointSlices));
  CHECK(IsMulticluster(Resource::kMulticlusterSlices));
  CHECK(ZoneOf(Resource::kServiceImports) == MulticlusterZone::kMcs);
  CHECK(ZoneOf(Resource::kMulticlusterSlices) == MulticlusterZone::kMcs);
  CHECK(ZoneOf(Resource::kKubesliceServiceImports) == MulticlusterZone::kKubeslice);
  CHECK(StreamedKind(Resource::kPods) == RecordTreeWriter::ListKind::kPods);
  CHECK_FALSE(StreamedKind(Resource::kServiceImports).has_value());

  RecordingSink sink;
  k8s::ObjectList list;
  list.service_imports.resize(2);
  ReplaceList(sink, Resource::kServiceImports, std::move(list));
  ReplaceWithNone(sink, Resource::kKubesliceServiceImports);
  ReplaceWithNone(sink, Resource::kServices);  // streamed: nothing to replace
  CHECK(sink.calls ==
        std::vector<std::string>{"ReplaceServiceImports 2", "ReplaceKubesliceServiceImports 0"});
}

TEST_CASE("watch events and listed objects become the sink calls of their kind", "[api_source]") {
  RecordingSink sink;
  k8s::Service service;
  service.meta = Meta("default", "web");
  UpsertListed(sink, service);

  k8s::WatchEvent added;
  added.type = k8s::EventType::kAdded;
  added.meta = service.meta;
  added.object = service;
  ApplyEvent(sink, Resource::kServices, added);

  k8s::WatchEvent deleted = added;
  deleted.type = k8s::EventType::kDeleted;
  ApplyEvent(sink, Resource::kServices, deleted);

  // An event whose object did not decode deletes the object, as a DELETED event does.
  k8s::WatchEvent undecoded;
  undecoded.type = k8s::EventType::kModified;
  undecoded.meta = Meta("apps", "split-1");
  ApplyEvent(sink, Resource::kEndpointSlices, undecoded);

  k8s::ServiceImport import;
  import.meta = Meta("shop", "db");
  k8s::WatchEvent imported;
  imported.meta = import.meta;
  imported.object = import;
  ApplyEvent(sink, Resource::kServiceImports, imported);

  CHECK(sink.calls ==
        std::vector<std::string>{"UpsertService default/web", "UpsertService default/web",
                                 "DeleteService default/web", "DeleteSlice apps/split-1",
                                 "UpsertServiceImport shop/db"});
}

}  // namespace
}  // namespace kdns::kubedns
