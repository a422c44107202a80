// Internal to common/k8s: the per-kind object decoders behind decode.h, writing into an
// object and reporting through a FieldContext, so that the List and watch decoders can add
// their own location ("items[4]") to messages. Each returns false with ctx.error() set when
// the object must be dropped. Field rules: see json_fields.h.
#pragma once

#include "common/k8s/json_fields.h"
#include "common/k8s/objects.h"

namespace kdns::k8s::internal {

// The service-name label of EndpointSlices.
inline constexpr std::string_view kServiceNameLabel = "kubernetes.io/service-name";

// metadata: name and namespace required; uid and resourceVersion optional. When
// `service_name` is not null it receives the kubernetes.io/service-name label.
bool DecodeMeta(FieldContext& ctx, const JsonValue& object, ObjectMeta* meta,
                std::string* service_name = nullptr);

bool DecodeServiceInto(FieldContext& ctx, const JsonValue& json, Service* out);
bool DecodeEndpointSliceInto(FieldContext& ctx, const JsonValue& json, EndpointSlice* out);
bool DecodeEndpointsInto(FieldContext& ctx, const JsonValue& json, Endpoints* out);
bool DecodePodInto(FieldContext& ctx, const JsonValue& json, Pod* out);
bool DecodeStatusInto(FieldContext& ctx, const JsonValue& json, Status* out);

}  // namespace kdns::k8s::internal
