// RecordTreeWriter's complete sets (record_tree.h): a list of one kind (a LIST or a re-LIST
// of one resource), and a load of every kind (a file), each reconciled with the tree. At
// BeginList the writer notes the keys of the kind it holds; every Upsert or Delete of the
// kind marks its key as listed (Listed); EndList deletes the objects the list did not
// deliver. The changes themselves are record_tree.cc's Upsert* and Delete*, so an object
// listed unchanged costs a comparison and keeps its records.
#include <glog/logging.h>

#include <algorithm>
#include <string>
#include <string_view>
#include <vector>

#include "kubedns/records/object_key.h"
#include "kubedns/records/record_tree.h"

namespace kdns::kubedns {

void RecordTreeWriter::BeginList(ListKind kind) {
  Unlisted& unlisted = unlisted_[static_cast<size_t>(kind)].emplace();
  std::vector<std::string>& keys = unlisted.keys;
  switch (kind) {
    case ListKind::kServices:
      namespaces_.ForEach([&](const std::string& ns, const auto& space) {
        space->services.ForEach([&](const std::string& name, const ServicePtr& records) {
          if (records->answerable()) keys.push_back(ObjectKey(ns, name));
        });
      });
      break;
    case ListKind::kSlices:
      for (const auto& [key, service] : slice_owner_) {
        // Slices of v1 Endpoints objects ("ns/<endpoints>/subset-...") go with their
        // Endpoints object, not with the EndpointSlice list.
        if (key.find('/', key.find('/') + 1) == std::string::npos) keys.push_back(key);
      }
      break;
    case ListKind::kEndpoints:
      for (const auto& [key, names] : endpoints_slices_) keys.push_back(key);
      break;
    case ListKind::kPods:
      for (const auto& [key, ips] : pods_) keys.push_back(key);
      break;
  }
  keys.shrink_to_fit();
  std::sort(keys.begin(), keys.end());
  unlisted.listed.assign(keys.size(), false);
}

void RecordTreeWriter::Listed(ListKind kind, const std::string& key) {
  auto& open = unlisted_[static_cast<size_t>(kind)];
  if (!open) return;
  auto it = std::lower_bound(open->keys.begin(), open->keys.end(), key);
  if (it != open->keys.end() && *it == key) open->listed[it - open->keys.begin()] = true;
}

void RecordTreeWriter::EndList(ListKind kind) {
  auto& open = unlisted_[static_cast<size_t>(kind)];
  if (!open) return;
  const Unlisted unlisted = std::move(*open);
  open.reset();
  for (size_t i = 0; i < unlisted.keys.size(); ++i) {
    if (unlisted.listed[i]) continue;
    const std::string& key = unlisted.keys[i];
    const size_t slash = key.find('/');
    const std::string_view ns = std::string_view(key).substr(0, slash);
    const std::string_view name = std::string_view(key).substr(slash + 1);
    switch (kind) {
      case ListKind::kServices:
        DeleteService(ns, name);
        break;
      case ListKind::kSlices:
        DeleteSlice(ns, name);
        break;
      case ListKind::kEndpoints:
        DeleteEndpoints(ns, name);
        break;
      case ListKind::kPods:
        DeletePod(ns, name);
        break;
    }
  }
}

void RecordTreeWriter::ReplaceServices(const std::vector<k8s::Service>& services) {
  BeginList(ListKind::kServices);
  for (const auto& service : services) UpsertService(service);
  EndList(ListKind::kServices);
}

void RecordTreeWriter::ReplaceSlices(const std::vector<k8s::EndpointSlice>& slices) {
  BeginList(ListKind::kSlices);
  for (const auto& slice : slices) UpsertSlice(slice);
  EndList(ListKind::kSlices);
}

void RecordTreeWriter::ReplaceEndpoints(const std::vector<k8s::Endpoints>& endpoints) {
  BeginList(ListKind::kEndpoints);
  for (const auto& object : endpoints) UpsertEndpoints(object);
  EndList(ListKind::kEndpoints);
}

void RecordTreeWriter::ReplacePods(const std::vector<k8s::Pod>& pods) {
  BeginList(ListKind::kPods);
  for (const auto& pod : pods) UpsertPod(pod);
  EndList(ListKind::kPods);
}

// Every kind a load lists.
constexpr RecordTreeWriter::ListKind kAllListKinds[] = {
    RecordTreeWriter::ListKind::kServices, RecordTreeWriter::ListKind::kSlices,
    RecordTreeWriter::ListKind::kEndpoints, RecordTreeWriter::ListKind::kPods};

void RecordTreeWriter::BeginLoad() {
  CHECK(!loading_) << "BeginLoad inside a load";
  loading_ = true;
  for (ListKind kind : kAllListKinds) {
    BeginList(kind);
  }
}

void RecordTreeWriter::EndLoad() {
  CHECK(loading_) << "EndLoad without BeginLoad";
  loading_ = false;
  for (ListKind kind : kAllListKinds) {
    EndList(kind);
  }
}

void RecordTreeWriter::AbortLoad() {
  CHECK(loading_) << "AbortLoad without BeginLoad";
  loading_ = false;
  for (auto& unlisted : unlisted_) unlisted.reset();
}

bool RecordTreeWriter::PublishDue() const {
  if (unpublished_bytes_ < list_publish_bytes_) return false;
  return std::any_of(unlisted_.begin(), unlisted_.end(),
                     [](const auto& unlisted) { return unlisted.has_value(); });
}

}  // namespace kdns::kubedns
