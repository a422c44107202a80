// Internal to common/k8s: the per-kind object decoders behind decode.h, writing into an
// object and reporting through a FieldContext, so that the List and watch decoders can add
// their own location ("items[4]") to messages. Each returns false with ctx.error() set when
// the object must be dropped. Field rules: see json_fields.h.
#pragma once

#include "common/k8s/json_fields.h"
#include "common/k8s/objects.h"

namespace kdns::k8s::internal {

// The service-name label of EndpointSlices, and the MCS labels (KEP-1645) of the slices an
// MCS controller imports from other clusters.
inline constexpr std::string_view kServiceNameLabel = "kubernetes.io/service-name";
inline constexpr std::string_view kMulticlusterServiceNameLabel =
    "multicluster.kubernetes.io/service-name";
inline constexpr std::string_view kSourceClusterLabel = "multicluster.kubernetes.io/source-cluster";

// metadata: name and namespace required; uid and resourceVersion optional. When
// `slice_labels` is not null its service_name, multicluster_service_name and source_cluster
// receive the labels above.
bool DecodeMeta(FieldContext& ctx, const JsonValue& object, ObjectMeta* meta,
                EndpointSlice* slice_labels = nullptr);

// Shared with decode_multicluster.cc: ports[] of `parent` as Service ports (port required,
// a port with an unknown protocol dropped with a warning), and one IP address of either
// family added to `addresses` (a warning when `text` is not one).
bool DecodeServicePorts(FieldContext& ctx, const JsonValue& parent, const FieldPath& path,
                        std::vector<ServicePort>* out);
void AddIpAddress(FieldContext& ctx, std::string_view text, const FieldPath& path,
                  std::vector<IpAddress>* addresses);
// Item `i` of `array` (at `path`), which must be a string: false (failing the object) if not.
bool ArrayString(FieldContext& ctx, const JsonValue& array, size_t i, const FieldPath& path,
                 std::string_view* out);

bool DecodeServiceInto(FieldContext& ctx, const JsonValue& json, Service* out);
bool DecodeEndpointSliceInto(FieldContext& ctx, const JsonValue& json, EndpointSlice* out);
bool DecodeEndpointsInto(FieldContext& ctx, const JsonValue& json, Endpoints* out);
bool DecodePodInto(FieldContext& ctx, const JsonValue& json, Pod* out);
bool DecodeStatusInto(FieldContext& ctx, const JsonValue& json, Status* out);
// decode_multicluster.cc.
bool DecodeServiceImportInto(FieldContext& ctx, const JsonValue& json, ServiceImport* out);
bool DecodeKubesliceServiceImportInto(FieldContext& ctx, const JsonValue& json,
                                      KubesliceServiceImport* out);

}  // namespace kdns::k8s::internal
