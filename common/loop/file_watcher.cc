#include "common/loop/file_watcher.h"

#include <glog/logging.h>

#include <algorithm>
#include <string_view>
#include <utility>

namespace kdns::loop {

FileWatcher::FileWatcher(Loop& loop, Options options, Callback callback)
    : loop_(loop),
      options_(std::move(options)),
      callback_(std::move(callback)),
      poll_timer_(loop),
      debounce_timer_(loop) {}

void FileWatcher::Start() {
  if (options_.mode == Mode::kInotify) ArmWatch();
  poll_timer_.StartRepeating(options_.poll_interval_ms, [this] {
    // Re-armed at every poll: the directory may have been created, removed or replaced
    // since (a watch on a removed directory stays quiet for ever).
    if (options_.mode == Mode::kInotify) ArmWatch();
    callback_(Trigger::kPoll);
  });
}

void FileWatcher::Stop() {
  poll_timer_.Stop();
  debounce_timer_.Stop();
  event_.Reset();
}

void FileWatcher::ArmWatch() {
  // The new watch starts before the old one closes (libuv shares one inotify watch per
  // path), so re-arming never leaves a moment without a watch.
  UvHandle<uv_fs_event_t> fresh;
  int rc = fresh.Open(this, [&](uv_fs_event_t* h) { return uv_fs_event_init(loop_.get(), h); });
  if (rc == 0) rc = uv_fs_event_start(fresh.get(), &FileWatcher::OnEvent, options_.dir.c_str(), 0);
  if (rc != 0) {
    event_.Reset();
    if (!arm_failed_) {
      LOG(WARNING) << options_.dir << ": no inotify watch (" << uv_strerror(rc)
                   << "); polling every " << options_.poll_interval_ms << " ms";
    }
    arm_failed_ = true;
    return;
  }
  event_ = std::move(fresh);
  if (arm_failed_) LOG(INFO) << options_.dir << ": watching with inotify again";
  arm_failed_ = false;
}

void FileWatcher::OnEvent(uv_fs_event_t* handle, const char* filename, int /*events*/,
                          int status) noexcept {
  auto* self = static_cast<FileWatcher*>(handle->data);
  if (self == nullptr) return;
  if (status < 0) {
    // The watch broke (the directory went away, events were lost): drop it, look again
    // now, and let the poll re-arm it.
    LOG_EVERY_N(WARNING, 100) << self->options_.dir << ": inotify: " << uv_strerror(status);
    self->event_.Reset();
    self->OnRelevantEvent();
    return;
  }
  const auto& names = self->options_.names;
  if (filename != nullptr && !names.empty()) {
    std::string_view name(filename);
    if (name != kAtomicWriterLink && std::find(names.begin(), names.end(), name) == names.end()) {
      return;
    }
  }
  self->OnRelevantEvent();
}

void FileWatcher::OnRelevantEvent() {
  const uint64_t now_ms = loop_.now_ms();
  if (!debounce_timer_.IsActive()) {
    first_event_ms_ = now_ms;
  } else if (now_ms - first_event_ms_ >= kMaxDebounceFactor * options_.debounce_ms) {
    return;  // a long burst: let the pending report come at its time
  }
  debounce_timer_.Start(options_.debounce_ms, [this] { callback_(Trigger::kInotify); });
}

}  // namespace kdns::loop
