#include "common/app/flag_table.h"

#include <gflags/gflags.h>

#include <algorithm>

namespace kdns::app {
namespace {

constexpr std::string_view kLogging =
    "klog's and Kubernetes' logging flags have no meaning here: glog logs to stderr "
    "(--v, --vmodule, --logtostderr keep theirs)";

// The flag's name as written in `arg` ("--log_file=x" -> "log-file"), or empty when `arg`
// is not a flag.
std::string FlagName(std::string_view arg) {
  if (arg.size() < 2 || arg[0] != '-') return {};
  arg.remove_prefix(arg[1] == '-' ? 2 : 1);
  std::string name(arg.substr(0, arg.find('=')));
  std::replace(name.begin(), name.end(), '_', '-');
  return name;
}

}  // namespace

const std::vector<FlagWithoutMeaning>& FlagsWithoutMeaning() {
  static const std::vector<FlagWithoutMeaning> flags{
      {"profiling", false, "Go's pprof handlers do not exist here"},
      {"log-flush-frequency", true, "glog writes every line to stderr at once"},
      {"log-async", false, "glog writes every line to stderr at once"},
      {"add-dir-header", false, kLogging},
      {"log-file", true, kLogging},
      {"log-file-max-size", true, kLogging},
      {"log-backtrace-at", true, kLogging},
      {"one-output", false, kLogging},
      {"skip-headers", false, kLogging},
      {"skip-log-headers", false, kLogging},
      {"logging-format", true, kLogging},
      // node-cache's (NodeLocal DNSCache) and its CoreDNS's, as its DaemonSet passes them.
      {"pidfile", true, "no PID file is written"},
      {"quiet", false, "CoreDNS's start-up banner does not exist here"},
      {"corefile", true,
       "the kube-dns ConfigMap (-kubednscm) and the flags replace node-cache's Corefile"},
      {"initialdelay", true, "the node cache sets up its addresses and rules at start"},
      {"setupebtables", false,
       "the node cache needs no ebtables rules (its NOTRACK rules are iptables or nftables)"},
  };
  return flags;
}

std::vector<std::string> TakeOutFlagsWithoutMeaning(std::vector<std::string>* args) {
  std::vector<std::string> warnings;
  std::vector<std::string> kept;
  for (size_t i = 0; i < args->size(); ++i) {
    const std::string& arg = (*args)[i];
    if (arg == "--") {  // what follows is not ours to read
      kept.insert(kept.end(), args->begin() + static_cast<std::ptrdiff_t>(i), args->end());
      break;
    }
    const std::string name = i == 0 ? std::string() : FlagName(arg);
    const auto& flags = FlagsWithoutMeaning();
    auto flag = std::find_if(flags.begin(), flags.end(),
                             [&](const FlagWithoutMeaning& f) { return f.name == name; });
    if (flag == flags.end()) {
      kept.push_back(arg);
      continue;
    }
    std::string written = arg;
    if (flag->takes_value && arg.find('=') == std::string::npos && i + 1 < args->size()) {
      written += " " + (*args)[++i];
    }
    warnings.push_back(written + " is ignored: " + std::string(flag->why));
  }
  *args = std::move(kept);
  return warnings;
}

std::string FlagTableText(std::string_view program_lines) {
  std::vector<gflags::CommandLineFlagInfo> infos;
  gflags::GetAllFlags(&infos);
  std::string text;
  for (const gflags::CommandLineFlagInfo& info : infos) {
    text += "flag\t" + info.name + "\t" + info.type + "\n";
  }
  for (const FlagWithoutMeaning& flag : FlagsWithoutMeaning()) {
    text += "ignored\t" + std::string(flag.name) + "\t" + (flag.takes_value ? "value" : "bool") +
            "\t" + std::string(flag.why) + "\n";
  }
  return text + std::string(program_lines);
}

}  // namespace kdns::app
