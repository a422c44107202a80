// ConfigWatcher: tells the nanny when to read the ConfigMap directory again. inotify (a
// uv_fs_event_t on the directory) reacts at once to the kubelet's `..data` swap, and to
// edits of plain files in a directory without `..data`; a poll every -syncInterval is the
// safety net (a directory that did not exist yet, a lost event, a file edited inside the
// timestamped directory). Bursts of events are merged: one check `debounce_ms` after the
// first event of a burst.
//
// The watcher only says "look again"; reading the snapshot and deciding whether anything
// changed is the caller's job (ConfigDir reads are cheap: two small files).
//
// Thread: the loop's thread only.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "common/loop/handle.h"
#include "common/loop/loop.h"
#include "common/loop/timer.h"

namespace kdns::nanny {

class ConfigWatcher {
 public:
  enum class Trigger { kInotify, kPoll };
  using Callback = std::function<void(Trigger trigger)>;

  struct Options {
    std::string dir;
    uint64_t poll_interval_ms = 10'000;
    uint64_t debounce_ms = 20;
  };

  ConfigWatcher(loop::Loop& loop, Options options, Callback on_check);
  ~ConfigWatcher();
  ConfigWatcher(const ConfigWatcher&) = delete;
  ConfigWatcher& operator=(const ConfigWatcher&) = delete;

  // Starts the poll and, when the directory exists, the inotify watch (armed again at every
  // poll).
  void Start();
  void Stop();
  bool watching() const { return watching_; }

 private:
  static void OnEvent(uv_fs_event_t* handle, const char* filename, int events, int status) noexcept;
  void ArmWatch();
  void DisarmWatch();

  loop::Loop& loop_;
  Options options_;
  Callback on_check_;
  uv_fs_event_t* event_ = nullptr;
  bool watching_ = false;
  loop::Timer poll_timer_;
  loop::Timer debounce_timer_;
};

}  // namespace kdns::nanny
