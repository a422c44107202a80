#include "common/loop/task_queue.h"

#include <glog/logging.h>

#include <utility>

#include "common/loop/handle.h"

namespace kdns::loop {

struct TaskQueue::Poster::State {
  std::mutex mu;
  std::vector<Task> tasks;  // guarded by mu
  // Empty once the TaskQueue is destroyed; guarded by mu. uv_async_send is only called
  // with mu held and async non-empty, and the handle is closed only after it is moved out,
  // so no thread can signal a closed handle.
  UvHandle<uv_async_t> async;
};

bool TaskQueue::Poster::Post(Task task) const {
  if (state_ == nullptr) return false;
  std::lock_guard<std::mutex> lock(state_->mu);
  if (!state_->async) return false;
  state_->tasks.push_back(std::move(task));
  // Coalesces: several sends before the loop wakes run the callback once.
  uv_async_send(state_->async.get());
  return true;
}

TaskQueue::TaskQueue(Loop& loop) : poster_(std::make_shared<Poster::State>()) {
  // The handle's data is the shared state, which lives as long as any Poster.
  UvHandle<uv_async_t> async;
  CHECK_EQ(async.Open(poster_.state_.get(),
                      [&](uv_async_t* h) { return uv_async_init(loop.get(), h, &OnAsync); }),
           0);
  std::lock_guard<std::mutex> lock(poster_.state_->mu);
  poster_.state_->async = std::move(async);
}

TaskQueue::~TaskQueue() {
  UvHandle<uv_async_t> async;
  std::vector<Task> dropped;
  {
    std::lock_guard<std::mutex> lock(poster_.state_->mu);
    async = std::move(poster_.state_->async);
    dropped.swap(poster_.state_->tasks);
  }
  async.Reset();
}

void TaskQueue::OnAsync(uv_async_t* handle) noexcept {
  auto* state = static_cast<Poster::State*>(handle->data);
  if (state == nullptr) return;
  std::vector<Task> tasks;
  {
    std::lock_guard<std::mutex> lock(state->mu);
    tasks.swap(state->tasks);
  }
  // A task may destroy the TaskQueue: the handle's data then becomes null, and the
  // remaining tasks are dropped as documented.
  for (auto& task : tasks) {
    if (handle->data == nullptr) break;
    internal::CallUser("TaskQueue", [&task] { task(); });
  }
}

}  // namespace kdns::loop
