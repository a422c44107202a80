// The resources ApiSource (api_source.h) lists and watches, described and translated: how
// each one's reflector is set up (its path, the other group/versions a CRD may be served at,
// its object kind, its label selector), which zone it feeds, and how what its reflector
// delivers becomes RecordSink calls (source.h): list objects streamed one by one, whole
// lists of the small multicluster resources, "none" for a CRD that is not installed, and
// watch events. ApiSource keeps the watching itself: the reflectors, sync, outage logs and
// metrics.
//
// Functions of values only, besides the sink they call; they run on the source's thread.
#pragma once

#include <optional>

#include "common/k8s/decode.h"
#include "common/k8s/reflector.h"
#include "kubedns/records/multicluster_records.h"
#include "kubedns/records/record_tree.h"
#include "kubedns/sources/api_source.h"
#include "kubedns/sources/source.h"

namespace kdns::kubedns {

// The reflector options of `resource` from the source's options (all but `random`, which
// the source supplies).
k8s::ReflectorOptions ReflectorOptionsFor(ApiSource::Resource resource,
                                          const ApiSource::Options& options);

// ServiceImports, their EndpointSlices and kubeslice ServiceImports: the resources of the
// multicluster zones, which sync per zone and never hold back the cluster zone.
bool IsMulticluster(ApiSource::Resource resource);
// The zone a multicluster resource feeds.
MulticlusterZone ZoneOf(ApiSource::Resource resource);

// The record tree's list kind of a resource whose lists stream into the sink object by
// object (BeginList, an Upsert per object, EndList); nullopt for the multicluster ones,
// whose lists the reflector collects and the sink replaces whole (ReplaceList).
std::optional<RecordTreeWriter::ListKind> StreamedKind(ApiSource::Resource resource);

// One object of a streamed list: its Upsert.
void UpsertListed(RecordSink& sink, const k8s::Object& object);
// A multicluster resource's complete list: the sink's Replace* of the resource.
void ReplaceList(RecordSink& sink, ApiSource::Resource resource, k8s::ObjectList list);
// A multicluster resource the API does not serve: its Replace* with an empty list.
void ReplaceWithNone(RecordSink& sink, ApiSource::Resource resource);
// A watch event (not a bookmark): an Upsert of the object, or the Delete of its kind for
// DELETED and for an event without an object.
void ApplyEvent(RecordSink& sink, ApiSource::Resource resource, const k8s::WatchEvent& event);

}  // namespace kdns::kubedns
