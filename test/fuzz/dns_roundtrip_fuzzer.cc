// Round-trips DNS messages: parse arbitrary bytes, build them again without a size limit,
// parse the result. The two parsed messages must be equal (names compare case-insensitively:
// compression may point a name at an earlier one that differs only in case), and building
// the second message must give exactly the bytes built from the first. In ordinary builds
// this file is replayed over test/fuzz/corpus/dns_roundtrip/.
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "common/dns/builder.h"
#include "common/dns/message.h"

namespace {

void ClearCounts(kdns::dns::Header* header) {
  header->qdcount = header->ancount = header->nscount = header->arcount = 0;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace kdns::dns;
  Message first;
  if (ParseMessage(std::span<const uint8_t>(data, size), &first, TrailingData::kIgnore) !=
      ParseError::kOk) {
    return 0;
  }
  std::vector<uint8_t> built;
  // Only the questions can fail to fit (kNoSpace); parsed rdata always matches its type.
  BuildError error = BuildMessage(first, kMaxMessageSize, &built);
  if (error == BuildError::kNoSpace) return 0;
  if (error != BuildError::kOk) __builtin_trap();

  Message second;
  if (ParseMessage(built, &second) != ParseError::kOk) __builtin_trap();
  // Without compression into SRV targets and past the 128-entry table the rebuilt message
  // can outgrow 64 KiB; then it is truncated and cannot compare equal.
  if (second.header.tc && !first.header.tc) return 0;
  ClearCounts(&first.header);
  ClearCounts(&second.header);
  if (!(first == second)) __builtin_trap();

  std::vector<uint8_t> rebuilt;
  if (BuildMessage(second, kMaxMessageSize, &rebuilt) != BuildError::kOk) __builtin_trap();
  if (rebuilt != built) __builtin_trap();
  return 0;
}
