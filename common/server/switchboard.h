// Switchboard: applies the kube-dns ConfigMap's runtime switches (kdns.logQueries,
// kdns.debugData; common/config/runtime_switches.h) to a running server, the same way in
// kubedns and frontend-cache: the query log's detail (QueryLog::SetDetail) and the debug
// address's server (MakeDebugServer plus the program's own routes), started and stopped
// while the DNS threads keep answering. A switch that is absent leaves the program's flag
// in charge (--log-queries, --debug-address); without --debug-address, kdns.debugData
// "true" serves on kDefaultDebugHost and the program's default port.
//
// Start-up and run time differ as STYLE.md's errors do: the debug address that cannot be
// bound at Start() is a start-up problem (Start fails, the program stops with one line);
// one that cannot be bound later, when a ConfigMap edit asks for it, is logged and the
// debug data stays off. Switches applied before Start() (a first ConfigMap pass) are kept
// for Start() to decide.
//
// Ownership and threads: owns the debug server thread. Apply may come from a config
// thread while Start, Stop and debug_address run on the owner's: one mutex guards all.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "common/config/runtime_switches.h"
#include "common/http/server_thread.h"
#include "common/loop/socket_address.h"
#include "common/server/query_log.h"

namespace kdns::server {

class Switchboard {
 public:
  struct Options {
    QueryLogOptions::Detail log_queries_flag = QueryLogOptions::Detail::kOff;
    std::optional<loop::SocketAddress> debug_address_flag;  // --debug-address
    uint16_t default_debug_port = 0;  // when kdns.debugData asks without the flag
    // Makes the debug server, not started, for an address (MakeDebugServer and the
    // program's routes).
    std::function<std::unique_ptr<http::ServerThread>(const loop::SocketAddress&)> make_debug;
  };

  Switchboard(Options options, QueryLog& query_log);
  ~Switchboard() { Stop(); }
  Switchboard(const Switchboard&) = delete;
  Switchboard& operator=(const Switchboard&) = delete;

  // Serves the debug data if the switches (or, absent, the flag) say so. False with a
  // one-line *error when it cannot be bound.
  [[nodiscard]] bool Start(std::string* error);
  // Applies `switches`: at once after Start(), else kept for Start().
  void Apply(const config::RuntimeSwitches& switches);
  // Stops the debug server; no Apply starts it again.
  void Stop();

  // Where the debug data is served now; unspecified when it is not.
  loop::SocketAddress debug_address() const;

 private:
  bool DebugWanted() const;             // under mu_
  bool StartDebug(std::string* error);  // under mu_
  void ApplyLogQueries();               // under mu_

  const Options options_;
  QueryLog& query_log_;
  mutable std::mutex mu_;
  config::RuntimeSwitches switches_;           // Guarded by mu_.
  std::unique_ptr<http::ServerThread> debug_;  // Guarded by mu_; null: not served.
  enum class Phase { kBeforeStart, kRunning, kStopped } phase_ = Phase::kBeforeStart;  // mu_
};

}  // namespace kdns::server
