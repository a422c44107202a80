// Result types of the Kubernetes decoders: a value or a one-line error, and the warnings
// about parts of an object that were dropped while the rest was kept. Plain values; any
// thread.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace kdns::k8s {

// A decoded value, or a one-line error message with context (kind, namespace/name, field
// path). Nothing in this module throws or aborts on input.
template <typename T>
class [[nodiscard]] Result {
 public:
  // Implicit, so decoders can `return value;`.
  Result(T value) : value_(std::move(value)) {}
  static Result Failure(std::string error) {
    Result result;
    result.error_ = std::move(error);
    return result;
  }

  bool ok() const { return value_.has_value(); }
  explicit operator bool() const { return ok(); }
  // Empty when ok().
  const std::string& error() const { return error_; }

  // Only when ok().
  T& value() & { return *value_; }
  const T& value() const& { return *value_; }
  T&& value() && { return std::move(*value_); }
  T* operator->() { return &*value_; }
  const T* operator->() const { return &*value_; }
  T& operator*() & { return *value_; }
  const T& operator*() const& { return *value_; }

 private:
  Result() = default;
  std::optional<T> value_;
  std::string error_;
};

// Problems that did not stop decoding: an endpoint address that is not an IP (the address is
// dropped, the endpoint kept), a port with an unknown protocol, a list item that could not
// be decoded or is of a kind we do not use (the item is skipped, the list kept). The first
// kMaxKept messages are kept; count() counts all, for metrics.
class Warnings {
 public:
  static constexpr size_t kMaxKept = 32;

  void Add(std::string message) {
    ++count_;
    if (messages_.size() < kMaxKept) messages_.push_back(std::move(message));
  }
  size_t count() const { return count_; }
  bool empty() const { return count_ == 0; }
  const std::vector<std::string>& messages() const { return messages_; }

 private:
  size_t count_ = 0;
  std::vector<std::string> messages_;
};

}  // namespace kdns::k8s
