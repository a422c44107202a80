// ObjectsFileSource: the offline record source (`--objects-file=PATH`). It serves a
// `kubectl get services,endpointslices -A -o json` style List (Services, EndpointSlices,
// v1 Endpoints, Pods, and the ServiceImports of the multicluster zones with their
// apiVersion) and reloads it when it changes, so kubedns runs without a cluster.
//
// Change detection: a loop::FileWatcher on the file's directory, not on the file, because
// editors, `kubectl ... > tmp && mv tmp PATH` and the kubelet's ConfigMap writer replace the
// file by a rename (a watch on the old inode would never fire again). Events for PATH's
// name, and for "..data" (the symlink the ConfigMap writer swaps), are debounced into one
// reload per burst. The watcher's poll is the safety net (a lost watch, a directory that
// did not exist, a symlink to elsewhere): it stats PATH and reads it only when device,
// inode, size, mtime or ctime changed. Every read is hashed, and content equal to the last
// read is not applied again (a `touch`, a rewrite with the same bytes).
//
// Memory: the file is read in blocks and decoded as a stream (k8s::ListStreamDecoder), so
// neither its text nor the decoded list is ever held whole. A read takes up to three passes
// over the one open descriptor (pread from offset 0 each time; a file replaced by a rename
// keeps its inode for us): the first only hashes, so unchanged content costs no decode; the
// second (Validate) decodes every item and drops it, to learn whether the file is good, in
// the memory of one item; only a good file gets the third (Apply), which hands each item
// to the sink as it is decoded, inside one load (RecordSink::BeginLoad). Because the set is
// known to be good before its first item is applied, the sink may publish during the load
// (every RecordTreeWriter::kListPublishBytes of new records), so a reload that changes
// every object frees the old records as it goes rather than holding two trees at once.
//
// A file that changes between the passes: one replaced by a rename is not seen (we read the
// inode we opened) and the next read takes the new one. One rewritten in place is read
// anew by the applying pass: if that still reads as a complete good List it is applied as
// read (logged); if it no longer does (cut short, not a List, unreadable), the load ends
// with AbortLoad: the objects applied so far stay, each whole, nothing is deleted, the
// attempt counts as an error, and the next read (the rewrite's own event or the poll) is
// applied from scratch whatever its hash.
//
// Error policy (the file is outside input): a file that is missing, unreadable, not a List
// we decode, or whose items all failed to decode, is not applied (the validating pass
// stops it before the sink sees any of it); kubedns keeps serving the last good content.
// Each such attempt is counted and logged in one line (the same reason at most once per
// error_log_interval_ms). Bad items inside a good List are skipped, counted, and logged in
// one line per reload; the good items are applied. A file cut short (a writer that
// truncates and rewrites in place, seen mid-write) is not a List.
//
// Metrics (registered on the Registry given to the constructor, so one source per registry):
//   kdns_objects_file_reloads_total{result="ok|error"}
//   kdns_objects_file_last_success_timestamp_seconds
//   kdns_objects_file_objects{kind="service|endpointslice|endpoints|pod"}
//   kdns_objects_file_bad_items_total
//
// Thread: lives on the given loop's thread (which the caller runs), and calls the sink there.
#pragma once

#include <sys/stat.h>
#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "common/k8s/decode.h"
#include "common/loop/file_watcher.h"
#include "common/loop/loop.h"
#include "common/metrics/registry.h"
#include "kubedns/sources/source.h"

namespace kdns::kubedns {

class ObjectsFileSource final : public RecordSource {
 public:
  // kInotify: inotify on the directory plus the poll; kPollOnly: the poll alone.
  using Watch = loop::FileWatcher::Mode;

  struct Options {
    std::string path;
    Watch watch = Watch::kInotify;
    uint64_t poll_interval_ms = 2000;
    // Quiet time after the last inotify event before the file is read; a steady stream of
    // events delays the read by at most FileWatcher::kMaxDebounceFactor * debounce_ms.
    uint64_t debounce_ms = 75;
    uint64_t error_log_interval_ms = 60'000;
    // A larger file is an error (protects the process from a runaway writer).
    uint64_t max_file_bytes = 256ull << 20;
  };

  // For tests and status pages. `last_error` is the reason of the most recent failed
  // attempt (kept after later successes; compare the counters to see which came last).
  struct Stats {
    uint64_t reloads_ok = 0;      // loads ended with EndLoad
    uint64_t reloads_failed = 0;  // attempts that kept the last good content, or aborted
    uint64_t unchanged = 0;       // reads whose content equalled the last read
    uint64_t bad_items = 0;       // items skipped inside applied Lists, in total
    bool synced = false;          // Synced() has been delivered
    std::string last_error;
  };

  // `sink` and `registry` must outlive the source.
  ObjectsFileSource(loop::Loop& loop, RecordSink& sink, metrics::Registry& registry,
                    Options options);
  ~ObjectsFileSource() override;
  ObjectsFileSource(const ObjectsFileSource&) = delete;
  ObjectsFileSource& operator=(const ObjectsFileSource&) = delete;

  // Reads the file once before returning (delivering a load and Synced if it is good),
  // then watches it. Call once.
  void Start() override;
  void Stop() override;

  const Stats& stats() const { return stats_; }
  const Options& options() const { return options_; }

 private:
  // What stat(2) says about PATH; equal identities mean "not changed" to the poll timer.
  struct FileId {
    int error = 0;  // errno of a failed stat; 0 when the rest is valid
    dev_t dev = 0;
    ino_t ino = 0;
    off_t size = 0;
    int64_t mtime_ns = 0;
    int64_t ctime_ns = 0;
    friend bool operator==(const FileId&, const FileId&) = default;
  };
  static FileId IdFromStat(const struct stat& st);
  static FileId StatPath(const std::string& path);
  // Opens a regular file of at most max_bytes: its descriptor, or -1 with a one-line reason.
  // `id` is always set: from the opened file, or from stat(2) when it could not be opened, so
  // that a lasting failure looks unchanged to the poll timer.
  [[nodiscard]] static int OpenFile(const std::string& path, uint64_t max_bytes, FileId* id,
                                    std::string* error);
  // Reads the whole file from its start in blocks of kBlockBytes, giving each to `on_block`
  // (may be empty) and hashing them into `hash`. False when on_block returned false (error
  // left empty), or on a read error or more than max_bytes (a one-line reason in `error`).
  [[nodiscard]] static bool ReadBlocks(int fd, uint64_t max_bytes,
                                       const std::function<bool(std::string_view)>& on_block,
                                       uint64_t* hash, uint64_t* bytes, std::string* error);
  struct Metrics {
    metrics::Counter& reloads_ok;
    metrics::Counter& reloads_error;
    metrics::Gauge& last_success_s;
    metrics::Gauge& services;
    metrics::Gauge& slices;
    metrics::Gauge& endpoints;
    metrics::Gauge& pods;
    metrics::Counter& bad_items;
  };
  static Metrics RegisterMetrics(metrics::Registry& registry);

  void OnPollTick();
  // Reads PATH and applies it if its content differs from the last read.
  void Check();
  // Objects of each kind in a load.
  struct Counts {
    size_t services = 0;
    size_t slices = 0;
    size_t endpoints = 0;
    size_t pods = 0;
    size_t imports = 0;
  };
  // Why a decoded file is not a good List (empty when it is); `whole` is false when the
  // read stopped early.
  static std::string ListError(k8s::ListStreamDecoder& decoder, bool whole);
  // The validating pass: decodes the file (whose first pass hashed to first_hash) and drops
  // every item. True when it is a good List (`checked_hash`: what this pass read); else
  // counts the failure.
  [[nodiscard]] bool Validate(int fd, uint64_t first_hash, uint64_t* checked_hash);
  // The applying pass: decodes the file again into one load of the sink and ends it, or
  // aborts it if the file is no longer good (see the header comment).
  void Apply(int fd, uint64_t checked_hash);
  // Counts, logs and exports a good load.
  void Applied(const k8s::ListStreamDecoder& decoder, const Counts& counts, uint64_t bytes);
  void Fail(const std::string& reason);

  loop::Loop& loop_;
  RecordSink& sink_;
  const Options options_;
  std::string directory_;  // where the inotify watch goes
  const Metrics metrics_;  // references into the registry
  std::unique_ptr<loop::FileWatcher> watcher_;
  bool started_ = false;

  std::optional<FileId> last_id_;           // identity at the last read attempt
  std::optional<uint64_t> last_read_hash_;  // content hash of the last successful read
  bool logged_error_ = false;
  std::string last_logged_error_;
  uint64_t last_error_log_ms_ = 0;
  Stats stats_;
};

}  // namespace kdns::kubedns
