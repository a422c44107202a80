#include "common/upstream/random.h"

#include <sys/random.h>

#include <cerrno>
#include <cstring>
#include <random>

namespace kdns::upstream {

uint16_t SecureRandom::Next16() {
  uint16_t value;
  Take(&value, sizeof(value));
  return value;
}

uint64_t SecureRandom::Next64() {
  uint64_t value;
  Take(&value, sizeof(value));
  return value;
}

void SecureRandom::Take(void* out, size_t size) {
  if (buffer_.size() - used_ < size) Refill();
  std::memcpy(out, buffer_.data() + used_, size);
  used_ += size;
}

void SecureRandom::Refill() {
  size_t filled = 0;
  while (filled < buffer_.size()) {
    ssize_t n = getrandom(buffer_.data() + filled, buffer_.size() - filled, 0);
    if (n > 0) {
      filled += static_cast<size_t>(n);
    } else if (n < 0 && errno == EINTR) {
      continue;
    } else {
      break;
    }
  }
  if (filled < buffer_.size()) {
    std::random_device device;
    for (size_t i = filled; i < buffer_.size(); ++i) buffer_[i] = static_cast<uint8_t>(device());
  }
  used_ = 0;
}

}  // namespace kdns::upstream
