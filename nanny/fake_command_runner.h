// FakeCommandRunner: a scripted CommandRunner for the tests of the node-local code
// (firewall, interface, node_local): it records every command and answers each from a
// script keyed by the command line ("nft list table inet kdns-nodelocal"), or by a handler
// that sees the whole argv (a fake firewall or interface that changes with the commands).
// Unscripted commands succeed with no output.
//
// Test-only. Thread: the test's.
#pragma once

#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "nanny/command_runner.h"

namespace kdns::nanny::testing {

inline std::string Joined(const std::vector<std::string>& argv) {
  std::string text;
  for (const std::string& arg : argv) text += (text.empty() ? "" : " ") + arg;
  return text;
}

class FakeCommandRunner final : public CommandRunner {
 public:
  CommandResult Run(const std::vector<std::string>& argv) override {
    const std::string line = Joined(argv);
    commands.push_back(line);
    if (handler) return handler(argv);
    auto scripted = script.find(line);
    if (scripted != script.end()) return scripted->second;
    return CommandResult{0, "", ""};
  }
  bool Exists(const std::string& program) override { return installed.contains(program); }

  // The commands run whose line starts with `prefix`.
  std::vector<std::string> RunWith(const std::string& prefix) const {
    std::vector<std::string> out;
    for (const std::string& line : commands) {
      if (line.starts_with(prefix)) out.push_back(line);
    }
    return out;
  }

  std::vector<std::string> commands;
  std::map<std::string, CommandResult> script;
  std::function<CommandResult(const std::vector<std::string>&)> handler;
  std::set<std::string> installed = {"nft", "iptables", "ip6tables", "ip"};
};

}  // namespace kdns::nanny::testing
