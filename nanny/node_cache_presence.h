// NodeCachePresence: how the node caches of one node (the old and the new one of a
// DaemonSet update with maxSurge) see each other. Each holds, for its life, an abstract
// unix socket named "kdns-nodelocal/<id>" (<id>: 8 random hex digits, the instance's name,
// also in its nftables table's name). Abstract names belong to the network namespace (a
// hostNetwork pod's is the node's, whatever its PID or mount namespace), go away when the
// process dies however it dies, and are listed in /proc/net/unix: nothing is shared on disk
// (no hostPath) and nothing is left behind.
//
// The teardown asks OthersAlive() after Withdraw(): of two node caches stopping at once, at
// least one sees the other gone (each withdraws before it looks), so shared rules and
// addresses are never left by both.
//
// Thread: the caller's (the nanny's loop).
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace kdns::nanny {

inline constexpr std::string_view kPresencePrefix = "kdns-nodelocal/";

class NodeCachePresence {
 public:
  // `unix_listing`: where the kernel lists unix sockets (tests name a file of their own).
  explicit NodeCachePresence(std::string unix_listing = "/proc/net/unix");
  ~NodeCachePresence();
  NodeCachePresence(const NodeCachePresence&) = delete;
  NodeCachePresence& operator=(const NodeCachePresence&) = delete;

  // Binds our abstract socket. False with a one-line *error.
  [[nodiscard]] bool Announce(std::string* error);
  // Closes it (idempotent).
  void Withdraw();
  // Whether a node cache other than this one holds its socket now.
  bool OthersAlive() const;

  const std::string& id() const { return id_; }

 private:
  std::string unix_listing_;
  std::string id_;
  int fd_ = -1;
};

// The ids of the node caches listed in `listing` (/proc/net/unix's format).
std::vector<std::string> PresentIds(const std::string& listing);

}  // namespace kdns::nanny
