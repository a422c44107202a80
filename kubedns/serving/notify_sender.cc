#include "kubedns/serving/notify_sender.h"

#include <glog/logging.h>
#include <sys/socket.h>

#include <array>
#include <cerrno>
#include <utility>

#include "common/dns/builder.h"
#include "common/dns/notify.h"
#include "common/loop/socket_util.h"

namespace kdns::kubedns {

NotifySender::NotifySender(loop::Loop& loop, const SnapshotHolder<Snapshot>& snapshots,
                           const Answerer& answerer, metrics::Registry& registry,
                           std::vector<loop::SocketAddress> targets)
    : snapshots_(snapshots),
      answerer_(answerer),
      targets_(std::move(targets)),
      zones_(answerer.ServedZones()),
      timer_(loop),
      sent_(registry.AddCounter("kdns_kubedns_notify_sent_total",
                                "NOTIFY messages sent to --notify targets.")) {}

bool NotifySender::Start(std::string* error) {
  auto open = [&](const loop::SocketAddress& any, std::optional<UniqueFd>* fd) {
    const int opened =
        loop::internal::CreateBoundSocket(SOCK_DGRAM, any, loop::ReusePort::kNo, error);
    if (opened < 0) return false;
    fd->emplace(opened);
    return true;
  };
  for (const loop::SocketAddress& target : targets_) {
    if (target.is_v4() && !v4_ && !open(loop::SocketAddress::AnyV4(0), &v4_)) return false;
    if (!target.is_v4() && !v6_ && !open(loop::SocketAddress::AnyV6(0), &v6_)) return false;
  }
  timer_.StartRepeating(kCheckIntervalMs, [this] { (void)CheckNow(); });
  return true;
}

int NotifySender::SocketFor(const loop::SocketAddress& target) const {
  const std::optional<UniqueFd>& fd = target.is_v4() ? v4_ : v6_;
  return fd ? fd->get() : -1;
}

void NotifySender::DrainReplies() const {
  std::array<uint8_t, 512> discard;
  for (const std::optional<UniqueFd>* fd : {&v4_, &v6_}) {
    if (!*fd) continue;
    while (recv((*fd)->get(), discard.data(), discard.size(), MSG_DONTWAIT) >= 0) {
    }
  }
}

size_t NotifySender::CheckNow() {
  const std::shared_ptr<const Snapshot> snapshot = snapshots_.Current();
  if (snapshot == nullptr || snapshot->records_version() == announced_version_) return 0;
  announced_version_ = snapshot->records_version();
  DrainReplies();
  const dns::RdataSoa soa = answerer_.Soa(answerer_.SoaSerial(*snapshot));
  std::array<uint8_t, dns::kMaxUdpSizeWithoutEdns> buffer;
  size_t sent = 0;
  for (const dns::Name& zone : zones_) {
    const std::span<const uint8_t> notify = dns::WriteNotify(next_id_++, zone, soa, buffer);
    if (notify.empty()) continue;  // cannot happen: a name and an SOA fit in 512 bytes
    for (const loop::SocketAddress& target : targets_) {
      const int fd = SocketFor(target);
      if (fd < 0) continue;  // Start has not opened it
      if (sendto(fd, notify.data(), notify.size(), MSG_DONTWAIT, target.sockaddr_ptr(),
                 target.sockaddr_len()) < 0) {
        // Lossy by design (see the header): the cache's own SOA poll covers it.
        LOG_EVERY_N(WARNING, 100) << "NOTIFY to " << target.ToString()
                                  << " not sent: " << loop::internal::ErrnoMessage("sendto", errno);
        continue;
      }
      ++sent;
    }
  }
  sent_.Inc(sent);
  VLOG(1) << "records version " << announced_version_ << " (serial " << soa.serial
          << ") announced: " << sent << " NOTIFY sent";
  return sent;
}

}  // namespace kdns::kubedns
