#include "common/loop/loop.h"

#include <glog/logging.h>

#include <sstream>

namespace kdns::loop {

Loop::Loop() : loop_(new uv_loop_t) {
  int rc = uv_loop_init(loop_);
  // Fails only on resource exhaustion (epoll_create, eventfd): nothing sensible to do.
  CHECK_EQ(rc, 0) << "uv_loop_init: " << uv_strerror(rc);
}

Loop::~Loop() {
  if (!closed_ && !Close()) {
    std::ostringstream names;
    for (const auto& name : OpenHandleNames()) names << " " << name;
    // A handle outlived its loop: our own bug. Leak the loop rather than free memory that
    // open handles still point into.
    LOG(DFATAL) << "Loop destroyed with open handles:" << names.str();
    return;
  }
  delete loop_;
}

void Loop::Run() { uv_run(loop_, UV_RUN_DEFAULT); }
void Loop::RunOnce() { uv_run(loop_, UV_RUN_ONCE); }
void Loop::RunNoWait() { uv_run(loop_, UV_RUN_NOWAIT); }
void Loop::Stop() { uv_stop(loop_); }

bool Loop::Close() {
  if (closed_) return true;
  // Close callbacks run in the loop's closing phase; a few NOWAIT iterations run them
  // (a close callback may itself close another handle).
  for (int i = 0; i < 8; ++i) uv_run(loop_, UV_RUN_NOWAIT);
  if (uv_loop_close(loop_) != 0) return false;
  closed_ = true;
  return true;
}

std::vector<std::string> Loop::OpenHandleNames() const {
  std::vector<std::string> names;
  if (closed_) return names;
  uv_walk(
      loop_,
      [](uv_handle_t* handle, void* arg) {
        auto* out = static_cast<std::vector<std::string>*>(arg);
        std::string name = uv_handle_type_name(uv_handle_get_type(handle));
        if (uv_is_closing(handle)) name += " (closing)";
        out->push_back(std::move(name));
      },
      &names);
  return names;
}

}  // namespace kdns::loop
