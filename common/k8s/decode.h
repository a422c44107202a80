// Decoding Kubernetes API JSON into the compact model of objects.h: single objects (from a
// RapidJSON value or from text), List responses, watch-stream lines, Status error bodies and
// /version. Pure functions: no I/O, no logging, no globals; any thread.
//
// Error policy (everything here is outside input): nothing throws, aborts or CHECKs. A
// failure is a one-line message with context, e.g.
//   EndpointSlice default/headless-abc12: endpoints[2].addresses[0]: not a string: 7
// Unknown fields are ignored and null is the same as absent. A field we need that has the
// wrong JSON type, or a number out of range, fails the whole object. Smaller problems drop
// only the part concerned and add a warning: an address that is not an IP of the slice's
// family, a port with an unknown protocol.
//
// Lists: a List that is not JSON, not an object, or of a kind we do not decode is an error.
// DecodeList takes the whole text; ListStreamDecoder takes it piece by piece as it arrives
// and hands over each item as soon as its last byte is in, holding one item's text at a time.
// A bad item is skipped, counted in `bad_items` and described in the warnings; the other
// items are kept, so one bad object cannot stop a sync. Items of kinds we do not use (a
// Namespace in a `kubectl get -o json` file) are skipped and counted in `other_items`.
//
// Watch events: a line that is not a watch event (not JSON, unknown type, no object, bad
// metadata) is an error. An event whose object fails to decode is returned with
// `object_error` set and the metadata that could be read, so the caller can count it and drop
// its cached copy of that object instead of keeping stale data.
//
// Parsing uses RapidJSON's DOM with its pool allocator (strings are copied into the pool, one
// allocation per 64 KiB chunk); decoding reserves every vector at its final size.
//
// The code: decode.cc (single objects, Status, /version), decode_list.cc (DecodeList),
// decode_list_stream.cc (ListStreamDecoder), decode_watch.cc (DecodeWatchEvent), and each
// kind's fields in decode_objects.cc and decode_multicluster.cc (internal: decode_objects.h).
#pragma once

#include <rapidjson/fwd.h>

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "common/k8s/objects.h"
#include "common/k8s/result.h"

namespace kdns::k8s {

// Single objects from a parsed value: an item of a List (which has no kind/apiVersion) or the
// object of a watch event. `warnings` may be null. Metadata name and namespace are required.
Result<Service> DecodeService(const rapidjson::Value& json, Warnings* warnings = nullptr);
Result<EndpointSlice> DecodeEndpointSlice(const rapidjson::Value& json,
                                          Warnings* warnings = nullptr);
Result<Endpoints> DecodeEndpoints(const rapidjson::Value& json, Warnings* warnings = nullptr);
Result<Pod> DecodePod(const rapidjson::Value& json, Warnings* warnings = nullptr);
Result<ServiceImport> DecodeServiceImport(const rapidjson::Value& json,
                                          Warnings* warnings = nullptr);
Result<KubesliceServiceImport> DecodeKubesliceServiceImport(const rapidjson::Value& json,
                                                            Warnings* warnings = nullptr);
Result<Status> DecodeStatus(const rapidjson::Value& json);

// The same from JSON text.
Result<Service> DecodeService(std::string_view json_text, Warnings* warnings = nullptr);
Result<EndpointSlice> DecodeEndpointSlice(std::string_view json_text, Warnings* warnings = nullptr);
Result<Endpoints> DecodeEndpoints(std::string_view json_text, Warnings* warnings = nullptr);
Result<Pod> DecodePod(std::string_view json_text, Warnings* warnings = nullptr);
Result<ServiceImport> DecodeServiceImport(std::string_view json_text, Warnings* warnings = nullptr);
Result<KubesliceServiceImport> DecodeKubesliceServiceImport(std::string_view json_text,
                                                            Warnings* warnings = nullptr);
// An API error body (400, 401, 404, 410, 422, 500, 504 ...). A `kind` other than "Status"
// is an error.
Result<Status> DecodeStatus(std::string_view json_text);

// The body of GET /version.
Result<VersionInfo> DecodeVersion(std::string_view json_text);

struct ListMeta {
  // The list's resourceVersion: where a watch must start after this list (on every page of a
  // paginated list it is the first page's; never the largest item RV).
  ResourceVersion resource_version;
  // metadata.continue: pass it back (URL-encoded) for the next page. Empty on the last page,
  // where the server omits the key.
  std::string continue_token;
  std::optional<int64_t> remaining_item_count;  // absent on the last page
};

// One List response or `kubectl get ... -o json` file. Typed lists (ServiceList,
// EndpointSliceList, EndpointsList, PodList, ServiceImportList) have items without kind; the
// item kind comes from the list kind (and, for ServiceImportList, the list's apiVersion). A
// mixed `List` needs each item's own kind (and a ServiceImport its own apiVersion).
struct ObjectList {
  std::string kind;  // "ServiceList", "List", ...
  ListMeta meta;
  std::vector<Service> services;
  std::vector<EndpointSlice> endpoint_slices;
  std::vector<Endpoints> endpoints;
  std::vector<Pod> pods;
  std::vector<ServiceImport> service_imports;                     // multicluster.x-k8s.io
  std::vector<KubesliceServiceImport> kubeslice_service_imports;  // kubeslice
  size_t bad_items = 0;    // items skipped because they did not decode
  size_t other_items = 0;  // items of kinds this module does not decode
  Warnings warnings;       // messages start with "items[<i>]: "
};

Result<ObjectList> DecodeList(std::string_view json_text);

using Object = std::variant<std::monostate, Service, EndpointSlice, Endpoints, Pod, ServiceImport,
                            KubesliceServiceImport>;

// A List response decoded as a stream, for a LIST whose body may hold a whole cluster
// (resourceVersion=0 from the watch cache ignores `limit`). Only the top level is scanned
// here: each member value is cut out of the byte stream (strings and escapes respected) and
// the small ones (kind, apiVersion, metadata) are parsed; each element of `items` is parsed
// and decoded on its own and handed to `on_item` at once, so at most one item's text is held.
// The rules are DecodeList's: a bad item is skipped and counted, an item of a kind we do not
// use is counted as other, and text that is not JSON fails the list. Items before the list's
// `kind` (members in another order than the API server's, as `kubectl get -o json` writes
// them) decode at once when they name their own kind and apiVersion, as in a mixed List (a
// typed list whose kind then disagrees fails); others are kept as text until the kind comes.
// The list meta is known at Finish(): `metadata` may come after `items`.
class ListStreamDecoder {
 public:
  // Returns false to stop decoding (Feed returns false with no error).
  using OnItem = std::function<bool(Object&& object)>;

  // A member value or item longer than `max_value_bytes` fails the list.
  ListStreamDecoder(OnItem on_item, uint64_t max_value_bytes);

  // The next piece of the body, of any size, cut anywhere. False when the list failed
  // (error() says why) or on_item asked to stop; the decoder takes no more after that.
  bool Feed(std::string_view piece);
  // The body ended. False (error() says why) when it was not one complete List.
  bool Finish();

  const std::string& error() const { return error_; }
  const std::string& kind() const { return kind_; }  // the list's, once seen
  const ListMeta& meta() const { return meta_; }     // complete after Finish()
  size_t items() const { return items_; }            // handed to on_item
  size_t bad_items() const { return bad_items_; }
  size_t other_items() const { return other_items_; }
  const Warnings& warnings() const { return warnings_; }

 private:
  enum class State : uint8_t {
    kStart,       // before the top-level '{'
    kKey,         // before a member name (or '}' right after '{')
    kKeyText,     // inside a member name
    kColon,       // after a member name
    kValue,       // before a member value
    kItemsStart,  // after "items": '[', before the first item or ']'
    kItem,        // before an item (after ',')
    kAfterItem,   // after an item: ',' or ']'
    kCapture,     // inside a value being cut out (member value or item)
    kAfterValue,  // after a member value: ',' or '}'
    kDone,        // after the top-level '}': only whitespace
    kFailed,
  };
  bool Fail(std::string message);
  // A member value or item is complete in value_.
  bool ValueDone();
  bool MemberDone(std::string_view name, std::string_view text);
  bool ItemDone(std::string_view text);
  // Resolves the item kind from the list's kind and apiVersion, then decodes the items kept
  // before the kind.
  bool Resolve();

  OnItem on_item_;
  const uint64_t max_value_bytes_;
  State state_ = State::kStart;
  bool first_member_ = true;
  bool capturing_item_ = false;
  std::string key_;
  bool key_escape_ = false;
  // The value being cut out.
  std::string value_;
  uint32_t depth_ = 0;
  bool in_string_ = false;
  bool escape_ = false;
  uint64_t offset_ = 0;  // bytes fed so far, for messages

  std::string kind_;
  std::string api_version_;
  bool kind_seen_ = false;
  bool resolved_ = false;
  bool supported_ = true;
  std::optional<Kind> item_kind_;
  std::vector<std::pair<size_t, std::string>> early_items_;  // (index, text) before `kind`
  std::vector<Kind> early_kinds_;                            // of the items decoded before `kind`
  uint64_t early_bytes_ = 0;
  std::string metadata_text_;
  ListMeta meta_;
  size_t index_ = 0;  // of the next item
  size_t items_ = 0;
  size_t bad_items_ = 0;
  size_t other_items_ = 0;
  Warnings warnings_;
  std::string error_;
};

enum class EventType : uint8_t { kAdded, kModified, kDeleted, kBookmark, kError };
std::string_view ToString(EventType type);

// One line of a watch stream: {"type":"ADDED","object":{...}}.
struct WatchEvent {
  EventType type = EventType::kAdded;
  Kind kind = Kind::kService;  // of the object; kStatus for ERROR
  // ADDED, MODIFIED, DELETED: the object's metadata (DELETED carries the last state, with
  // the resourceVersion of the deletion). BOOKMARK: only resource_version, the point the
  // watch has reached; a bookmark is a stub object with null fields and must never be applied
  // to a cache. ERROR: empty.
  ObjectMeta meta;
  // ADDED, MODIFIED, DELETED: the decoded object, or monostate when object_error is set.
  // BOOKMARK, ERROR: monostate.
  Object object;
  std::string object_error;  // why the object did not decode; meta is still set
  Status status;             // ERROR only: e.g. code 410, reason "Expired"
  // BOOKMARK only: annotated k8s.io/initial-events-end: "true", the end of a watch-list's
  // initial events (sendInitialEvents=true).
  bool initial_events_end = false;
  Warnings warnings;
};

// Decodes one line (a trailing "\n" or "\r\n" is fine). `expected_kind` is the kind being
// watched: used when the object has no kind, and an object of another kind is an error. An
// object's kind is read with its apiVersion (KindOf), so a ServiceImport of another group is
// an error too.
Result<WatchEvent> DecodeWatchEvent(std::string_view line,
                                    std::optional<Kind> expected_kind = std::nullopt);

}  // namespace kdns::k8s
