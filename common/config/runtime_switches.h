// RuntimeSwitches: what an operator turns on and off in running kube-dns pods without a
// rollout, with nothing but kubectl: two keys of ours in the kube-dns ConfigMap, beside
// kube-dns's, which kubedns (--config-dir) and the nanny (-configDir, handing them to
// frontend-cache in its servers file with a SIGHUP) already watch:
//
//   kdns.logQueries   "true" | "extra" | "false"   the query log (common/server/query_log.h),
//                                                  as --log-queries / --log-queries=extra
//   kdns.debugData    "true" | "false"             the debug data (kubedns's /cache record
//                                                  dump, /debug/top-clients) on the debug
//                                                  address (common/server/debug_http.h)
//
// An absent key leaves the program's flag in charge (--log-queries, --debug-address), so
// removing a key returns to the Deployment's settings. A value is one of those words,
// surrounding whitespace ignored (a YAML block scalar ends in a newline); any other value
// is invalid, and like any invalid value it rejects the whole ConfigMap version
// (kube_dns_config.h). The switches are read with the rest of the ConfigMap, so they are
// applied within the same delay: at once through inotify, at the latest after kubedns's
// --config-period and the nanny's -syncInterval (10 s each by default).
//
// Why the ConfigMap and not a signal or an endpoint: a signal through `kubectl exec` needs
// pods/exec in kube-system (far more than editing one ConfigMap) and reaches one replica at a
// time, lost when the pod is replaced; an endpoint would need its own authentication; the
// ConfigMap is already what the operator's RBAC allows and audits, and holds for every
// replica, new ones included.
//
// Plain values and functions, no thread affinity.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "common/base/query_log_detail.h"

namespace kdns::config {

inline constexpr std::string_view kLogQueriesKey = "kdns.logQueries";
inline constexpr std::string_view kDebugDataKey = "kdns.debugData";

struct RuntimeSwitches {
  std::optional<QueryLogDetail> log_queries;  // nullopt: the flag's
  std::optional<bool> debug_data;             // nullopt: the flag's

  bool empty() const { return !log_queries && !debug_data; }
  // `kdns.logQueries=extra kdns.debugData=false`, the keys set only; empty when none is.
  std::string ToString() const;
  friend bool operator==(const RuntimeSwitches&, const RuntimeSwitches&) = default;
};

// A kdns.logQueries value ("true", "extra", "false"). False with a one-line *error.
[[nodiscard]] bool ParseLogQueriesSwitch(std::string_view value, QueryLogDetail* detail,
                                         std::string* error);
// A kdns.debugData value ("true", "false"). False with a one-line *error.
[[nodiscard]] bool ParseDebugDataSwitch(std::string_view value, bool* on, std::string* error);

// The switches from the ConfigMap's raw values (nullopt: the key is absent). False with a
// one-line *error naming the key of the first invalid value.
[[nodiscard]] bool ParseRuntimeSwitches(const std::optional<std::string>& log_queries,
                                        const std::optional<std::string>& debug_data,
                                        RuntimeSwitches* switches, std::string* error);

// The value ParseLogQueriesSwitch reads back: "true", "extra" or "false".
std::string_view LogQueriesSwitchValue(QueryLogDetail detail);

}  // namespace kdns::config
