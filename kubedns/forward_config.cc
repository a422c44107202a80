#include "kubedns/forward_config.h"

#include <glog/logging.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <utility>
#include <variant>

#include "common/dns/builder.h"
#include "common/dns/message.h"
#include "common/upstream/random.h"
#include "common/upstream/resolv_conf.h"

namespace kdns::kubedns {

ForwardConfig::ForwardConfig(Options options, ForwardMetrics& metrics, PublishFn publish)
    : options_(std::move(options)), metrics_(metrics), publish_(std::move(publish)) {}

ForwardConfig::~ForwardConfig() { Stop(); }

std::shared_ptr<const UpstreamRoutes> ForwardConfig::routes() const {
  std::lock_guard lock(routes_mu_);
  return routes_ ? routes_ : std::make_shared<const UpstreamRoutes>();
}

void ForwardConfig::ReadConfigMap() {
  const std::string& dir = options_.config_dir;
  config::ConfigDirData data;
  std::string error;
  if (!config::ReadConfigDir(dir, &data, &error)) {
    if (error != last_read_error_) {
      LOG(ERROR) << "--config-dir: " << error
                 << (seen_data_ ? "; keeping the previous configuration"
                                : "; forwarding without it until it can be read");
      metrics_.ConfigLoaded(ConfigReload::kUnreadable);
      last_read_error_ = error;
    }
    metrics_.SetConfigError(true);
    return;
  }
  last_read_error_.clear();
  if (!seen_data_ || !(data == last_data_)) {
    seen_data_ = true;
    last_data_ = data;
    config::KubeDnsConfig parsed;
    data_valid_ = config::ParseKubeDnsConfig(data, &parsed, &error);
    if (!data_valid_) {
      LOG(ERROR) << "--config-dir " << dir
                 << ": invalid configuration rejected, keeping the previous one: " << error;
      metrics_.ConfigLoaded(ConfigReload::kRejected);
    } else {
      metrics_.ConfigLoaded(ConfigReload::kApplied);
      if (!(parsed == config_) || config_.empty()) {
        LOG(INFO) << "--config-dir " << dir << ": " << parsed.ToString();
      }
      config_ = std::move(parsed);
    }
  }
  metrics_.SetConfigError(!data_valid_);
}

void ForwardConfig::ReadResolvConf() {
  upstream::ResolvConf conf;
  std::string error;
  if (!upstream::LoadResolvConf(options_.resolv_conf, &conf, &error)) {
    if (error != resolv_error_ && config_.upstream_nameservers.empty()) {
      LOG(WARNING) << error << (resolv_conf_.empty() ? "" : "; keeping its last nameservers");
      resolv_error_ = error;
    }
    return;
  }
  resolv_error_.clear();
  if (conf.nameservers != resolv_conf_) {
    for (const auto& line : conf.skipped_lines) {
      LOG(WARNING) << options_.resolv_conf << ": skipped \"" << line << "\"";
    }
    resolv_conf_ = std::move(conf.nameservers);
  }
}

void ForwardConfig::Poll(const HostResolver& resolver) {
  if (!options_.config_dir.empty()) ReadConfigMap();
  if (options_.flag_nameservers.empty()) ReadResolvConf();
  RoutingInputs inputs;
  inputs.cluster_zone = options_.cluster_zone;
  inputs.config = config_;
  inputs.flag_nameservers = options_.flag_nameservers;
  inputs.resolv_conf = resolv_conf_;
  std::vector<std::string> warnings;
  auto routes = std::make_shared<const UpstreamRoutes>(BuildRoutes(inputs, resolver, &warnings));
  if (resolver && warnings != last_warnings_) {
    for (const auto& warning : warnings) LOG(WARNING) << warning;
    last_warnings_ = std::move(warnings);
  }
  {
    std::lock_guard lock(routes_mu_);
    if (routes_ && *routes_ == *routes) return;
    routes_ = routes;
  }
  LOG(INFO) << "forwarding: " << routes->ToString();
  if (routes->default_route().upstreams.empty()) {
    LOG(WARNING) << "no upstream nameserver (upstreamNameservers, --nameservers or "
                 << options_.resolv_conf << "): names outside the cluster get SERVFAIL";
  }
  metrics_.SetRoutes(*routes);
  publish_(routes);
}

void ForwardConfig::Start(HostResolver resolver) {
  resolver_ = std::move(resolver);
  thread_ = std::thread([this] { Run(); });
}

void ForwardConfig::Stop() {
  {
    std::lock_guard lock(run_mu_);
    stop_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void ForwardConfig::Run() {
  std::unique_lock lock(run_mu_);
  while (!stop_) {
    lock.unlock();
    Poll(resolver_);
    lock.lock();
    wake_.wait_for(lock, std::chrono::milliseconds(options_.period_ms), [this] { return stop_; });
  }
}

namespace {

// One query over a connected UDP socket; the parsed answer, or nullopt with *error.
std::optional<dns::Message> AskOnce(int fd, const dns::Name& host, dns::RrType type, uint16_t id,
                                    int timeout_ms, std::string* error) {
  std::vector<uint8_t> query(512);
  dns::MessageBuilder builder(query);
  builder.header().id = id;
  builder.header().rd = true;
  if (builder.AddQuestion(host, type, dns::RrClass::kIn) != dns::BuildError::kOk) {
    *error = "name too long";
    return std::nullopt;
  }
  std::span<const uint8_t> bytes = builder.Finish();
  if (send(fd, bytes.data(), bytes.size(), 0) != static_cast<ssize_t>(bytes.size())) {
    const int send_error = errno;
    *error = std::string("send: ") + std::strerror(send_error);
    return std::nullopt;
  }
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  std::vector<uint8_t> reply(65535);
  while (true) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                          deadline - std::chrono::steady_clock::now())
                          .count();
    pollfd p{fd, POLLIN, 0};
    if (left <= 0 || poll(&p, 1, static_cast<int>(left)) == 0) {
      *error = "timed out";
      return std::nullopt;
    }
    ssize_t n = recv(fd, reply.data(), reply.size(), MSG_DONTWAIT);
    if (n < 0) {
      const int recv_error = errno;
      if (recv_error == EINTR || recv_error == EAGAIN) continue;
      *error = std::string("recv: ") + std::strerror(recv_error);
      return std::nullopt;
    }
    dns::Message message;
    if (dns::ParseMessage(std::span<const uint8_t>(reply.data(), static_cast<size_t>(n)),
                          &message) != dns::ParseError::kOk ||
        !message.header.qr || message.header.id != id || message.questions.size() != 1 ||
        !(message.questions[0].name == host) || message.questions[0].type != type) {
      continue;  // not our answer
    }
    return message;
  }
}

}  // namespace

std::vector<IpAddress> ResolveThrough(const loop::SocketAddress& server, const dns::Name& host,
                                      int timeout_ms, std::string* error) {
  std::vector<IpAddress> addresses;
  int fd = socket(server.family(), SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0 || connect(fd, server.sockaddr_ptr(), server.sockaddr_len()) != 0) {
    const int socket_error = errno;
    *error = "asking " + server.ToString() + ": " + std::strerror(socket_error);
    if (fd >= 0) close(fd);
    return addresses;
  }
  upstream::SecureRandom random;
  std::string last_error;
  for (dns::RrType type : {dns::RrType::kA, dns::RrType::kAaaa}) {
    std::optional<dns::Message> answer =
        AskOnce(fd, host, type, random.Next16(), timeout_ms, &last_error);
    if (!answer) continue;
    if (answer->rcode() != dns::Rcode::kNoError) {
      last_error = dns::RcodeToText(answer->rcode());
      continue;
    }
    for (const auto& record : answer->answers) {
      if (const auto* a = std::get_if<dns::RdataA>(&record.rdata)) addresses.push_back(a->address);
      if (const auto* aaaa = std::get_if<dns::RdataAaaa>(&record.rdata)) {
        addresses.push_back(aaaa->address);
      }
    }
  }
  close(fd);
  if (addresses.empty()) {
    *error = last_error.empty() ? "no address" : last_error;
  }
  return addresses;
}

}  // namespace kdns::kubedns
