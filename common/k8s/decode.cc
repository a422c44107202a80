#include "common/k8s/decode.h"

#include <rapidjson/document.h>

#include <utility>

#include "common/k8s/decode_objects.h"
#include "common/k8s/json_fields.h"

namespace kdns::k8s {
namespace internal {

bool DecodeAs(Kind kind, const JsonValue& json, Warnings* warnings, std::string_view location,
              Object* out, std::string* error) {
  auto run = [&](auto decode, auto value) {
    FieldContext ctx(kind, &value.meta, warnings, location);
    if (!decode(ctx, json, &value)) {
      *error = ctx.error();
      return false;
    }
    *out = std::move(value);
    return true;
  };
  switch (kind) {
    case Kind::kService:
      return run(internal::DecodeServiceInto, Service{});
    case Kind::kEndpointSlice:
      return run(internal::DecodeEndpointSliceInto, EndpointSlice{});
    case Kind::kEndpoints:
      return run(internal::DecodeEndpointsInto, Endpoints{});
    case Kind::kPod:
      return run(internal::DecodePodInto, Pod{});
    case Kind::kServiceImport:
      return run(internal::DecodeServiceImportInto, ServiceImport{});
    case Kind::kKubesliceServiceImport:
      return run(internal::DecodeKubesliceServiceImportInto, KubesliceServiceImport{});
    case Kind::kStatus:
      break;
  }
  *error = std::string(location) + ": cannot decode a " + std::string(ToString(kind));
  return false;
}

bool ReadKind(const JsonValue& object, std::string_view* kind) {
  const JsonValue* value = internal::Member(object, "kind");
  if (value == nullptr) return true;
  if (!value->IsString()) return false;
  *kind = internal::View(*value);
  return true;
}

std::string_view ApiVersionOf(const JsonValue& object) {
  const JsonValue* value = internal::Member(object, "apiVersion");
  return value != nullptr && value->IsString() ? internal::View(*value) : std::string_view();
}

}  // namespace internal

namespace {

using internal::FieldContext;
using internal::FieldPath;
using internal::JsonValue;

template <typename T, typename DecodeInto>
Result<T> DecodeOne(Kind kind, DecodeInto decode, const JsonValue& json, Warnings* warnings) {
  T value;
  FieldContext ctx(kind, &value.meta, warnings);
  if (!decode(ctx, json, &value)) return Result<T>::Failure(ctx.error());
  return value;
}

template <typename T, typename DecodeInto>
Result<T> DecodeOneText(Kind kind, DecodeInto decode, std::string_view text, Warnings* warnings) {
  internal::JsonDocument json;
  std::string error;
  if (!internal::ParseJson(text, &json, &error)) {
    return Result<T>::Failure(std::string(ToString(kind)) + ": " + error);
  }
  return DecodeOne<T>(kind, decode, json.doc, warnings);
}

}  // namespace

Result<Service> DecodeService(const rapidjson::Value& json, Warnings* warnings) {
  return DecodeOne<Service>(Kind::kService, internal::DecodeServiceInto, json, warnings);
}
Result<EndpointSlice> DecodeEndpointSlice(const rapidjson::Value& json, Warnings* warnings) {
  return DecodeOne<EndpointSlice>(Kind::kEndpointSlice, internal::DecodeEndpointSliceInto, json,
                                  warnings);
}
Result<Endpoints> DecodeEndpoints(const rapidjson::Value& json, Warnings* warnings) {
  return DecodeOne<Endpoints>(Kind::kEndpoints, internal::DecodeEndpointsInto, json, warnings);
}
Result<Pod> DecodePod(const rapidjson::Value& json, Warnings* warnings) {
  return DecodeOne<Pod>(Kind::kPod, internal::DecodePodInto, json, warnings);
}
Result<ServiceImport> DecodeServiceImport(const rapidjson::Value& json, Warnings* warnings) {
  return DecodeOne<ServiceImport>(Kind::kServiceImport, internal::DecodeServiceImportInto, json,
                                  warnings);
}
Result<KubesliceServiceImport> DecodeKubesliceServiceImport(const rapidjson::Value& json,
                                                            Warnings* warnings) {
  return DecodeOne<KubesliceServiceImport>(
      Kind::kKubesliceServiceImport, internal::DecodeKubesliceServiceImportInto, json, warnings);
}
Result<Status> DecodeStatus(const rapidjson::Value& json) {
  Status status;
  FieldContext ctx("Status");
  if (!internal::DecodeStatusInto(ctx, json, &status)) return Result<Status>::Failure(ctx.error());
  return status;
}

Result<Service> DecodeService(std::string_view json_text, Warnings* warnings) {
  return DecodeOneText<Service>(Kind::kService, internal::DecodeServiceInto, json_text, warnings);
}
Result<EndpointSlice> DecodeEndpointSlice(std::string_view json_text, Warnings* warnings) {
  return DecodeOneText<EndpointSlice>(Kind::kEndpointSlice, internal::DecodeEndpointSliceInto,
                                      json_text, warnings);
}
Result<Endpoints> DecodeEndpoints(std::string_view json_text, Warnings* warnings) {
  return DecodeOneText<Endpoints>(Kind::kEndpoints, internal::DecodeEndpointsInto, json_text,
                                  warnings);
}
Result<Pod> DecodePod(std::string_view json_text, Warnings* warnings) {
  return DecodeOneText<Pod>(Kind::kPod, internal::DecodePodInto, json_text, warnings);
}
Result<ServiceImport> DecodeServiceImport(std::string_view json_text, Warnings* warnings) {
  return DecodeOneText<ServiceImport>(Kind::kServiceImport, internal::DecodeServiceImportInto,
                                      json_text, warnings);
}
Result<KubesliceServiceImport> DecodeKubesliceServiceImport(std::string_view json_text,
                                                            Warnings* warnings) {
  return DecodeOneText<KubesliceServiceImport>(Kind::kKubesliceServiceImport,
                                               internal::DecodeKubesliceServiceImportInto,
                                               json_text, warnings);
}
Result<Status> DecodeStatus(std::string_view json_text) {
  internal::JsonDocument json;
  std::string error;
  if (!internal::ParseJson(json_text, &json, &error)) {
    return Result<Status>::Failure("Status: " + error);
  }
  return DecodeStatus(static_cast<const JsonValue&>(json.doc));
}

Result<VersionInfo> DecodeVersion(std::string_view json_text) {
  internal::JsonDocument json;
  std::string error;
  if (!internal::ParseJson(json_text, &json, &error)) {
    return Result<VersionInfo>::Failure("version: " + error);
  }
  if (!json.doc.IsObject()) return Result<VersionInfo>::Failure("version: not an object");
  VersionInfo version;
  FieldContext ctx("version");
  const FieldPath root;
  if (!internal::ReadString(ctx, json.doc, "gitVersion", root, &version.git_version) ||
      !internal::ReadString(ctx, json.doc, "major", root, &version.major) ||
      !internal::ReadString(ctx, json.doc, "minor", root, &version.minor) ||
      !internal::ReadString(ctx, json.doc, "platform", root, &version.platform)) {
    return Result<VersionInfo>::Failure(ctx.error());
  }
  if (version.git_version.empty()) {
    return Result<VersionInfo>::Failure("version: gitVersion: missing");
  }
  return version;
}

}  // namespace kdns::k8s
