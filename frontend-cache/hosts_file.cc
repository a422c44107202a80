#include "frontend-cache/hosts_file.h"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "common/base/next_line.h"

namespace kdns::frontend {

namespace {

// The next whitespace-separated field of `line`, consumed from it.
std::string_view NextField(std::string_view* line) {
  const size_t start = line->find_first_not_of(" \t");
  if (start == std::string_view::npos) {
    *line = {};
    return {};
  }
  const size_t end = line->find_first_of(" \t", start);
  const std::string_view field = line->substr(start, end - start);
  *line = end == std::string_view::npos ? std::string_view() : line->substr(end);
  return field;
}

}  // namespace

HostsFile ParseHostsFile(std::string_view text) {
  HostsFile file;
  size_t number = 0;
  while (!text.empty()) {
    ++number;
    std::string_view line = NextLine(&text);
    if (const size_t hash = line.find('#'); hash != std::string_view::npos) {
      line = line.substr(0, hash);
    }
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    const std::string_view address_text = NextField(&line);
    if (address_text.empty()) continue;
    const std::string where = "line " + std::to_string(number) + ": ";
    std::optional<IpAddress> address = IpAddress::Parse(address_text);
    if (!address) {
      file.skipped.push_back(where + "\"" + std::string(address_text) + "\" is not an IP address");
      continue;
    }
    HostsEntry entry{*address, {}};
    bool bad = false;
    for (std::string_view name = NextField(&line); !name.empty(); name = NextField(&line)) {
      std::optional<dns::Name> parsed = dns::Name::FromText(name);
      if (!parsed || parsed->IsRoot()) {
        file.skipped.push_back(where + "\"" + std::string(name) + "\" is not a host name");
        bad = true;
        break;
      }
      entry.names.push_back(parsed->Lowercased());
    }
    if (bad) continue;
    if (entry.names.empty()) {
      file.skipped.push_back(where + "no name after " + std::string(address_text));
      continue;
    }
    file.entries.push_back(std::move(entry));
  }
  return file;
}

bool LoadHostsFile(const std::string& path, HostsFile* file, std::string* error) {
  std::ifstream in(path);
  if (!in) {
    *error = path + ": cannot read it: " + std::strerror(errno);
    return false;
  }
  std::stringstream text;
  text << in.rdbuf();
  *file = ParseHostsFile(text.str());
  return true;
}

}  // namespace kdns::frontend
