// Fuzzes the kube-dns ConfigMap parser (common/config/kube_dns_config.h) with arbitrary
// values for its two keys. It may reject anything, but never crash, and what it returns must
// hold together: a rejection has a one-line message; an accepted config has at most three
// upstreams, every one with a port, stub domains sorted and unique, each a lower-case
// DNS-1123 name, every server an address with a port or a host name; and parsing the same
// values again gives the same config. Input: byte 0 says which keys are present, the rest
// is split at the first 0xFF byte into the stubDomains and upstreamNameservers values. In
// ordinary builds this file is replayed over test/fuzz/corpus/kube_dns_config/.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "common/config/kube_dns_config.h"

namespace {

using namespace kdns::config;

void Check(bool condition) {
  if (!condition) __builtin_trap();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const uint8_t keys = data[0];
  std::string_view rest(reinterpret_cast<const char*>(data + 1), size - 1);
  size_t split = rest.find('\xff');
  ConfigDirData values;
  if ((keys & 1) != 0) values.stub_domains = std::string(rest.substr(0, split));
  if ((keys & 2) != 0 && split != std::string_view::npos) {
    values.upstream_nameservers = std::string(rest.substr(split + 1));
  }

  KubeDnsConfig config;
  std::string error;
  if (!ParseKubeDnsConfig(values, &config, &error)) {
    Check(!error.empty());
    Check(error.find('\n') == std::string::npos);
    return 0;
  }
  Check(config.upstream_nameservers.size() <= kMaxUpstreamNameservers);
  for (const auto& upstream : config.upstream_nameservers) Check(upstream.address.port() != 0);
  for (size_t i = 0; i < config.stub_domains.size(); ++i) {
    const StubDomain& stub = config.stub_domains[i];
    std::string text = stub.domain.ToText();
    Check(!text.empty() && text.back() == '.');
    text.pop_back();
    Check(IsDns1123Subdomain(text));
    if (i > 0) {
      std::string previous = config.stub_domains[i - 1].domain.ToText();
      previous.pop_back();
      Check(previous < text);  // ordered as written: "b.exa" before "b.exa-plf"
    }
    for (const StubServer& server : stub.servers) {
      if (server.is_host()) {
        Check(!server.host.IsRoot());
      } else {
        Check(server.address->address.port() != 0);
      }
    }
  }
  Check(config.ToString().find('\n') == std::string::npos);
  KubeDnsConfig again;
  Check(ParseKubeDnsConfig(values, &again, &error));
  Check(again == config);
  return 0;
}
