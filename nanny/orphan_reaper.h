// OrphanReaper: the duty of PID 1. Processes orphaned inside the container (a dnsmasq
// helper whose parent died, anything a child double-forked) are re-parented to the nanny;
// once they exit they stay zombies until someone waits for them. libuv only waits for the
// children it spawned, so this reaps the others: at every SIGCHLD and once a second it
// peeks at an exited child (waitid with WNOWAIT) and waits for it unless it is one of ours,
// which libuv reaps itself.
//
// Active only where orphans can arrive: as PID 1, or as a child subreaper
// (PR_SET_CHILD_SUBREAPER). Thread: the loop's thread only.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <functional>

#include "common/loop/loop.h"
#include "common/loop/signal.h"
#include "common/loop/timer.h"

namespace kdns::nanny {

class OrphanReaper {
 public:
  // `is_ours(pid)`: a child libuv waits for (never reaped here).
  OrphanReaper(loop::Loop& loop, std::function<bool(pid_t)> is_ours);
  ~OrphanReaper();
  OrphanReaper(const OrphanReaper&) = delete;
  OrphanReaper& operator=(const OrphanReaper&) = delete;

  // Starts when this process is PID 1 or a child subreaper (or `force`); returns whether it
  // did.
  bool Start(bool force = false);
  void Stop();
  // Reaps every exited orphan now.
  void ReapNow();
  uint64_t reaped() const { return reaped_; }

 private:
  std::function<bool(pid_t)> is_ours_;
  loop::Signal sigchld_;
  loop::Timer timer_;
  uint64_t reaped_ = 0;
};

}  // namespace kdns::nanny
