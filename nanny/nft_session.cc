#include "nanny/nft_session.h"

#include <dlfcn.h>

#include <algorithm>

namespace kdns::nanny {
namespace {

// The few symbols of libnftables' stable C API (nftables/libnftables.h) we call.
struct NftApi {
  void* (*ctx_new)(uint32_t flags);
  void (*ctx_free)(void* ctx);
  int (*ctx_buffer_output)(void* ctx);
  int (*ctx_buffer_error)(void* ctx);
  const char* (*ctx_get_error_buffer)(void* ctx);
  int (*run_cmd_from_buffer)(void* ctx, const char* buffer);
};

constexpr uint32_t kNftCtxDefault = 0;

// nft's multi-line error (message, the command, a caret line) as one line.
std::string OneLine(std::string text) {
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
  std::replace(text.begin(), text.end(), '\n', ' ');
  return text;
}

class LibNftablesSession final : public NftSession {
 public:
  LibNftablesSession(void* library, NftApi api, void* ctx)
      : library_(library), api_(api), ctx_(ctx) {}
  ~LibNftablesSession() override {
    api_.ctx_free(ctx_);  // closes the socket: an owner table goes with it
    dlclose(library_);
  }

  bool Run(const std::string& commands, std::string* error) override {
    if (api_.run_cmd_from_buffer(ctx_, commands.c_str()) == 0) return true;
    const char* text = api_.ctx_get_error_buffer(ctx_);
    *error = OneLine(text != nullptr && *text != '\0' ? text : "nft: failed");
    return false;
  }

 private:
  void* library_;
  NftApi api_;
  void* ctx_;
};

template <typename Function>
bool Find(void* library, const char* name, Function* out) {
  *out = reinterpret_cast<Function>(dlsym(library, name));
  return *out != nullptr;
}

}  // namespace

std::unique_ptr<NftSession> LoadLibNftables(std::string* error) {
  void* library = dlopen("libnftables.so.1", RTLD_NOW | RTLD_LOCAL);
  if (library == nullptr) {
    const char* why = dlerror();
    *error = why != nullptr ? why : "libnftables.so.1: cannot be loaded";
    return nullptr;
  }
  NftApi api{};
  if (!Find(library, "nft_ctx_new", &api.ctx_new) ||
      !Find(library, "nft_ctx_free", &api.ctx_free) ||
      !Find(library, "nft_ctx_buffer_output", &api.ctx_buffer_output) ||
      !Find(library, "nft_ctx_buffer_error", &api.ctx_buffer_error) ||
      !Find(library, "nft_ctx_get_error_buffer", &api.ctx_get_error_buffer) ||
      !Find(library, "nft_run_cmd_from_buffer", &api.run_cmd_from_buffer)) {
    *error = "libnftables.so.1 lacks a symbol of its C API";
    dlclose(library);
    return nullptr;
  }
  // The context opens the netlink socket and keeps it until ctx_free.
  void* ctx = api.ctx_new(kNftCtxDefault);
  if (ctx == nullptr) {
    *error = "libnftables: no context (netlink socket)";
    dlclose(library);
    return nullptr;
  }
  // Output and errors into buffers, not onto our stdout and stderr.
  api.ctx_buffer_output(ctx);
  api.ctx_buffer_error(ctx);
  return std::make_unique<LibNftablesSession>(library, api, ctx);
}

}  // namespace kdns::nanny
