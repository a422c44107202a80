#include "frontend-cache/resolv_conf.h"

#include <utility>

#include "common/upstream/resolv_conf.h"

namespace kdns::frontend {
namespace {

ResolvConf Adapt(upstream::ResolvConf parsed) {
  ResolvConf conf;
  for (const IpAddress& address : parsed.nameservers) {
    conf.nameservers.push_back(upstream::UpstreamAddress{address, upstream::kDnsPort});
  }
  conf.skipped_lines = std::move(parsed.skipped_lines);
  return conf;
}

}  // namespace

ResolvConf ParseResolvConf(std::string_view text) { return Adapt(upstream::ParseResolvConf(text)); }

bool LoadResolvConf(const std::string& path, ResolvConf* conf, std::string* error) {
  upstream::ResolvConf parsed;
  if (!upstream::LoadResolvConf(path, &parsed, error)) return false;
  *conf = Adapt(std::move(parsed));
  return true;
}

}  // namespace kdns::frontend
