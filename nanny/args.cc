#include "nanny/args.h"

#include <algorithm>
#include <optional>

#include "common/base/ip_address.h"
#include "common/upstream/upstream_address.h"

namespace kdns::nanny {
namespace {

// The value of option `arg` when it is --long=V, --long V, -sV or -s V; nullopt when `arg`
// is another option. *consumed_next tells whether the value was the next argument.
std::optional<std::string_view> OptionValue(const std::vector<std::string>& args, size_t i,
                                            std::string_view long_name, char short_name,
                                            bool* consumed_next, bool* missing) {
  std::string_view arg = args[i];
  *consumed_next = false;
  *missing = false;
  const std::string long_flag = "--" + std::string(long_name);
  const char short_flag[] = {'-', short_name, '\0'};
  if (arg.starts_with(long_flag + "=")) return arg.substr(long_flag.size() + 1);
  if (arg == long_flag || arg == short_flag) {
    if (i + 1 >= args.size()) {
      *missing = true;
      return std::string_view();
    }
    *consumed_next = true;
    return std::string_view(args[i + 1]);
  }
  if (arg.size() > 2 && arg[0] == '-' && arg[1] == short_name) return arg.substr(2);
  return std::nullopt;
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
      auto port = upstream::ParsePort(*value, upstream::PortZero::kAllow);
      if (missing || !port) {
        *error = "child argument --port: not a port: \"" + std::string(*value) + "\"";
        return false;
      }
      result.port = *port;
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
    result.addresses.push_back(*loop::SocketAddress::FromHostPort(ip.ToString(), result.port));
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

}  // namespace kdns::nanny
