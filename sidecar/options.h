// The sidecar's command line, kube-dns's flag names and defaults (cmd/sidecar/main.go,
// pkg/sidecar/options.go). --probe is repeatable, which gflags cannot do, so
// ExtractProbeFlags() takes every --probe out of the arguments first (`--probe=v`,
// `--probe v`, and gflags' single-dash forms) and hands the rest back for gflags; main.cc
// then fills FlagValues from gflags and BuildOptions() checks everything, so every bad value
// stops the program at start with one line naming the flag.
//
// Pure. Thread: values.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/loop/socket_address.h"
#include "sidecar/probe_option.h"

namespace kdns::sidecar {

// The flags as gflags holds them, before validation. Defaults are kube-dns's.
struct FlagValues {
  std::string dnsmasq_addr = "127.0.0.1";
  int64_t dnsmasq_port = 53;
  int64_t dnsmasq_poll_interval_ms = 5000;
  std::string prometheus_addr = "0.0.0.0";
  int64_t prometheus_port = 10054;
  std::string prometheus_path = "/metrics";
  std::string prometheus_namespace = "kubedns";
};

inline constexpr uint64_t kMinPollIntervalMs = 100;

struct Options {
  std::vector<ProbeOption> probes;
  loop::SocketAddress dnsmasq;  // where the CHAOS statistics are read
  uint64_t dnsmasq_poll_interval_ms = 5000;
  loop::SocketAddress prometheus;  // HTTP: /metrics, /healthz, /healthcheck/<label>
  std::string prometheus_path = "/metrics";
  std::string prometheus_namespace = "kubedns";
};

// Moves the values of every --probe in `args` (without the program name) into
// `probe_values`, in order; the other arguments go to `rest`, in order (everything from a
// "--" on is left alone). False with a one-line *error when a --probe has no value.
[[nodiscard]] bool ExtractProbeFlags(std::span<const std::string_view> args,
                                     std::vector<std::string>* probe_values,
                                     std::vector<std::string>* rest, std::string* error);

// Parses the probes and checks the flags: addresses are IP literals (an empty
// --prometheus-addr means every IPv4 address, as Go's ":port"), ports 1..65535 (the
// Prometheus port may be 0: any free port, for tests), the poll interval at least
// kMinPollIntervalMs, the path absolute, the namespace usable in a metric name, and probe
// labels distinct (each one owns /healthcheck/<label> and two metric names).
[[nodiscard]] bool BuildOptions(const FlagValues& flags, std::span<const std::string> probe_values,
                                Options* options, std::string* error);

}  // namespace kdns::sidecar
