#include "nanny/orphan_reaper.h"

#include <glog/logging.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <utility>

namespace kdns::nanny {

OrphanReaper::OrphanReaper(loop::Loop& loop, std::function<bool(pid_t)> is_ours)
    : is_ours_(std::move(is_ours)), sigchld_(loop), timer_(loop) {}

OrphanReaper::~OrphanReaper() { Stop(); }

bool OrphanReaper::Start(bool force) {
  int subreaper = 0;
  (void)prctl(PR_GET_CHILD_SUBREAPER, &subreaper);
  if (!force && getpid() != 1 && subreaper == 0) return false;
  // libuv's own SIGCHLD handling stays: several watchers may share a signal.
  sigchld_.Start(SIGCHLD, [this](int) { ReapNow(); });
  timer_.StartRepeating(1000, [this] { ReapNow(); });
  return true;
}

void OrphanReaper::Stop() {
  sigchld_.Stop();
  timer_.Stop();
}

void OrphanReaper::ReapNow() {
  while (true) {
    siginfo_t info{};
    if (waitid(P_ALL, 0, &info, WEXITED | WNOHANG | WNOWAIT) != 0 || info.si_pid == 0) return;
    // One of ours first in line: libuv reaps it in this loop iteration; the rest wait for
    // the next SIGCHLD or tick.
    if (is_ours_(info.si_pid)) return;
    int status = 0;
    if (waitpid(info.si_pid, &status, WNOHANG) != info.si_pid) return;
    ++reaped_;
    VLOG(1) << "reaped orphan process " << info.si_pid;
  }
}

}  // namespace kdns::nanny
