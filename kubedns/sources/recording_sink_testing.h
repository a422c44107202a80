// A RecordSink that writes down what a source hands it, for the sources' tests (the API
// source's: api_source_test.cc, api_resources_test.cc; the objects file's:
// objects_file_source*_test.cc). Header-only; tests only; the test's thread.
#pragma once

#include <algorithm>
#include <array>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/k8s/objects.h"
#include "kubedns/records/multicluster_records.h"
#include "kubedns/records/record_tree.h"
#include "kubedns/sources/source.h"

namespace kdns::kubedns::testing {

// Records the sink calls, one line each in `calls`: "UpsertService default/web", "Synced".
// What is streamed is collected instead, object by object:
// - a list (BeginList, upserts, EndList: the API source's re-LIST) is one line
//   "List<kind> <objects>" at its end, its objects kept in services/slices/endpoints/pods;
// - a load (BeginLoad, upserts and Replace*, EndLoad or AbortLoad: the objects file) is the
//   lines "BeginLoad" and "EndLoad" (or "AbortLoad"), its objects kept as `last` and
//   `last_pods` at its EndLoad and dropped at its AbortLoad.
// `raw` has every list call as it came.
class RecordingSink final : public RecordSink {
 public:
  void BeginLoad() override {
    calls.push_back("BeginLoad");
    loading_ = true;
    pending_ = {};
    pending_pods_.clear();
  }
  void EndLoad() override {
    calls.push_back("EndLoad");
    loading_ = false;
    ++loads;
    last = std::exchange(pending_, {});
    last_pods = std::exchange(pending_pods_, {});
  }
  void AbortLoad() override {
    calls.push_back("AbortLoad");
    loading_ = false;
    ++aborted_loads;
    pending_ = {};
    pending_pods_.clear();
  }
  void BeginList(RecordTreeWriter::ListKind kind) override {
    raw.push_back("BeginList " + std::to_string(static_cast<int>(kind)));
    open[static_cast<size_t>(kind)] = true;
    switch (kind) {
      case RecordTreeWriter::ListKind::kServices:
        services.clear();
        break;
      case RecordTreeWriter::ListKind::kSlices:
        slices.clear();
        break;
      case RecordTreeWriter::ListKind::kEndpoints:
        endpoints.clear();
        break;
      case RecordTreeWriter::ListKind::kPods:
        pods.clear();
        break;
    }
  }
  void EndList(RecordTreeWriter::ListKind kind) override {
    raw.push_back("EndList " + std::to_string(static_cast<int>(kind)));
    open[static_cast<size_t>(kind)] = false;
    switch (kind) {
      case RecordTreeWriter::ListKind::kServices:
        calls.push_back("ListServices " + std::to_string(services.size()));
        break;
      case RecordTreeWriter::ListKind::kSlices:
        calls.push_back("ListSlices " + std::to_string(slices.size()));
        break;
      case RecordTreeWriter::ListKind::kEndpoints:
        calls.push_back("ListEndpoints " + std::to_string(endpoints.size()));
        break;
      case RecordTreeWriter::ListKind::kPods:
        calls.push_back("ListPods " + std::to_string(pods.size()));
        break;
    }
  }
  bool Listing(RecordTreeWriter::ListKind kind) const { return open[static_cast<size_t>(kind)]; }
  void UpsertService(const k8s::Service& service) override {
    Upsert("UpsertService", service, RecordTreeWriter::ListKind::kServices, services,
           pending_.services);
  }
  void DeleteService(std::string_view ns, std::string_view name) override {
    Deleted("DeleteService", ns, name);
  }
  void UpsertSlice(const k8s::EndpointSlice& slice) override {
    Upsert("UpsertSlice", slice, RecordTreeWriter::ListKind::kSlices, slices, pending_.slices);
  }
  void DeleteSlice(std::string_view ns, std::string_view name) override {
    Deleted("DeleteSlice", ns, name);
  }
  void UpsertEndpoints(const k8s::Endpoints& object) override {
    Upsert("UpsertEndpoints", object, RecordTreeWriter::ListKind::kEndpoints, endpoints,
           pending_.endpoints);
  }
  void DeleteEndpoints(std::string_view ns, std::string_view name) override {
    Deleted("DeleteEndpoints", ns, name);
  }
  void UpsertPod(const k8s::Pod& pod) override {
    Upsert("UpsertPod", pod, RecordTreeWriter::ListKind::kPods, pods, pending_pods_);
  }
  void DeletePod(std::string_view ns, std::string_view name) override {
    Deleted("DeletePod", ns, name);
  }
  void Synced() override {
    calls.push_back("Synced");
    ++synced;
  }
  void ReplaceServiceImports(std::vector<k8s::ServiceImport> imports) override {
    if (loading_) {
      pending_.service_imports = std::move(imports);
      return;
    }
    calls.push_back("ReplaceServiceImports " + std::to_string(imports.size()));
  }
  void UpsertServiceImport(const k8s::ServiceImport& import) override {
    calls.push_back("UpsertServiceImport " + Name(import.meta));
  }
  void ReplaceMulticlusterSlices(std::vector<k8s::EndpointSlice> new_slices) override {
    if (loading_) return;  // a load's are not kept: no test reads them
    calls.push_back("ReplaceMulticlusterSlices " + std::to_string(new_slices.size()));
  }
  void ReplaceKubesliceServiceImports(std::vector<k8s::KubesliceServiceImport> imports) override {
    if (loading_) {
      pending_.kubeslice_service_imports = std::move(imports);
      return;
    }
    calls.push_back("ReplaceKubesliceServiceImports " + std::to_string(imports.size()));
  }
  void MulticlusterSynced(MulticlusterZone zone) override {
    calls.push_back(zone == MulticlusterZone::kMcs ? "McsSynced" : "KubesliceSynced");
  }

  static std::string Name(const k8s::ObjectMeta& meta) { return meta.ns + "/" + meta.name; }

  // "ns/name" of the services of the last ended load, sorted.
  std::vector<std::string> ServiceNames() const {
    std::vector<std::string> names;
    for (const auto& service : last.services) names.push_back(Name(service.meta));
    std::sort(names.begin(), names.end());
    return names;
  }

  std::vector<std::string> calls;
  std::vector<std::string> raw;
  std::array<bool, 4> open{};  // by ListKind
  // Of the last list of each kind.
  std::vector<k8s::Service> services;
  std::vector<k8s::EndpointSlice> slices;
  std::vector<k8s::Endpoints> endpoints;
  std::vector<k8s::Pod> pods;
  // Loads.
  int loads = 0;  // ended with EndLoad
  int aborted_loads = 0;
  int synced = 0;
  RecordTreeWriter::ObjectSet last;  // of the last ended load
  std::vector<k8s::Pod> last_pods;   // of the last ended load

 private:
  // An object is kept by the open load, by the open list of its kind, or written as a line.
  template <typename Object>
  void Upsert(const char* call, const Object& object, RecordTreeWriter::ListKind kind,
              std::vector<Object>& listed, std::vector<Object>& loaded) {
    if (loading_) {
      loaded.push_back(object);
      return;
    }
    raw.push_back(std::string(call) + " " + Name(object.meta));
    if (Listing(kind)) {
      listed.push_back(object);
      return;
    }
    calls.push_back(std::string(call) + " " + Name(object.meta));
  }

  void Deleted(const char* call, std::string_view ns, std::string_view name) {
    calls.push_back(std::string(call) + " " + std::string(ns) + "/" + std::string(name));
  }

  bool loading_ = false;
  RecordTreeWriter::ObjectSet pending_;  // of the open load
  std::vector<k8s::Pod> pending_pods_;
};

}  // namespace kdns::kubedns::testing
