// NftSession: nftables commands (the `nft -f` language) run over a netlink socket this
// process holds open for the session's life. A table created through it with `flags owner`
// (Linux >= 5.12) belongs to that socket: the kernel refuses changes to it from any other
// socket and deletes it when the socket closes, that is when the process exits however it
// exits (SIGKILL, the OOM killer). That is why the nanny writes its node-local rules over its
// own socket and not with an `nft` child: rules that die with the nanny, not with a helper.
//
// LoadLibNftables() is the real one: libnftables (libnftables.so.1, the library `nft` itself
// is built on, so it is on every node that has `nft`), loaded at run time, so the build needs
// no headers for it and a node without it falls back to the `nft` command (firewall.h).
//
// Thread: one at a time (the nanny's loop).
#pragma once

#include <memory>
#include <string>

namespace kdns::nanny {

class NftSession {
 public:
  virtual ~NftSession() = default;
  // Runs `commands` as one transaction. False with nft's error message, on one line.
  [[nodiscard]] virtual bool Run(const std::string& commands, std::string* error) = 0;
};

// nullptr with *error when libnftables cannot be loaded or opened.
std::unique_ptr<NftSession> LoadLibNftables(std::string* error);

}  // namespace kdns::nanny
