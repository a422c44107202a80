// TaskQueue: runs std::function tasks on a loop's thread, posted from any thread. Posting
// appends under a mutex and wakes the loop with uv_async_send; the loop swaps the whole
// vector out under the lock and runs the tasks in posting order without holding it.
//
// Lifetime at shutdown: other threads post through a Poster, which shares the queue's
// state rather than pointing at the TaskQueue. Once the TaskQueue is destroyed, Post()
// returns false and does nothing, so a late post from another thread is never a
// use-after-free. Tasks still queued at destruction are discarded without running (their
// captures are destroyed on the destroying thread).
//
// Thread: the TaskQueue itself lives on the loop's thread; Poster::Post and TaskQueue::Post
// may be called from any thread.
#pragma once

#include <functional>
#include <memory>
#include <mutex>
#include <vector>

#include "common/loop/loop.h"

namespace kdns::loop {

class TaskQueue {
 public:
  using Task = std::function<void()>;

  // Shared handle for other threads. Copyable; safe to outlive the TaskQueue.
  class Poster {
   public:
    Poster() = default;
    // False (task dropped) if the queue is gone.
    bool Post(Task task) const;

   private:
    friend class TaskQueue;
    struct State;
    explicit Poster(std::shared_ptr<State> state) : state_(std::move(state)) {}
    std::shared_ptr<State> state_;
  };

  explicit TaskQueue(Loop& loop);
  ~TaskQueue();
  TaskQueue(const TaskQueue&) = delete;
  TaskQueue& operator=(const TaskQueue&) = delete;

  bool Post(Task task) const { return poster_.Post(std::move(task)); }
  Poster poster() const { return poster_; }

 private:
  static void OnAsync(uv_async_t* handle) noexcept;

  Poster poster_;
};

}  // namespace kdns::loop
