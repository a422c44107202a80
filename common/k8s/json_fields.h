// Internal to common/k8s: typed field access on RapidJSON values with field paths, and the
// one-line messages the decoders return ("EndpointSlice default/x: endpoints[2].addresses[0]:
// not an IP address: \"10.1.x\""). Paths are built only when a message is, so the happy path
// allocates nothing for them. Any thread; a FieldContext lives for one object's decoding.
//
// Field rules shared by every decoder: a JSON null is the same as an absent field (the API
// server writes null for nil lists, as in bookmarks); a present field of the wrong JSON type
// is an error for the whole object; unknown fields are ignored.
#pragma once

#include <rapidjson/document.h>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "common/k8s/objects.h"
#include "common/k8s/result.h"

namespace kdns::k8s::internal {

using JsonValue = rapidjson::Value;

// One step of a field path, linked to its parent on the stack: `spec.ports[0].port`.
class FieldPath {
 public:
  FieldPath() = default;
  FieldPath Field(std::string_view key) const { return FieldPath(this, key, 0); }
  FieldPath Index(size_t index) const { return FieldPath(this, {}, index); }
  std::string ToString() const;

 private:
  FieldPath(const FieldPath* parent, std::string_view key, size_t index)
      : parent_(parent), key_(key), index_(index), root_(false) {}
  void Append(std::string* out) const;

  const FieldPath* parent_ = nullptr;
  std::string_view key_;  // empty for an index step
  size_t index_ = 0;
  bool root_ = true;
};

// Collects the error of one object's decoding and its warnings, each prefixed with
// `<location>: <Kind> <ns>/<name>: <path>: ` (location is e.g. "items[4]" in a list).
class FieldContext {
 public:
  FieldContext(Kind kind, const ObjectMeta* meta, Warnings* warnings,
               std::string_view location = {})
      : label_(ToString(kind)), meta_(meta), warnings_(warnings), location_(location) {}
  // For documents that are not objects with metadata: messages start with `<label>: `.
  explicit FieldContext(std::string_view label) : label_(label) {}

  // Records the error (the first one wins) and returns false, for `return ctx.Fail(...)`.
  bool Fail(const FieldPath& path, std::string_view what);
  void Warn(const FieldPath& path, std::string_view what);
  const std::string& error() const { return error_; }

 private:
  std::string Message(const FieldPath& path, std::string_view what) const;

  std::string_view label_;
  const ObjectMeta* meta_ = nullptr;
  Warnings* warnings_ = nullptr;
  std::string_view location_;
  std::string error_;
};

// `"text"`, cut at 64 bytes, with quotes, backslashes, control and non-ASCII bytes escaped.
std::string Quote(std::string_view text);

// A short one-line rendering of a JSON value for messages: strings quoted and cut at 64
// bytes with control and non-ASCII bytes escaped, numbers as numbers, "an object", ...
std::string Describe(const JsonValue& value);

// The member `key` of `object` (which must be an object), or nullptr when it is absent or null.
const JsonValue* Member(const JsonValue& object, std::string_view key);

inline std::string_view View(const JsonValue& string_value) {
  return std::string_view(string_value.GetString(), string_value.GetStringLength());
}

// Each reads `object[key]` (`object` must be an object; `path` is the object's own path).
// Absent or null: returns true and leaves *out unchanged. Wrong type or out of range:
// ctx.Fail and false.
bool ReadString(FieldContext& ctx, const JsonValue& object, std::string_view key,
                const FieldPath& path, std::string* out);
// The same, viewing the string inside the document (valid while the document lives).
bool ReadStringView(FieldContext& ctx, const JsonValue& object, std::string_view key,
                    const FieldPath& path, std::string_view* out);
bool ReadBool(FieldContext& ctx, const JsonValue& object, std::string_view key,
              const FieldPath& path, std::optional<bool>* out);
bool ReadInt(FieldContext& ctx, const JsonValue& object, std::string_view key,
             const FieldPath& path, int64_t min, int64_t max, std::optional<int64_t>* out);
// *out is nullptr when absent or null.
bool ReadObject(FieldContext& ctx, const JsonValue& object, std::string_view key,
                const FieldPath& path, const JsonValue** out);
bool ReadArray(FieldContext& ctx, const JsonValue& object, std::string_view key,
               const FieldPath& path, const JsonValue** out);

// A parsed document. Strings are copied into the document's pool allocator, which reads the
// text through RapidJSON's bounds-checked MemoryStream. In-situ parsing would save about a
// quarter of the parse time, but with UTF-8 validation RapidJSON 1.1 reads past the end of an
// in-situ buffer on a truncated multi-byte sequence (found by k8s_decode_fuzzer; the crasher is
// in its corpus).
struct JsonDocument {
  rapidjson::Document doc;
};

// Parses JSON text (iterative, so deep nesting cannot overflow the stack; UTF-8 validated;
// a NUL byte, never valid in JSON text, is refused). On failure returns false with
// "not JSON: <reason> at offset N" in *error.
bool ParseJson(std::string_view text, JsonDocument* json, std::string* error);

}  // namespace kdns::k8s::internal
