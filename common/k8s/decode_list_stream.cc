// ListStreamDecoder (decode.h): a List response decoded piece by piece as it arrives, one
// item's text held at a time. The rules for each item are DecodeList's
// (decode_list_items.h); this file only cuts the top level of the body into values.
#include <rapidjson/document.h>

#include <algorithm>
#include <utility>

#include "common/k8s/decode.h"
#include "common/k8s/decode_list_items.h"
#include "common/k8s/decode_objects.h"
#include "common/k8s/json_fields.h"

namespace kdns::k8s {
namespace {

using internal::ApiVersionOf;
using internal::DecodeListItem;
using internal::DecodeListMeta;
using internal::ItemKindOfList;
using internal::ItemOutcome;
using internal::ReadKind;

// The kind of a decoded object (never monostate here).
Kind KindOfObject(const Object& object) {
  if (std::holds_alternative<Service>(object)) return Kind::kService;
  if (std::holds_alternative<EndpointSlice>(object)) return Kind::kEndpointSlice;
  if (std::holds_alternative<Endpoints>(object)) return Kind::kEndpoints;
  if (std::holds_alternative<Pod>(object)) return Kind::kPod;
  if (std::holds_alternative<ServiceImport>(object)) return Kind::kServiceImport;
  return Kind::kKubesliceServiceImport;
}

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

}  // namespace kdns::k8s
