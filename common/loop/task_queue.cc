#include "common/loop/task_queue.h"

#include <glog/logging.h>

#include <utility>

#include "common/loop/handle.h"

namespace kdns::loop {

struct TaskQueue::Poster::State {
  std::mutex mu;
  std::vector<Task> tasks;  // guarded by mu
  // Null once the TaskQueue is destroyed; guarded by mu. uv_async_send is only called
  // with mu held and async non-null, and the handle is closed only after it is set to null,
  // so no thread can signal a closed handle.
  uv_async_t* async = nullptr;
};

bool TaskQueue::Poster::Post(Task task) const {
  if (state_ == nullptr) return false;
  std::lock_guard<std::mutex> lock(state_->mu);
  if (state_->async == nullptr) return false;
  state_->tasks.push_back(std::move(task));
  // Coalesces: several sends before the loop wakes run the callback once.
  uv_async_send(state_->async);
  return true;
}

TaskQueue::TaskQueue(Loop& loop) : poster_(std::make_shared<Poster::State>()) {
  // The handle's data is the shared state, which lives as long as any Poster.
  auto* async = internal::NewHandle<uv_async_t>(poster_.state_.get());
  CHECK_EQ(uv_async_init(loop.get(), async, &TaskQueue::OnAsync), 0);
  std::lock_guard<std::mutex> lock(poster_.state_->mu);
  poster_.state_->async = async;
}

TaskQueue::~TaskQueue() {
  uv_async_t* async;
  std::vector<Task> dropped;
  {
    std::lock_guard<std::mutex> lock(poster_.state_->mu);
    async = poster_.state_->async;
    poster_.state_->async = nullptr;
    dropped.swap(poster_.state_->tasks);
  }
  internal::CloseHandle(async);
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
