// The command line as a table, for a pre-flight that has no binaries (tools/check_flags.py
// embeds it), and the flags of kube-dns's Go programs that have no meaning here.
//
// kube-dns, its sidecar and dnsmasq-nanny are Go programs: next to their own flags they take
// klog's and Kubernetes' logging and debugging flags (--profiling, --log-flush-frequency,
// --skip_headers, ...). A Deployment written for them may carry any of these, so every kdns
// program accepts them, ignores them and says so in a warning (the image swap keeps its
// arguments). glog's own flags (--v, --logtostderr, --log_dir, ...) are real gflags and keep
// their meaning. So are node-cache's (NodeLocal DNSCache's) own that have none here
// (-pidfile, -initialdelay, ...), for the nanny's node-local mode.
//
// FlagTableText() is what `<program> --flag-table` prints: one tab-separated line a flag,
//   flag     <name> <type>               a gflags flag (type: bool, int32, int64, uint64,
//                                        double, string)
//   ignored  <name> <bool|value> <why>   a Go flag accepted and ignored (above)
// followed by the program's own lines (frontend-cache's dnsmasq options):
//   option   <name> <letter|-> <flag|value|optional>
//   refused  <name> <letter|-> <what to do instead>
//
// Pure functions over gflags' registry; the main thread, before other threads start.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace kdns::app {

struct FlagWithoutMeaning {
  std::string_view name;  // with dashes, as kube-dns's manifests write it
  bool takes_value;       // false: a bool flag ("--x" or "--x=true"); never the next argument
  std::string_view why;
};

// Every Go flag accepted and ignored.
const std::vector<FlagWithoutMeaning>& FlagsWithoutMeaning();

// Takes the flags without meaning out of `args` (argv[0] first; "--x", "-x", "--x=v",
// "--x v" for one that takes a value, underscores read as dashes) and returns one warning
// line for each taken out.
std::vector<std::string> TakeOutFlagsWithoutMeaning(std::vector<std::string>* args);

// The --flag-table text: gflags' registered flags, the flags without meaning, then
// `program_lines` as given.
std::string FlagTableText(std::string_view program_lines);

}  // namespace kdns::app
