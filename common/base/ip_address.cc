#include "common/base/ip_address.h"

#include <arpa/inet.h>

#include <algorithm>
#include <cstring>

namespace kdns {

std::optional<IpAddress> IpAddress::Parse(std::string_view text) {
  // inet_pton needs a NUL-terminated string; the longest valid v6 text is 45 characters.
  char buffer[INET6_ADDRSTRLEN + 1];
  if (text.empty() || text.size() >= sizeof(buffer)) return std::nullopt;
  std::memcpy(buffer, text.data(), text.size());
  buffer[text.size()] = '\0';
  IpAddress address;
  if (inet_pton(AF_INET, buffer, address.bytes_.data()) == 1) {
    address.family_ = IpFamily::kV4;
    return address;
  }
  if (inet_pton(AF_INET6, buffer, address.bytes_.data()) == 1) {
    address.family_ = IpFamily::kV6;
    return address;
  }
  return std::nullopt;
}

IpAddress IpAddress::FromV4(std::span<const uint8_t, kV4Size> bytes) {
  IpAddress address;
  address.family_ = IpFamily::kV4;
  std::copy(bytes.begin(), bytes.end(), address.bytes_.begin());
  return address;
}

IpAddress IpAddress::FromV6(std::span<const uint8_t, kV6Size> bytes) {
  IpAddress address;
  address.family_ = IpFamily::kV6;
  std::copy(bytes.begin(), bytes.end(), address.bytes_.begin());
  return address;
}

std::optional<IpAddress> IpAddress::FromBytes(std::span<const uint8_t> bytes) {
  if (bytes.size() == kV4Size) return FromV4(bytes.first<kV4Size>());
  if (bytes.size() == kV6Size) return FromV6(bytes.first<kV6Size>());
  return std::nullopt;
}

std::string IpAddress::ToString() const {
  char buffer[INET6_ADDRSTRLEN];
  // inet_ntop cannot fail for these families and this buffer size; glibc's v6 output is
  // the RFC 5952 form (lower case, longest zero run compressed, v4-mapped dotted).
  const char* text = inet_ntop(is_v4() ? AF_INET : AF_INET6, bytes_.data(), buffer, sizeof(buffer));
  return text != nullptr ? std::string(text) : std::string();
}

std::string IpAddress::DashedName() const {
  std::string text = ToString();
  std::replace(text.begin(), text.end(), is_v4() ? '.' : ':', '-');
  return text;
}

size_t IpAddress::Hash() const {
  // FNV-1a over the family and the bytes.
  uint64_t hash = 14695981039346656037ull;
  auto mix = [&hash](uint8_t byte) {
    hash ^= byte;
    hash *= 1099511628211ull;
  };
  mix(static_cast<uint8_t>(family_));
  for (uint8_t byte : bytes()) mix(byte);
  return static_cast<size_t>(hash);
}

}  // namespace kdns
