// Loop owns one libuv event loop (uv_loop_t). Every other class in kdns::loop takes a Loop&
// and lives on the thread that runs it; one loop per thread. Handles are owned by the
// objects built on the loop (Timer, UdpSocket, ...): each is heap-allocated, closed with
// uv_close in its owner's destructor and freed in the close callback, so an owner may be
// destroyed at any time, even from inside one of its own callbacks.
//
// Shutdown: destroy every owner, then call Close(), which runs the loop until the pending
// close callbacks have run and returns uv_loop_close() == 0. A false return means a handle
// leaked; OpenHandleNames() names the culprits (tests check this after every case).
//
// Thread: a Loop is created, run and closed on one thread. Only TaskQueue::Post (see
// task_queue.h) may be called from other threads.
#pragma once

#include <uv.h>

#include <cstdint>
#include <string>
#include <vector>

namespace kdns::loop {

class Loop {
 public:
  Loop();
  ~Loop();
  Loop(const Loop&) = delete;
  Loop& operator=(const Loop&) = delete;

  // Runs until Stop() is called or no active handle or request is left.
  void Run();
  // Runs one iteration, blocking for I/O if there is nothing ready.
  void RunOnce();
  // Runs one iteration without blocking.
  void RunNoWait();
  // Makes Run() return after the current iteration. Loop thread only.
  void Stop();

  // Runs the loop until pending close callbacks have run, then closes it. Returns false
  // (and leaves the loop usable) if handles are still open. Idempotent once it succeeded.
  [[nodiscard]] bool Close();
  bool closed() const { return closed_; }

  // Cached loop time in milliseconds (uv_now), updated at the start of each iteration.
  uint64_t now_ms() const { return uv_now(loop_); }
  void UpdateTime() { uv_update_time(loop_); }

  // Names ("timer", "udp", "poll", ...) of the handles still open, closing ones marked
  // "(closing)". For leak reports.
  std::vector<std::string> OpenHandleNames() const;

  uv_loop_t* get() { return loop_; }

 private:
  uv_loop_t* loop_;
  bool closed_ = false;
};

}  // namespace kdns::loop
