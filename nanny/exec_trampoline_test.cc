#include "nanny/exec_trampoline.h"

#include <pthread.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <csignal>

namespace kdns::nanny {

TEST_CASE("the signal masks of /proc/<pid>/status are read", "[nanny]") {
  const char* status =
      "Name:\tfrontend-cache\nState:\tS (sleeping)\nSigQ:\t0/63457\nSigPnd:\t0000000000000000\n"
      "ShdPnd:\t0000000000000000\nSigBlk:\t0000000000014203\nSigIgn:\t0000000000001001\n"
      "SigCgt:\t00000001800004ec\nCapInh:\t0000000000000000\n";
  auto masks = ParseSignalMasks(status);
  REQUIRE(masks.has_value());
  CHECK(masks->blocked == 0x14203);
  CHECK(masks->ignored == 0x1001);
  CHECK(masks->caught == 0x1800004ec);
  CHECK_FALSE(ParseSignalMasks("SigBlk:\t0\nSigIgn:\t0\n").has_value());
  CHECK_FALSE(ParseSignalMasks("SigBlk:\tzz\nSigIgn:\t0\nSigCgt:\t0\n").has_value());
}

namespace {
void OnUrg(int) {}
}  // namespace

TEST_CASE("a signal is safe to send once it is ignored or caught, not merely blocked", "[nanny]") {
  // This process: SIGURG is none of them by default.
  sigset_t set, old;
  sigemptyset(&set);
  sigaddset(&set, SIGURG);
  CHECK_FALSE(SignalIsSafe(getpid(), SIGURG));
  // Blocked only: it would act by default once unblocked (processes block everything for
  // a moment around fork).
  REQUIRE(pthread_sigmask(SIG_BLOCK, &set, &old) == 0);
  CHECK_FALSE(SignalIsSafe(getpid(), SIGURG));
  REQUIRE(pthread_sigmask(SIG_SETMASK, &old, nullptr) == 0);
  auto previous = std::signal(SIGURG, SIG_IGN);
  CHECK(SignalIsSafe(getpid(), SIGURG));
  std::signal(SIGURG, &OnUrg);
  CHECK(SignalIsSafe(getpid(), SIGURG));
  std::signal(SIGURG, previous);
  CHECK_FALSE(SignalIsSafe(0, SIGHUP));  // no such /proc entry
}

TEST_CASE("the trampoline runs the child with the nanny binary in front", "[nanny]") {
  CHECK(TrampolineArgv("/bin/nanny", {"/bin/frontend-cache", "-k"}) ==
        std::vector<std::string>{"/bin/nanny", "--kdns-exec-child", "/bin/frontend-cache", "-k"});
  const char* argv[] = {"nanny", "--kdns-exec-child", "/bin/true"};
  CHECK(IsExecTrampoline(3, argv));
  CHECK_FALSE(IsExecTrampoline(2, argv));
  auto self = SelfExecutable();
  REQUIRE(self.has_value());
  CHECK(access(self->c_str(), X_OK) == 0);
}

}  // namespace kdns::nanny
