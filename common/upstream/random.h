// SecureRandom: unpredictable numbers for query IDs and loop-probe names, from the
// kernel's CSPRNG (getrandom(2)) read 512 bytes at a time, so a query costs no system call.
// Query IDs must not be guessable by an off-path attacker (RFC 5452 §9.2), which rules out
// seeded Mersenne twisters. If getrandom fails (it does not on Linux >= 3.17 once the pool
// is initialised), std::random_device is used.
//
// Thread: none; one instance per Forwarder, used on its loop thread.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

namespace kdns::upstream {

class SecureRandom {
 public:
  SecureRandom() = default;
  SecureRandom(const SecureRandom&) = delete;
  SecureRandom& operator=(const SecureRandom&) = delete;

  uint16_t Next16();
  uint64_t Next64();

 private:
  void Take(void* out, size_t size);
  void Refill();

  std::array<uint8_t, 512> buffer_{};
  size_t used_ = sizeof(buffer_);
};

}  // namespace kdns::upstream
