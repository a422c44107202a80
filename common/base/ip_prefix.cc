#include "common/base/ip_prefix.h"

#include <algorithm>
#include <array>
#include <charconv>

namespace kdns {
namespace {

uint8_t MaxLength(const IpAddress& address) { return address.is_v4() ? 32 : 128; }

// `address` with every bit past `length` cleared.
IpAddress Masked(const IpAddress& address, uint8_t length) {
  std::array<uint8_t, IpAddress::kV6Size> bytes{};
  const auto in = address.bytes();
  std::copy(in.begin(), in.end(), bytes.begin());
  for (size_t i = 0; i < in.size(); ++i) {
    const int keep = std::clamp(static_cast<int>(length) - static_cast<int>(i) * 8, 0, 8);
    bytes[i] &= static_cast<uint8_t>(0xff00u >> keep);
  }
  return *IpAddress::FromBytes(std::span<const uint8_t>(bytes.data(), in.size()));
}

}  // namespace

std::optional<IpPrefix> IpPrefix::Parse(std::string_view text) {
  const size_t slash = text.find('/');
  const std::optional<IpAddress> address = IpAddress::Parse(text.substr(0, slash));
  if (!address) return std::nullopt;
  if (slash == std::string_view::npos) return IpPrefix(*address, MaxLength(*address));
  const std::string_view digits = text.substr(slash + 1);
  unsigned length = 0;
  const char* end = digits.data() + digits.size();
  auto [ptr, ec] = std::from_chars(digits.data(), end, length);
  if (digits.empty() || digits.size() > 3 || ec != std::errc() || ptr != end ||
      length > MaxLength(*address)) {
    return std::nullopt;
  }
  const auto bits = static_cast<uint8_t>(length);
  if (Masked(*address, bits) != *address) return std::nullopt;
  return IpPrefix(*address, bits);
}

IpPrefix IpPrefix::Of(const IpAddress& address, uint8_t length) {
  const uint8_t bits = std::min(length, MaxLength(address));
  return IpPrefix(Masked(address, bits), bits);
}

bool IpPrefix::Contains(const IpAddress& address) const {
  return address.family() == network_.family() && Masked(address, length_) == network_;
}

std::string IpPrefix::ToString() const {
  return network_.ToString() + "/" + std::to_string(length_);
}

bool ParsePrefixList(std::string_view text, std::vector<IpPrefix>* out, std::string* error) {
  out->clear();
  while (!text.empty()) {
    const size_t comma = text.find(',');
    std::string_view item = text.substr(0, comma);
    text = comma == std::string_view::npos ? std::string_view() : text.substr(comma + 1);
    while (!item.empty() && item.front() == ' ') item.remove_prefix(1);
    while (!item.empty() && item.back() == ' ') item.remove_suffix(1);
    if (item.empty()) continue;
    const std::optional<IpPrefix> prefix = IpPrefix::Parse(item);
    if (!prefix) {
      *error = "\"" + std::string(item) +
               "\" is not an address prefix (like 10.0.0.0/8 or fd00::/8, with the bits past "
               "the length zero)";
      return false;
    }
    out->push_back(*prefix);
  }
  return true;
}

}  // namespace kdns
