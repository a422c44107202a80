// Fuzzes the Kubernetes API decoders with arbitrary bytes: the List decoder, the watch-event
// decoder (with and without an expected kind), the Status and /version decoders, and a
// watch stream split on newlines. None may crash, and what they return must be consistent:
// a failure has a one-line message, a success has no error text, every decoded endpoint
// address has its slice's family, a headless ServiceImport has no IPs, and a kubeslice
// name is lower case without a trailing dot. In ordinary builds this file is replayed over
// test/fuzz/corpus/k8s_decode/.
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <variant>

#include "common/k8s/decode.h"

namespace {

using namespace kdns::k8s;

void CheckMessage(const std::string& message) {
  if (message.empty() || message.find('\n') != std::string::npos) __builtin_trap();
}

void CheckSlice(const EndpointSlice& slice) {
  if (slice.meta.name.empty() || slice.meta.ns.empty()) __builtin_trap();
  for (const Endpoint& endpoint : slice.endpoints) {
    for (const kdns::IpAddress& address : endpoint.addresses) {
      if (slice.address_type == AddressType::kFqdn) __builtin_trap();
      if (address.is_v4() != (slice.address_type == AddressType::kIPv4)) __builtin_trap();
    }
  }
}

void CheckService(const Service& service) {
  if (service.meta.name.empty() || service.meta.ns.empty()) __builtin_trap();
  if (service.headless && !service.cluster_ips.empty()) __builtin_trap();
  for (const ServicePort& port : service.ports) {
    if (port.port == 0) __builtin_trap();
  }
}

void CheckImport(const ServiceImport& import) {
  if (import.meta.name.empty() || import.meta.ns.empty()) __builtin_trap();
  if (import.type == ServiceImportType::kHeadless && !import.ips.empty()) __builtin_trap();
  for (const ServicePort& port : import.ports) {
    if (port.port == 0) __builtin_trap();
  }
}

void CheckName(const std::string& name) {
  if (!name.empty() && name.back() == '.') __builtin_trap();
  for (char c : name) {
    if (c >= 'A' && c <= 'Z') __builtin_trap();
  }
}

void CheckKubesliceImport(const KubesliceServiceImport& import) {
  if (import.meta.name.empty() || import.meta.ns.empty()) __builtin_trap();
  CheckName(import.dns_name);
  for (const std::string& alias : import.aliases) {
    if (alias.empty()) __builtin_trap();
    CheckName(alias);
  }
  for (const KubesliceEndpoint& endpoint : import.endpoints) CheckName(endpoint.dns_name);
}

template <typename T>
void CheckResult(const Result<T>& result) {
  if (result.ok()) {
    if (!result.error().empty()) __builtin_trap();
  } else {
    CheckMessage(result.error());
  }
}

void CheckWarnings(const Warnings& warnings) {
  if (warnings.messages().size() > Warnings::kMaxKept) __builtin_trap();
  if (warnings.messages().size() > warnings.count()) __builtin_trap();
  for (const std::string& message : warnings.messages()) CheckMessage(message);
}

void CheckEvent(const Result<WatchEvent>& event) {
  CheckResult(event);
  if (!event.ok()) return;
  CheckWarnings(event->warnings);
  if (!event->object_error.empty()) CheckMessage(event->object_error);
  if (event->type == EventType::kBookmark && event->meta.resource_version.empty()) {
    __builtin_trap();
  }
  if (const auto* slice = std::get_if<EndpointSlice>(&event->object)) CheckSlice(*slice);
  if (const auto* service = std::get_if<Service>(&event->object)) CheckService(*service);
  if (const auto* import = std::get_if<ServiceImport>(&event->object)) CheckImport(*import);
  if (const auto* import = std::get_if<KubesliceServiceImport>(&event->object)) {
    CheckKubesliceImport(*import);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);

  auto list = DecodeList(text);
  CheckResult(list);
  if (list.ok()) {
    CheckWarnings(list->warnings);
    for (const Service& service : list->services) CheckService(service);
    for (const EndpointSlice& slice : list->endpoint_slices) CheckSlice(slice);
    for (const Endpoints& endpoints : list->endpoints) {
      for (const EndpointSlice& slice : endpoints.slices) CheckSlice(slice);
    }
    for (const ServiceImport& import : list->service_imports) CheckImport(import);
    for (const KubesliceServiceImport& import : list->kubeslice_service_imports) {
      CheckKubesliceImport(import);
    }
  }

  CheckEvent(DecodeWatchEvent(text));
  CheckEvent(DecodeWatchEvent(text, Kind::kEndpointSlice));
  CheckEvent(DecodeWatchEvent(text, Kind::kServiceImport));
  CheckEvent(DecodeWatchEvent(text, Kind::kKubesliceServiceImport));
  CheckResult(DecodeStatus(text));
  CheckResult(DecodeVersion(text));

  // The same bytes as a watch stream: one event per line.
  std::string_view rest = text;
  while (!rest.empty()) {
    size_t end = rest.find('\n');
    std::string_view line = rest.substr(0, end);
    CheckEvent(DecodeWatchEvent(line, Kind::kService));
    if (end == std::string_view::npos) break;
    rest.remove_prefix(end + 1);
  }
  return 0;
}
