#include "kubedns/objects_file_source.h"

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

namespace kdns::kubedns {
namespace {

// How many decoder warnings one log line quotes.
constexpr size_t kWarningsPerLogLine = 5;

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

bool ObjectsFileSource::ReadFile(const std::string& path, uint64_t max_bytes, std::string* content,
                                 FileId* id, std::string* error) {
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    int open_errno = errno;
    *id = StatPath(path);
    *error = "cannot open: " + ErrnoText(open_errno);
    return false;
  }
  struct FdCloser {
    int fd;
    ~FdCloser() { close(fd); }
  } closer{fd};
  struct stat st;
  if (fstat(fd, &st) != 0) {
    *id = FileId{};
    id->error = errno;
    *error = "cannot stat: " + ErrnoText(errno);
    return false;
  }
  *id = IdFromStat(st);
  if (!S_ISREG(st.st_mode)) {
    *error = "not a regular file";
    return false;
  }
  if (static_cast<uint64_t>(st.st_size) > max_bytes) {
    *error = "file of " + std::to_string(st.st_size) + " bytes is larger than the limit of " +
             std::to_string(max_bytes);
    return false;
  }
  content->clear();
  content->reserve(static_cast<size_t>(st.st_size));
  char buffer[65536];
  while (true) {
    ssize_t n = read(fd, buffer, sizeof(buffer));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      *error = "cannot read: " + ErrnoText(errno);
      return false;
    }
    if (n == 0) break;
    content->append(buffer, static_cast<size_t>(n));
    if (content->size() > max_bytes) {  // grew while we read
      *error = "file is larger than the limit of " + std::to_string(max_bytes) + " bytes";
      return false;
    }
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
  std::string content;
  FileId id;
  std::string error;
  bool read = ReadFile(options_.path, options_.max_file_bytes, &content, &id, &error);
  last_id_ = id;
  if (!read) {
    last_read_hash_.reset();  // whatever comes next is applied
    Fail(error);
    return;
  }
  // A 64-bit hash: a collision would only delay a reload until the next change.
  size_t hash = std::hash<std::string_view>{}(content);
  if (last_read_hash_ == hash) {
    ++stats_.unchanged;
    return;
  }
  last_read_hash_ = hash;

  auto list = k8s::DecodeList(content);
  // The text is not needed once decoded: free it before the records are built, so the file,
  // the decoded objects and the records are never all held at once.
  const size_t bytes = content.size();
  std::string().swap(content);
  if (!list.ok()) {
    Fail(list.error());
    return;
  }
  size_t usable = list->services.size() + list->endpoint_slices.size() + list->endpoints.size() +
                  list->pods.size() + list->service_imports.size() +
                  list->kubeslice_service_imports.size();
  if (usable == 0 && list->bad_items > 0) {
    std::string reason = "none of its " + std::to_string(list->bad_items) + " items decoded";
    if (!list->warnings.messages().empty()) reason += "; " + list->warnings.messages().front();
    Fail(reason);
    return;
  }
  Apply(std::move(*list), bytes);
}

void ObjectsFileSource::Apply(k8s::ObjectList list, size_t bytes) {
  const size_t services = list.services.size();
  const size_t slices = list.endpoint_slices.size();
  const size_t endpoints = list.endpoints.size();
  const size_t pods = list.pods.size();
  const size_t imports = list.service_imports.size() + list.kubeslice_service_imports.size();

  if (!list.warnings.empty()) {
    // One line per reload: the count of skipped items and the first few reasons, which
    // carry the item index ("items[3]: ...").
    std::string quoted;
    const auto& messages = list.warnings.messages();
    for (size_t i = 0; i < messages.size() && i < kWarningsPerLogLine; ++i) {
      quoted += (i == 0 ? "" : "; ") + messages[i];
    }
    size_t more = list.warnings.count() - std::min(messages.size(), kWarningsPerLogLine);
    LOG(WARNING) << "objects file " << options_.path << ": " << list.bad_items
                 << " bad item(s) skipped, " << list.warnings.count() << " warning(s): " << quoted
                 << (more > 0 ? " (and " + std::to_string(more) + " more)" : "");
  }
  stats_.bad_items += list.bad_items;
  metrics_.bad_items.Inc(list.bad_items);

  RecordTreeWriter::ObjectSet objects;
  objects.services = std::move(list.services);
  objects.slices = std::move(list.endpoint_slices);
  objects.endpoints = std::move(list.endpoints);
  objects.service_imports = std::move(list.service_imports);
  objects.kubeslice_service_imports = std::move(list.kubeslice_service_imports);

  ++stats_.reloads_ok;
  metrics_.reloads_ok.Inc();
  metrics_.last_success_s.Set(WallClockSeconds());
  metrics_.services.Set(static_cast<double>(services));
  metrics_.slices.Set(static_cast<double>(slices));
  metrics_.endpoints.Set(static_cast<double>(endpoints));
  metrics_.pods.Set(static_cast<double>(pods));
  LOG(INFO) << "objects file " << options_.path << ": loaded " << services << " services, "
            << slices << " endpointslices, " << endpoints << " endpoints, " << pods << " pods, "
            << imports << " serviceimports (" << bytes << " bytes)";

  sink_.ReplacePods(std::move(list.pods));
  sink_.ReplaceAll(std::move(objects));
  if (!stats_.synced) {
    stats_.synced = true;
    // The file is the whole state of every zone.
    sink_.MulticlusterSynced(MulticlusterZone::kMcs);
    sink_.MulticlusterSynced(MulticlusterZone::kKubeslice);
    sink_.Synced();
  }
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
