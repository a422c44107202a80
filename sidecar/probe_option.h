// One --probe flag value, `label,server,name[,interval][,type]`, parsed with kube-dns's
// sidecar rules (cmd/sidecar/main.go, probeOptions.Set) and its error texts, so that a
// manifest that works with kube-dns works here and one it rejects is rejected here too:
//
//   label     [a-zA-Z0-9_]+; names the health check (/healthcheck/<label>) and the metrics
//             (<ns>_probe_<label>_latency_ms, <ns>_probe_<label>_errors)
//   server    host:port; ":53" is added when there is no ':' at all; [v6]:port (and [v6])
//   name      a DNS name; the trailing dot is added when missing
//   interval  whole seconds (Go's strconv.Atoi syntax), default 5
//   type      A, AAAA, ANY or SRV (case as written), default ANY
//
// Stricter than kube-dns where kube-dns would only fail later: kube-dns takes any server
// text and fails every probe when it cannot be dialled, and it panics on an interval of 0.
// Here the host must be an IP literal (no name resolution), the port 1..65535, the name
// valid, and the interval 1..86400 s: every such value is rejected at start, one line each.
//
// Pure. Thread: values.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "common/dns/name.h"
#include "common/dns/types.h"
#include "common/loop/socket_address.h"

namespace kdns::sidecar {

inline constexpr uint64_t kDefaultProbeIntervalMs = 5000;
inline constexpr uint64_t kMaxProbeIntervalS = 86400;

struct ProbeOption {
  std::string label;
  loop::SocketAddress server;
  std::string name_text;  // as given, with the trailing dot added (kube-dns's error texts)
  dns::Name name;
  uint64_t interval_ms = kDefaultProbeIntervalMs;
  dns::RrType type = dns::RrType::kAny;
};

// Parses one --probe value. False with a one-line *error (which contains kube-dns's text
// for the same mistake: "invalid format to --probe", "label must be of format",
// "invalid syntax", "invalid type for DNS").
[[nodiscard]] bool ParseProbeOption(std::string_view value, ProbeOption* option,
                                    std::string* error);

// "A", "AAAA", "ANY", "SRV": the text --probe takes for a type.
std::string_view ProbeTypeText(dns::RrType type);

}  // namespace kdns::sidecar
