#include "common/server/switchboard.h"

#include <glog/logging.h>

#include <utility>

#include "common/server/debug_http.h"

namespace kdns::server {

Switchboard::Switchboard(Options options, QueryLog& query_log)
    : options_(std::move(options)), query_log_(query_log) {}

bool Switchboard::Start(std::string* error) {
  std::lock_guard lock(mu_);
  if (DebugWanted() && !StartDebug(error)) return false;
  phase_ = Phase::kRunning;
  return true;
}

void Switchboard::Apply(const config::RuntimeSwitches& switches) {
  std::lock_guard lock(mu_);
  if (phase_ == Phase::kStopped) return;
  switches_ = switches;
  ApplyLogQueries();
  if (phase_ != Phase::kRunning) return;  // Start() decides about the debug data
  const bool wanted = DebugWanted();
  if (wanted == (debug_ != nullptr)) return;
  if (!wanted) {
    debug_->Stop();
    debug_.reset();
    LOG(INFO) << "debug data no longer served (the kube-dns ConfigMap's " << config::kDebugDataKey
              << ")";
    return;
  }
  std::string error;
  if (!StartDebug(&error)) {
    // Outside input asked for it: the server keeps running, the debug data stays off.
    LOG(ERROR) << "debug data not served: " << error;
    return;
  }
  LOG(INFO) << "debug data served on " << debug_->local_address().ToString()
            << " (the kube-dns ConfigMap's " << config::kDebugDataKey << ")";
}

void Switchboard::Stop() {
  std::lock_guard lock(mu_);
  phase_ = Phase::kStopped;
  if (debug_) debug_->Stop();
  debug_.reset();
}

loop::SocketAddress Switchboard::debug_address() const {
  std::lock_guard lock(mu_);
  return debug_ ? debug_->local_address() : loop::SocketAddress();
}

bool Switchboard::DebugWanted() const {
  return switches_.debug_data.value_or(options_.debug_address_flag.has_value());
}

bool Switchboard::StartDebug(std::string* error) {
  const loop::SocketAddress address = options_.debug_address_flag.value_or(
      *loop::SocketAddress::FromHostPort(kDefaultDebugHost, options_.default_debug_port));
  auto server = options_.make_debug(address);
  if (!server->Start(error)) {
    *error = "--debug-address " + address.ToString() + ": " + *error;
    return false;
  }
  debug_ = std::move(server);
  return true;
}

void Switchboard::ApplyLogQueries() {
  const QueryLogOptions::Detail detail = switches_.log_queries.value_or(options_.log_queries_flag);
  if (detail == query_log_.detail()) return;
  query_log_.SetDetail(detail);
  LOG(INFO) << "query log: " << config::LogQueriesSwitchValue(detail) << " ("
            << (switches_.log_queries
                    ? "the kube-dns ConfigMap's " + std::string(config::kLogQueriesKey)
                    : std::string("--log-queries"))
            << ")";
}

}  // namespace kdns::server
