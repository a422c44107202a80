#include "nanny/atomic_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

namespace kdns::nanny {

bool WriteFileAtomically(const std::string& path, std::string_view contents, std::string* error) {
  const std::string temp = path + ".tmp";
  auto fail = [&](const char* what, int fd) {
    const int err = errno;
    *error = path + ": " + what + ": " + std::strerror(err);
    if (fd >= 0) close(fd);
    unlink(temp.c_str());
    return false;
  };
  int fd = open(temp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return fail("open", -1);
  size_t done = 0;
  while (done < contents.size()) {
    ssize_t n = write(fd, contents.data() + done, contents.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return fail("write", fd);
    done += static_cast<size_t>(n);
  }
  if (close(fd) != 0) return fail("close", -1);
  if (rename(temp.c_str(), path.c_str()) != 0) return fail("rename", -1);
  return true;
}

}  // namespace kdns::nanny
