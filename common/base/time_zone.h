// Process set-up for glibc's time zone state, before any thread starts.
//
// glog formats every log line with mktime(), and with TZ unset glibc's tzset_internal frees
// and re-copies its saved zone name on every such call, under a lock the sanitizers cannot
// see (TSan reports a race between any two threads that log). With TZ set, glibc compares
// it with the saved name and returns early. ":/etc/localtime" means what an unset TZ means.
#pragma once

#include <cstdlib>
#include <ctime>

namespace kdns {

inline void InitTimeZoneBeforeThreads() {
  setenv("TZ", ":/etc/localtime", /*overwrite=*/0);
  tzset();
}

}  // namespace kdns
