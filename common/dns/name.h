// A domain name as a value: uncompressed wire form (length-prefixed labels ending in the
// root's 0) in an inline 255-byte buffer, so building, copying and comparing names never
// touches the heap. Names are always absolute. Case is preserved as received; comparison
// and hashing ignore ASCII case (RFC 4343), so `operator==` is case-insensitive and
// `IdenticalTo` is the exact comparison. A Name is a plain value with no thread affinity.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "common/dns/errors.h"

namespace kdns::dns {

class Name {
 public:
  static constexpr size_t kMaxWireLength = 255;  // RFC 1035 §2.3.4, including the root
  static constexpr size_t kMaxLabelLength = 63;

  // The root name ".".
  Name() { data_[0] = 0; }
  static Name Root() { return Name(); }

  // Parses presentation text ("Foo.Example." or "Foo.Example"; both are absolute, "." and
  // "" are the root). `\.` escapes a dot, `\X` any character, `\DDD` a decimal octet.
  [[nodiscard]] static ParseError FromText(std::string_view text, Name* out);
  [[nodiscard]] static std::optional<Name> FromText(std::string_view text);
  // Builds labels + suffix, e.g. FromLabels({"svc", "ns", "svc"}, zone). Labels are raw
  // octets (no escapes). nullopt when a label is empty or too long or the name too long.
  [[nodiscard]] static std::optional<Name> FromLabels(
      std::initializer_list<std::string_view> labels, const Name& suffix = Name());
  // prefix's labels followed by suffix's labels; nullopt when over 255 octets.
  [[nodiscard]] static std::optional<Name> Concat(const Name& prefix, const Name& suffix);

  // Adds a label on the right (just before the root) or on the left. Returns false and
  // leaves the name unchanged when the label is empty, over 63 octets, or the name would
  // exceed 255 octets.
  [[nodiscard]] bool AppendLabel(std::span<const uint8_t> label);
  [[nodiscard]] bool AppendLabel(std::string_view label);
  [[nodiscard]] bool PrependLabel(std::string_view label);

  // The uncompressed wire form, including the final 0.
  std::span<const uint8_t> wire() const { return {data_.data(), length_}; }
  size_t wire_length() const { return length_; }
  // Labels, not counting the root: "a.b." has 2.
  size_t label_count() const { return label_count_; }
  bool IsRoot() const { return label_count_ == 0; }
  // The i-th label from the left, without its length octet; i < label_count().
  std::string_view label(size_t i) const;
  // Offset in wire() of the i-th label's length octet (i == label_count() is the root).
  size_t LabelOffset(size_t i) const;

  // This name without its `count` leftmost labels (root when count >= label_count()).
  Name StripLeft(size_t count) const;
  Name Parent() const { return StripLeft(1); }
  // True when this name equals `ancestor` or lies below it (case-insensitive).
  bool IsSubdomainOf(const Name& ancestor) const;

  bool EqualsIgnoringCase(const Name& other) const;
  // Byte-for-byte, case included.
  bool IdenticalTo(const Name& other) const;
  // Case-insensitive, consistent with operator==.
  size_t Hash() const;
  // The canonical form: ASCII upper case folded to lower case.
  Name Lowercased() const;

  // Presentation form, dig-compatible: "foo.example.", root ".", with `\.`, `\\`, `\"`
  // and `\DDD` for non-printable octets.
  std::string ToText() const;

  // Case-insensitive (RFC 4343).
  friend bool operator==(const Name& a, const Name& b) { return a.EqualsIgnoringCase(b); }

 private:
  std::array<uint8_t, kMaxWireLength> data_;
  uint8_t length_ = 1;
  uint8_t label_count_ = 0;
};

// For unordered containers; equality is Name's case-insensitive operator==.
struct NameHash {
  size_t operator()(const Name& name) const { return name.Hash(); }
};

// ASCII-only case folding, as DNS does (RFC 4343 §3).
inline uint8_t ToLowerAscii(uint8_t c) { return c >= 'A' && c <= 'Z' ? c + ('a' - 'A') : c; }

}  // namespace kdns::dns
