// CurlTransport's re-entrancy and lifetime: callbacks that start, cancel or destroy, and
// destruction with requests in flight.

#include <catch2/catch.hpp>
#include <memory>
#include <string>
#include <vector>

#include "common/k8s/curl_transport.h"
#include "common/k8s/curl_transport_testing.h"

namespace kdns::k8s {
namespace {

using namespace curl_testing;  // NOLINT(google-build-using-namespace): the shared fixtures

TEST_CASE_METHOD(loop::testing::LoopFixture,
                 "Cancel from inside on_body stops the stream with no further callbacks",
                 "[curl]") {
  CurlTransport transport(loop, TlsConfig(), TestOptions());
  Collected c;
  ApiTransport::RequestId id = 0;
  auto callbacks = Collect(c);
  auto on_body = callbacks.on_body;
  callbacks.on_body = [&, on_body](std::string_view piece) {
    on_body(piece);
    transport.Cancel(id);
    transport.Cancel(id);
  };
  id = transport.Get("/watch?lines=50&interval_ms=5", std::move(callbacks), 0);
  REQUIRE(RunUntil(
      loop, [&] { return transport.active_requests() == 0; }, kWaitMs));
  CHECK(c.pieces.size() == 1);
  CHECK(c.dones == 0);
  // The transport is still usable, on the same or a new connection.
  Collected after;
  Get(transport, "/json", after);
  Finish(loop, after);
  CHECK(after.done->ok());
  CHECK(c.pieces.size() == 1);
  CHECK(c.dones == 0);
}

TEST_CASE_METHOD(loop::testing::LoopFixture, "Callbacks may start and cancel other requests",
                 "[curl]") {
  CurlTransport transport(loop, TlsConfig(), TestOptions());
  Collected watch, from_head, from_done;
  auto watch_id = Get(transport, "/watch?lines=1&hold=1", watch, 0);

  Collected first;
  auto callbacks = Collect(first);
  auto on_head = callbacks.on_head;
  callbacks.on_head = [&, on_head](const ApiResponseHead& head) {
    on_head(head);
    transport.Get("/json", Collect(from_head), kWaitMs);  // from inside curl: deferred
  };
  auto on_done = callbacks.on_done;
  callbacks.on_done = [&, on_done](const ApiResult& result) {
    on_done(result);
    transport.Cancel(watch_id);
    transport.Get("/status/410", Collect(from_done), kWaitMs);
  };
  transport.Get("/json", std::move(callbacks), kWaitMs);

  REQUIRE(RunUntil(
      loop, [&] { return from_head.done && from_done.done; }, kWaitMs));
  CHECK(first.done->ok());
  CHECK(from_head.done->status == 200);
  CHECK(from_done.done->status == 410);
  CHECK(watch.dones == 0);
  CHECK(transport.active_requests() == 0);
}

TEST_CASE("Destroying the transport mid-request runs no callback and frees everything", "[curl]") {
  loop::Loop loop;
  Collected watch, slow, fresh;
  {
    CurlTransport transport(loop, TlsConfig(), TestOptions());
    Get(transport, "/watch?lines=1&hold=1", watch, 0);
    Get(transport, "/slow?delay_ms=2000", slow);
    REQUIRE(RunUntil(
        loop, [&] { return !watch.body.empty(); }, kWaitMs));
    Get(transport, "/json", fresh);  // not even started
  }
  CHECK(watch.dones == 0);
  CHECK(slow.callbacks() == 0);
  CHECK(fresh.callbacks() == 0);
  RequireClosesClean(loop);
}

TEST_CASE("on_done may destroy the transport", "[curl]") {
  loop::Loop loop;
  auto transport = std::make_unique<CurlTransport>(loop, TlsConfig(), TestOptions());
  Collected other;
  Get(*transport, "/watch?lines=1&hold=1", other, 0);
  bool done = false;
  transport->Get("/json",
                 {.on_head = {},
                  .on_body = {},
                  .on_done =
                      [&](const ApiResult&) {
                        done = true;
                        transport.reset();
                      }},
                 kWaitMs);
  REQUIRE(RunUntil(
      loop, [&] { return done; }, kWaitMs));
  CHECK(transport == nullptr);
  CHECK(other.dones == 0);
  RequireClosesClean(loop);
}

TEST_CASE_METHOD(loop::testing::LoopFixture,
                 "A request that cannot be set up fails later, not inside Get", "[curl]") {
  CurlTransport transport(loop, TlsConfig(), TestOptions());
  // Longer than curl accepts for a string option (CURL_MAX_INPUT_LENGTH, 8 MB).
  const std::string too_long =
      "/" + std::string(9'000'000, 'a');  // NOLINT(bugprone-string-constructor): on purpose
  Collected c;
  Get(transport, too_long, c);
  CHECK(c.callbacks() == 0);
  Finish(loop, c);
  INFO(c.done->transport_error);
  CHECK_FALSE(c.done->ok());
  CHECK(c.done->transport_error.find("curl option") != std::string::npos);

  Collected cancelled;
  auto id = Get(transport, too_long, cancelled);
  transport.Cancel(id);
  for (int i = 0; i < 5; ++i) loop.RunNoWait();
  CHECK(cancelled.callbacks() == 0);
}

}  // namespace
}  // namespace kdns::k8s
