#include "common/base/heap.h"

#include <malloc.h>

namespace kdns {

void ReleaseFreeHeap() { malloc_trim(0); }

}  // namespace kdns
