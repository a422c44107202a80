// Arbitrary packets into kubedns's query handler (Answerer::Answer) over UDP and TCP,
// against the conformance cluster, the multicluster conformance objects (both
// multicluster zones on) and the zonal ones (--zonal on). Never a crash; the result is a drop
// (nothing written) or a well-formed response: it parses, has QR set, echoes the ID, fits the
// transport's limit, and counts no more than it holds.
#include <cstddef>
#include <cstdint>
#include <fstream>
#include <memory>
#include <sstream>
#include <vector>

#include "common/dns/builder.h"
#include "common/dns/header.h"
#include "common/dns/message.h"
#include "common/k8s/decode.h"
#include "kubedns/answering/answerer.h"
#include "kubedns/records/record_tree.h"

namespace {

const kdns::kubedns::Snapshot& Cluster() {
  static const std::shared_ptr<const kdns::kubedns::Snapshot> snapshot = [] {
    auto load = [](const char* path) {
      std::ifstream in(path);
      std::stringstream text;
      text << in.rdbuf();
      auto list = kdns::k8s::DecodeList(text.str());
      if (!list.ok()) __builtin_trap();  // run from the repository root
      return std::move(list).value();
    };
    auto list = load("test/conformance/objects.json");
    auto multicluster = load("test/conformance/multicluster_objects.json");
    auto zonal = load("test/conformance/zonal_objects.json");
    list.endpoint_slices.insert(list.endpoint_slices.end(), multicluster.endpoint_slices.begin(),
                                multicluster.endpoint_slices.end());
    list.services.insert(list.services.end(), zonal.services.begin(), zonal.services.end());
    list.endpoint_slices.insert(list.endpoint_slices.end(), zonal.endpoint_slices.begin(),
                                zonal.endpoint_slices.end());
    kdns::kubedns::RecordTreeWriter writer;
    writer.KeepZones();
    writer.multicluster().SetKubesliceZone("slice.local");
    writer.ReplaceAll({list.services, list.endpoint_slices, list.endpoints,
                       multicluster.service_imports, multicluster.kubeslice_service_imports});
    writer.MarkSynced();
    writer.multicluster().MarkMcsSynced();
    writer.multicluster().MarkKubesliceSynced();
    return writer.Publish();
  }();
  return *snapshot;
}

const kdns::kubedns::Answerer& TheAnswerer() {
  static const kdns::kubedns::Answerer answerer([] {
    kdns::kubedns::AnswerConfig config;
    config.zone = *kdns::dns::Name::FromText("cluster.local.");
    config.multicluster_zone = kdns::dns::Name::FromText("clusterset.local.");
    config.kubeslice_zone = kdns::dns::Name::FromText("slice.local.");
    config.zonal = true;
    return config;
  }());
  return answerer;
}

void Check(bool condition) {
  if (!condition) __builtin_trap();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::span<const uint8_t> packet(data, size);
  static std::vector<uint8_t> buffer(kdns::dns::kMaxMessageSize);
  for (auto transport : {kdns::dns::Transport::kUdp, kdns::dns::Transport::kTcp}) {
    kdns::server::Admission admission;
    kdns::server::Admit(packet, transport, kdns::kubedns::kAdmissionPolicy, &admission);
    auto result = TheAnswerer().Answer(&Cluster(), admission, buffer);
    if (result.kind == kdns::kubedns::AnswerKind::kDropped) {
      Check(result.response.empty());
      continue;
    }
    Check(!result.response.empty());
    Check(result.response.size() <=
          (transport == kdns::dns::Transport::kUdp ? 1232u : kdns::dns::kMaxMessageSize));
    kdns::dns::Message message;
    Check(kdns::dns::ParseMessage(result.response, &message) == kdns::dns::ParseError::kOk);
    Check(message.header.qr);
    Check(size >= 2 && result.response[0] == data[0] && result.response[1] == data[1]);
  }
  return 0;
}
