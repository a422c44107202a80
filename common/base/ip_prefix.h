// An address prefix (CIDR block) such as 10.0.0.0/8 or fd00::/8: what a flag like
// `--client-rate-exempt=10.0.0.0/24,fd00::/64` names. A value type; immutable; safe to
// share between threads.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/base/ip_address.h"

namespace kdns {

class IpPrefix {
 public:
  // "10.0.0.0/8", "fd00::/8", or a bare address (the whole address: /32 or /128). The
  // address's bits past the length must be zero ("10.0.0.1/8" is refused: it is either a
  // typo or a misunderstanding, and guessing would exempt or limit the wrong clients).
  static std::optional<IpPrefix> Parse(std::string_view text);
  // `address`'s first `length` bits (capped at the family's size).
  static IpPrefix Of(const IpAddress& address, uint8_t length);

  bool Contains(const IpAddress& address) const;
  const IpAddress& network() const { return network_; }
  uint8_t length() const { return length_; }
  // "10.0.0.0/8".
  std::string ToString() const;

  friend bool operator==(const IpPrefix&, const IpPrefix&) = default;

 private:
  IpPrefix(const IpAddress& network, uint8_t length) : network_(network), length_(length) {}

  IpAddress network_;
  uint8_t length_ = 0;
};

// A flag's list of prefixes (--client-rate-exempt, --client-address-from, ...):
// comma-separated ("10.0.0.0/8, fd00::/8", a bare address is the whole address); empty is
// none. False with a one-line *error naming the bad item.
bool ParsePrefixList(std::string_view text, std::vector<IpPrefix>* out, std::string* error);

}  // namespace kdns
