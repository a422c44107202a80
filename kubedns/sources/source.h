// Where kubedns gets its Kubernetes objects from. A RecordSource (the objects file,
// objects_file_source.h, or the API server, api_source.h) produces objects; a RecordSink
// (KubednsServer's Publisher, serving/kubedns_server.cc: a RecordTreeWriter that publishes
// snapshots to the DNS threads) receives them. The answer code only ever sees the
// snapshots, so a new source plugs in without touching it.
//
// Protocol: a source delivers a complete set of every kind streamed with BeginLoad / Upsert* /
// EndLoad (a file load, which it may abort), or one resource's complete list streamed with
// BeginList / Upsert* / EndList (a LIST or a re-LIST after 410 Gone), and between complete
// sets, if it can, single changes with the Upsert*/Delete* calls (watch events). It calls Synced()
// once, after the first complete set: that is when cluster-zone answers and readiness may start.
// Later complete sets do not call Synced() again.
//
// Threads: a source lives on one loop thread, which the caller owns and runs. Start(),
// Stop() and the destructor are called on that thread, and the source calls every sink
// method on that thread too, never concurrently. The sink must not destroy the source from
// inside one of its calls.
#pragma once

#include <string_view>
#include <vector>

#include "common/k8s/objects.h"
#include "kubedns/records/record_tree.h"

namespace kdns::kubedns {

class RecordSink {
 public:
  virtual ~RecordSink() = default;

  // The whole state of every kind, streamed as it is decoded, so the set is never held
  // whole (RecordTreeWriter::BeginLoad): BeginLoad(), the Upsert* call of each object of the
  // set (Pods included; sinks that do not verify pod records ignore them), the multicluster
  // zones' complete lists (Replace*, below), then EndLoad(): objects missing from the set are
  // gone, and the sink publishes. A source delivers only a set it has checked to be good
  // (ObjectsFileSource's validating pass), so a load is never undone, and the sink may
  // publish during it (each object then in its old or its new version, as during a watch):
  // that lets a load that changes everything free the old records as it goes. AbortLoad()
  // instead of EndLoad(): the set changed under the source and will not be completed; what
  // was delivered stays, nothing is deleted, the sink publishes, and the source reads again.
  virtual void BeginLoad() = 0;
  virtual void EndLoad() = 0;
  virtual void AbortLoad() = 0;

  // A complete list of one kind, streamed as it is decoded, so the list is never held whole:
  // BeginList(kind), the kind's Upsert* call for each listed object, then EndList(kind):
  // objects of the kind not upserted since BeginList are gone (RecordTreeWriter::BeginList).
  // The sink publishes at EndList, not for each listed object, and on the way when much has
  // changed (RecordTreeWriter::PublishDue); a change of another kind meanwhile may publish
  // too. A list not yet finished shows every object whole, in its old or its new version.
  virtual void BeginList(RecordTreeWriter::ListKind kind) = 0;
  virtual void EndList(RecordTreeWriter::ListKind kind) = 0;

  // Single changes between complete sets (watch events). Names are the object's namespace
  // and name; for v1 Endpoints, every slice derived from the object is replaced at once.
  virtual void UpsertService(const k8s::Service& service) = 0;
  virtual void DeleteService(std::string_view ns, std::string_view name) = 0;
  virtual void UpsertSlice(const k8s::EndpointSlice& slice) = 0;
  virtual void DeleteSlice(std::string_view ns, std::string_view name) = 0;
  virtual void UpsertEndpoints(const k8s::Endpoints& endpoints) = 0;
  virtual void DeleteEndpoints(std::string_view ns, std::string_view name) = 0;
  // Pod watch events (`--pod-records=verified`); sinks that do not verify ignore them.
  virtual void UpsertPod(const k8s::Pod& pod) {}
  virtual void DeletePod(std::string_view ns, std::string_view name) {}

  // The multicluster zones (records/multicluster_records.h), each with its own resources and
  // readiness, so a missing CRD never holds back the cluster zone. Replace* are complete lists
  // of one resource (an empty one when the API does not serve it: nothing is imported);
  // MulticlusterSynced(zone) once the zone's resources have each delivered one. Sinks that do
  // not serve the zones ignore them; the objects file delivers them inside its load.
  virtual void ReplaceServiceImports(std::vector<k8s::ServiceImport> imports) {}
  virtual void UpsertServiceImport(const k8s::ServiceImport& import) {}
  virtual void DeleteServiceImport(std::string_view ns, std::string_view name) {}
  // EndpointSlices labelled multicluster.kubernetes.io/service-name (their own watch).
  virtual void ReplaceMulticlusterSlices(std::vector<k8s::EndpointSlice> slices) {}
  virtual void UpsertMulticlusterSlice(const k8s::EndpointSlice& slice) {}
  virtual void DeleteMulticlusterSlice(std::string_view ns, std::string_view name) {}
  virtual void ReplaceKubesliceServiceImports(std::vector<k8s::KubesliceServiceImport> imports) {}
  virtual void UpsertKubesliceServiceImport(const k8s::KubesliceServiceImport& import) {}
  virtual void DeleteKubesliceServiceImport(std::string_view ns, std::string_view name) {}
  virtual void MulticlusterSynced(MulticlusterZone zone) {}

  // A complete set has been delivered (once per source lifetime).
  virtual void Synced() = 0;
};

class RecordSource {
 public:
  virtual ~RecordSource() = default;

  // Begins delivering to the sink. May deliver synchronously, before returning.
  virtual void Start() = 0;
  // Stops all activity; no sink call happens after it returns. Idempotent. The destructor
  // stops too.
  virtual void Stop() = 0;
};

}  // namespace kdns::kubedns
