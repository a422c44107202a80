// FileWatcher: tells its owner when to look at a directory (or a file in it) again; the one
// file watcher of the tree (the nanny's ConfigMap directory, kubedns's objects file and its
// ConfigMap directory).
//
// inotify (a uv_fs_event_t on the directory) reacts at once: to the kubelet's ConfigMap
// update, which writes a new timestamped directory and renames the `..data` symlink over
// the old one, and to plain files created, edited or renamed into place (editors and
// `kubectl ... > tmp && mv tmp PATH` replace a file by a rename, so the watch is on the
// directory, never on the file's inode). Options::names narrows the events to some entries
// (an objects file's name); `..data` always counts. A burst of events gives one report:
// `debounce_ms` of quiet after the last event, at most kMaxDebounceFactor * debounce_ms
// after the first.
//
// A poll every poll_interval_ms is the safety net (a directory that did not exist yet or
// was replaced, a lost event, a file edited inside the timestamped directory, a filesystem
// without inotify), and re-arms the watch each time. The watcher only says "look again";
// reading the snapshot (through `..data`) and deciding whether its target or contents
// changed is the owner's job, since only it knows what a change means.
//
// Ownership: owns its uv_fs_event_t (UvHandle) and two Timers. Destroying the watcher
// (also from inside its callback) stops everything; no callback follows.
//
// Thread: the loop's thread only.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "common/loop/handle.h"
#include "common/loop/loop.h"
#include "common/loop/timer.h"

namespace kdns::loop {

class FileWatcher {
 public:
  enum class Trigger { kInotify, kPoll };
  enum class Mode {
    kInotify,   // inotify on the directory plus the poll
    kPollOnly,  // the poll alone (tests of the fallback; filesystems without inotify)
  };
  using Callback = std::function<void(Trigger trigger)>;

  struct Options {
    std::string dir;
    // Entries whose events count; empty: every entry of dir. `..data` always counts.
    std::vector<std::string> names;
    Mode mode = Mode::kInotify;
    uint64_t poll_interval_ms = 10'000;
    uint64_t debounce_ms = 20;
  };
  static constexpr uint64_t kMaxDebounceFactor = 10;
  // The symlink the kubelet's atomic writer swaps to publish a new ConfigMap version.
  static constexpr const char* kAtomicWriterLink = "..data";

  FileWatcher(Loop& loop, Options options, Callback callback);
  ~FileWatcher() = default;
  FileWatcher(const FileWatcher&) = delete;
  FileWatcher& operator=(const FileWatcher&) = delete;

  // Starts the poll and, in kInotify mode when the directory exists, the inotify watch.
  // Reports nothing before the first event or poll.
  void Start();
  void Stop();
  // An inotify watch is armed.
  bool watching() const { return static_cast<bool>(event_); }
  const Options& options() const { return options_; }

 private:
  static void OnEvent(uv_fs_event_t* handle, const char* filename, int events, int status) noexcept;
  void ArmWatch();
  void OnRelevantEvent();

  Loop& loop_;
  const Options options_;
  Callback callback_;
  UvHandle<uv_fs_event_t> event_;
  Timer poll_timer_;
  Timer debounce_timer_;
  uint64_t first_event_ms_ = 0;  // loop time of the first event of the pending burst
  bool arm_failed_ = false;      // the last ArmWatch failed (logged once per outage)
};

}  // namespace kdns::loop
