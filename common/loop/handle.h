// UvHandle<T>: the one RAII owner of a libuv handle (uv_timer_t, uv_poll_t, uv_tcp_t, ...),
// plus the helpers the kdns::loop handle owners share (CallUser, DeathWatch).
//
// libuv handles may not be freed until their close callback has run, which is later than
// the owner's destructor. UvHandle<T> holds a heap-allocated T whose `data` points at the
// owning object; destroying (or Reset()ting) it detaches the handle from the owner
// (data = nullptr, so a callback already queued finds no owner and returns) and calls
// uv_close; the close callback frees the memory. An owner may therefore be destroyed at any
// time, even from inside one of its own callbacks, and a loop's shutdown still ends with
// uv_loop_close() == 0 once the close callbacks ran (Loop::Close). An owner that must hear
// when the handle is really closed (TcpConnection reports on_close then) uses CloseThen.
//
// Ownership: move-only; exactly one UvHandle owns each handle. Thread: the loop's thread.
#pragma once

#include <glog/logging.h>
#include <uv.h>

#include <exception>
#include <type_traits>
#include <utility>

namespace kdns::loop {

template <typename T>
class UvHandle {
 public:
  UvHandle() = default;

  // Allocates a handle with data = owner and initialises it with init(T*) (a uv_*_init
  // call). Returns the libuv result; on failure `*this` stays empty and nothing leaks (an
  // uninitialised handle must not be passed to uv_close, so it is freed directly).
  template <typename Init>
  [[nodiscard]] int Open(void* owner, Init&& init) {
    Reset();
    T* handle = new T{};
    handle->data = owner;
    int rc = std::forward<Init>(init)(handle);
    if (rc != 0) {
      delete handle;
      return rc;
    }
    handle_ = handle;
    return 0;
  }

  // Takes an initialised handle allocated with `new T` by someone else (TcpListener's
  // accepted connections) and points its data at owner.
  void Adopt(T* handle, void* owner) {
    Reset();
    handle_ = handle;
    handle_->data = owner;
  }

  UvHandle(UvHandle&& other) noexcept : handle_(std::exchange(other.handle_, nullptr)) {}
  UvHandle& operator=(UvHandle&& other) noexcept {
    if (this != &other) {
      Reset();
      handle_ = std::exchange(other.handle_, nullptr);
    }
    return *this;
  }
  UvHandle(const UvHandle&) = delete;
  UvHandle& operator=(const UvHandle&) = delete;
  ~UvHandle() { Reset(); }

  T* get() const { return handle_; }
  T* operator->() const { return handle_; }
  uv_handle_t* base() const { return reinterpret_cast<uv_handle_t*>(handle_); }
  uv_stream_t* stream() const { return reinterpret_cast<uv_stream_t*>(handle_); }
  explicit operator bool() const { return handle_ != nullptr; }
  // True between CloseThen() and its callback.
  bool closing() const { return handle_ != nullptr && uv_is_closing(base()) != 0; }

  // Detaches the handle from its owner and closes it; the close callback frees it. Also
  // used when a CloseThen() is pending: the owner then hears nothing more.
  void Reset() {
    if (handle_ == nullptr) return;
    uv_handle_t* base = this->base();
    base->data = nullptr;
    if (!uv_is_closing(base)) uv_close(base, &UvHandle::FreeOnClose);
    handle_ = nullptr;
  }

  // Closes the handle but keeps it attached: once libuv has closed it, the handle is freed,
  // this UvHandle (the member `Member` of the owner) becomes empty and the owner's
  // OnClosed() runs. Destroying the owner first cancels the notification (Reset()).
  //   handle_.CloseThen<&TcpConnection::handle_, &TcpConnection::OnHandleClosed>();
  template <auto Member, auto OnClosed>
  void CloseThen() {
    if (handle_ == nullptr || uv_is_closing(base())) return;
    uv_close(base(), &UvHandle::NotifyOnClose<Member, OnClosed>);
  }

 private:
  template <typename>
  struct MemberOwner;
  template <typename Owner>
  struct MemberOwner<UvHandle Owner::*> {
    using type = Owner;
  };

  static void FreeOnClose(uv_handle_t* handle) noexcept { delete reinterpret_cast<T*>(handle); }

  template <auto Member, auto OnClosed>
  static void NotifyOnClose(uv_handle_t* handle) noexcept {
    using Owner = typename MemberOwner<decltype(Member)>::type;
    auto* owner = static_cast<Owner*>(handle->data);
    delete reinterpret_cast<T*>(handle);
    if (owner == nullptr) return;
    (owner->*Member).handle_ = nullptr;
    (owner->*OnClosed)();
  }

  T* handle_ = nullptr;
};

namespace internal {

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

}  // namespace internal
}  // namespace kdns::loop
