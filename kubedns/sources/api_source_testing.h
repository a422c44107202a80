// Test helpers of the API source (api_source_test.cc, api_resources_test.cc): a RecordSink
// that writes down what it is handed. Header-only; tests only; the test's thread.
#pragma once

#include <array>
#include <string>
#include <string_view>
#include <vector>

#include "common/k8s/objects.h"
#include "kubedns/records/multicluster_records.h"
#include "kubedns/records/record_tree.h"
#include "kubedns/sources/source.h"

namespace kdns::kubedns::testing {

// Records the sink calls, one line each: "ListServices 12", "UpsertService default/web". A
// streamed list (BeginList, upserts, EndList) is one line "List<kind> <objects>" at its end,
// its objects kept in services/slices/endpoints/pods; `raw` has every call as it came.
class ApiRecordingSink final : public RecordSink {
 public:
  void BeginLoad() override { calls.push_back("BeginLoad"); }
  void EndLoad() override { calls.push_back("EndLoad"); }
  void AbortLoad() override { calls.push_back("AbortLoad"); }
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
    raw.push_back("UpsertService " + Name(service.meta));
    if (Listing(RecordTreeWriter::ListKind::kServices)) {
      services.push_back(service);
      return;
    }
    calls.push_back("UpsertService " + Name(service.meta));
  }
  void DeleteService(std::string_view ns, std::string_view name) override {
    calls.push_back("DeleteService " + std::string(ns) + "/" + std::string(name));
  }
  void UpsertSlice(const k8s::EndpointSlice& slice) override {
    raw.push_back("UpsertSlice " + Name(slice.meta));
    if (Listing(RecordTreeWriter::ListKind::kSlices)) {
      slices.push_back(slice);
      return;
    }
    calls.push_back("UpsertSlice " + Name(slice.meta));
  }
  void DeleteSlice(std::string_view ns, std::string_view name) override {
    calls.push_back("DeleteSlice " + std::string(ns) + "/" + std::string(name));
  }
  void UpsertEndpoints(const k8s::Endpoints& object) override {
    raw.push_back("UpsertEndpoints " + Name(object.meta));
    if (Listing(RecordTreeWriter::ListKind::kEndpoints)) {
      endpoints.push_back(object);
      return;
    }
    calls.push_back("UpsertEndpoints " + Name(object.meta));
  }
  void DeleteEndpoints(std::string_view ns, std::string_view name) override {
    calls.push_back("DeleteEndpoints " + std::string(ns) + "/" + std::string(name));
  }
  void UpsertPod(const k8s::Pod& pod) override {
    raw.push_back("UpsertPod " + Name(pod.meta));
    if (Listing(RecordTreeWriter::ListKind::kPods)) {
      pods.push_back(pod);
      return;
    }
    calls.push_back("UpsertPod " + Name(pod.meta));
  }
  void DeletePod(std::string_view ns, std::string_view name) override {
    calls.push_back("DeletePod " + std::string(ns) + "/" + std::string(name));
  }
  void Synced() override { calls.push_back("Synced"); }
  void ReplaceServiceImports(std::vector<k8s::ServiceImport> imports) override {
    calls.push_back("ReplaceServiceImports " + std::to_string(imports.size()));
  }
  void UpsertServiceImport(const k8s::ServiceImport& import) override {
    calls.push_back("UpsertServiceImport " + Name(import.meta));
  }
  void ReplaceMulticlusterSlices(std::vector<k8s::EndpointSlice> new_slices) override {
    calls.push_back("ReplaceMulticlusterSlices " + std::to_string(new_slices.size()));
  }
  void ReplaceKubesliceServiceImports(std::vector<k8s::KubesliceServiceImport> imports) override {
    calls.push_back("ReplaceKubesliceServiceImports " + std::to_string(imports.size()));
  }
  void MulticlusterSynced(MulticlusterZone zone) override {
    calls.push_back(zone == MulticlusterZone::kMcs ? "McsSynced" : "KubesliceSynced");
  }

  static std::string Name(const k8s::ObjectMeta& meta) { return meta.ns + "/" + meta.name; }

  std::vector<std::string> calls;
  std::vector<std::string> raw;
  std::array<bool, 4> open{};  // by ListKind
  std::vector<k8s::Service> services;
  std::vector<k8s::EndpointSlice> slices;
  std::vector<k8s::Endpoints> endpoints;
  std::vector<k8s::Pod> pods;
};

}  // namespace kdns::kubedns::testing
