#include "nanny/args.h"

#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <filesystem>
#include <optional>

#include "common/base/duration.h"
#include "common/base/ip_address.h"
#include "common/base/port.h"
#include "common/dns/name.h"
#include "common/upstream/upstream_address.h"
#include "nanny/command_runner.h"

namespace kdns::nanny {
namespace {

// The value of option `arg` when it is --long=V, --long V, -sV or -s V (no short form when
// `short_name` is '\0'); nullopt when `arg` is another option. *consumed_next tells whether
// the value was the next argument.
std::optional<std::string_view> OptionValue(const std::vector<std::string>& args, size_t i,
                                            std::string_view long_name, char short_name,
                                            bool* consumed_next, bool* missing) {
  std::string_view arg = args[i];
  *consumed_next = false;
  *missing = false;
  const std::string long_flag = "--" + std::string(long_name);
  const char short_flag[] = {'-', short_name, '\0'};
  if (arg.starts_with(long_flag + "=")) return arg.substr(long_flag.size() + 1);
  const bool has_short = short_name != '\0';
  if (arg == long_flag || (has_short && arg == short_flag)) {
    if (i + 1 >= args.size()) {
      *missing = true;
      return std::string_view();
    }
    *consumed_next = true;
    return std::string_view(args[i + 1]);
  }
  if (has_short && arg.size() > 2 && arg[0] == '-' && arg[1] == short_name) return arg.substr(2);
  return std::nullopt;
}

bool Duration(const char* name, const std::string& value, uint64_t* ms, std::string* error) {
  std::optional<uint64_t> parsed = ParseDurationMs(value);
  if (!parsed) {
    *error = std::string("-") + name + ": not a duration: \"" + value + "\"";
    return false;
  }
  *ms = *parsed;
  return true;
}

bool Executable(const std::string& path) { return access(path.c_str(), X_OK) == 0; }

// -dnsmasqExec as a path: kept when it has a '/', else beside the nanny, else in PATH.
bool FindExecutable(const std::string& exec, const ExecutableSearch& search, std::string* found,
                    std::string* error) {
  if (exec.find('/') != std::string::npos) {
    if (!Executable(exec)) {
      *error = "-dnsmasqExec " + exec + ": not an executable file";
      return false;
    }
    *found = exec;
    return true;
  }
  std::string beside = std::filesystem::path(search.self).parent_path() / exec;
  if (Executable(beside)) {
    *found = beside;
    return true;
  }
  if (std::optional<std::string> in_path = FindInPath(exec, search.path)) {
    *found = *in_path;
    return true;
  }
  *error = "-dnsmasqExec " + exec + ": not found beside the nanny nor in PATH";
  return false;
}

bool TimingOptions(const FlagValues& flags, Nanny::Options* options, std::string* error) {
  if (!Duration("syncInterval", flags.sync_interval, &options->sync_interval_ms, error)) {
    return false;
  }
  if (options->sync_interval_ms == 0) {
    *error = "-syncInterval: must be more than 0";
    return false;
  }
  if (!Duration("logInterval", flags.log_interval, &options->log_interval_ms, error) ||
      !Duration("stubResolveInterval", flags.stub_resolve_interval, &options->stub_refresh_ms,
                error)) {
    return false;
  }
  if (options->stub_refresh_ms == 0) {
    *error = "-stubResolveInterval: must be more than 0";
    return false;
  }
  options->stub_retry_ms = std::min<uint64_t>(options->stub_retry_ms, options->stub_refresh_ms);
  if (flags.crash_loop_restarts < 1) {
    *error = "-crashLoopRestarts: must be at least 1";
    return false;
  }
  options->crash_loop.max_fast_crashes = static_cast<int>(flags.crash_loop_restarts);
  return Duration("crashLoopRuntime", flags.crash_loop_runtime,
                  &options->crash_loop.healthy_runtime_ms, error) &&
         Duration("childStopTimeout", flags.child_stop_timeout, &options->stop_timeout_ms, error);
}

}  // namespace

SplitArgs SplitAtDoubleDash(int argc, const char* const* argv) {
  SplitArgs out;
  int i = 0;
  for (; i < argc; ++i) {
    std::string_view arg = argv[i];
    if (i > 0 && arg == "--") break;
    out.own.emplace_back(arg);
  }
  for (++i; i < argc; ++i) out.child.emplace_back(argv[i]);
  return out;
}

bool ParseListenSpec(const std::vector<std::string>& child_args, ListenSpec* spec,
                     std::string* error) {
  ListenSpec result;
  std::vector<IpAddress> ips;
  for (size_t i = 0; i < child_args.size(); ++i) {
    bool next = false;
    bool missing = false;
    if (auto value = OptionValue(child_args, i, "port", 'p', &next, &missing)) {
      auto port = ParsePort(*value, PortZero::kAllow);
      if (missing || !port) {
        *error = "child argument --port: not a port: \"" + std::string(*value) + "\"";
        return false;
      }
      result.port = *port;
    } else if (auto threads = OptionValue(child_args, i, "threads", '\0', &next, &missing)) {
      size_t count = 0;
      const auto [end, failed] =
          std::from_chars(threads->data(), threads->data() + threads->size(), count);
      if (missing || failed != std::errc() || end != threads->data() + threads->size()) {
        *error = "child argument --threads: not a number: \"" + std::string(*threads) + "\"";
        return false;
      }
      result.threads = count;
    } else if (auto list = OptionValue(child_args, i, "listen-address", 'a', &next, &missing)) {
      if (missing) {
        *error = "child argument --listen-address: no value";
        return false;
      }
      std::string_view rest = *list;
      while (true) {
        size_t comma = rest.find(',');
        std::string_view item = rest.substr(0, comma);
        auto ip = IpAddress::Parse(item);
        if (!ip) {
          *error =
              "child argument --listen-address: not an IP address: \"" + std::string(item) + "\"";
          return false;
        }
        if (std::find(ips.begin(), ips.end(), *ip) == ips.end()) ips.push_back(*ip);
        if (comma == std::string_view::npos) break;
        rest.remove_prefix(comma + 1);
      }
    }
    if (next) ++i;
  }
  if (ips.empty()) ips.push_back(*IpAddress::Parse("0.0.0.0"));
  for (const IpAddress& ip : ips) {
    result.addresses.push_back(loop::SocketAddressOf(ip, result.port));
  }
  *spec = std::move(result);
  return true;
}

bool HasLongOption(const std::vector<std::string>& child_args, std::string_view name) {
  const std::string flag = "--" + std::string(name);
  return std::any_of(child_args.begin(), child_args.end(), [&](const std::string& arg) {
    return arg == flag || arg.starts_with(flag + "=");
  });
}

bool BuildOptions(const FlagValues& flags, const std::vector<std::string>& child_args,
                  const ExecutableSearch& search, Nanny::Options* options, std::string* error) {
  options->config_dir = flags.config_dir;
  options->restart_on_change = flags.restart_dnsmasq;
  if (!TimingOptions(flags, options, error)) return false;
  options->cluster_domain = flags.cluster_domain;
  auto kubedns = loop::SocketAddress::Parse(flags.kubedns_server);
  if (!kubedns) kubedns = loop::SocketAddress::FromHostPort(flags.kubedns_server, 53);
  if (!kubedns) {
    *error = "-kubednsServer: not an address: \"" + flags.kubedns_server + "\"";
    return false;
  }
  options->kubedns_server = *kubedns;
  options->kubedns_zones.clear();
  std::string_view zones = flags.kubedns_zones;
  while (!zones.empty()) {
    size_t comma = zones.find(',');
    std::string zone(zones.substr(0, comma));
    zones.remove_prefix(comma == std::string_view::npos ? zones.size() : comma + 1);
    if (zone.empty()) continue;
    auto name = dns::Name::FromText(zone.back() == '.' ? zone : zone + ".");
    if (!name || name->IsRoot()) {
      *error = "-kubednsZones: not a domain name: \"" + zone + "\"";
      return false;
    }
    std::string text = name->Lowercased().ToText();
    text.pop_back();  // the form --server=/zone/ takes
    options->kubedns_zones.push_back(std::move(text));
  }

  std::string exec;
  if (!FindExecutable(flags.dnsmasq_exec, search, &exec, error)) return false;
  options->child_name = std::filesystem::path(exec).filename();
  options->child_argv = {exec};
  options->child_argv.insert(options->child_argv.end(), child_args.begin(), child_args.end());
  options->trampoline = search.self;
  if (flags.child_mode == "in-place" ||
      (flags.child_mode == "auto" && options->child_name == "frontend-cache")) {
    options->mode = ApplyMode::kInPlace;
  } else if (flags.child_mode == "restart" || flags.child_mode == "auto") {
    options->mode = ApplyMode::kRestart;
  } else {
    *error = "-childMode: auto, in-place or restart, not \"" + flags.child_mode + "\"";
    return false;
  }
  if (options->mode == ApplyMode::kInPlace) {
    if (HasLongOption(child_args, "servers-file")) {
      *error = "--servers-file after \"--\": the nanny writes the child's servers file itself";
      return false;
    }
    ListenSpec listen;
    if (!ParseListenSpec(child_args, &listen, error)) return false;
    options->listen = listen.addresses;
    options->child_threads = listen.threads;
  }
  return true;
}

}  // namespace kdns::nanny
