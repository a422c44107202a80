// SyncOutcome: what one check of the node-local set-up (interface addresses, firewall rules)
// found and did, for the kdns_nodelocal_* metrics (nanny_metrics.h).
//
// A value; no thread affinity.
#pragma once

namespace kdns::nanny {

enum class SyncOutcome {
  kInPlace,   // everything was there
  kRepaired,  // something was missing or altered, and was put back
  kFailed,    // the check or the repair failed (the error says which)
};

}  // namespace kdns::nanny
