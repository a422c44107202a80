// Counts heap allocations in the unit test binary, so a test can prove that a code path
// allocates nothing: compare AllocationCount() before and after it (on one thread; the
// count is process-wide).
#pragma once

#include <cstddef>

namespace kdns::testing {

size_t AllocationCount();

}  // namespace kdns::testing
