// Internal to common/k8s: what DecodeList (decode_list.cc) and ListStreamDecoder
// (decode_list_stream.cc) share, so that a List decodes the same whole or streamed: the kind
// of a list's items, the list's metadata, and the rules for one item.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "common/k8s/decode.h"
#include "common/k8s/json_fields.h"

namespace kdns::k8s::internal {

// The kind of a list's items from the list's kind and apiVersion: "ServiceList" → kService.
// nullopt for a mixed "List" (each item names its kind); *supported false for lists we do
// not decode.
std::optional<Kind> ItemKindOfList(std::string_view list_kind, std::string_view api_version,
                                   bool* supported);

// The list's metadata (resourceVersion, continue, remainingItemCount) from the `metadata`
// member of `json`, the list object; false with *error set when a field is of the wrong type.
bool DecodeListMeta(const JsonValue& json, std::string_view list_kind, ListMeta* meta,
                    std::string* error);

enum class ItemOutcome : uint8_t { kDecoded, kBad, kOther };

// One element of a List's items (DecodeList and ListStreamDecoder): resolves its kind from
// the list's (`list_item_kind`, nullopt for a mixed List) or its own, and decodes it into
// *out. A bad or other item adds a warning "items[<index>]: ...".
ItemOutcome DecodeListItem(const JsonValue& item, std::optional<Kind> list_item_kind,
                           std::string_view list_api_version, std::string_view list_kind,
                           size_t index, Warnings* warnings, Object* out);

}  // namespace kdns::k8s::internal
