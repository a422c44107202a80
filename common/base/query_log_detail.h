// QueryLogDetail: how much the query log (common/server/query_log.h) writes per query, here
// at the bottom layer so that what sets it from outside (the kube-dns ConfigMap's
// kdns.logQueries switch, common/config/runtime_switches.h) needs no server code.
#pragma once

#include <cstdint>

namespace kdns {

// kOff: nothing; kBasic: --log-queries' line; kExtra: --log-queries=extra's (ID, transport,
// size too).
enum class QueryLogDetail : uint8_t { kOff, kBasic, kExtra };

}  // namespace kdns
