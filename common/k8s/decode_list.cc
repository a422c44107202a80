// DecodeList (decode.h): a whole List response or `kubectl get -o json` file, and the rules
// for its items that ListStreamDecoder shares (decode_list_items.h).
#include <rapidjson/document.h>

#include <utility>

#include "common/k8s/decode_list_items.h"
#include "common/k8s/decode_objects.h"

namespace kdns::k8s {
namespace internal {

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

}  // namespace internal

namespace {

using internal::ApiVersionOf;
using internal::DecodeListItem;
using internal::DecodeListMeta;
using internal::ItemKindOfList;
using internal::ItemOutcome;
using internal::JsonValue;
using internal::ReadKind;

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

}  // namespace

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

}  // namespace kdns::k8s
