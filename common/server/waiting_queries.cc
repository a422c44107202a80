#include "common/server/waiting_queries.h"

#include <glog/logging.h>

namespace kdns::server {

bool WaitingBudget::TryTake() {
  // Optimistic: a racing thread may see the count one over max_ for an instant, never
  // more than one per thread, and backs out at once.
  if (waiting_.fetch_add(1, std::memory_order_relaxed) < max_) return true;
  waiting_.fetch_sub(1, std::memory_order_relaxed);
  return false;
}

void WaitingBudget::Give(size_t count) {
  if (count == 0) return;
  const size_t before = waiting_.fetch_sub(count, std::memory_order_relaxed);
  DCHECK_GE(before, count) << "more waiting-query slots given back than taken";
}

}  // namespace kdns::server
