// frontend-cache's view of resolv.conf(5): the parser lives in common/upstream/resolv_conf.h
// (kubedns reads the same file); this adapts its nameservers to upstream::UpstreamAddress (port
// 53). Start-up and reload paths only; no thread affinity.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "common/upstream/upstream_address.h"

namespace kdns::frontend {

struct ResolvConf {
  std::vector<upstream::UpstreamAddress> nameservers;
  std::vector<std::string> skipped_lines;
};

ResolvConf ParseResolvConf(std::string_view text);

// Reads and parses `path`. False with a one-line error when the file cannot be read.
[[nodiscard]] bool LoadResolvConf(const std::string& path, ResolvConf* conf, std::string* error);

}  // namespace kdns::frontend
