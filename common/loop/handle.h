// Internal helpers shared by the kdns::loop handle owners: allocation and closing of libuv
// handles, and DeathWatch, which lets a callback trampoline notice that the user callback
// destroyed the object that owns the handle. Not part of the public API.
#pragma once

#include <glog/logging.h>
#include <uv.h>

#include <exception>
#include <utility>

namespace kdns::loop::internal {

// Allocates a handle whose data points at its owner.
template <typename T>
T* NewHandle(void* owner) {
  T* handle = new T{};
  handle->data = owner;
  return handle;
}

// Detaches the handle from its owner and closes it; the close callback frees it. The owner
// may be gone before the callback runs, which is why nothing but the handle is touched.
template <typename T>
void CloseHandle(T* handle) {
  if (handle == nullptr) return;
  auto* base = reinterpret_cast<uv_handle_t*>(handle);
  base->data = nullptr;
  if (uv_is_closing(base)) return;
  uv_close(base, [](uv_handle_t* h) { delete reinterpret_cast<T*>(h); });
}

// Runs user code from a C callback: nothing may unwind into libuv, so every exception is
// caught and logged (rate-limited: it may be input-driven). `what` names the callback.
template <typename F>
void CallUser(const char* what, F&& fn) noexcept {
  try {
    std::forward<F>(fn)();
  } catch (const std::exception& e) {
    LOG_EVERY_N(ERROR, 100) << what << " callback threw: " << e.what();
  } catch (...) {
    LOG_EVERY_N(ERROR, 100) << what << " callback threw a non-std exception";
  }
}

// Set to "dead" when its owner is destroyed while a Scope is open. Usage in a trampoline:
//   DeathWatch::Scope scope(self->death_watch_);
//   self->callback_();
//   if (scope.dead()) return;  // the callback destroyed self; touch nothing
class DeathWatch {
 public:
  class Scope {
   public:
    explicit Scope(DeathWatch& watch) : watch_(&watch), outer_(watch.innermost_) {
      watch.innermost_ = this;
    }
    ~Scope() {
      if (!dead_) watch_->innermost_ = outer_;
    }
    Scope(const Scope&) = delete;
    Scope& operator=(const Scope&) = delete;
    bool dead() const { return dead_; }

   private:
    friend class DeathWatch;
    DeathWatch* watch_;
    Scope* outer_;
    bool dead_ = false;
  };

  DeathWatch() = default;
  DeathWatch(const DeathWatch&) = delete;
  DeathWatch& operator=(const DeathWatch&) = delete;
  ~DeathWatch() {
    for (Scope* s = innermost_; s != nullptr; s = s->outer_) s->dead_ = true;
  }

 private:
  Scope* innermost_ = nullptr;
};

}  // namespace kdns::loop::internal
