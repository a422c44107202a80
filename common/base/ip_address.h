// An IPv4 or IPv6 address as a small value type (family + 16 bytes, no heap), with parsing
// from and formatting to text. Used by the DNS codec (A/AAAA rdata, reverse names), the
// record tree and the configuration parsers. Immutable once built; safe to share between
// threads.
#pragma once

#include <array>
#include <compare>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace kdns {

enum class IpFamily : uint8_t { kV4 = 4, kV6 = 6 };

class IpAddress {
 public:
  static constexpr size_t kV4Size = 4;
  static constexpr size_t kV6Size = 16;

  // 0.0.0.0.
  IpAddress() = default;

  // Parses "10.0.0.1" or "2001:db8::1" (inet_pton rules: no zones, no brackets, no
  // surrounding whitespace). Returns nullopt for anything else.
  static std::optional<IpAddress> Parse(std::string_view text);
  static IpAddress FromV4(std::span<const uint8_t, kV4Size> bytes);
  static IpAddress FromV6(std::span<const uint8_t, kV6Size> bytes);
  // 4 bytes make a v4 address, 16 a v6 one; any other size is nullopt.
  static std::optional<IpAddress> FromBytes(std::span<const uint8_t> bytes);

  IpFamily family() const { return family_; }
  bool is_v4() const { return family_ == IpFamily::kV4; }
  bool is_v6() const { return family_ == IpFamily::kV6; }
  // The address in network order: 4 bytes for v4, 16 for v6.
  std::span<const uint8_t> bytes() const {
    return std::span<const uint8_t>(bytes_.data(), is_v4() ? kV4Size : kV6Size);
  }

  // "10.0.0.1"; v6 in the RFC 5952 canonical form ("2001:db8::1").
  std::string ToString() const;
  // The Kubernetes pod/endpoint host label: "10-0-0-1", and for v6 the canonical text with
  // ':' replaced by '-' ("2001-db8--1").
  std::string DashedName() const;

  size_t Hash() const;

  // v4 sorts before v6, then by bytes.
  friend bool operator==(const IpAddress&, const IpAddress&) = default;
  friend std::strong_ordering operator<=>(const IpAddress&, const IpAddress&) = default;

 private:
  IpFamily family_ = IpFamily::kV4;
  std::array<uint8_t, kV6Size> bytes_{};  // v4 uses the first 4; the rest stay zero
};

struct IpAddressHash {
  size_t operator()(const IpAddress& address) const { return address.Hash(); }
};

}  // namespace kdns
