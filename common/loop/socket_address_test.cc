#include "common/loop/socket_address.h"

#include <catch2/catch.hpp>
#include <unordered_set>

namespace kdns::loop {
namespace {

TEST_CASE("SocketAddress parses and formats IPv4 and IPv6 host:port", "[loop][address]") {
  auto [text, family, port, formatted] = GENERATE(table<const char*, int, int, const char*>({
      {"1.2.3.4:53", AF_INET, 53, "1.2.3.4:53"},
      {"127.0.0.1:0", AF_INET, 0, "127.0.0.1:0"},
      {"0.0.0.0:65535", AF_INET, 65535, "0.0.0.0:65535"},
      {"[::1]:53", AF_INET6, 53, "[::1]:53"},
      {"[2001:db8::1]:10053", AF_INET6, 10053, "[2001:db8::1]:10053"},
      {"[::]:8080", AF_INET6, 8080, "[::]:8080"},
  }));
  auto address = SocketAddress::Parse(text);
  REQUIRE(address.has_value());
  CHECK(address->family() == family);
  CHECK(address->port() == port);
  CHECK(address->ToString() == formatted);
}

TEST_CASE("SocketAddress rejects malformed host:port", "[loop][address]") {
  auto text = GENERATE("", "1.2.3.4", "1.2.3.4:", "1.2.3.4:65536", "1.2.3.4:-1", "1.2.3.4:53x",
                       "1.2.3:53", "::1:53", "[::1]", "[::1]53", "[1.2.3.4]:53", "[::1:53",
                       "host.example:53", "[::1]:", " 1.2.3.4:53", "1.2.3.4:053535");
  CAPTURE(text);
  CHECK_FALSE(SocketAddress::Parse(text).has_value());
}

TEST_CASE("SocketAddress builds from a host and a port", "[loop][address]") {
  auto v6 = SocketAddress::FromHostPort("::1", 53);
  REQUIRE(v6.has_value());
  CHECK(v6->is_v6());
  CHECK(v6->HostString() == "::1");
  auto v4 = SocketAddress::FromHostPort("10.0.0.10", 5353);
  REQUIRE(v4.has_value());
  CHECK(v4->ToString() == "10.0.0.10:5353");
  CHECK_FALSE(SocketAddress::FromHostPort("[::1]", 53).has_value());
  CHECK_FALSE(SocketAddress::FromHostPort("", 53).has_value());
}

TEST_CASE("SocketAddress wildcards know they are wildcards", "[loop][address]") {
  CHECK(SocketAddress::AnyV4(53).IsWildcard());
  CHECK(SocketAddress::AnyV6(53).IsWildcard());
  CHECK(SocketAddress::AnyV6(53).ToString() == "[::]:53");
  CHECK_FALSE(SocketAddress::Parse("127.0.0.1:53")->IsWildcard());
  CHECK(SocketAddress().family() == AF_UNSPEC);
  CHECK(SocketAddress().ToString() == "<unspecified>");
}

TEST_CASE("SocketAddress compares and hashes by family, address and port", "[loop][address]") {
  auto a = *SocketAddress::Parse("10.0.0.1:53");
  auto b = *SocketAddress::Parse("10.0.0.1:53");
  auto c = *SocketAddress::Parse("10.0.0.1:54");
  auto d = *SocketAddress::Parse("[::ffff:10.0.0.1]:53");
  CHECK(a == b);
  CHECK(a != c);
  CHECK(a != d);
  CHECK(a.Hash() == b.Hash());
  std::unordered_set<SocketAddress> set{a, b, c, d};
  CHECK(set.size() == 3);
  c.set_port(53);
  CHECK(a == c);
}

TEST_CASE("SocketAddress round-trips through sockaddr", "[loop][address]") {
  auto a = *SocketAddress::Parse("[2001:db8::53]:53");
  auto b = SocketAddress::FromSockaddr(a.sockaddr_ptr(), a.sockaddr_len());
  REQUIRE(b.has_value());
  CHECK(*b == a);
  CHECK(a.sockaddr_len() == sizeof(sockaddr_in6));
  CHECK_FALSE(SocketAddress::FromSockaddr(a.sockaddr_ptr(), sizeof(sockaddr_in)).has_value());
  CHECK_FALSE(SocketAddress::FromSockaddr(nullptr, 0).has_value());
}

TEST_CASE("IpOf gives a socket address's IP, without its zone", "[loop][address]") {
  CHECK(IpOf(*SocketAddress::Parse("127.0.0.2:53")) == *IpAddress::Parse("127.0.0.2"));
  CHECK(IpOf(*SocketAddress::Parse("[2001:db8::1]:53")) == *IpAddress::Parse("2001:db8::1"));
  const SocketAddress zoned = *SocketAddress::Parse("[fe80::1%7]:53");
  CHECK(zoned.scope_id() == 7);
  CHECK(IpOf(zoned) == *IpAddress::Parse("fe80::1"));
  CHECK(SocketAddress::Parse("1.2.3.4:53")->scope_id() == 0);
}

TEST_CASE("SocketAddressOf is IpOf's inverse, with the port", "[loop][address]") {
  CHECK(SocketAddressOf(*IpAddress::Parse("10.1.2.3"), 41000) ==
        *SocketAddress::Parse("10.1.2.3:41000"));
  CHECK(SocketAddressOf(*IpAddress::Parse("fd00::17"), 53) ==
        *SocketAddress::Parse("[fd00::17]:53"));
}

}  // namespace
}  // namespace kdns::loop
