#include "sidecar/probe_option.h"

#include <catch2/catch.hpp>
#include <string>

namespace kdns::sidecar {
namespace {

struct Valid {
  const char* value;
  const char* label;
  const char* server;
  const char* name;
  uint64_t interval_ms;
  dns::RrType type;
};

TEST_CASE("Valid --probe values parse as kube-dns's sidecar parses them", "[sidecar][probe]") {
  using dns::RrType;
  const Valid cases[] = {
      // kube-dns's own test table (cmd/sidecar/probeoptions_test.go).
      {"kubedns,[127.0.0.1]:10053,kubernetes.default.svc.cluster.local,5,SRV", "kubedns",
       "127.0.0.1:10053", "kubernetes.default.svc.cluster.local.", 5000, RrType::kSrv},
      {"dnsmasq,[127.0.0.1]:53,kubernetes.default.svc.cluster.local,5,ANY", "dnsmasq",
       "127.0.0.1:53", "kubernetes.default.svc.cluster.local.", 5000, RrType::kAny},
      {"dnsmasq,[127.0.0.1]:53,kubernetes.default.svc.cluster.local,5,A", "dnsmasq", "127.0.0.1:53",
       "kubernetes.default.svc.cluster.local.", 5000, RrType::kA},
      {"dnsmasq,[::1]:53,kubernetes.default.svc.cluster.local,5,AAAA", "dnsmasq", "[::1]:53",
       "kubernetes.default.svc.cluster.local.", 5000, RrType::kAaaa},
      {"dnsmasq,[::1]:53,kubernetes.default.svc.cluster.local,5", "dnsmasq", "[::1]:53",
       "kubernetes.default.svc.cluster.local.", 5000, RrType::kAny},
      // The kube-dns Deployment's own probes.
      {"kubedns,127.0.0.1:10053,kubernetes.default.svc.cluster.local,5,SRV", "kubedns",
       "127.0.0.1:10053", "kubernetes.default.svc.cluster.local.", 5000, RrType::kSrv},
      {"dnsmasq,127.0.0.1:53,kubernetes.default.svc.cluster.local,5,SRV", "dnsmasq", "127.0.0.1:53",
       "kubernetes.default.svc.cluster.local.", 5000, RrType::kSrv},
      // Defaults: port 53, interval 5 s, type ANY; the trailing dot added once.
      {"ok,127.0.0.1,example.com", "ok", "127.0.0.1:53", "example.com.", 5000, RrType::kAny},
      {"ok,10.0.0.10,example.com.", "ok", "10.0.0.10:53", "example.com.", 5000, RrType::kAny},
      {"ok,[2001:db8::1],example.com,1", "ok", "[2001:db8::1]:53", "example.com.", 1000,
       RrType::kAny},
      {"ok,[2001:db8::1]:5353,example.com,1", "ok", "[2001:db8::1]:5353", "example.com.", 1000,
       RrType::kAny},
      {"Under_Score_9,127.0.0.1:65535,a,1,A", "Under_Score_9", "127.0.0.1:65535", "a.", 1000,
       RrType::kA},
      // Go's Atoi takes a sign; the largest interval.
      {"x,127.0.0.1:53,a.b,+7", "x", "127.0.0.1:53", "a.b.", 7000, RrType::kAny},
      {"x,127.0.0.1:53,a.b,86400,SRV", "x", "127.0.0.1:53", "a.b.", 86'400'000, RrType::kSrv},
      // An empty name is the root, as in kube-dns.
      {"root,127.0.0.1:53,", "root", "127.0.0.1:53", ".", 5000, RrType::kAny},
  };
  for (const Valid& c : cases) {
    CAPTURE(c.value);
    ProbeOption option;
    std::string error;
    REQUIRE(ParseProbeOption(c.value, &option, &error));
    CHECK(error.empty());
    CHECK(option.label == c.label);
    CHECK(option.server.ToString() == c.server);
    CHECK(option.name_text == c.name);
    CHECK(option.name.ToText() == c.name);
    CHECK(option.interval_ms == c.interval_ms);
    CHECK(option.type == c.type);
  }
}

TEST_CASE("Malformed --probe values are rejected with kube-dns's texts", "[sidecar][probe]") {
  struct Invalid {
    const char* value;
    const char* error;  // a substring of the error
  };
  const Invalid cases[] = {
      // kube-dns's own test table.
      {"dnsmasq,[::1]:53", "invalid format to --probe"},
      {"dnsmasq,[::1]:53,kubernetes.default.svc.cluster.local,5,SRV,BogusField",
       "invalid format to --probe"},
      {"dn$m@s#,[::1]:53,kubernetes.default.svc.cluster.local,5,SRV",
       "label must be of format ^[a-zA-Z0-9_]+$"},
      {"dnsmasq,[::1]:53,kubernetes.default.svc.cluster.local,0.5,SRV",
       "strconv.Atoi: parsing \"0.5\": invalid syntax"},
      {"dnsmasq,[::1]:53,kubernetes.default.svc.cluster.local,5,BogusType",
       "invalid type for DNS: BogusType"},
      // More of the same kinds.
      {"", "invalid format to --probe"},
      {"a,b", "invalid format to --probe"},
      {",127.0.0.1:53,a", "label must be of format"},
      {"with-dash,127.0.0.1:53,a", "label must be of format"},
      {"with space,127.0.0.1:53,a", "label must be of format"},
      {"x,127.0.0.1:53,a,", "strconv.Atoi: parsing \"\": invalid syntax"},
      {"x,127.0.0.1:53,a,5s", "strconv.Atoi: parsing \"5s\": invalid syntax"},
      {"x,127.0.0.1:53,a,+", "invalid syntax"},
      {"x,127.0.0.1:53,a,99999999999999999999", "value out of range"},
      {"x,127.0.0.1:53,a,5,a", "invalid type for DNS: a"},
      {"x,127.0.0.1:53,a,5,MX", "invalid type for DNS: MX"},
      {"x,127.0.0.1:53,a,5,", "invalid type for DNS: "},
      // Stricter than kube-dns, which would fail every probe or panic instead.
      {"x,127.0.0.1:53,a,0", "interval 0 is not in 1..86400 seconds"},
      {"x,127.0.0.1:53,a,-5", "interval -5 is not in 1..86400 seconds"},
      {"x,127.0.0.1:53,a,86401", "interval 86401 is not in 1..86400 seconds"},
      {"x,::1,a", "an IPv6 address must be in brackets"},
      {"x,::1:53,a", "an IPv6 address must be in brackets"},
      {"x,[::1,a", "missing ']'"},
      {"x,[::1]53,a", "expected ':port' after ']'"},
      {"x,127.0.0.1:,a", "port \"\" is not a number in 1..65535"},
      {"x,127.0.0.1:0,a", "port \"0\" is not a number in 1..65535"},
      {"x,127.0.0.1:65536,a", "port \"65536\" is not a number in 1..65535"},
      {"x,127.0.0.1:dns,a", "port \"dns\" is not a number"},
      {"x,:53,a", "missing host"},
      {"x,localhost:53,a", "host \"localhost\" is not an IP address"},
      {"x,300.1.1.1,a", "is not an IP address"},
      {"x,127.0.0.1:53,a..b", "name \"a..b\""},
      {"x,127.0.0.1:53,aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa.com",
       "label longer than 63 octets"},
  };
  for (const Invalid& c : cases) {
    CAPTURE(c.value);
    ProbeOption option;
    option.label = "untouched";
    std::string error;
    CHECK_FALSE(ParseProbeOption(c.value, &option, &error));
    CHECK_THAT(error, Catch::Contains(c.error));
    CHECK(error.find('\n') == std::string::npos);
    CHECK(option.label == "untouched");
  }
}

TEST_CASE("A value kube-dns rejects names itself in the error", "[sidecar][probe]") {
  ProbeOption option;
  std::string error;
  REQUIRE_FALSE(ParseProbeOption("dns,127.0.0.1:53,example.com,5,TXT", &option, &error));
  CHECK(error ==
        "--probe=dns,127.0.0.1:53,example.com,5,TXT: invalid type for DNS: TXT "
        "(A, AAAA, ANY or SRV)");
}

TEST_CASE("Probe types print as --probe takes them", "[sidecar][probe]") {
  CHECK(ProbeTypeText(dns::RrType::kA) == "A");
  CHECK(ProbeTypeText(dns::RrType::kAaaa) == "AAAA");
  CHECK(ProbeTypeText(dns::RrType::kAny) == "ANY");
  CHECK(ProbeTypeText(dns::RrType::kSrv) == "SRV");
}

}  // namespace
}  // namespace kdns::sidecar
