// Tests' view of which memory the kernel has backed: for checks that a buffer or table
// costs resident memory only once it is used (ZeroedArray and the buffers made from it).
#pragma once

#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <vector>

namespace kdns::testing {

// Pages wholly inside [start, start + bytes) that are resident (mincore); -1 when mincore
// fails (a range that is not mapped).
inline long ResidentPages(const void* start, size_t bytes) {
  const uintptr_t page = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
  const uintptr_t begin = (reinterpret_cast<uintptr_t>(start) + page - 1) / page * page;
  const uintptr_t end = (reinterpret_cast<uintptr_t>(start) + bytes) / page * page;
  if (end <= begin) return 0;
  std::vector<unsigned char> resident((end - begin) / page);
  if (mincore(reinterpret_cast<void*>(begin), end - begin, resident.data()) != 0) return -1;
  long count = 0;
  for (unsigned char r : resident) count += r & 1;
  return count;
}

}  // namespace kdns::testing
