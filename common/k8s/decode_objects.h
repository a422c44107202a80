// Internal to common/k8s: the per-kind object decoders behind decode.h, writing into an
// object and reporting through a FieldContext, so that the List and watch decoders can add
// their own location ("items[4]") to messages. Each returns false with ctx.error() set when
// the object must be dropped. Field rules: see json_fields.h.
#pragma once

#include <string>
#include <string_view>

#include "common/k8s/decode.h"
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

// decode.cc, for the List and watch decoders: one object of a known kind from a parsed value
// into `out` (its alternative is replaced); `location` prefixes messages ("items[4]"). False
// with *error set when it does not decode.
bool DecodeAs(Kind kind, const JsonValue& json, Warnings* warnings, std::string_view location,
              Object* out, std::string* error);
// Reads an object's own `kind` (absent: empty). False when it is not a string.
bool ReadKind(const JsonValue& object, std::string_view* kind);
// An object's `apiVersion`; empty when absent or not a string (it only tells ServiceImports
// apart, and one without a readable group is of no kind we decode).
std::string_view ApiVersionOf(const JsonValue& object);

}  // namespace kdns::k8s::internal
