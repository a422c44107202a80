// Fuzzes DNS over TCP framing with its timeouts: DnsTcpFramer fed arbitrary bytes at
// arbitrary times, driven the way DnsTcpConnection drives it (reading pauses at the
// outstanding-query cap and resumes after an answer; the connection closes when
// DnsTcpConnection::NextDeadline says so). The input is a program of operations:
//   op % 4 == 0  feed the next (1 + next byte % 32) bytes, arriving now (skipped while
//                paused: the connection is not reading then)
//   op % 4 == 1  time passes: next byte * 10 ms
//   op % 4 == 2  answer the oldest outstanding query (resumes reading if paused)
//   op % 4 == 3  time passes: next byte * 100 ms
// Against an independent model of the stream it checks: every delivered message is the
// next whole frame of the bytes fed (nothing delivered before its last byte arrived, none
// skipped, in order); a bad length is reported exactly where the model finds one; the
// partial frame's clock is the time its first byte arrived (or reading resumed); the
// connection closes at its deadline, so no message completes later than the frame timeout
// after its first byte, no idle connection outlives the idle timeout after its last
// whole message, and no busy one waits past the query timeout after it became busy or
// sent its last answer (its owner then answers or closes; the run ends there); the buffer
// never holds more than one partial frame.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <deque>
#include <optional>
#include <span>
#include <vector>

#include "common/loop/dns_tcp_connection.h"
#include "common/loop/dns_tcp_framer.h"

namespace {

using kdns::loop::DnsTcpConnection;
using kdns::loop::DnsTcpFramer;
using CloseReason = kdns::loop::TcpConnection::CloseReason;

constexpr size_t kMaxOutstanding = 3;

#define CHECK_OR_ABORT(cond) \
  do {                       \
    if (!(cond)) abort();    \
  } while (0)

struct Model {
  std::vector<uint8_t> stream;       // every byte fed
  std::vector<uint64_t> arrived_ms;  // when each byte was fed
  size_t consumed = 0;               // bytes of the frames delivered so far
  uint64_t last_resume_ms = 0;
  size_t outstanding = 0;
  uint64_t last_progress_ms = 0;  // as DnsTcpConnection's: busy since, or last answer

  // When the frame at `consumed` began for the framer (see the header comment).
  uint64_t FrameSince() const { return std::max(arrived_ms[consumed], last_resume_ms); }
};

struct Run {
  DnsTcpFramer framer;
  DnsTcpConnection::Options options;
  Model model;
  uint64_t now_ms = 0;
  bool closed = false;

  DnsTcpFramer::Next OnMessage(std::span<const uint8_t> message) {
    const size_t at = model.consumed;
    CHECK_OR_ABORT(model.stream.size() - at >= 2);
    const size_t length = (static_cast<size_t>(model.stream[at]) << 8) | model.stream[at + 1];
    CHECK_OR_ABORT(length >= DnsTcpFramer::kMinMessageBytes);
    CHECK_OR_ABORT(message.size() == length);
    CHECK_OR_ABORT(at + 2 + length <= model.stream.size());  // whole: every byte arrived
    for (size_t i = 0; i < length; ++i) CHECK_OR_ABORT(message[i] == model.stream[at + 2 + i]);
    // Completed within the frame timeout of its first byte (the owner closes at the deadline).
    if (options.frame_timeout_ms > 0) {
      CHECK_OR_ABORT(now_ms < model.FrameSince() + options.frame_timeout_ms);
    }
    model.consumed += 2 + length;
    if (model.outstanding++ == 0) model.last_progress_ms = now_ms;
    return model.outstanding >= kMaxOutstanding ? DnsTcpFramer::Next::kPause
                                                : DnsTcpFramer::Next::kContinue;
  }

  DnsTcpFramer::MessageCallback Callback() {
    return [this](std::span<const uint8_t> m) { return OnMessage(m); };
  }

  void CheckResult(DnsTcpFramer::Result result) {
    if (result == DnsTcpFramer::Result::kBadLength) {
      // The model agrees: a complete length prefix below the DNS header at `consumed`.
      const size_t at = model.consumed;
      CHECK_OR_ABORT(model.stream.size() - at >= 2);
      CHECK_OR_ABORT(((static_cast<size_t>(model.stream[at]) << 8) | model.stream[at + 1]) <
                     DnsTcpFramer::kMinMessageBytes);
      closed = true;
      return;
    }
    CHECK_OR_ABORT(result == DnsTcpFramer::Result::kOk);
    CheckState();
  }

  void CheckState() {
    const size_t unread = model.stream.size() - model.consumed;
    if (!framer.paused()) {
      CHECK_OR_ABORT(framer.buffered_bytes() == unread);
      CHECK_OR_ABORT(framer.buffered_bytes() < DnsTcpFramer::kMaxFrameBytes);
      CHECK_OR_ABORT(framer.buffer_capacity() <= DnsTcpFramer::kMaxFrameBytes);
      if (unread > 0) {
        CHECK_OR_ABORT(framer.partial_frame_since_ms() == model.FrameSince());
      } else {
        CHECK_OR_ABORT(!framer.partial_frame_since_ms().has_value());
      }
    } else {
      CHECK_OR_ABORT(!framer.partial_frame_since_ms().has_value());
      CHECK_OR_ABORT(framer.buffered_bytes() == unread);
    }
  }

  // Time passes; the connection's one timer fires at the deadline if it comes first.
  void Advance(uint64_t ms) {
    const auto deadline =
        DnsTcpConnection::NextDeadline(framer, model.outstanding, model.last_progress_ms, options);
    if (deadline) {
      // The deadline is the model's: frame clock or idle clock, never moved by stray bytes.
      if (deadline->reason == CloseReason::kFrameTimeout) {
        CHECK_OR_ABORT(deadline->at_ms == model.FrameSince() + options.frame_timeout_ms);
      } else if (deadline->reason == CloseReason::kQueryTimeout) {
        // Queries outstanding with no answer since the last progress: the owner answers them
        // or closes; the model ends the run there, as for the other deadlines.
        CHECK_OR_ABORT(model.outstanding > 0);
        CHECK_OR_ABORT(deadline->at_ms == model.last_progress_ms + options.query_timeout_ms);
      } else {
        CHECK_OR_ABORT(deadline->reason == CloseReason::kIdleTimeout);
        CHECK_OR_ABORT(model.outstanding == 0);
        CHECK_OR_ABORT(deadline->at_ms == model.last_progress_ms + options.idle_timeout_ms);
      }
      if (now_ms + ms >= deadline->at_ms) {
        now_ms = deadline->at_ms;
        closed = true;
        return;
      }
    }
    now_ms += ms;
  }

  void Feed(std::span<const uint8_t> bytes) {
    if (framer.paused()) return;  // not reading
    model.stream.insert(model.stream.end(), bytes.begin(), bytes.end());
    model.arrived_ms.insert(model.arrived_ms.end(), bytes.size(), now_ms);
    CheckResult(framer.Feed(bytes, Callback(), now_ms));
  }

  void Answer() {
    if (model.outstanding == 0) return;
    --model.outstanding;
    model.last_progress_ms = now_ms;
    if (framer.paused() && model.outstanding < kMaxOutstanding) {
      model.last_resume_ms = now_ms;
      CheckResult(framer.Resume(Callback(), now_ms));
    }
  }
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  Run run;
  run.options.frame_timeout_ms = 2000;
  run.options.idle_timeout_ms = 10'000;
  size_t i = 0;
  auto next = [&]() -> uint8_t { return i < size ? data[i++] : 0; };
  while (i < size && !run.closed) {
    const uint8_t op = next();
    switch (op % 4) {
      case 0: {
        const size_t n = std::min<size_t>(1 + next() % 32, size - std::min(i, size));
        if (n == 0) break;
        run.Feed(std::span<const uint8_t>(data + i, n));
        i += n;
        break;
      }
      case 1:
        run.Advance(static_cast<uint64_t>(next()) * 10);
        break;
      case 2:
        run.Answer();
        break;
      case 3:
        run.Advance(static_cast<uint64_t>(next()) * 100);
        break;
    }
  }
  return 0;
}
