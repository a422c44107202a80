// SetThreadName: names the calling thread as `top -H`, `ps -L`, perf and
// /proc/PID/task/TID/comm show it, so an operator (and the benchmarks, which split a
// program's CPU by thread) can tell the DNS threads from the receiver, HTTP and source
// threads. The kernel keeps 15 bytes; a longer name is cut there. Thread: the caller's.
#pragma once

#include <pthread.h>

#include <string>
#include <string_view>

namespace kdns {

inline void SetThreadName(std::string_view name) {
  const std::string kept(name.substr(0, 15));
  (void)pthread_setname_np(pthread_self(), kept.c_str());
}

}  // namespace kdns
