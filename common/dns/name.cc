#include "common/dns/name.h"

#include <cstring>

namespace kdns::dns {

std::optional<Name> Name::FromText(std::string_view text) {
  Name name;
  if (FromText(text, &name) != ParseError::kOk) return std::nullopt;
  return name;
}

ParseError Name::FromText(std::string_view text, Name* out) {
  Name name;
  if (text == "." || text.empty()) {
    *out = name;
    return ParseError::kOk;
  }
  uint8_t label[kMaxLabelLength];
  size_t label_length = 0;
  size_t i = 0;
  while (i < text.size()) {
    char c = text[i];
    if (c == '.') {
      if (label_length == 0) return ParseError::kEmptyLabel;
      if (!name.AppendLabel(std::span<const uint8_t>(label, label_length))) {
        return ParseError::kNameTooLong;
      }
      label_length = 0;
      ++i;
      continue;
    }
    uint8_t octet = static_cast<uint8_t>(c);
    ++i;
    if (c == '\\') {
      if (i >= text.size()) return ParseError::kBadEscape;
      if (text[i] >= '0' && text[i] <= '9') {
        if (i + 3 > text.size()) return ParseError::kBadEscape;
        unsigned value = 0;
        for (size_t j = 0; j < 3; ++j) {
          char d = text[i + j];
          if (d < '0' || d > '9') return ParseError::kBadEscape;
          value = value * 10 + static_cast<unsigned>(d - '0');
        }
        if (value > 255) return ParseError::kBadEscape;
        octet = static_cast<uint8_t>(value);
        i += 3;
      } else {
        octet = static_cast<uint8_t>(text[i]);
        ++i;
      }
    }
    if (label_length == kMaxLabelLength) return ParseError::kLabelTooLong;
    label[label_length++] = octet;
  }
  // No trailing dot: the name is still taken as absolute.
  if (label_length > 0 && !name.AppendLabel(std::span<const uint8_t>(label, label_length))) {
    return ParseError::kNameTooLong;
  }
  *out = name;
  return ParseError::kOk;
}

std::optional<Name> Name::FromLabels(std::initializer_list<std::string_view> labels,
                                     const Name& suffix) {
  Name prefix;
  for (std::string_view label : labels) {
    if (!prefix.AppendLabel(label)) return std::nullopt;
  }
  return Concat(prefix, suffix);
}

std::optional<Name> Name::Concat(const Name& prefix, const Name& suffix) {
  size_t length = prefix.length_ - 1 + suffix.length_;
  if (length > kMaxWireLength) return std::nullopt;
  Name name = prefix;
  std::memcpy(name.data_.data() + prefix.length_ - 1, suffix.data_.data(), suffix.length_);
  name.length_ = static_cast<uint8_t>(length);
  name.label_count_ = static_cast<uint8_t>(prefix.label_count_ + suffix.label_count_);
  return name;
}

bool Name::AppendLabel(std::span<const uint8_t> label) {
  if (label.empty() || label.size() > kMaxLabelLength) return false;
  if (length_ + 1 + label.size() > kMaxWireLength) return false;
  uint8_t* at = data_.data() + length_ - 1;  // overwrite the root octet
  at[0] = static_cast<uint8_t>(label.size());
  std::memcpy(at + 1, label.data(), label.size());
  at[1 + label.size()] = 0;
  length_ = static_cast<uint8_t>(length_ + 1 + label.size());
  ++label_count_;
  return true;
}

bool Name::AppendLabel(std::string_view label) {
  return AppendLabel(
      std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(label.data()), label.size()));
}

bool Name::PrependLabel(std::string_view label) {
  if (label.empty() || label.size() > kMaxLabelLength) return false;
  if (length_ + 1 + label.size() > kMaxWireLength) return false;
  std::memmove(data_.data() + 1 + label.size(), data_.data(), length_);
  data_[0] = static_cast<uint8_t>(label.size());
  std::memcpy(data_.data() + 1, label.data(), label.size());
  length_ = static_cast<uint8_t>(length_ + 1 + label.size());
  ++label_count_;
  return true;
}

size_t Name::LabelOffset(size_t i) const {
  size_t offset = 0;
  for (size_t n = 0; n < i && n < label_count_; ++n) offset += 1 + data_[offset];
  return offset;
}

std::string_view Name::label(size_t i) const {
  size_t offset = LabelOffset(i);
  return std::string_view(reinterpret_cast<const char*>(data_.data()) + offset + 1, data_[offset]);
}

Name Name::StripLeft(size_t count) const {
  if (count >= label_count_) return Name();
  size_t offset = LabelOffset(count);
  Name name;
  std::memcpy(name.data_.data(), data_.data() + offset, length_ - offset);
  name.length_ = static_cast<uint8_t>(length_ - offset);
  name.label_count_ = static_cast<uint8_t>(label_count_ - count);
  return name;
}

bool Name::IsSubdomainOf(const Name& ancestor) const {
  if (ancestor.label_count_ > label_count_) return false;
  size_t offset = LabelOffset(label_count_ - ancestor.label_count_);
  if (length_ - offset != ancestor.length_) return false;
  for (size_t i = 0; i < ancestor.length_; ++i) {
    if (ToLowerAscii(data_[offset + i]) != ToLowerAscii(ancestor.data_[i])) return false;
  }
  return true;
}

bool Name::EqualsIgnoringCase(const Name& other) const {
  if (length_ != other.length_) return false;
  // Length octets are below 64, so folding them too is harmless.
  for (size_t i = 0; i < length_; ++i) {
    if (ToLowerAscii(data_[i]) != ToLowerAscii(other.data_[i])) return false;
  }
  return true;
}

bool Name::IdenticalTo(const Name& other) const {
  return length_ == other.length_ && std::memcmp(data_.data(), other.data_.data(), length_) == 0;
}

size_t Name::Hash() const {
  uint64_t hash = 14695981039346656037ull;  // FNV-1a
  for (size_t i = 0; i < length_; ++i) {
    hash ^= ToLowerAscii(data_[i]);
    hash *= 1099511628211ull;
  }
  return static_cast<size_t>(hash);
}

Name Name::Lowercased() const {
  // Only the octets in use: a copy of the whole array would cost more than the folding.
  Name name;
  for (size_t i = 0; i < length_; ++i) name.data_[i] = ToLowerAscii(data_[i]);
  name.length_ = length_;
  name.label_count_ = label_count_;
  return name;
}

std::string Name::ToText() const {
  if (IsRoot()) return ".";
  std::string text;
  text.reserve(length_ + 4);
  size_t offset = 0;
  while (data_[offset] != 0) {
    size_t length = data_[offset];
    for (size_t i = offset + 1; i <= offset + length; ++i) {
      uint8_t c = data_[i];
      if (c == '.' || c == '\\' || c == '"' || c == '(' || c == ')' || c == ';' || c == '@' ||
          c == '$') {
        text += '\\';
        text += static_cast<char>(c);
      } else if (c <= 0x20 || c >= 0x7F) {
        char escape[5] = {'\\', static_cast<char>('0' + c / 100),
                          static_cast<char>('0' + c / 10 % 10), static_cast<char>('0' + c % 10), 0};
        text += escape;
      } else {
        text += static_cast<char>(c);
      }
    }
    text += '.';
    offset += 1 + length;
  }
  return text;
}

}  // namespace kdns::dns
