// Mix64: MurmurHash3's 64-bit finalizer (fmix64), which spreads keys that differ in a few
// bits over all 64. The one integer mixer of the project: the frontend-cache's name hash
// and the rate limits' tables (common/server/rate_table.h) finish with it. Not
// cryptographic; its users bound what a client can do with a collision (short probe runs).
// Pure; any thread.
#pragma once

#include <cstdint>

namespace kdns {

constexpr uint64_t Mix64(uint64_t x) {
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdull;
  x ^= x >> 33;
  x *= 0xc4ceb9fe1a85ec53ull;
  x ^= x >> 33;
  return x;
}

}  // namespace kdns
