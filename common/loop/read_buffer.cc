#include "common/loop/read_buffer.h"

#include "common/base/zeroed_array.h"

namespace kdns::loop {

uv_buf_t ThreadReadBuffer(size_t size_bytes) noexcept {
  // From the kernel: a page becomes resident only once a read that large has used it.
  thread_local ZeroedArray<char> buffer;
  if (buffer.size() < size_bytes) buffer = ZeroedArray<char>(size_bytes);
  return uv_buf_init(buffer.items().data(), static_cast<unsigned>(size_bytes));
}

}  // namespace kdns::loop
