// ThreadReadBuffer: the calling thread's buffer for libuv stream reads whose bytes the read
// callback consumes before it returns (TcpConnection, ChildProcess), so one buffer serves
// every stream of a loop instead of one per stream.
//
// Allocated on the thread's first read, not as a thread_local array: a thread_local array
// lives in the static TLS block that glibc copies and clears for every thread the process
// starts, so 64 KiB of it became resident in each of the servers' DNS and receiver
// threads, which never read a stream unless a client speaks TCP to them (docs/operators.md,
// "Memory per thread").
//
// Thread: any; the buffer is the caller's, valid until the thread ends. uv_alloc_cb safe
// (no exception: std::bad_alloc ends the process, as every allocation on the loop does).
#pragma once

#include <uv.h>

#include <cstddef>

namespace kdns::loop {

// A buffer of `size_bytes` for one read; the same memory on every call of the thread,
// grown when a call asks for more than before.
uv_buf_t ThreadReadBuffer(size_t size_bytes) noexcept;

}  // namespace kdns::loop
