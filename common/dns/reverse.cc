#include "common/dns/reverse.h"

#include <array>
#include <charconv>

namespace kdns::dns {
namespace {

constexpr char kHexDigits[] = "0123456789abcdef";

std::optional<uint8_t> ParseNibble(std::string_view label) {
  if (label.size() != 1) return std::nullopt;
  char c = label[0];
  if (c >= '0' && c <= '9') return static_cast<uint8_t>(c - '0');
  if (c >= 'a' && c <= 'f') return static_cast<uint8_t>(c - 'a' + 10);
  if (c >= 'A' && c <= 'F') return static_cast<uint8_t>(c - 'A' + 10);
  return std::nullopt;
}

// Decimal 0..255 without leading zeros ("010" is not the canonical label for 10).
std::optional<uint8_t> ParseOctet(std::string_view label) {
  if (label.empty() || label.size() > 3 || (label.size() > 1 && label[0] == '0')) {
    return std::nullopt;
  }
  unsigned value = 0;
  auto [end, error] = std::from_chars(label.data(), label.data() + label.size(), value);
  if (error != std::errc() || end != label.data() + label.size() || value > 255) {
    return std::nullopt;
  }
  return static_cast<uint8_t>(value);
}

}  // namespace

const Name& InAddrArpa() {
  static const Name name = *Name::FromText("in-addr.arpa.");
  return name;
}

const Name& Ip6Arpa() {
  static const Name name = *Name::FromText("ip6.arpa.");
  return name;
}

bool IsReverseName(const Name& name) {
  return name.IsSubdomainOf(InAddrArpa()) || name.IsSubdomainOf(Ip6Arpa());
}

Name ReverseName(const IpAddress& address) {
  Name name;
  std::span<const uint8_t> bytes = address.bytes();
  // At most 32 one-octet labels plus ip6.arpa.: always within 255 octets.
  if (address.is_v4()) {
    for (size_t i = bytes.size(); i-- > 0;) (void)name.AppendLabel(std::to_string(bytes[i]));
    return *Name::Concat(name, InAddrArpa());
  }
  for (size_t i = bytes.size(); i-- > 0;) {
    (void)name.AppendLabel(std::string_view(&kHexDigits[bytes[i] & 0x0F], 1));
    (void)name.AppendLabel(std::string_view(&kHexDigits[bytes[i] >> 4], 1));
  }
  return *Name::Concat(name, Ip6Arpa());
}

std::optional<IpAddress> AddressFromReverseName(const Name& name) {
  if (name.label_count() == 4 + 2 && name.IsSubdomainOf(InAddrArpa())) {
    std::array<uint8_t, IpAddress::kV4Size> bytes;
    for (size_t i = 0; i < bytes.size(); ++i) {
      auto octet = ParseOctet(name.label(3 - i));
      if (!octet) return std::nullopt;
      bytes[i] = *octet;
    }
    return IpAddress::FromV4(bytes);
  }
  if (name.label_count() == 32 + 2 && name.IsSubdomainOf(Ip6Arpa())) {
    std::array<uint8_t, IpAddress::kV6Size> bytes;
    for (size_t i = 0; i < bytes.size(); ++i) {
      auto high = ParseNibble(name.label(31 - 2 * i));
      auto low = ParseNibble(name.label(30 - 2 * i));
      if (!high || !low) return std::nullopt;
      bytes[i] = static_cast<uint8_t>(*high << 4 | *low);
    }
    return IpAddress::FromV6(bytes);
  }
  return std::nullopt;
}

}  // namespace kdns::dns
