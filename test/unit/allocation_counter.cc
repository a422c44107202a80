// How the count is taken: sanitizer runtimes own malloc, so under ASan and TSan it comes
// from their allocation hook; in plain builds this binary's malloc wraps glibc's (operator
// new calls malloc, so C++ allocations are counted too).
#include "test/unit/allocation_counter.h"

#include <atomic>

namespace {
std::atomic<size_t> g_allocations{0};
}  // namespace

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
// From <sanitizer/allocator_interface.h>, which GCC 12 does not ship.
extern "C" int __sanitizer_install_malloc_and_free_hooks(void (*malloc_hook)(const volatile void*,
                                                                             size_t),
                                                         void (*free_hook)(const volatile void*));
namespace {
void CountAllocation(const volatile void*, size_t) {
  g_allocations.fetch_add(1, std::memory_order_relaxed);
}
void IgnoreFree(const volatile void*) {}
const int g_hooks_installed =
    __sanitizer_install_malloc_and_free_hooks(CountAllocation, IgnoreFree);
}  // namespace
#else
// NOLINTNEXTLINE(bugprone-reserved-identifier): glibc's own malloc, which ours wraps.
extern "C" void* __libc_malloc(size_t size);
extern "C" void* malloc(size_t size) {
  g_allocations.fetch_add(1, std::memory_order_relaxed);
  return __libc_malloc(size);
}
#endif

namespace kdns::testing {

size_t AllocationCount() { return g_allocations.load(std::memory_order_relaxed); }

}  // namespace kdns::testing
