// Giving freed heap memory back to the operating system.
//
// Why: kubedns builds its records from a whole decoded list (a file reload, a re-LIST). The
// decoded objects are freed once the records are built, but glibc keeps freed memory in its
// arenas, so without help the process's RSS stays at the load's peak (issue 18 measured
// 117 MiB steady for 26 MiB of live heap at 10k services / 150k endpoints). Trimming after
// each complete load returns every free page of every arena (malloc_trim(0) madvises the
// free pages inside the heap too, not only its top), so steady RSS follows the live data.
//
// Ownership: process-wide, stateless. Thread: any; ReleaseFreeHeap takes each arena's lock
// in turn, so it may briefly delay other threads' allocations (it runs once per load, never
// per query).
#pragma once

#include <cstddef>

namespace kdns {

// malloc_trim(0): returns the free pages of every malloc arena to the OS. Call once a large
// transient allocation (a decoded list) has been freed.
void ReleaseFreeHeap();

}  // namespace kdns
