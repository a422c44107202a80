#include "common/server/waiting_queries.h"

#include <glog/logging.h>

namespace kdns::server {

bool WaitingBudget::TryTake() { return slots_.TryTake(); }

void WaitingBudget::Give(size_t count) {
  if (count == 0) return;
  DCHECK_GE(slots_.used(), count) << "more waiting-query slots given back than taken";
  slots_.Give(count);
}

}  // namespace kdns::server
