// UniqueFd: owns a file descriptor and closes it when it goes out of scope (a negative one
// is nothing to close). For a function that opens a file and returns on many paths.
// Not copyable. Thread: the owner's.
#pragma once

#include <unistd.h>

namespace kdns {

class UniqueFd {
 public:
  explicit UniqueFd(int fd) : fd_(fd) {}
  ~UniqueFd() {
    if (fd_ >= 0) close(fd_);
  }
  UniqueFd(const UniqueFd&) = delete;
  UniqueFd& operator=(const UniqueFd&) = delete;
  int get() const { return fd_; }

 private:
  int fd_;
};

}  // namespace kdns
