// sidecar: Probes the pod's DNS servers; serves health checks and Prometheus metrics.
// Flags and wiring only; the program's behaviour lives in Sidecar (see README.md, "life of
// a probe").
//
// --probe is repeatable, which gflags cannot do: ExtractProbeFlags takes the --probe values
// out first and gflags parses the rest (kube-dns's flag names; gflags accepts the dashes).
// SIGTERM and SIGINT stop the loop and exit 0.
#include <gflags/gflags.h>
#include <glog/logging.h>

#include <csignal>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "common/app/program.h"
#include "common/base/version.h"
#include "common/loop/loop.h"
#include "common/loop/signal.h"
#include "sidecar/options.h"
#include "sidecar/sidecar.h"

DEFINE_string(dnsmasq_addr, "127.0.0.1", "address that the dnsmasq server is listening on");
DEFINE_int32(dnsmasq_port, 53, "port that the dnsmasq server is listening on");
DEFINE_int32(dnsmasq_poll_interval_ms, 5000, "interval with which to poll dnsmasq for stats");
DEFINE_string(prometheus_addr, "0.0.0.0", "http addr to bind metrics server to");
DEFINE_int32(prometheus_port, 10054, "http port to use to export prometheus metrics");
DEFINE_string(prometheus_path, "/metrics", "http path used to export metrics");
DEFINE_string(prometheus_namespace, "kubedns", "prometheus metric namespace");
DEFINE_bool(check_flags, false,
            "Validate the command line and exit 0 (for manifest checks); binds nothing.");
// Listed in --help only; the values are taken out before gflags parses (see above).
DEFINE_string(probe, "",
              "probe the given DNS server with the DNS name and export probe metrics and "
              "healthcheck URI. Specified as <label>,<server>,<dns name>[,<interval_seconds>]"
              "[,<type>]. Healthcheck url will be exported under /healthcheck/<label>. "
              "interval_seconds is optional. This option may be specified multiple times to "
              "check multiple servers. <type> is one of ANY, A, AAAA, SRV. Example: "
              "'mydns,127.0.0.1:53,example.com,10,A'.");

using kdns::app::Fail;

int main(int argc, char** argv) {
  kdns::app::SetProgram(
      {"sidecar",
       "Probes the pod's DNS servers; serves health checks and Prometheus metrics.\n"
       "Usage: sidecar --probe=label,server,name[,interval][,type] ... [flags]"});
  std::vector<std::string_view> args(argv + 1, argv + argc);
  std::vector<std::string> probe_values;
  std::vector<std::string> rest = {argv[0]};
  std::string error;
  if (!kdns::sidecar::ExtractProbeFlags(args, &probe_values, &rest, &error)) Fail(error);
  kdns::app::ParseFlags(std::move(rest));

  // A --probe that reached gflags another way (a --flagfile) still counts.
  if (!FLAGS_probe.empty()) probe_values.push_back(FLAGS_probe);

  kdns::sidecar::FlagValues flags;
  flags.dnsmasq_addr = FLAGS_dnsmasq_addr;
  flags.dnsmasq_port = FLAGS_dnsmasq_port;
  flags.dnsmasq_poll_interval_ms = FLAGS_dnsmasq_poll_interval_ms;
  flags.prometheus_addr = FLAGS_prometheus_addr;
  flags.prometheus_port = FLAGS_prometheus_port;
  flags.prometheus_path = FLAGS_prometheus_path;
  flags.prometheus_namespace = FLAGS_prometheus_namespace;
  kdns::sidecar::Options options;
  if (!kdns::sidecar::BuildOptions(flags, probe_values, &options, &error)) Fail(error);
  kdns::app::ExitIfCheckingFlags(FLAGS_check_flags);
  kdns::app::InitProcess(argv[0]);

  kdns::loop::Loop loop;
  {
    auto sidecar = std::make_unique<kdns::sidecar::Sidecar>(loop, options);
    if (!sidecar->Start(&error)) Fail(error);
    std::string probes;
    for (const auto& probe : options.probes) {
      probes += (probes.empty() ? "" : ", ") + probe.label + "=" +
                std::string(kdns::sidecar::ProbeTypeText(probe.type)) + " " + probe.name_text +
                " @" + probe.server.ToString() + " every " +
                std::to_string(probe.interval_ms / 1000) + "s";
    }
    LOG(INFO) << "sidecar " << kdns::kVersion << " serving HTTP on "
              << sidecar->http_address().ToString() << " (" << options.prometheus_path
              << ", /healthz, /healthcheck/<label>); polling the cache at "
              << options.dnsmasq.ToString() << " every " << options.dnsmasq_poll_interval_ms
              << " ms; probes: " << (probes.empty() ? "none" : probes);

    kdns::loop::Signal term(loop);
    kdns::loop::Signal interrupt(loop);
    const auto stop = [&](int number) {
      LOG(INFO) << "signal " << number << ": stopping";
      loop.Stop();
    };
    term.Start(SIGTERM, stop);
    interrupt.Start(SIGINT, stop);
    loop.Run();
  }
  if (!loop.Close()) LOG(ERROR) << "handles left open at exit";
  LOG(INFO) << "sidecar stopped";
  return 0;
}
