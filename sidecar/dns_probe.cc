#include "sidecar/dns_probe.h"

#include <glog/logging.h>

#include <array>
#include <chrono>
#include <random>

#include "common/dns/builder.h"
#include "common/dns/message.h"
#include "common/metrics/histogram.h"
#include "common/metrics/text_format.h"
#include "sidecar/go_format.h"

namespace kdns::sidecar {
namespace {

std::mt19937_64& Random() {
  thread_local std::mt19937_64 random{std::random_device{}()};
  return random;
}

std::string Context(const ProbeOption& option) {
  return "query " + std::string(ProbeTypeText(option.type)) + " " + GoQuote(option.name_text) +
         " to " + option.server.ToString() + ": ";
}

}  // namespace

std::string_view ProbeFailureText(ProbeFailure failure) {
  switch (failure) {
    case ProbeFailure::kNone:
      return "none";
    case ProbeFailure::kTimeout:
      return "timeout";
    case ProbeFailure::kRefused:
      return "refused";
    case ProbeFailure::kNetwork:
      return "network";
    case ProbeFailure::kMalformed:
      return "malformed";
    case ProbeFailure::kNoAnswer:
      return "no_answer";
  }
  return "unknown";
}

ProbeOutcome EvaluateProbeReply(const ProbeOption& option, int ares_status,
                                std::span<const uint8_t> reply) {
  ProbeOutcome outcome;
  if (ares_status != ARES_SUCCESS) {
    switch (ares_status) {
      case ARES_ETIMEOUT:
        outcome.failure = ProbeFailure::kTimeout;
        break;
      case ARES_ECONNREFUSED:
        outcome.failure = ProbeFailure::kRefused;
        break;
      case ARES_EBADRESP:
        outcome.failure = ProbeFailure::kMalformed;
        break;
      default:
        outcome.failure = ProbeFailure::kNetwork;
    }
    outcome.error = Context(option) + ares::Channel::StatusText(ares_status);
    return outcome;
  }
  dns::Message message;
  const dns::ParseError parsed = dns::ParseMessage(reply, &message, dns::TrailingData::kIgnore);
  if (parsed != dns::ParseError::kOk) {
    outcome.failure = ProbeFailure::kMalformed;
    outcome.error = Context(option) + "malformed reply: " + std::string(dns::ToString(parsed));
    return outcome;
  }
  outcome.rcode = message.rcode();
  if (message.answers.empty()) {
    // kube-dns's text, exactly: fmt.Errorf("no RRs for domain %q", p.Name).
    outcome.failure = ProbeFailure::kNoAnswer;
    outcome.error = "no RRs for domain " + GoQuote(option.name_text);
  }
  return outcome;
}

std::vector<double> ProbeLatencyBucketsMs() { return metrics::ExponentialBuckets(0.25, 2, 16); }

uint64_t NextProbeDelayMs(uint64_t interval_ms, uint64_t latency_ns) {
  const uint64_t latency_ms = latency_ns / 1'000'000;
  return latency_ms < interval_ms ? interval_ms - latency_ms : 0;
}

std::vector<uint8_t> BuildProbeQuery(const ProbeOption& option) {
  std::array<uint8_t, dns::kMaxUdpSizeWithoutEdns> buffer{};
  dns::MessageBuilder builder(buffer);
  builder.header().id = static_cast<uint16_t>(Random()());
  builder.header().rd = true;
  const dns::BuildError error = builder.AddQuestion(option.name, option.type, dns::RrClass::kIn);
  CHECK(error == dns::BuildError::kOk) << "a question always fits 512 bytes";
  std::span<const uint8_t> query = builder.Finish();
  return {query.begin(), query.end()};
}

ProbeFamilies::ProbeFamilies(metrics::Registry& registry)
    : rcodes(registry.AddCounterFamily("kdns_sidecar_probe_rcode_total",
                                       "Replies to each probe's query, by rcode.",
                                       {"probe", "rcode"})),
      failures(registry.AddCounterFamily(
          "kdns_sidecar_probe_failures_total",
          "Failed probes by reason: timeout, refused, network, malformed, no_answer.",
          {"probe", "reason"})),
      last_success_s(registry.AddGaugeFamily(
          "kdns_sidecar_probe_last_success_timestamp_seconds",
          "Unix time of each probe's last success (0: none yet).", {"probe"})) {}

uint64_t DnsProbe::RandomFirstDelay(uint64_t interval_ms) {
  if (interval_ms == 0) return 0;
  return std::uniform_int_distribution<uint64_t>(0, interval_ms - 1)(Random());
}

DnsProbe::DnsProbe(loop::Loop& loop, Options options, metrics::Registry& registry,
                   ProbeFamilies& families)
    : loop_(loop),
      options_(std::move(options)),
      query_(BuildProbeQuery(options_.probe)),
      latency_ms_(registry.AddHistogram(metrics::BuildFqName(options_.prometheus_namespace, "probe",
                                                             options_.probe.label + "_latency_ms"),
                                        "Latency of the DNS probe request " + options_.probe.label,
                                        ProbeLatencyBucketsMs())),
      errors_(registry.AddCounter(metrics::BuildFqName(options_.prometheus_namespace, "probe",
                                                       options_.probe.label + "_errors"),
                                  "Count of errors in name resolution of " + options_.probe.label)),
      families_(families),
      last_success_s_(families.last_success_s.WithLabels({options_.probe.label})),
      timer_(loop) {}

DnsProbe::~DnsProbe() = default;

bool DnsProbe::Start(std::string* error) {
  ares::Channel::Options channel_options;
  channel_options.servers = {options_.probe.server};
  channel_options.timeout_ms = options_.timeout_ms;
  channel_options.tries = 1;
  channel_ = ares::Channel::Create(loop_, channel_options, error);
  if (channel_ == nullptr) {
    *error = "--probe " + options_.probe.label + ": " + *error;
    return false;
  }
  const uint64_t delay_ms = options_.first_delay(options_.probe.interval_ms);
  VLOG(2) << "probe " << options_.probe.label << ": first query in " << delay_ms << " ms";
  timer_.Start(delay_ms, [this] { Send(); });
  return true;
}

void DnsProbe::Send() {
  VLOG(4) << "probe " << options_.probe.label << ": " << ProbeTypeText(options_.probe.type) << " "
          << options_.probe.name_text << " to " << options_.probe.server.ToString();
  channel_->Send(query_, [this](ares::Channel::Reply reply) { OnReply(std::move(reply)); });
}

void DnsProbe::OnReply(ares::Channel::Reply reply) {
  ++probes_done_;
  const ProbeOutcome outcome = EvaluateProbeReply(options_.probe, reply.status, reply.bytes);
  const std::string& label = options_.probe.label;
  if (outcome.rcode) {
    families_.rcodes.WithLabels({label, dns::RcodeToText(*outcome.rcode)}).Inc();
  }
  // Transitions are logged once each; every failure at --v=3 (kube-dns's level).
  const bool was_ok = status_.ok;
  const bool first = probes_done_ == 1;
  if (outcome.failure == ProbeFailure::kNone) {
    if (first || !was_ok) LOG(INFO) << "probe " << label << ": ok";
    status_.ok = true;
    status_.latency_ns = static_cast<int64_t>(reply.latency_ns);
    status_.error.clear();
    latency_ms_.Observe(GoSeconds(status_.latency_ns) * 1000);
    const auto now = std::chrono::system_clock::now().time_since_epoch();
    last_success_s_.Set(std::chrono::duration<double>(now).count());
  } else {
    if (first || was_ok) {
      LOG(WARNING) << "probe " << label << ": failing: " << outcome.error;
    } else {
      VLOG(3) << "probe " << label << ": " << outcome.error;
    }
    status_.ok = false;
    status_.latency_ns = 0;
    status_.error = outcome.error;
    errors_.Inc();
    families_.failures.WithLabels({label, std::string(ProbeFailureText(outcome.failure))}).Inc();
  }
  // The next probe one interval after this one started (at once when it took longer).
  next_delay_ms_ = NextProbeDelayMs(options_.probe.interval_ms, reply.latency_ns);
  timer_.Start(next_delay_ms_, [this] { Send(); });
}

}  // namespace kdns::sidecar
