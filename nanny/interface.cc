#include "nanny/interface.h"

#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>

#include <algorithm>
#include <cstring>
#include <span>

namespace kdns::nanny {
namespace {

std::string Prefix(const IpAddress& address) {
  return address.ToString() + (address.is_v6() ? "/128" : "/32");
}

}  // namespace

InterfaceState ReadInterface(const std::string& name) {
  InterfaceState state;
  state.exists = if_nametoindex(name.c_str()) != 0;
  if (!state.exists) return state;
  ifaddrs* list = nullptr;
  if (getifaddrs(&list) != 0) return state;
  for (const ifaddrs* entry = list; entry != nullptr; entry = entry->ifa_next) {
    if (entry->ifa_name == nullptr || name != entry->ifa_name) continue;
    if ((entry->ifa_flags & IFF_UP) != 0) state.up = true;
    const sockaddr* address = entry->ifa_addr;
    if (address == nullptr) continue;
    if (address->sa_family == AF_INET) {
      const auto* v4 = reinterpret_cast<const sockaddr_in*>(address);
      state.addresses.push_back(IpAddress::FromV4(
          std::span<const uint8_t, 4>(reinterpret_cast<const uint8_t*>(&v4->sin_addr), 4)));
    } else if (address->sa_family == AF_INET6) {
      const auto* v6 = reinterpret_cast<const sockaddr_in6*>(address);
      state.addresses.push_back(IpAddress::FromV6(
          std::span<const uint8_t, 16>(reinterpret_cast<const uint8_t*>(&v6->sin6_addr), 16)));
    }
  }
  freeifaddrs(list);
  return state;
}

std::vector<IpAddress> MissingAddresses(const std::vector<IpAddress>& wanted,
                                        const std::vector<IpAddress>& held) {
  std::vector<IpAddress> missing;
  for (const IpAddress& address : wanted) {
    if (std::find(held.begin(), held.end(), address) == held.end()) missing.push_back(address);
  }
  return missing;
}

LocalInterface::LocalInterface(std::string name, std::vector<IpAddress> addresses,
                               CommandRunner& runner, InterfaceReader reader)
    : name_(std::move(name)),
      addresses_(std::move(addresses)),
      runner_(runner),
      reader_(std::move(reader)) {}

bool LocalInterface::Run(const std::vector<std::string>& argv, std::string* error) {
  const CommandResult result = runner_.Run(argv);
  if (!result.ok()) *error = result.Describe(argv);
  return result.ok();
}

bool LocalInterface::Setup(std::string* error) {
  InterfaceState state = reader_(name_);
  if (!state.exists) {
    std::string why;
    if (!Run({"ip", "link", "add", name_, "type", "dummy"}, &why)) {
      *error = "-interfacename " + name_ + ": no such interface, and it cannot be created as a " +
               "dummy link (" + why + "); name an existing interface, or -setupinterface=false";
      return false;
    }
    created_ = true;
    state = reader_(name_);
  }
  bool changed = false;
  ok_ = Complete(state, &changed, error);
  return ok_;
}

bool LocalInterface::Complete(const InterfaceState& state, bool* changed, std::string* error) {
  *changed = false;
  for (const IpAddress& address : MissingAddresses(addresses_, state.addresses)) {
    std::vector<std::string> argv = {
        "ip", address.is_v6() ? "-6" : "-4", "addr", "add", Prefix(address), "dev", name_};
    // Without DAD the address can be bound at once (it is ours alone).
    if (address.is_v6()) argv.push_back("nodad");
    if (!Run(argv, error)) return false;
    *changed = true;
  }
  if (!state.up) {
    if (!Run({"ip", "link", "set", name_, "up"}, error)) return false;
    *changed = true;
  }
  return true;
}

SyncOutcome LocalInterface::Sync(std::string* error) {
  InterfaceState state = reader_(name_);
  bool recreated = false;
  if (!state.exists) {
    if (!created_) {
      *error = "interface " + name_ + " is gone";
      ok_ = false;
      return SyncOutcome::kFailed;
    }
    if (!Run({"ip", "link", "add", name_, "type", "dummy"}, error)) {
      ok_ = false;
      return SyncOutcome::kFailed;
    }
    recreated = true;
    state = reader_(name_);
  }
  bool changed = false;
  ok_ = Complete(state, &changed, error);
  if (!ok_) return SyncOutcome::kFailed;
  return changed || recreated ? SyncOutcome::kRepaired : SyncOutcome::kInPlace;
}

bool LocalInterface::Teardown(std::string* error) {
  ok_ = false;
  if (created_) return Run({"ip", "link", "del", name_}, error);
  const InterfaceState state = reader_(name_);
  bool ok = true;
  for (const IpAddress& address : addresses_) {
    if (std::find(state.addresses.begin(), state.addresses.end(), address) ==
        state.addresses.end()) {
      continue;
    }
    std::string failed;
    if (!Run({"ip", address.is_v6() ? "-6" : "-4", "addr", "del", Prefix(address), "dev", name_},
             &failed)) {
      if (ok) *error = failed;
      ok = false;
    }
  }
  return ok;
}

}  // namespace kdns::nanny
