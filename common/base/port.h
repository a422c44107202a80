// Port numbers as operators write them: in flags (`--dns-port`, `--prometheus-port`), in
// addresses (`1.2.3.4#53`, `[::1]:10053`) and in the environment (KUBERNETES_SERVICE_PORT,
// PROMETHEUS_PORT). One parser, so every program accepts and refuses the same text.
//
// Thread: pure functions.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace kdns {

enum class PortZero : uint8_t {
  kRefuse,  // a port to connect to: 0 is not one
  kAllow,   // a port to listen on: 0 asks the kernel for a free one (tests), or "off"
};

// A decimal port 1..65535 (0 too with kAllow): digits only, no sign, no spaces.
std::optional<uint16_t> ParsePort(std::string_view text, PortZero zero = PortZero::kRefuse);

}  // namespace kdns
