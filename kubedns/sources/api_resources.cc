#include "kubedns/sources/api_resources.h"

#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

namespace kdns::kubedns {
namespace {

using Resource = ApiSource::Resource;

std::string_view PathOf(Resource resource) {
  switch (resource) {
    case Resource::kServices:
      return "/api/v1/services";
    case Resource::kEndpointSlices:
      return "/apis/discovery.k8s.io/v1/endpointslices";
    case Resource::kEndpoints:
      return "/api/v1/endpoints";
    case Resource::kPods:
      return "/api/v1/pods";
    case Resource::kServiceImports:
      return "/apis/multicluster.x-k8s.io/v1alpha1/serviceimports";
    case Resource::kMulticlusterSlices:
      return "/apis/discovery.k8s.io/v1/endpointslices";
    case Resource::kKubesliceServiceImports:
      return "/apis/networking.kubeslice.io/v1beta1/serviceimports";
  }
  return "";
}

// The other groups/versions a CRD may be served at (tried while the LIST answers 404).
std::vector<std::string> OtherPathsOf(Resource resource) {
  switch (resource) {
    case Resource::kServiceImports:
      return {"/apis/multicluster.x-k8s.io/v1beta1/serviceimports"};
    case Resource::kKubesliceServiceImports:
      return {"/apis/mesh.avesha.io/v1beta1/serviceimports"};
    default:
      return {};
  }
}

// The label every MCS-imported EndpointSlice carries (KEP-1645); the selector keeps the
// cluster's ordinary slices out of this second watch.
constexpr std::string_view kMulticlusterSliceSelector = "multicluster.kubernetes.io/service-name";

k8s::Kind KindOf(Resource resource) {
  switch (resource) {
    case Resource::kServices:
      return k8s::Kind::kService;
    case Resource::kEndpointSlices:
      return k8s::Kind::kEndpointSlice;
    case Resource::kEndpoints:
      return k8s::Kind::kEndpoints;
    case Resource::kPods:
      return k8s::Kind::kPod;
    case Resource::kServiceImports:
      return k8s::Kind::kServiceImport;
    case Resource::kMulticlusterSlices:
      return k8s::Kind::kEndpointSlice;
    case Resource::kKubesliceServiceImports:
      return k8s::Kind::kKubesliceServiceImport;
  }
  return k8s::Kind::kService;
}

void Delete(RecordSink& sink, Resource resource, const std::string& ns, const std::string& name) {
  switch (resource) {
    case Resource::kServices:
      sink.DeleteService(ns, name);
      break;
    case Resource::kEndpointSlices:
      sink.DeleteSlice(ns, name);
      break;
    case Resource::kEndpoints:
      sink.DeleteEndpoints(ns, name);
      break;
    case Resource::kPods:
      sink.DeletePod(ns, name);
      break;
    case Resource::kServiceImports:
      sink.DeleteServiceImport(ns, name);
      break;
    case Resource::kMulticlusterSlices:
      sink.DeleteMulticlusterSlice(ns, name);
      break;
    case Resource::kKubesliceServiceImports:
      sink.DeleteKubesliceServiceImport(ns, name);
      break;
  }
}

}  // namespace

k8s::ReflectorOptions ReflectorOptionsFor(Resource resource, const ApiSource::Options& options) {
  k8s::ReflectorOptions reflector;
  reflector.path = std::string(PathOf(resource));
  reflector.kind = KindOf(resource);
  reflector.page_size = options.page_size;
  reflector.list_timeout_ms = options.list_timeout_ms;
  reflector.watch_timeout_min_s = options.watch_timeout_min_s;
  reflector.watch_timeout_max_s = options.watch_timeout_max_s;
  reflector.stall_timeout_ms = options.stall_timeout_ms;
  reflector.backoff = options.backoff;
  if (IsMulticluster(resource)) {
    reflector.other_paths = OtherPathsOf(resource);
    reflector.quiet_not_found = true;
  }
  if (resource == Resource::kMulticlusterSlices) {
    reflector.label_selector = std::string(kMulticlusterSliceSelector);
  }
  if (resource == Resource::kServices) reflector.label_selector = options.service_label_selector;
  reflector.relist_jitter_ms = options.relist_jitter_ms;
  reflector.watch_list = options.watch_list;
  return reflector;
}

bool IsMulticluster(Resource resource) {
  return resource == Resource::kServiceImports || resource == Resource::kMulticlusterSlices ||
         resource == Resource::kKubesliceServiceImports;
}

MulticlusterZone ZoneOf(Resource resource) {
  return resource == Resource::kKubesliceServiceImports ? MulticlusterZone::kKubeslice
                                                        : MulticlusterZone::kMcs;
}

std::optional<RecordTreeWriter::ListKind> StreamedKind(Resource resource) {
  switch (resource) {
    case Resource::kServices:
      return RecordTreeWriter::ListKind::kServices;
    case Resource::kEndpointSlices:
      return RecordTreeWriter::ListKind::kSlices;
    case Resource::kEndpoints:
      return RecordTreeWriter::ListKind::kEndpoints;
    case Resource::kPods:
      return RecordTreeWriter::ListKind::kPods;
    default:
      return std::nullopt;
  }
}

void UpsertListed(RecordSink& sink, const k8s::Object& object) {
  if (const auto* service = std::get_if<k8s::Service>(&object)) {
    sink.UpsertService(*service);
  } else if (const auto* slice = std::get_if<k8s::EndpointSlice>(&object)) {
    sink.UpsertSlice(*slice);
  } else if (const auto* endpoints = std::get_if<k8s::Endpoints>(&object)) {
    sink.UpsertEndpoints(*endpoints);
  } else if (const auto* pod = std::get_if<k8s::Pod>(&object)) {
    sink.UpsertPod(*pod);
  }
}

void ReplaceList(RecordSink& sink, Resource resource, k8s::ObjectList list) {
  switch (resource) {
    case Resource::kServiceImports:
      sink.ReplaceServiceImports(std::move(list.service_imports));
      break;
    case Resource::kMulticlusterSlices:
      sink.ReplaceMulticlusterSlices(std::move(list.endpoint_slices));
      break;
    case Resource::kKubesliceServiceImports:
      sink.ReplaceKubesliceServiceImports(std::move(list.kubeslice_service_imports));
      break;
    default:
      break;  // streamed (StreamedKind)
  }
}

void ReplaceWithNone(RecordSink& sink, Resource resource) {
  switch (resource) {
    case Resource::kServiceImports:
      sink.ReplaceServiceImports({});
      break;
    case Resource::kMulticlusterSlices:
      sink.ReplaceMulticlusterSlices({});
      break;
    case Resource::kKubesliceServiceImports:
      sink.ReplaceKubesliceServiceImports({});
      break;
    default:
      break;
  }
}

void ApplyEvent(RecordSink& sink, Resource resource, const k8s::WatchEvent& event) {
  if (event.type == k8s::EventType::kDeleted ||
      std::holds_alternative<std::monostate>(event.object)) {
    Delete(sink, resource, event.meta.ns, event.meta.name);
  } else if (const auto* service = std::get_if<k8s::Service>(&event.object)) {
    sink.UpsertService(*service);
  } else if (const auto* slice = std::get_if<k8s::EndpointSlice>(&event.object)) {
    if (resource == Resource::kMulticlusterSlices) {
      sink.UpsertMulticlusterSlice(*slice);
    } else {
      sink.UpsertSlice(*slice);
    }
  } else if (const auto* import = std::get_if<k8s::ServiceImport>(&event.object)) {
    sink.UpsertServiceImport(*import);
  } else if (const auto* slice_import = std::get_if<k8s::KubesliceServiceImport>(&event.object)) {
    sink.UpsertKubesliceServiceImport(*slice_import);
  } else if (const auto* endpoints = std::get_if<k8s::Endpoints>(&event.object)) {
    sink.UpsertEndpoints(*endpoints);
  } else if (const auto* pod = std::get_if<k8s::Pod>(&event.object)) {
    sink.UpsertPod(*pod);
  }
}

}  // namespace kdns::kubedns
