// LocalInterface: the network interface that holds the node-local addresses (-localip) in
// node-local mode, with -setupinterface. Changes go through the `ip` command (iproute2,
// which speaks rtnetlink), run by a CommandRunner; the state is read in-process with
// getifaddrs (no command on the sync's common path).
//
//   Setup: the interface (-interfacename) is used when it exists; otherwise it is created
//     as a dummy link (`ip link add NAME type dummy`, as node-cache does), and where the
//     kernel has no dummy link type that is a start-up error asking for an existing one.
//     Every address is added (/32; IPv6 /128 with nodad, so it is usable at once) and the
//     link is brought up.
//   Sync: addresses missing (deleted by another agent) are added again, a link that went
//     down is brought up, a link we created that vanished is created again.
//   Teardown: the link when we created it, else only our addresses.
//
// Thread: the caller's (the nanny's loop).
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "common/base/ip_address.h"
#include "nanny/command_runner.h"
#include "nanny/sync_outcome.h"

namespace kdns::nanny {

struct InterfaceState {
  bool exists = false;
  bool up = false;
  std::vector<IpAddress> addresses;
};

// The interface's state as the kernel reports it now (getifaddrs).
InterfaceState ReadInterface(const std::string& name);
using InterfaceReader = std::function<InterfaceState(const std::string& name)>;

// The addresses of `wanted` that `held` lacks, in `wanted`'s order.
std::vector<IpAddress> MissingAddresses(const std::vector<IpAddress>& wanted,
                                        const std::vector<IpAddress>& held);

class LocalInterface {
 public:
  LocalInterface(std::string name, std::vector<IpAddress> addresses, CommandRunner& runner,
                 InterfaceReader reader = &ReadInterface);

  // False with a one-line *error.
  [[nodiscard]] bool Setup(std::string* error);
  SyncOutcome Sync(std::string* error);
  // False with a one-line *error (the first thing that could not be removed).
  [[nodiscard]] bool Teardown(std::string* error);

  // Whether every address is on the interface and it is up, as of the last Setup or Sync.
  bool ok() const { return ok_; }
  bool created() const { return created_; }
  const std::string& name() const { return name_; }

 private:
  bool Run(const std::vector<std::string>& argv, std::string* error);
  // Adds what `state` lacks; *changed tells whether anything was.
  bool Complete(const InterfaceState& state, bool* changed, std::string* error);

  std::string name_;
  std::vector<IpAddress> addresses_;
  CommandRunner& runner_;
  InterfaceReader reader_;
  bool created_ = false;
  bool ok_ = false;
};

}  // namespace kdns::nanny
