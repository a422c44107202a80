// Watch-stream lines (decode.h, DecodeWatchEvent): {"type":"ADDED","object":{...}}, one a
// line, each decoded on its own: the event type, a BOOKMARK's resourceVersion, an ERROR's
// Status, and an object of the watched kind (its metadata even when the rest fails).
#include <rapidjson/document.h>

#include <array>
#include <utility>

#include "common/k8s/decode.h"
#include "common/k8s/decode_objects.h"
#include "common/k8s/json_fields.h"

namespace kdns::k8s {
namespace {

using internal::ApiVersionOf;
using internal::DecodeAs;
using internal::FieldContext;
using internal::FieldPath;
using internal::JsonValue;
using internal::ReadKind;

constexpr std::array<std::pair<EventType, std::string_view>, 5> kEventTypeNames{{
    {EventType::kAdded, "ADDED"},
    {EventType::kModified, "MODIFIED"},
    {EventType::kDeleted, "DELETED"},
    {EventType::kBookmark, "BOOKMARK"},
    {EventType::kError, "ERROR"},
}};

std::optional<EventType> EventTypeFromString(std::string_view text) {
  for (const auto& [type, name] : kEventTypeNames) {
    if (name == text) return type;
  }
  return std::nullopt;
}

// A BOOKMARK's object: only metadata.resourceVersion counts; every other field may be null
// or empty ({"metadata":{"resourceVersion":"117","creationTimestamp":null},"spec":{}}).
bool DecodeBookmark(const JsonValue& object, Kind kind, ObjectMeta* meta, bool* initial_events_end,
                    std::string* error) {
  FieldContext ctx(kind, nullptr, nullptr, "BOOKMARK");
  const FieldPath root;
  const JsonValue* metadata;
  std::string_view version;
  if (!internal::ReadObject(ctx, object, "metadata", root, &metadata)) {
    *error = ctx.error();
    return false;
  }
  FieldPath path = root.Field("metadata");
  if (metadata != nullptr &&
      !internal::ReadStringView(ctx, *metadata, "resourceVersion", path, &version)) {
    *error = ctx.error();
    return false;
  }
  if (version.empty()) {
    FieldPath field = path.Field("resourceVersion");
    ctx.Fail(field, "missing");
    *error = ctx.error();
    return false;
  }
  meta->resource_version = ResourceVersion::FromText(version);
  // A watch-list's end of initial events (metadata.annotations, a string "true").
  const JsonValue* annotations = internal::Member(*metadata, "annotations");
  if (annotations != nullptr && annotations->IsObject()) {
    const JsonValue* end = internal::Member(*annotations, "k8s.io/initial-events-end");
    *initial_events_end = end != nullptr && end->IsString() && internal::View(*end) == "true";
  }
  return true;
}

}  // namespace

std::string_view ToString(EventType type) {
  for (const auto& [entry, name] : kEventTypeNames) {
    if (entry == type) return name;
  }
  return "?";
}

Result<WatchEvent> DecodeWatchEvent(std::string_view line, std::optional<Kind> expected_kind) {
  using R = Result<WatchEvent>;
  internal::JsonDocument json;
  std::string error;
  if (!internal::ParseJson(line, &json, &error)) return R::Failure("watch event: " + error);
  if (!json.doc.IsObject())
    return R::Failure("watch event: not an object: " + internal::Describe(json.doc));
  const JsonValue* type_value = internal::Member(json.doc, "type");
  if (type_value == nullptr) return R::Failure("watch event: type: missing");
  if (!type_value->IsString()) {
    return R::Failure("watch event: type: not a string: " + internal::Describe(*type_value));
  }
  std::optional<EventType> type = EventTypeFromString(internal::View(*type_value));
  if (!type) {
    return R::Failure("watch event: unknown type " + internal::Describe(*type_value));
  }
  WatchEvent event;
  event.type = *type;
  const std::string type_name(ToString(event.type));
  const JsonValue* object = internal::Member(json.doc, "object");
  if (object == nullptr) return R::Failure(type_name + " event: object: missing");
  if (!object->IsObject()) {
    return R::Failure(type_name + " event: object: not an object: " + internal::Describe(*object));
  }

  std::string_view kind_text;
  if (!ReadKind(*object, &kind_text)) {
    return R::Failure(type_name + " event: object.kind: not a string");
  }
  if (event.type == EventType::kError) {
    event.kind = Kind::kStatus;
    Result<Status> status = DecodeStatus(*object);
    if (!status.ok()) return R::Failure("ERROR event: " + status.error());
    event.status = std::move(status).value();
    return event;
  }
  std::optional<Kind> kind = expected_kind;
  if (!kind_text.empty()) {
    kind = KindOf(kind_text, ApiVersionOf(*object));
    if (!kind) {
      return R::Failure(type_name + " event: unsupported kind " + internal::Quote(kind_text));
    }
    if (expected_kind && *kind != *expected_kind) {
      return R::Failure(type_name + " event: kind " + internal::Quote(kind_text) +
                        " in a watch of " + std::string(ToString(*expected_kind)));
    }
  }
  if (!kind) return R::Failure(type_name + " event: object.kind: missing");
  event.kind = *kind;

  if (event.type == EventType::kBookmark) {
    if (!DecodeBookmark(*object, event.kind, &event.meta, &event.initial_events_end, &error)) {
      return R::Failure(error);
    }
    return event;
  }
  // The metadata alone first, so that an object that fails to decode is still identified.
  {
    FieldContext ctx(event.kind, &event.meta, nullptr, type_name);
    if (!internal::DecodeMeta(ctx, *object, &event.meta)) return R::Failure(ctx.error());
  }
  if (!DecodeAs(event.kind, *object, &event.warnings, type_name, &event.object, &error)) {
    event.object_error = std::move(error);
  }
  return event;
}

}  // namespace kdns::k8s
