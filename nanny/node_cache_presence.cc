#include "nanny/node_cache_presence.h"

#include <sys/random.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <fstream>
#include <sstream>

namespace kdns::nanny {
namespace {

std::string RandomId() {
  uint32_t value = 0;
  if (getrandom(&value, sizeof(value), 0) != sizeof(value)) {
    value = static_cast<uint32_t>(getpid()) ^ static_cast<uint32_t>(time(nullptr));
  }
  char text[9];
  snprintf(text, sizeof(text), "%08x", value);
  return text;
}

}  // namespace

std::vector<std::string> PresentIds(const std::string& listing) {
  // Each line ends with the path; an abstract one is printed with a leading '@'.
  const std::string marker = "@" + std::string(kPresencePrefix);
  std::vector<std::string> ids;
  std::istringstream lines(listing);
  std::string line;
  while (std::getline(lines, line)) {
    const size_t at = line.rfind(' ');
    if (at == std::string::npos || line.compare(at + 1, marker.size(), marker) != 0) continue;
    ids.push_back(line.substr(at + 1 + marker.size()));
  }
  return ids;
}

NodeCachePresence::NodeCachePresence(std::string unix_listing)
    : unix_listing_(std::move(unix_listing)), id_(RandomId()) {}

NodeCachePresence::~NodeCachePresence() { Withdraw(); }

bool NodeCachePresence::Announce(std::string* error) {
  fd_ = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd_ < 0) {
    *error = std::string("presence socket: ") + strerror(errno);
    return false;
  }
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  const std::string name = std::string(kPresencePrefix) + id_;
  // sun_path[0] == '\0': the abstract namespace.
  memcpy(address.sun_path + 1, name.data(), name.size());
  const auto length = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + name.size());
  if (bind(fd_, reinterpret_cast<const sockaddr*>(&address), length) != 0) {
    *error = "presence socket @" + name + ": " + strerror(errno);
    Withdraw();
    return false;
  }
  return true;
}

void NodeCachePresence::Withdraw() {
  if (fd_ >= 0) close(fd_);
  fd_ = -1;
}

bool NodeCachePresence::OthersAlive() const {
  std::ifstream file(unix_listing_);
  std::stringstream listing;
  listing << file.rdbuf();
  const std::vector<std::string> ids = PresentIds(listing.str());
  return std::any_of(ids.begin(), ids.end(), [this](const std::string& id) { return id != id_; });
}

}  // namespace kdns::nanny
