#!/usr/bin/python3
"""Self-test of the fake kube-apiserver over HTTP/2: a second instance runs with --http2
and the test_h2_* cases use the h2 library as a frame-level client (and curl --http2):
ALPN, LIST headers and bytes, flow control, watches, streams multiplexed on one
connection, RST_STREAM and GOAWAY drops, stalls, malformed lines, 429, restarts and the
down period, the discovery switch. Closes with `N passed, M failed`.
"""
import gzip
import json
import os
import shutil
import socket
import ssl
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fake_client  # noqa: E402
from fake_client import (  # noqa: E402
    Fake,
    H2Client,
    OBJECTS,
    TOKEN,
    check,
    endpoint_slice,
    fixture,
    last_seq,
    list_rv,
    service)
import harness  # noqa: E402


def test_alpn_http11_only_without_flag(f):
    ctx = ssl.create_default_context(cafile=f.info["ca_file"])
    ctx.set_alpn_protocols(["h2", "http/1.1"])
    with socket.create_connection(("127.0.0.1", f.info["api_port"]), timeout=5) as raw:
        with ctx.wrap_socket(raw, server_hostname="127.0.0.1") as tls:
            check(tls.selected_alpn_protocol() == "http/1.1",
                  f"ALPN without --http2: {tls.selected_alpn_protocol()}")
    check(f.info.get("http2") is False, "ready file says no http2")


def test_h2_alpn_and_http11_clients(f):
    c = H2Client(f)
    check(c.alpn == "h2", f"ALPN chose {c.alpn}")
    c.close()
    check(f.info.get("http2") is True, "ready file says http2")
    # HTTP/1.1 clients (ALPN http/1.1, or no ALPN at all) still get HTTP/1.1.
    seq = last_seq(f)
    ctx = ssl.create_default_context(cafile=f.info["ca_file"])
    ctx.set_alpn_protocols(["http/1.1"])
    status, headers, body = f.get("/version", ctx=ctx)
    check(status == 200 and body == fixture("08-version.body"), "HTTP/1.1 with ALPN")
    status, headers, body = f.get("/api/v1/services?limit=3")
    check(status == 200 and headers["Content-Length"] == str(len(body)), "HTTP/1.1 no ALPN")
    w = f.watch("resourceVersion=0&timeoutSeconds=1")
    check(w.status == 200 and "Transfer-Encoding: chunked" in w.head, "HTTP/1.1 watch")
    check(w.end(3) == "clean", "HTTP/1.1 watch ends with the 0 chunk")
    w.close()
    log = f.ctl(f"/control/requests?since={seq}")["requests"]
    check([e["proto"] for e in log] == ["HTTP/1.1"] * 3, f"protos {log}")


def test_h2_list_and_headers(f):
    c = H2Client(f)
    seq = last_seq(f)
    r = c.get("/api/v1/services?limit=3")
    # As in the capture 01h2 (which had its date removed): Go's order, lowercase names.
    names = [n for n, _ in r.headers]
    check(names == [":status", "audit-id", "cache-control", "content-type",
                    "x-kubernetes-pf-flowschema-uid", "x-kubernetes-pf-prioritylevel-uid",
                    "content-length", "date"], f"h2 LIST headers {names}")
    check(r.status == 200 and r.header("content-length") == str(len(r.body)), "length")
    page = json.loads(r.body)
    check(len(page["items"]) == 3 and "continue" in page["metadata"], "a page")
    status, _, body11 = f.get("/api/v1/services?limit=3")
    check(body11 == r.body, "the same bytes as over HTTP/1.1")
    r2 = c.get("/api/v1/services?limit=3&continue=" + page["metadata"]["continue"])
    check(json.loads(r2.body)["metadata"]["resourceVersion"] ==
          page["metadata"]["resourceVersion"], "page 2 over h2 keeps the RV")
    check(c.get("/apis/discovery.k8s.io/v1").body == fixture("08-discovery-v1.body"),
          "discovery bytes over h2")
    r = c.get("/apis/discovery.k8s.io/v1/endpointslices")
    for name in ("content-length", "transfer-encoding", "connection"):
        check(r.header(name) is None, f"a big h2 LIST has no {name}")
    check(json.loads(r.body)["kind"] == "EndpointSliceList" and len(r.frames) > 2,
          f"big list over {len(r.frames)} DATA frames")
    r = c.get("/api/v1/services?limit=3", token="bad")
    check(r.status == 401 and r.body == fixture("06-bad-token.body"), "401 over h2")
    check(r.header("x-kubernetes-pf-flowschema-uid") is None, "401 has no flow headers")
    r = c.get("/api/v1/servicez")
    check(r.status == 404 and r.body == fixture("06-notfound-resource.body"), "404 over h2")
    check(c.get("/api/v1/services?resourceVersion=abc").status == 500, "500 over h2")
    c.close()
    log = f.ctl(f"/control/requests?since={seq}")["requests"]
    protos = [e["proto"] for e in log]
    check(protos == ["HTTP/2"] + ["HTTP/1.1"] + ["HTTP/2"] * (len(log) - 2),
          f"request log protos {protos}")
    curl = shutil.which("curl")
    if curl:  # an independent client: curl's nghttp2
        run = subprocess.run([curl, "-sS", "--http2", "--cacert", f.info["ca_file"], "-H",
                              "Authorization: Bearer " + TOKEN, "-o", "/dev/null", "-w",
                              "%{http_version} %{http_code}",
                              f.info["api_url"] + "/api/v1/services?limit=1"],
                             capture_output=True, text=True, timeout=20)
        check(run.stdout == "2 200", f"curl --http2: {run.stdout!r} {run.stderr!r}")


def test_h2_flow_control_big_list(f):
    big = json.loads(f.get("/apis/discovery.k8s.io/v1/namespaces/load/endpointslices/big-1")[2])
    for name in ("big-2", "big-3"):
        f.ctl("/control/objects", dict(big, metadata={"name": name, "namespace": "load",
                                                      "labels": big["metadata"]["labels"]}))
    try:
        # About 190 KB: more than the connection's 64 KiB window and many 16 KiB windows.
        c = H2Client(f, window=16384)
        r = c.get("/apis/discovery.k8s.io/v1/endpointslices", timeout=20)
        check(len(r.body) > 2 * 65535 and len(json.loads(r.body)["items"]) == 9,
              f"big list: {len(r.body)} bytes")
        r = c.get("/apis/discovery.k8s.io/v1/endpointslices",
                  headers=[("accept-encoding", "gzip")])
        check(r.header("content-encoding") == "gzip", "gzip over h2 above 128 KiB")
        check(len(json.loads(gzip.decompress(r.body))["items"]) == 9, "gzip body decodes")
        c.close()
        # A client that stops acknowledging: the server stops at the stream's window ...
        c = H2Client(f, window=16384, auto_ack=False)
        r = c.request("/apis/discovery.k8s.io/v1/endpointslices")
        try:
            c.wait(lambda: False, 1.0)
        except TimeoutError:
            pass
        check(len(r.body) == 16384 and not r.ended, f"stopped at the window: {len(r.body)}")
        # ... other streams go on meanwhile ...
        v = c.request("/version")
        c.wait(lambda: v.ended, 5)
        check(v.body == fixture("08-version.body"), "another stream while one waits")
        # ... and WINDOW_UPDATE lets it finish.
        deadline = time.monotonic() + 20
        while not r.ended and time.monotonic() < deadline:
            c.ack()
            c.pump(1)
        check(r.ended and len(json.loads(r.body)["items"]) == 9, "finished after updates")
        c.close()
    finally:
        f.ctl("/control/delete", {"items": [
            {"kind": "EndpointSlice", "metadata": {"namespace": "load", "name": n}}
            for n in ("big-2", "big-3")]})


def test_h2_watch_events_bookmark_timeout(f):
    c = H2Client(f)
    rv = int(json.loads(c.get("/api/v1/services").body)["metadata"]["resourceVersion"])
    seq = last_seq(f)
    w = c.request(f"/api/v1/services?watch=1&resourceVersion={rv}&allowWatchBookmarks=true"
                  "&timeoutSeconds=2").wait_headers()
    check(w.status == 200, f"watch status {w.status}")
    for name in ("content-length", "transfer-encoding", "connection"):
        check(w.header(name) is None, f"an h2 watch has no {name}")
    started = time.monotonic()
    f.ctl("/control/objects", service("web", labels={"app": "web"}))
    f.ctl("/control/objects", service("web", labels={"app": "web-v2"}))
    f.ctl("/control/delete", {"kind": "Service", "metadata": {"name": "web"}})
    events = [json.loads(w.next_line(skip_bookmarks=True)) for _ in range(3)]
    check([e["type"] for e in events] == ["ADDED", "MODIFIED", "DELETED"], "event types")
    rvs = [int(e["object"]["metadata"]["resourceVersion"]) for e in events]
    check(rvs == [rv + 1, rv + 2, rv + 3], f"event RVs {rvs} after {rv}")
    bookmark = w.next_line(3)
    want = ('{"type":"BOOKMARK","object":{"kind":"Service","apiVersion":"v1","metadata":'
            '{"resourceVersion":"%d","creationTimestamp":null},"spec":{},"status":'
            '{"loadBalancer":{}}}}\n' % (rv + 3)).encode()
    check(bookmark == want, f"bookmark bytes {bookmark!r}")
    check(w.wait_end(3) == "clean", "END_STREAM at timeoutSeconds")
    elapsed = time.monotonic() - started
    check(1.5 < elapsed < 3.5, f"timeout after {elapsed:.2f} s")
    lines = [fr for fr in w.frames if fr]
    check(all(fr.endswith(b"\n") and fr.count(b"\n") == 1 for fr in lines),
          "one line a DATA frame")
    check(w.frames[-1] == b"", "the end is an empty DATA frame with END_STREAM")
    check(c.get("/version").status == 200, "the connection stays open after the watch")
    entry = [e for e in f.ctl(f"/control/requests?since={seq}")["requests"]
             if e["verb"] == "watch"][0]
    check(entry["proto"] == "HTTP/2" and entry["end"] == "timeout", f"log {entry}")
    c.close()


def test_h2_watch_without_rv_and_too_old(f):
    c = H2Client(f)
    n_services = len(json.loads(c.get("/api/v1/services").body)["items"])
    w = c.request("/api/v1/services?watch=1&timeoutSeconds=1")
    n = 0
    try:
        while True:
            check(json.loads(w.next_line(3))["type"] == "ADDED", "synthetic ADDED")
            n += 1
    except EOFError as e:
        check(str(e) == "clean", f"end {e}")
    check(n == n_services, f"{n} synthetic events for {n_services}")
    rv = int(list_rv(f))
    f.ctl("/control/objects", service("too-old"))
    f.ctl("/control/compact", {})
    f.ctl("/control/delete", {"kind": "Service", "metadata": {"name": "too-old"}})
    w = c.request(f"/api/v1/services?watch=1&resourceVersion={rv}&timeoutSeconds=5")
    ev = json.loads(w.next_line(3))
    check(ev["type"] == "ERROR" and ev["object"]["code"] == 410, f"too old over h2: {ev}")
    check(w.wait_end(3) == "clean", "clean end after the ERROR")
    c.close()


def test_h2_concurrent_streams(f):
    c = H2Client(f)
    rv = list_rv(f)
    srv = list_rv(f, "/apis/discovery.k8s.io/v1/endpointslices")
    seq = last_seq(f)
    ws = c.request(f"/api/v1/services?watch=1&resourceVersion={rv}&allowWatchBookmarks=true"
                   "&timeoutSeconds=10").wait_headers()
    we = c.request(f"/apis/discovery.k8s.io/v1/endpointslices?watch=1&resourceVersion={srv}"
                   "&allowWatchBookmarks=true&timeoutSeconds=10").wait_headers()
    try:
        f.ctl("/control/objects", [service("conc", ip="10.96.7.7"),
                                   endpoint_slice("conc-a", "conc", "10.244.7.7")])
        lst = c.request("/api/v1/services?limit=2")  # a LIST while both watches stream
        ev_s = json.loads(ws.next_line(skip_bookmarks=True))
        ev_e = json.loads(we.next_line(skip_bookmarks=True))
        check(ev_s["object"]["kind"] == "Service" and
              ev_s["object"]["metadata"]["name"] == "conc", f"service stream: {ev_s}")
        check(ev_e["object"]["kind"] == "EndpointSlice" and
              ev_e["object"]["metadata"]["name"] == "conc-a", f"slice stream: {ev_e}")
        c.wait(lambda: lst.ended, 5)
        check(lst.status == 200 and len(json.loads(lst.body)["items"]) == 2, "the LIST")
        check(f.ctl("/control/stats")["open_watch_count"] >= 2, "two open watches")
        log = f.ctl(f"/control/requests?since={seq}")["requests"]
        check(sorted((e["verb"], e["proto"]) for e in log) ==
              [("list", "HTTP/2"), ("watch", "HTTP/2"), ("watch", "HTTP/2")], f"log {log}")
        check(len({e["conn"] for e in log}) == 1, f"one connection: {log}")
        # The client resets one stream: only that watch ends, the other goes on.
        c.conn.reset_stream(ws.id, 8)  # CANCEL
        c._flush()
        f.ctl("/control/objects", endpoint_slice("conc-a", "conc", "10.244.7.8"))
        ev_e = json.loads(we.next_line(skip_bookmarks=True))
        check(ev_e["type"] == "MODIFIED", f"the other stream goes on: {ev_e}")

        def ended():
            entry = [e for e in f.ctl(f"/control/requests?since={seq}")["requests"]
                     if e.get("path") == "/api/v1/services" and e["verb"] == "watch"][0]
            return entry.get("end")
        harness.wait_until(lambda: ended() is not None, 3)
        check(ended() == "client-gone", f"a reset stream is a client gone: {ended()}")
    finally:
        c.close()
        f.ctl("/control/delete", {"items": [
            {"kind": "Service", "metadata": {"name": "conc"}},
            {"kind": "EndpointSlice", "metadata": {"name": "conc-a"}}]})


def test_h2_fault_drop(f):
    c = H2Client(f)
    rv = list_rv(f)
    srv = list_rv(f, "/apis/discovery.k8s.io/v1/endpointslices")
    f.ctl("/control/fault/drop", {"count": 1, "path_prefix": "/api/v1/services"})
    ws = c.request(f"/api/v1/services?watch=1&resourceVersion={rv}&timeoutSeconds=10")
    we = c.request(f"/apis/discovery.k8s.io/v1/endpointslices?watch=1&resourceVersion={srv}"
                   "&timeoutSeconds=10")
    ws.wait_headers()
    we.wait_headers()
    try:
        f.ctl("/control/objects", service("dropme"))
        try:
            ws.next_line(3)
            raise AssertionError("the event arrived whole")
        except EOFError as e:
            check(str(e) == "reset" and ws.reset_code == 2, f"RST_STREAM INTERNAL_ERROR: "
                  f"{e} {ws.reset_code}")
        check(ws.body and not ws.body.endswith(b"\n"), f"half a line: {ws.body[-20:]!r}")
        # The connection and its other stream carry on.
        f.ctl("/control/objects", endpoint_slice("dropme-a", "dropme", "10.244.8.8"))
        check(json.loads(we.next_line(3))["object"]["metadata"]["name"] == "dropme-a",
              "the other stream on the connection")
        w2 = c.request(f"/api/v1/services?watch=1&resourceVersion={rv}&timeoutSeconds=5")
        ev = json.loads(w2.next_line(3))
        check(ev["type"] == "ADDED" and ev["object"]["metadata"]["name"] == "dropme",
              "resumed on the same connection")
        # drop now: every open watch is cut mid-line, each with its own RST_STREAM.
        harness.wait_until(lambda: f.ctl("/control/stats")["open_watch_count"] >= 2, 3)
        check(f.ctl("/control/fault/drop", {"now": True})["watches_cut"] >= 2, "cut now")
        check(we.wait_end(3) == "reset" and w2.wait_end(3) == "reset", "both reset")
        check(not c.eof and c.goaway is None, "no GOAWAY, the connection stays")
        check(c.get("/version").status == 200, "the connection still serves")
        check(f.ctl("/control/stats")["watch_ends"].get("dropped", 0) >= 1, "counted")
    finally:
        c.close()
        f.ctl("/control/delete", {"items": [
            {"kind": "Service", "metadata": {"name": "dropme"}},
            {"kind": "EndpointSlice", "metadata": {"name": "dropme-a"}}]})


def test_h2_faults_stall_malformed_http(f):
    c = H2Client(f)
    f.ctl("/control/fault/http", {"status": 429, "count": 1, "retry_after_s": 2,
                                  "path_prefix": "/api/v1/services", "verb": "list"})
    r = c.get("/api/v1/services")
    check(r.status == 429 and r.header("retry-after") == "2" and
          r.header("content-type").startswith("text/plain"), f"429 over h2 {r.headers}")
    check(c.get("/api/v1/services").status == 200, "then 200")
    rv = list_rv(f)
    w = c.request(f"/api/v1/services?watch=1&resourceVersion={rv}&timeoutSeconds=10")
    w.wait_headers()
    f.ctl("/control/fault/stall", {"seconds": 1.0, "path_prefix": "/api/v1/services"})
    started = time.monotonic()
    f.ctl("/control/objects", service("stalled"))
    try:
        w.next_line(0.6)
        raise AssertionError("an event arrived during the stall")
    except TimeoutError:
        pass
    v = c.request("/version")  # the stall holds one stream, not the connection
    c.wait(lambda: v.ended, 0.3)
    ev = json.loads(w.next_line(3))
    check(ev["object"]["metadata"]["name"] == "stalled", "event after the stall")
    check(time.monotonic() - started >= 0.9, "held back for the stall")
    f.ctl("/control/fault/malformed", {"count": 1})
    line = w.next_line(3)
    try:
        json.loads(line)
        raise AssertionError("the malformed line parsed")
    except ValueError:
        pass
    c.close()
    f.ctl("/control/delete", {"kind": "Service", "metadata": {"name": "stalled"}})


def test_h2_restart_and_down(f):
    c = H2Client(f)
    rv = int(list_rv(f))
    w = c.request(f"/api/v1/services?watch=1&resourceVersion={rv}&allowWatchBookmarks=true"
                  "&timeoutSeconds=30")
    w.next_line(3)  # a bookmark: the watch is up
    check(f.ctl("/control/restart", {})["watches_cut"] >= 1, "restart cut the watch")
    check(w.wait_end(3) == "eof" and c.goaway is None,
          f"restart closes the connection without GOAWAY: {w.reset_code} {c.goaway}")
    c.close()
    c = H2Client(f)
    w = c.request(f"/api/v1/services?watch=1&resourceVersion={rv}&timeoutSeconds=5")
    want = fixture("05b-watch-services-old-rv-after-restart.body").replace(
        b"142 (143)", f"{rv} ({rv + 1})".encode())
    check(w.next_line(3) == want, "the 05b ERROR line over h2")
    check(w.wait_end(3) == "clean", "clean end after ERROR")
    c.close()
    f.ctl("/control/restart", {"down_s": 0.5})
    c = H2Client(f)
    r = c.request("/version")
    check(r.wait_end(3) == "eof", "down: the connection closes at the first request")
    c.close()

    def back():
        c = H2Client(f)
        try:
            return c.get("/version").status == 200
        finally:
            c.close()
    check(harness.wait_until(back, 5, ignore=(AssertionError, ConnectionError, ssl.SSLError,
                                              OSError)),
          "back after down_s")


def test_h2_discovery_switch(f):
    c = H2Client(f)
    rv = list_rv(f)
    srv = list_rv(f, "/apis/discovery.k8s.io/v1/endpointslices")
    ws = c.request(f"/api/v1/services?watch=1&resourceVersion={rv}&timeoutSeconds=10")
    we = c.request(f"/apis/discovery.k8s.io/v1/endpointslices?watch=1&resourceVersion={srv}"
                   "&timeoutSeconds=10")
    ws.wait_headers()
    we.wait_headers()
    f.ctl("/control/discovery", {"enabled": False})
    try:
        check(we.wait_end(3) == "reset" and we.reset_code == 2, "the slice watch is reset")
        check(c.get("/apis/discovery.k8s.io/v1/endpointslices").status == 404, "404 now")
        f.ctl("/control/objects", service("after-switch"))
        ev = json.loads(ws.next_line(3))
        check(ev["object"]["metadata"]["name"] == "after-switch", "services watch goes on")
    finally:
        f.ctl("/control/discovery", {"enabled": True})
        c.close()
        f.ctl("/control/delete", {"kind": "Service", "metadata": {"name": "after-switch"}})


def test_h2_drop_connection_mode():
    f = Fake("--objects", OBJECTS, "--http2", "--http2-drop", "connection")
    try:
        c = H2Client(f)
        rv = list_rv(f)
        srv = list_rv(f, "/apis/discovery.k8s.io/v1/endpointslices")
        f.ctl("/control/fault/drop", {"count": 1, "path_prefix": "/api/v1/services"})
        ws = c.request(f"/api/v1/services?watch=1&resourceVersion={rv}&timeoutSeconds=10")
        we = c.request(f"/apis/discovery.k8s.io/v1/endpointslices?watch=1&resourceVersion="
                       f"{srv}&timeoutSeconds=10")
        ws.wait_headers()
        we.wait_headers()
        f.ctl("/control/objects", service("dropme"))
        check(ws.wait_end(3) == "eof" and we.wait_end(3) == "eof", "the connection closed")
        check(c.goaway == 2, f"GOAWAY INTERNAL_ERROR first: {c.goaway}")
        check(ws.body and not ws.body.endswith(b"\n"), f"half a line: {ws.body[-20:]!r}")
        c.close()
        check(f.ctl("/control/stats")["watch_ends"].get("dropped") == 1, "counted")
    finally:
        f.stop()


TESTS = [test_alpn_http11_only_without_flag,
         test_h2_alpn_and_http11_clients,
         test_h2_list_and_headers,
         test_h2_flow_control_big_list,
         test_h2_watch_events_bookmark_timeout,
         test_h2_watch_without_rv_and_too_old,
         test_h2_concurrent_streams,
         test_h2_fault_drop,
         test_h2_faults_stall_malformed_http,
         test_h2_restart_and_down,
         test_h2_discovery_switch,
         test_h2_drop_connection_mode]


if __name__ == "__main__":
    sys.exit(fake_client.main(TESTS, http2=True))
