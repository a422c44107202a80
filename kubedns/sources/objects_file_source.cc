#include "kubedns/sources/objects_file_source.h"

#include <fcntl.h>
#include <glog/logging.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <functional>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "common/base/hash.h"
#include "common/base/unique_fd.h"

namespace kdns::kubedns {
namespace {

// How many decoder warnings one log line quotes.
constexpr size_t kWarningsPerLogLine = 5;

// The file is read in blocks of this size: memory for the text is one block, whatever the
// file's size. Blocks are filled whole (short reads are continued), so the content hash,
// which is taken block by block, depends on the bytes alone.
constexpr size_t kBlockBytes = 64 << 10;

std::string ErrnoText(int error) { return std::strerror(error); }

int64_t Nanoseconds(const struct timespec& ts) {
  return static_cast<int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

double WallClockSeconds() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

}  // namespace

ObjectsFileSource::FileId ObjectsFileSource::IdFromStat(const struct stat& st) {
  FileId id;
  id.dev = st.st_dev;
  id.ino = st.st_ino;
  id.size = st.st_size;
  id.mtime_ns = Nanoseconds(st.st_mtim);
  id.ctime_ns = Nanoseconds(st.st_ctim);
  return id;
}

ObjectsFileSource::FileId ObjectsFileSource::StatPath(const std::string& path) {
  struct stat st;
  if (stat(path.c_str(), &st) != 0) {
    FileId id;
    id.error = errno;
    return id;
  }
  return IdFromStat(st);
}

int ObjectsFileSource::OpenFile(const std::string& path, uint64_t max_bytes, FileId* id,
                                std::string* error) {
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    int open_errno = errno;
    *id = StatPath(path);
    *error = "cannot open: " + ErrnoText(open_errno);
    return -1;
  }
  struct stat st;
  if (fstat(fd, &st) != 0) {
    *id = FileId{};
    id->error = errno;
    *error = "cannot stat: " + ErrnoText(errno);
    close(fd);
    return -1;
  }
  *id = IdFromStat(st);
  if (!S_ISREG(st.st_mode)) {
    *error = "not a regular file";
    close(fd);
    return -1;
  }
  if (static_cast<uint64_t>(st.st_size) > max_bytes) {
    *error = "file of " + std::to_string(st.st_size) + " bytes is larger than the limit of " +
             std::to_string(max_bytes);
    close(fd);
    return -1;
  }
  return fd;
}

bool ObjectsFileSource::ReadBlocks(int fd, uint64_t max_bytes,
                                   const std::function<bool(std::string_view)>& on_block,
                                   uint64_t* hash, uint64_t* bytes, std::string* error) {
  std::string block(kBlockBytes, '\0');
  *hash = 0;
  *bytes = 0;
  bool end = false;
  while (!end) {
    size_t filled = 0;
    while (filled < block.size()) {
      ssize_t n = pread(fd, block.data() + filled, block.size() - filled,
                        static_cast<off_t>(*bytes + filled));
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) {
        *error = "cannot read: " + ErrnoText(errno);
        return false;
      }
      if (n == 0) {
        end = true;
        break;
      }
      filled += static_cast<size_t>(n);
    }
    *bytes += filled;
    if (*bytes > max_bytes) {  // grew while we read
      *error = "file is larger than the limit of " + std::to_string(max_bytes) + " bytes";
      return false;
    }
    if (filled == 0) break;
    const std::string_view piece(block.data(), filled);
    // 64 bits: a collision would only delay a reload until the next change.
    *hash = Mix64(*hash ^ std::hash<std::string_view>{}(piece)) + filled;
    if (on_block && !on_block(piece)) return false;
  }
  return true;
}

ObjectsFileSource::Metrics ObjectsFileSource::RegisterMetrics(metrics::Registry& registry) {
  auto& reloads = registry.AddCounterFamily(
      "kdns_objects_file_reloads_total",
      "Reads of the --objects-file that changed content, by result; on error the last good "
      "content is kept.",
      {"result"});
  auto& objects =
      registry.AddGaugeFamily("kdns_objects_file_objects",
                              "Objects of each kind in the last applied --objects-file.", {"kind"});
  // Braced initialisation evaluates left to right, so registration order is fixed.
  return Metrics{
      .reloads_ok = reloads.WithLabels({"ok"}),
      .reloads_error = reloads.WithLabels({"error"}),
      .last_success_s = registry.AddGauge(
          "kdns_objects_file_last_success_timestamp_seconds",
          "Unix time of the last successful load of the --objects-file; 0 if none yet."),
      .services = objects.WithLabels({"service"}),
      .slices = objects.WithLabels({"endpointslice"}),
      .endpoints = objects.WithLabels({"endpoints"}),
      .pods = objects.WithLabels({"pod"}),
      .bad_items = registry.AddCounter(
          "kdns_objects_file_bad_items_total",
          "Items of applied --objects-file Lists that failed to decode and were skipped."),
  };
}

ObjectsFileSource::ObjectsFileSource(loop::Loop& loop, RecordSink& sink,
                                     metrics::Registry& registry, Options options)
    : loop_(loop), sink_(sink), options_(std::move(options)), metrics_(RegisterMetrics(registry)) {
  CHECK(!options_.path.empty()) << "ObjectsFileSource needs a path";
  size_t slash = options_.path.rfind('/');
  // PATH's last component is matched against event names; "..data" always counts (the
  // kubelet's AtomicWriter makes PATH a symlink through it and renames a new one over it,
  // so PATH itself sees no event).
  loop::FileWatcher::Options watch;
  if (slash == std::string::npos) {
    directory_ = ".";
    watch.names = {options_.path};
  } else {
    directory_ = slash == 0 ? "/" : options_.path.substr(0, slash);
    watch.names = {options_.path.substr(slash + 1)};
  }
  watch.dir = directory_;
  watch.mode = options_.watch;
  watch.poll_interval_ms = options_.poll_interval_ms;
  watch.debounce_ms = options_.debounce_ms;
  watcher_ = std::make_unique<loop::FileWatcher>(loop, watch, [this](loop::FileWatcher::Trigger t) {
    if (t == loop::FileWatcher::Trigger::kPoll) {
      OnPollTick();
    } else {
      Check();
    }
  });
}

ObjectsFileSource::~ObjectsFileSource() { Stop(); }

void ObjectsFileSource::Start() {
  CHECK(!started_) << "ObjectsFileSource::Start called twice";
  started_ = true;
  LOG(INFO) << "objects file " << options_.path << ": watching with "
            << (options_.watch == Watch::kInotify ? "inotify on " + directory_ + " and " : "")
            << "a poll every " << options_.poll_interval_ms << " ms";
  // Watch before the first read, so that a change right after the read is not missed.
  watcher_->Start();
  Check();
}

void ObjectsFileSource::Stop() { watcher_->Stop(); }

void ObjectsFileSource::OnPollTick() {
  if (last_id_.has_value() && *last_id_ == StatPath(options_.path)) return;
  Check();
}

void ObjectsFileSource::Check() {
  FileId id;
  std::string error;
  const int fd = OpenFile(options_.path, options_.max_file_bytes, &id, &error);
  last_id_ = id;
  if (fd < 0) {
    last_read_hash_.reset();  // whatever comes next is applied
    Fail(error);
    return;
  }
  const UniqueFd closer(fd);
  // A first pass only hashes (cheap next to decoding), so a `touch` or a rewrite with the same
  // bytes costs no decode and no publish.
  uint64_t hash = 0;
  uint64_t bytes = 0;
  if (!ReadBlocks(fd, options_.max_file_bytes, nullptr, &hash, &bytes, &error)) {
    last_read_hash_.reset();
    Fail(error);
    return;
  }
  if (last_read_hash_ == hash) {
    ++stats_.unchanged;
    return;
  }
  uint64_t checked_hash = 0;
  if (!Validate(fd, hash, &checked_hash)) return;
  Apply(fd, checked_hash);
}

std::string ObjectsFileSource::ListError(k8s::ListStreamDecoder& decoder, bool whole) {
  if (!whole || !decoder.Finish()) return decoder.error();
  if (decoder.items() == 0 && decoder.bad_items() > 0) {
    std::string error = "none of its " + std::to_string(decoder.bad_items()) + " items decoded";
    if (!decoder.warnings().messages().empty()) {
      error += "; " + decoder.warnings().messages().front();
    }
    return error;
  }
  return "";
}

bool ObjectsFileSource::Validate(int fd, uint64_t first_hash, uint64_t* checked_hash) {
  // Every item is decoded and dropped: memory for one item, whatever the file's size.
  k8s::ListStreamDecoder decoder([](k8s::Object&&) { return true; }, options_.max_file_bytes);
  uint64_t bytes = 0;
  std::string error;
  const bool whole = ReadBlocks(
      fd, options_.max_file_bytes, [&](std::string_view piece) { return decoder.Feed(piece); },
      checked_hash, &bytes, &error);
  if (!error.empty()) {  // a read error: the same bytes may read well next time
    last_read_hash_.reset();
    Fail(error);
    return false;
  }
  error = ListError(decoder, whole);
  if (error.empty()) return true;
  // Content equal to this is not tried again. The hash of what this pass read when it read
  // it all (the file may have changed in place since the first pass).
  last_read_hash_ = whole ? *checked_hash : first_hash;
  Fail(error);
  return false;
}

void ObjectsFileSource::Apply(int fd, uint64_t checked_hash) {
  // Each item goes to the sink as soon as it is decoded: neither the text nor the decoded
  // list is ever held whole next to the records. The multicluster objects are few and their
  // sink calls take whole lists, so they are gathered.
  Counts counts;
  std::vector<k8s::ServiceImport> imports;
  std::vector<k8s::EndpointSlice> mcs_slices;
  std::vector<k8s::KubesliceServiceImport> kubeslice_imports;
  sink_.BeginLoad();
  k8s::ListStreamDecoder decoder(
      [&](k8s::Object&& object) {
        if (auto* service = std::get_if<k8s::Service>(&object)) {
          ++counts.services;
          sink_.UpsertService(*service);
        } else if (auto* slice = std::get_if<k8s::EndpointSlice>(&object)) {
          ++counts.slices;
          sink_.UpsertSlice(*slice);
          if (!slice->multicluster_service_name.empty()) mcs_slices.push_back(std::move(*slice));
        } else if (auto* endpoints = std::get_if<k8s::Endpoints>(&object)) {
          ++counts.endpoints;
          sink_.UpsertEndpoints(*endpoints);
        } else if (auto* pod = std::get_if<k8s::Pod>(&object)) {
          ++counts.pods;
          sink_.UpsertPod(*pod);
        } else if (auto* import = std::get_if<k8s::ServiceImport>(&object)) {
          imports.push_back(std::move(*import));
        } else if (auto* kubeslice = std::get_if<k8s::KubesliceServiceImport>(&object)) {
          kubeslice_imports.push_back(std::move(*kubeslice));
        }
        return true;
      },
      options_.max_file_bytes);
  uint64_t hash = 0;
  uint64_t bytes = 0;
  std::string error;
  const bool whole = ReadBlocks(
      fd, options_.max_file_bytes, [&](std::string_view piece) { return decoder.Feed(piece); },
      &hash, &bytes, &error);
  if (error.empty()) error = ListError(decoder, whole);
  if (!error.empty()) {
    // Validated, then unreadable or no longer good: the file changed in place under us (or
    // the read failed). What was applied stays (each object whole, as after watch events);
    // nothing is deleted, and the next read, whatever it finds, is applied from scratch.
    last_read_hash_.reset();
    sink_.AbortLoad();
    Fail("not applied whole, the objects read so far stay (changed in place?): " + error);
    return;
  }
  if (hash != checked_hash) {
    LOG(INFO) << "objects file " << options_.path
              << ": changed between its check and its load; applied the complete List the "
                 "second read found";
  }
  last_read_hash_ = hash;
  counts.imports = imports.size() + kubeslice_imports.size();
  sink_.ReplaceServiceImports(std::move(imports));
  sink_.ReplaceMulticlusterSlices(std::move(mcs_slices));
  sink_.ReplaceKubesliceServiceImports(std::move(kubeslice_imports));
  Applied(decoder, counts, bytes);
  sink_.EndLoad();
  if (!stats_.synced) {
    stats_.synced = true;
    // The file is the whole state of every zone.
    sink_.MulticlusterSynced(MulticlusterZone::kMcs);
    sink_.MulticlusterSynced(MulticlusterZone::kKubeslice);
    sink_.Synced();
  }
}

void ObjectsFileSource::Applied(const k8s::ListStreamDecoder& decoder, const Counts& counts,
                                uint64_t bytes) {
  const k8s::Warnings& warnings = decoder.warnings();
  if (!warnings.empty()) {
    // One line per reload: the count of skipped items and the first few reasons, which
    // carry the item index ("items[3]: ...").
    std::string quoted;
    const auto& messages = warnings.messages();
    for (size_t i = 0; i < messages.size() && i < kWarningsPerLogLine; ++i) {
      quoted += (i == 0 ? "" : "; ") + messages[i];
    }
    size_t more = warnings.count() - std::min(messages.size(), kWarningsPerLogLine);
    LOG(WARNING) << "objects file " << options_.path << ": " << decoder.bad_items()
                 << " bad item(s) skipped, " << warnings.count() << " warning(s): " << quoted
                 << (more > 0 ? " (and " + std::to_string(more) + " more)" : "");
  }
  stats_.bad_items += decoder.bad_items();
  metrics_.bad_items.Inc(decoder.bad_items());

  ++stats_.reloads_ok;
  metrics_.reloads_ok.Inc();
  metrics_.last_success_s.Set(WallClockSeconds());
  metrics_.services.Set(static_cast<double>(counts.services));
  metrics_.slices.Set(static_cast<double>(counts.slices));
  metrics_.endpoints.Set(static_cast<double>(counts.endpoints));
  metrics_.pods.Set(static_cast<double>(counts.pods));
  LOG(INFO) << "objects file " << options_.path << ": loaded " << counts.services << " services, "
            << counts.slices << " endpointslices, " << counts.endpoints << " endpoints, "
            << counts.pods << " pods, " << counts.imports << " serviceimports (" << bytes
            << " bytes)";
}

void ObjectsFileSource::Fail(const std::string& reason) {
  ++stats_.reloads_failed;
  stats_.last_error = reason;
  metrics_.reloads_error.Inc();
  uint64_t now_ms = loop_.now_ms();
  bool repeat = logged_error_ && reason == last_logged_error_ &&
                now_ms - last_error_log_ms_ < options_.error_log_interval_ms;
  if (repeat) return;
  LOG(WARNING) << "objects file " << options_.path << ": " << reason << "; "
               << (stats_.synced ? "keeping the last good content"
                                 : "nothing to serve until it loads");
  logged_error_ = true;
  last_logged_error_ = reason;
  last_error_log_ms_ = now_ms;
}

}  // namespace kdns::kubedns
