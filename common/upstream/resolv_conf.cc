#include "common/upstream/resolv_conf.h"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <optional>
#include <sstream>

#include "common/base/next_line.h"
#include "common/upstream/upstream_address.h"

namespace kdns::upstream {
namespace {

constexpr std::string_view kSpace = " \t\r";

std::string_view NextWord(std::string_view* line) {
  size_t start = line->find_first_not_of(kSpace);
  if (start == std::string_view::npos) {
    *line = {};
    return {};
  }
  size_t end = line->find_first_of(kSpace, start);
  std::string_view word = line->substr(start, end - start);
  *line = end == std::string_view::npos ? std::string_view() : line->substr(end);
  return word;
}

}  // namespace

ResolvConf ParseResolvConf(std::string_view text) {
  ResolvConf conf;
  while (!text.empty()) {
    std::string_view line = NextLine(&text);
    if (size_t comment = line.find_first_of("#;"); comment != std::string_view::npos) {
      line = line.substr(0, comment);
    }
    std::string_view rest = line;
    const std::string_view keyword = NextWord(&rest);
    if (keyword == "search" || keyword == "domain") {
      conf.search.clear();
      for (std::string_view word = NextWord(&rest); !word.empty(); word = NextWord(&rest)) {
        conf.search.emplace_back(word);
        if (keyword == "domain") break;  // one domain; the rest of the line is ignored
      }
      continue;
    }
    if (keyword != "nameserver") continue;
    std::string_view address_text = NextWord(&rest);
    // A link-local IPv6 server carries a zone ("fe80::1%eth0"), which we cannot use.
    std::optional<IpAddress> address = IpAddress::Parse(address_text);
    if (!address || !NextWord(&rest).empty()) {
      conf.skipped_lines.emplace_back(line);
      continue;
    }
    conf.nameservers.push_back(loop::SocketAddressOf(*address, kDnsPort));
  }
  return conf;
}

bool LoadResolvConf(const std::string& path, ResolvConf* conf, std::string* error) {
  std::ifstream file(path);
  if (!file) {
    const int open_error = errno;
    *error = "cannot read " + path + ": " + std::strerror(open_error);
    return false;
  }
  std::ostringstream text;
  text << file.rdbuf();
  *conf = ParseResolvConf(text.str());
  return true;
}

}  // namespace kdns::upstream
