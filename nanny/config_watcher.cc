#include "nanny/config_watcher.h"

#include <glog/logging.h>

#include <utility>

namespace kdns::nanny {

ConfigWatcher::ConfigWatcher(loop::Loop& loop, Options options, Callback on_check)
    : loop_(loop),
      options_(std::move(options)),
      on_check_(std::move(on_check)),
      poll_timer_(loop),
      debounce_timer_(loop) {}

ConfigWatcher::~ConfigWatcher() { DisarmWatch(); }

void ConfigWatcher::Start() {
  ArmWatch();
  poll_timer_.StartRepeating(options_.poll_interval_ms, [this] {
    // Re-armed at every poll: the directory may have been created, removed or replaced
    // since (a watch on a removed directory stays quiet for ever).
    ArmWatch();
    on_check_(Trigger::kPoll);
  });
}

void ConfigWatcher::Stop() {
  poll_timer_.Stop();
  debounce_timer_.Stop();
  DisarmWatch();
}

void ConfigWatcher::ArmWatch() {
  DisarmWatch();
  event_ = loop::internal::NewHandle<uv_fs_event_t>(this);
  CHECK_EQ(uv_fs_event_init(loop_.get(), event_), 0);
  int rc = uv_fs_event_start(event_, &ConfigWatcher::OnEvent, options_.dir.c_str(), 0);
  if (rc != 0) {
    LOG_EVERY_N(WARNING, 30) << options_.dir << ": no inotify watch (" << uv_strerror(rc)
                             << "); polling every " << options_.poll_interval_ms << " ms";
    DisarmWatch();
    return;
  }
  watching_ = true;
}

void ConfigWatcher::DisarmWatch() {
  watching_ = false;
  if (event_ == nullptr) return;
  uv_fs_event_stop(event_);
  loop::internal::CloseHandle(event_);
  event_ = nullptr;
}

void ConfigWatcher::OnEvent(uv_fs_event_t* handle, const char* filename, int events,
                            int status) noexcept {
  auto* self = static_cast<ConfigWatcher*>(handle->data);
  if (self == nullptr) return;
  if (status < 0) {
    // The watch broke (the directory went away): the poll re-arms it.
    LOG(WARNING) << self->options_.dir << ": inotify: " << uv_strerror(status);
    self->DisarmWatch();
    return;
  }
  if (self->debounce_timer_.IsActive()) return;
  self->debounce_timer_.Start(self->options_.debounce_ms,
                              [self] { self->on_check_(Trigger::kInotify); });
}

}  // namespace kdns::nanny
