#include "common/k8s/json_fields.h"

#include <rapidjson/error/en.h>

#include <cstdio>

#include "common/base/quote.h"

namespace kdns::k8s::internal {
namespace {

constexpr size_t kMaxQuoted = 64;

const char* TypeName(const JsonValue& value) {
  switch (value.GetType()) {
    case rapidjson::kNullType:
      return "null";
    case rapidjson::kFalseType:
    case rapidjson::kTrueType:
      return "a boolean";
    case rapidjson::kObjectType:
      return "an object";
    case rapidjson::kArrayType:
      return "an array";
    case rapidjson::kStringType:
      return "a string";
    case rapidjson::kNumberType:
      return "a number";
  }
  return "?";
}

bool WrongType(FieldContext& ctx, const FieldPath& path, const char* wanted,
               const JsonValue& value) {
  return ctx.Fail(path, std::string("not ") + wanted + ": " + Describe(value));
}

}  // namespace

void FieldPath::Append(std::string* out) const {
  if (root_) return;
  parent_->Append(out);
  if (key_.empty()) {
    out->append("[").append(std::to_string(index_)).append("]");
  } else {
    if (!out->empty()) out->push_back('.');
    out->append(key_);
  }
}

std::string FieldPath::ToString() const {
  std::string out;
  Append(&out);
  return out;
}

std::string FieldContext::Message(const FieldPath& path, std::string_view what) const {
  std::string message;
  if (!location_.empty()) message.append(location_).append(": ");
  message.append(label_);
  if (meta_ != nullptr && !meta_->name.empty()) {
    message.append(" ");
    if (!meta_->ns.empty()) message.append(meta_->ns).append("/");
    message.append(meta_->name);
  }
  message.append(": ");
  std::string field = path.ToString();
  if (!field.empty()) message.append(field).append(": ");
  message.append(what);
  return message;
}

bool FieldContext::Fail(const FieldPath& path, std::string_view what) {
  if (error_.empty()) error_ = Message(path, what);
  return false;
}

void FieldContext::Warn(const FieldPath& path, std::string_view what) {
  if (warnings_ != nullptr) warnings_->Add(Message(path, what));
}

std::string Quote(std::string_view text) { return QuoteForLog(text, kMaxQuoted); }

std::string Describe(const JsonValue& value) {
  if (value.IsString()) return Quote(View(value));
  if (value.IsBool()) return value.GetBool() ? "true" : "false";
  if (value.IsInt64()) return std::to_string(value.GetInt64());
  if (value.IsUint64()) return std::to_string(value.GetUint64());
  if (value.IsNumber()) {
    char text[32];
    std::snprintf(text, sizeof text, "%.17g", value.GetDouble());
    return text;
  }
  return TypeName(value);
}

const JsonValue* Member(const JsonValue& object, std::string_view key) {
  auto it = object.FindMember(
      JsonValue(rapidjson::StringRef(key.data(), static_cast<rapidjson::SizeType>(key.size()))));
  if (it == object.MemberEnd() || it->value.IsNull()) return nullptr;
  return &it->value;
}

bool ReadStringView(FieldContext& ctx, const JsonValue& object, std::string_view key,
                    const FieldPath& path, std::string_view* out) {
  const JsonValue* value = Member(object, key);
  if (value == nullptr) return true;
  if (!value->IsString()) return WrongType(ctx, path.Field(key), "a string", *value);
  *out = View(*value);
  return true;
}

bool ReadString(FieldContext& ctx, const JsonValue& object, std::string_view key,
                const FieldPath& path, std::string* out) {
  const JsonValue* value = Member(object, key);
  if (value == nullptr) return true;
  if (!value->IsString()) return WrongType(ctx, path.Field(key), "a string", *value);
  out->assign(value->GetString(), value->GetStringLength());
  return true;
}

bool ReadBool(FieldContext& ctx, const JsonValue& object, std::string_view key,
              const FieldPath& path, std::optional<bool>* out) {
  const JsonValue* value = Member(object, key);
  if (value == nullptr) return true;
  if (!value->IsBool()) return WrongType(ctx, path.Field(key), "a boolean", *value);
  *out = value->GetBool();
  return true;
}

bool ReadInt(FieldContext& ctx, const JsonValue& object, std::string_view key,
             const FieldPath& path, int64_t min, int64_t max, std::optional<int64_t>* out) {
  const JsonValue* value = Member(object, key);
  if (value == nullptr) return true;
  if (!value->IsInt64()) {
    if (value->IsNumber()) return ctx.Fail(path.Field(key), "out of range: " + Describe(*value));
    return WrongType(ctx, path.Field(key), "an integer", *value);
  }
  int64_t number = value->GetInt64();
  if (number < min || number > max) {
    return ctx.Fail(path.Field(key), "out of range: " + std::to_string(number));
  }
  *out = number;
  return true;
}

bool ReadObject(FieldContext& ctx, const JsonValue& object, std::string_view key,
                const FieldPath& path, const JsonValue** out) {
  *out = Member(object, key);
  if (*out != nullptr && !(*out)->IsObject()) {
    const JsonValue* value = *out;
    *out = nullptr;
    return WrongType(ctx, path.Field(key), "an object", *value);
  }
  return true;
}

bool ReadArray(FieldContext& ctx, const JsonValue& object, std::string_view key,
               const FieldPath& path, const JsonValue** out) {
  *out = Member(object, key);
  if (*out != nullptr && !(*out)->IsArray()) {
    const JsonValue* value = *out;
    *out = nullptr;
    return WrongType(ctx, path.Field(key), "an array", *value);
  }
  return true;
}

bool ParseJson(std::string_view text, JsonDocument* json, std::string* error) {
  if (size_t nul = text.find('\0'); nul != std::string_view::npos) {
    *error = "not JSON: a NUL byte at offset " + std::to_string(nul);
    return false;
  }
  constexpr unsigned kFlags =
      rapidjson::kParseIterativeFlag | rapidjson::kParseValidateEncodingFlag;
  json->doc.Parse<kFlags>(text.data(), text.size());
  if (!json->doc.HasParseError()) return true;
  *error = std::string("not JSON: ") + rapidjson::GetParseError_En(json->doc.GetParseError()) +
           " at offset " + std::to_string(json->doc.GetErrorOffset());
  return false;
}

}  // namespace kdns::k8s::internal
