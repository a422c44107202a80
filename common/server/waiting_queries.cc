#include "common/server/waiting_queries.h"

#include <glog/logging.h>

#include "common/server/client_limiter.h"

namespace kdns::server {

WaitingBudget::Take WaitingBudget::TryTakeFor(const loop::SocketAddress& client, uint64_t now_ns) {
  if (slots_.used() * 100 >= slots_.max() * (100 - kReservePercent)) {
    if (std::shared_ptr<ClientLimiter> limiter = limiter_.lock();
        limiter != nullptr && !limiter->IsLight(client, now_ns)) {
      return Take::kReserved;
    }
  }
  return slots_.TryTake() ? Take::kTaken : Take::kFull;
}

void WaitingBudget::Give(size_t count) {
  if (count == 0) return;
  DCHECK_GE(slots_.used(), count) << "more waiting-query slots given back than taken";
  slots_.Give(count);
}

}  // namespace kdns::server
