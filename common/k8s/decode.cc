#include "common/k8s/decode.h"

#include <rapidjson/document.h>

#include <algorithm>
#include <array>
#include <utility>

#include "common/k8s/decode_objects.h"
#include "common/k8s/json_fields.h"

namespace kdns::k8s {
namespace {

using internal::FieldContext;
using internal::FieldPath;
using internal::JsonValue;

// Decodes one object of a known kind from a parsed value into `out` (its alternative is
// replaced). `location` prefixes messages ("items[4]").
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

// The kind of a list's items from the list's kind and apiVersion: "ServiceList" → kService.
// nullopt for a mixed "List" (each item names its kind); *supported false for lists we do
// not decode.
std::optional<Kind> ItemKindOfList(std::string_view list_kind, std::string_view api_version,
                                   bool* supported) {
  *supported = true;
  if (list_kind == "List") return std::nullopt;
  constexpr std::string_view kSuffix = "List";
  if (list_kind.size() > kSuffix.size() && list_kind.ends_with(kSuffix)) {
    std::optional<Kind> kind = KindOf(list_kind.substr(0, list_kind.size() - 4), api_version);
    if (kind) return kind;
  }
  *supported = false;
  return std::nullopt;
}

// Reads an object's own `kind` (absent: empty). False when it is not a string.
bool ReadKind(const JsonValue& object, std::string_view* kind) {
  const JsonValue* value = internal::Member(object, "kind");
  if (value == nullptr) return true;
  if (!value->IsString()) return false;
  *kind = internal::View(*value);
  return true;
}

// An object's `apiVersion`; empty when absent or not a string (it only tells ServiceImports
// apart, and one without a readable group is of no kind we decode).
std::string_view ApiVersionOf(const JsonValue& object) {
  const JsonValue* value = internal::Member(object, "apiVersion");
  return value != nullptr && value->IsString() ? internal::View(*value) : std::string_view();
}

// The kind of a decoded object (never monostate here).
Kind KindOfObject(const Object& object) {
  if (std::holds_alternative<Service>(object)) return Kind::kService;
  if (std::holds_alternative<EndpointSlice>(object)) return Kind::kEndpointSlice;
  if (std::holds_alternative<Endpoints>(object)) return Kind::kEndpoints;
  if (std::holds_alternative<Pod>(object)) return Kind::kPod;
  if (std::holds_alternative<ServiceImport>(object)) return Kind::kServiceImport;
  return Kind::kKubesliceServiceImport;
}

void AddItem(ObjectList* list, Object&& object) {
  if (auto* service = std::get_if<Service>(&object)) {
    list->services.push_back(std::move(*service));
  } else if (auto* slice = std::get_if<EndpointSlice>(&object)) {
    list->endpoint_slices.push_back(std::move(*slice));
  } else if (auto* endpoints = std::get_if<Endpoints>(&object)) {
    list->endpoints.push_back(std::move(*endpoints));
  } else if (auto* pod = std::get_if<Pod>(&object)) {
    list->pods.push_back(std::move(*pod));
  } else if (auto* import = std::get_if<ServiceImport>(&object)) {
    list->service_imports.push_back(std::move(*import));
  } else if (auto* slice_import = std::get_if<KubesliceServiceImport>(&object)) {
    list->kubeslice_service_imports.push_back(std::move(*slice_import));
  }
}

void ReserveItems(ObjectList* list, std::optional<Kind> kind, size_t count) {
  if (!kind) return;
  switch (*kind) {
    case Kind::kService:
      list->services.reserve(count);
      break;
    case Kind::kEndpointSlice:
      list->endpoint_slices.reserve(count);
      break;
    case Kind::kEndpoints:
      list->endpoints.reserve(count);
      break;
    case Kind::kPod:
      list->pods.reserve(count);
      break;
    case Kind::kServiceImport:
      list->service_imports.reserve(count);
      break;
    case Kind::kKubesliceServiceImport:
      list->kubeslice_service_imports.reserve(count);
      break;
    case Kind::kStatus:
      break;
  }
}

bool DecodeListMeta(const JsonValue& json, std::string_view list_kind, ListMeta* meta,
                    std::string* error) {
  FieldContext ctx(list_kind);
  const FieldPath root;
  const JsonValue* metadata;
  if (!internal::ReadObject(ctx, json, "metadata", root, &metadata)) {
    *error = ctx.error();
    return false;
  }
  if (metadata == nullptr) return true;
  FieldPath path = root.Field("metadata");
  std::string_view version;
  std::optional<int64_t> remaining;
  if (!internal::ReadStringView(ctx, *metadata, "resourceVersion", path, &version) ||
      !internal::ReadString(ctx, *metadata, "continue", path, &meta->continue_token) ||
      !internal::ReadInt(ctx, *metadata, "remainingItemCount", path, 0, INT64_MAX, &remaining)) {
    *error = ctx.error();
    return false;
  }
  meta->resource_version = ResourceVersion::FromText(version);
  meta->remaining_item_count = remaining;
  return true;
}

enum class ItemOutcome : uint8_t { kDecoded, kBad, kOther };

// One element of a List's items (DecodeList and ListStreamDecoder): resolves its kind from
// the list's (`list_item_kind`, nullopt for a mixed List) or its own, and decodes it into
// *out. A bad or other item adds a warning "items[<index>]: ...".
ItemOutcome DecodeListItem(const JsonValue& item, std::optional<Kind> list_item_kind,
                           std::string_view list_api_version, std::string_view list_kind,
                           size_t index, Warnings* warnings, Object* out) {
  std::string location = "items[" + std::to_string(index) + "]";
  std::string_view item_kind_text;
  if (!item.IsObject() || !ReadKind(item, &item_kind_text)) {
    warnings->Add(
        location + ": " +
        (item.IsObject() ? "kind: not a string" : "not an object: " + internal::Describe(item)));
    return ItemOutcome::kBad;
  }
  std::optional<Kind> item_kind = list_item_kind;
  if (!item_kind_text.empty()) {
    std::string_view item_api_version = ApiVersionOf(item);
    // An item of a typed list may leave its apiVersion out: the list's is its own.
    if (item_api_version.empty() && list_item_kind) item_api_version = list_api_version;
    std::optional<Kind> named = KindOf(item_kind_text, item_api_version);
    if (list_item_kind && named != list_item_kind) {
      warnings->Add(location + ": kind " + internal::Quote(item_kind_text) + " in a " +
                    std::string(list_kind));
      return ItemOutcome::kBad;
    }
    if (!named) {
      warnings->Add(location + ": kind " + internal::Quote(item_kind_text) + " ignored");
      return ItemOutcome::kOther;
    }
    item_kind = named;
  }
  if (!item_kind) {
    warnings->Add(location + ": kind: missing in a List");
    return ItemOutcome::kBad;
  }
  std::string error;
  if (!DecodeAs(*item_kind, item, warnings, location, out, &error)) {
    warnings->Add(std::move(error));
    return ItemOutcome::kBad;
  }
  return ItemOutcome::kDecoded;
}

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

Result<ObjectList> DecodeList(std::string_view json_text) {
  internal::JsonDocument json;
  std::string error;
  if (!internal::ParseJson(json_text, &json, &error)) {
    return Result<ObjectList>::Failure("List: " + error);
  }
  if (!json.doc.IsObject()) {
    return Result<ObjectList>::Failure("List: not an object: " + internal::Describe(json.doc));
  }
  ObjectList list;
  std::string_view list_kind;
  if (!ReadKind(json.doc, &list_kind)) {
    return Result<ObjectList>::Failure("List: kind: not a string: " +
                                       internal::Describe(json.doc["kind"]));
  }
  if (list_kind.empty()) return Result<ObjectList>::Failure("List: kind: missing");
  if (list_kind == "Status") {
    Result<Status> status = DecodeStatus(static_cast<const JsonValue&>(json.doc));
    return Result<ObjectList>::Failure("List: got a Status instead: " +
                                       (status.ok() ? status->Summary() : status.error()));
  }
  bool supported = true;
  std::optional<Kind> list_item_kind =
      ItemKindOfList(list_kind, ApiVersionOf(json.doc), &supported);
  if (!supported) {
    return Result<ObjectList>::Failure("List: unsupported kind " + internal::Quote(list_kind));
  }
  list.kind.assign(list_kind);
  if (!DecodeListMeta(json.doc, list.kind, &list.meta, &error)) {
    return Result<ObjectList>::Failure(std::move(error));
  }
  const JsonValue* items = internal::Member(json.doc, "items");
  if (items == nullptr) return list;
  if (!items->IsArray()) {
    return Result<ObjectList>::Failure(list.kind +
                                       ": items: not an array: " + internal::Describe(*items));
  }
  ReserveItems(&list, list_item_kind, items->Size());

  for (rapidjson::SizeType i = 0; i < items->Size(); ++i) {
    Object object;
    switch (DecodeListItem((*items)[i], list_item_kind, ApiVersionOf(json.doc), list.kind, i,
                           &list.warnings, &object)) {
      case ItemOutcome::kDecoded:
        AddItem(&list, std::move(object));
        break;
      case ItemOutcome::kBad:
        ++list.bad_items;
        break;
      case ItemOutcome::kOther:
        ++list.other_items;
        break;
    }
  }
  return list;
}

// ---- ListStreamDecoder ----------------------------------------------------------------------

namespace {

bool IsJsonSpace(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

// Where a scalar outside a string ends (the delimiter is not part of it).
bool EndsScalar(char c) { return IsJsonSpace(c) || c == ',' || c == '}' || c == ']'; }

}  // namespace

ListStreamDecoder::ListStreamDecoder(OnItem on_item, uint64_t max_value_bytes)
    : on_item_(std::move(on_item)), max_value_bytes_(max_value_bytes) {}

bool ListStreamDecoder::Fail(std::string message) {
  state_ = State::kFailed;
  error_ = "List: " + std::move(message);
  value_.clear();
  value_.shrink_to_fit();
  early_items_.clear();
  return false;
}

bool ListStreamDecoder::Feed(std::string_view piece) {
  if (state_ == State::kFailed || !error_.empty()) return false;
  size_t i = 0;
  const size_t n = piece.size();
  while (i < n) {
    const char c = piece[i];
    switch (state_) {
      case State::kStart:
        if (IsJsonSpace(c)) break;
        if (c != '{') {
          return Fail("not JSON object: starts with '" + std::string(1, c) + "' at offset " +
                      std::to_string(offset_ + i));
        }
        state_ = State::kKey;
        break;
      case State::kKey:
        if (IsJsonSpace(c)) break;
        if (c == '}' && first_member_) {
          state_ = State::kDone;
          break;
        }
        if (c != '"') {
          return Fail("not JSON: expected a member name at offset " + std::to_string(offset_ + i));
        }
        key_.clear();
        key_escape_ = false;
        state_ = State::kKeyText;
        break;
      case State::kKeyText:
        // Names are compared raw: the ones we read (kind, apiVersion, metadata, items) have
        // no escapes, and an escaped name is some other member.
        if (key_escape_) {
          key_escape_ = false;
        } else if (c == '\\') {
          key_escape_ = true;
        } else if (c == '"') {
          state_ = State::kColon;
          break;
        }
        if (key_.size() < 64) key_ += c;
        break;
      case State::kColon:
        if (IsJsonSpace(c)) break;
        if (c != ':')
          return Fail("not JSON: expected ':' at offset " + std::to_string(offset_ + i));
        state_ = State::kValue;
        break;
      case State::kValue:
        if (IsJsonSpace(c)) break;
        first_member_ = false;
        if (key_ == "items" && c == '[') {
          state_ = State::kItemsStart;
          break;
        }
        if (c == ',' || c == '}' || c == ']' || c == ':') {
          return Fail("not JSON: expected a value at offset " + std::to_string(offset_ + i));
        }
        capturing_item_ = false;
        value_.clear();
        depth_ = 0;
        in_string_ = escape_ = false;
        state_ = State::kCapture;
        continue;  // the capture takes this byte
      case State::kItemsStart:
      case State::kItem:
        if (IsJsonSpace(c)) break;
        if (c == ']' && state_ == State::kItemsStart) {
          state_ = State::kAfterValue;
          break;
        }
        if (c == ',' || c == '}' || c == ']' || c == ':') {
          return Fail("not JSON: expected an item at offset " + std::to_string(offset_ + i));
        }
        capturing_item_ = true;
        value_.clear();
        depth_ = 0;
        in_string_ = escape_ = false;
        state_ = State::kCapture;
        continue;
      case State::kAfterItem:
        if (IsJsonSpace(c)) break;
        if (c == ',') {
          state_ = State::kItem;
        } else if (c == ']') {
          state_ = State::kAfterValue;
        } else {
          return Fail("not JSON: expected ',' or ']' after items[" + std::to_string(index_ - 1) +
                      "] at offset " + std::to_string(offset_ + i));
        }
        break;
      case State::kCapture: {
        // Cut out one value: scan to its end, then append the run at once.
        size_t start = i;
        bool done = false;
        for (; i < n; ++i) {
          const char b = piece[i];
          if (in_string_) {
            if (escape_) {
              escape_ = false;
            } else if (b == '\\') {
              escape_ = true;
            } else if (b == '"') {
              in_string_ = false;
              if (depth_ == 0) {
                ++i;
                done = true;
                break;
              }
            }
            continue;
          }
          if (b == '"') {
            in_string_ = true;
          } else if (b == '{' || b == '[') {
            ++depth_;
          } else if (b == '}' || b == ']') {
            if (depth_ == 0) {  // a scalar ends at the closing bracket of its container
              done = true;
              break;
            }
            if (--depth_ == 0) {
              ++i;
              done = true;
              break;
            }
          } else if (depth_ == 0 && EndsScalar(b) && (i > start || !value_.empty())) {
            done = true;
            break;
          }
        }
        if (value_.size() + (i - start) > max_value_bytes_) {
          return Fail(std::string(capturing_item_ ? "items[" + std::to_string(index_) + "]"
                                                  : "member " + internal::Quote(key_)) +
                      " longer than " + std::to_string(max_value_bytes_) + " bytes");
        }
        value_.append(piece.substr(start, i - start));
        if (!done) {
          offset_ += n;
          return true;
        }
        if (!ValueDone()) return false;
        continue;  // i is at the first byte after the value
      }
      case State::kAfterValue:
        if (IsJsonSpace(c)) break;
        if (c == ',') {
          state_ = State::kKey;
        } else if (c == '}') {
          state_ = State::kDone;
        } else {
          return Fail("not JSON: expected ',' or '}' after member " + internal::Quote(key_) +
                      " at offset " + std::to_string(offset_ + i));
        }
        break;
      case State::kDone:
        if (IsJsonSpace(c)) break;
        return Fail("not JSON: text after the end at offset " + std::to_string(offset_ + i));
      case State::kFailed:
        return false;
    }
    ++i;
  }
  offset_ += n;
  return true;
}

bool ListStreamDecoder::ValueDone() {
  // value_ keeps its capacity for the next value: a list of many items then allocates its
  // text buffer once, not once per item in growing steps.
  bool ok = true;
  if (capturing_item_) {
    state_ = State::kAfterItem;
    ok = ItemDone(value_);
  } else {
    state_ = State::kAfterValue;
    ok = MemberDone(key_, value_);
  }
  value_.clear();
  return ok;
}

bool ListStreamDecoder::MemberDone(std::string_view name, std::string_view text) {
  if (name == "metadata") {
    metadata_text_.assign(text);  // decoded at Finish, once the kind is known
    return true;
  }
  if (name != "kind" && name != "apiVersion" && name != "items") return true;
  internal::JsonDocument json;
  std::string error;
  if (!internal::ParseJson(text, &json, &error)) {
    return Fail(std::string(name) + ": " + error);
  }
  if (name == "items") {  // not an array ('[' starts the streamed form)
    if (json.doc.IsNull()) return true;
    return Fail("items: not an array: " + internal::Describe(json.doc));
  }
  if (!json.doc.IsString() && !json.doc.IsNull()) {
    return Fail(std::string(name) + ": not a string: " + internal::Describe(json.doc));
  }
  std::string value = json.doc.IsString() ? std::string(internal::View(json.doc)) : "";
  if (name == "apiVersion") {
    api_version_ = std::move(value);
    // A ServiceImportList's item kind depends on the apiVersion too: once items have been
    // decoded by the kind alone, a late apiVersion must not change it.
    if (resolved_) {
      bool supported = true;
      if (ItemKindOfList(kind_, api_version_, &supported) != item_kind_ || !supported) {
        return Fail("apiVersion " + internal::Quote(api_version_) + " after the items");
      }
    }
    return true;
  }
  kind_ = std::move(value);
  kind_seen_ = true;
  // Items kept before the kind are decoded now; otherwise the kind is resolved at the first
  // item, so that an apiVersion right after the kind (the API server's order) counts.
  return early_items_.empty() ? true : Resolve();
}

bool ListStreamDecoder::Resolve() {
  resolved_ = true;
  if (kind_.empty()) return Fail("kind: missing");
  if (kind_ == "Status") return Fail("got a Status instead");
  item_kind_ = ItemKindOfList(kind_, api_version_, &supported_);
  if (!supported_) return Fail("unsupported kind " + internal::Quote(kind_));
  for (Kind early : early_kinds_) {
    if (item_kind_ && early != *item_kind_) {
      return Fail("an item of kind " + std::string(ToString(early)) + " before the kind of a " +
                  kind_);
    }
  }
  std::vector<std::pair<size_t, std::string>> early = std::move(early_items_);
  early_items_.clear();
  early_bytes_ = 0;
  const size_t end = index_;
  for (const auto& [index, text] : early) {
    index_ = index;
    if (!ItemDone(text)) return false;
  }
  index_ = end;
  return true;
}

bool ListStreamDecoder::ItemDone(std::string_view text) {
  const size_t index = index_++;
  internal::JsonDocument json;
  std::string error;
  if (!internal::ParseJson(text, &json, &error)) {
    return Fail("items[" + std::to_string(index) + "]: " + error);
  }
  if (kind_seen_ && !resolved_ && !Resolve()) return false;
  std::optional<Kind> list_item_kind = item_kind_;
  if (!kind_seen_) {
    // `kubectl get -o json` writes a List's items before its kind. An item that names its own
    // kind and apiVersion decodes as in a mixed List at once (Resolve then checks that a
    // typed list's kind agrees); only the others wait, as text, for the list's kind.
    std::string_view own_kind;
    const bool named = json.doc.IsObject() && ReadKind(json.doc, &own_kind) && !own_kind.empty() &&
                       !ApiVersionOf(json.doc).empty();
    if (!named) {
      early_bytes_ += text.size();
      if (early_bytes_ > max_value_bytes_) {
        return Fail("more than " + std::to_string(max_value_bytes_) +
                    " bytes of items before the list's kind");
      }
      early_items_.emplace_back(index, text);
      return true;
    }
    list_item_kind = std::nullopt;
  }
  Object object;
  switch (
      DecodeListItem(json.doc, list_item_kind, api_version_, kind_, index, &warnings_, &object)) {
    case ItemOutcome::kDecoded:
      break;
    case ItemOutcome::kBad:
      ++bad_items_;
      return true;
    case ItemOutcome::kOther:
      ++other_items_;
      return true;
  }
  ++items_;
  if (!kind_seen_) {
    const Kind kind = KindOfObject(object);
    if (std::find(early_kinds_.begin(), early_kinds_.end(), kind) == early_kinds_.end()) {
      early_kinds_.push_back(kind);
    }
  }
  if (!on_item_(std::move(object))) {
    state_ = State::kFailed;  // stopped by the caller; error() stays empty
    return false;
  }
  return true;
}

bool ListStreamDecoder::Finish() {
  if (state_ == State::kFailed) return false;
  if (state_ != State::kDone) {
    return Fail("not JSON: the body ended inside the list, after " + std::to_string(offset_) +
                " bytes" +
                (state_ == State::kCapture && capturing_item_
                     ? " (in items[" + std::to_string(index_) + "])"
                     : ""));
  }
  if (!kind_seen_) return Fail("kind: missing");
  if (!resolved_ && !Resolve()) return false;
  if (metadata_text_.empty()) return true;
  internal::JsonDocument metadata;
  std::string error;
  if (!internal::ParseJson(metadata_text_, &metadata, &error)) {
    return Fail("metadata: " + error);
  }
  // DecodeListMeta reads the `metadata` member of the list object: give it one.
  rapidjson::Document wrapper;
  wrapper.SetObject();
  wrapper.AddMember("metadata", metadata.doc.Move(), wrapper.GetAllocator());
  if (!DecodeListMeta(wrapper, kind_, &meta_, &error)) {
    state_ = State::kFailed;
    error_ = std::move(error);
    return false;
  }
  return true;
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
