#!/usr/bin/python3
"""Self-test of the fake kube-apiserver: starts it as a subprocess and checks, over real
HTTPS (http.client, ssl) and a raw chunk-level client, that it behaves like the captures
in test/fixtures/k8s-api. A second instance runs with --http2 for the test_h2_* cases,
which use the h2 library as a frame-level client (and curl --http2). Prints one line per
failure and closes with `N passed, M failed`.
"""
import base64
import inspect
import gzip
import http.client
import json
import os
import shutil
import socket
import ssl
import subprocess
import sys
import tempfile
import time

import h2.config
import h2.connection
import h2.events
import h2.settings

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "test", "e2e"))
import harness  # noqa: E402
import servers  # noqa: E402
FIXTURES = os.path.join(ROOT, "test", "fixtures", "k8s-api")
OBJECTS = os.path.join(ROOT, "test", "conformance", "objects.json")
TOKEN = "test-token"


def fixture(name):
    with open(os.path.join(FIXTURES, name), "rb") as f:
        return f.read()


class Fake(servers.FakeApiserver):
    """One fake apiserver subprocess in a temporary directory of its own."""

    def __init__(self, *extra):
        self.tmp = tempfile.mkdtemp(prefix="fake-apiserver-test-")
        super().__init__(self.tmp, "--token", TOKEN, *extra)
        self.tls = self.info["scheme"] == "https"
        self.ctx = None
        if self.tls:
            self.ctx = ssl.create_default_context(cafile=self.info["ca_file"])

    def stop(self):
        super().stop()
        shutil.rmtree(self.tmp, ignore_errors=True)

    def conn(self, ctx=None, timeout=10):
        if self.tls:
            return http.client.HTTPSConnection("127.0.0.1", self.info["api_port"],
                                               context=ctx or self.ctx, timeout=timeout)
        return http.client.HTTPConnection("127.0.0.1", self.info["api_port"], timeout=timeout)

    def get(self, path, token=TOKEN, ctx=None):
        c = self.conn(ctx)
        headers = {"Accept": "application/json", "User-Agent": "fake-apiserver-test"}
        if token:
            headers["Authorization"] = "Bearer " + token
        c.request("GET", path, headers=headers)
        r = c.getresponse()
        body = r.read()
        c.close()
        return r.status, r.headers, body

    def get_json(self, path, **kw):
        status, headers, body = self.get(path, **kw)
        return status, json.loads(body)

    def ctl(self, path, body=None):
        c = http.client.HTTPConnection("127.0.0.1", self.info["control_port"], timeout=10)
        if body is None:
            c.request("GET", path)
        else:
            c.request("POST", path, body=json.dumps(body),
                      headers={"Content-Type": "application/json"})
        r = c.getresponse()
        data = json.loads(r.read())
        c.close()
        if r.status != 200:
            raise AssertionError(f"control {path}: {r.status} {data}")
        return data

    def watch(self, query, resource="/api/v1/services"):
        return RawWatch(self, f"{resource}?watch=1&{query}")


class RawWatch:
    """A watch read at the chunk level, to see framing, clean ends and abrupt cuts."""

    def __init__(self, fake, path):
        raw = socket.create_connection(("127.0.0.1", fake.info["api_port"]), timeout=10)
        self.sock = fake.ctx.wrap_socket(raw, server_hostname="127.0.0.1") if fake.tls else raw
        self.sock.sendall((f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: "
                           f"application/json\r\nAuthorization: Bearer {TOKEN}\r\n\r\n").encode())
        self.buf = b""
        head = self._until(b"\r\n\r\n", 10)
        self.status = int(head.split(b" ")[1])
        self.head = head.decode()
        self.chunks = []

    def _recv(self, deadline):
        self.sock.settimeout(max(0.01, deadline - time.monotonic()))
        try:
            data = self.sock.recv(65536)
        except socket.timeout:
            raise TimeoutError() from None
        except (ConnectionResetError, ssl.SSLError):
            data = b""
        if not data:
            raise EOFError("abrupt")
        self.buf += data

    def _until(self, sep, timeout):
        deadline = time.monotonic() + timeout
        while sep not in self.buf:
            self._recv(deadline)
        out, self.buf = self.buf.split(sep, 1)
        return out

    def next_chunk(self, timeout=5):
        """The next chunk's bytes; EOFError("clean") on the 0 chunk, ("abrupt") on a cut."""
        deadline = time.monotonic() + timeout
        size = int(self._until(b"\r\n", timeout), 16)
        if size == 0:
            self._until(b"\r\n", max(0.01, deadline - time.monotonic()))
            raise EOFError("clean")
        while len(self.buf) < size + 2:
            self._recv(deadline)
        data, self.buf = self.buf[:size], self.buf[size + 2:]
        self.chunks.append(data)
        return data

    def next_event(self, timeout=5, skip_bookmarks=True):
        while True:
            data = self.next_chunk(timeout)
            ev = json.loads(data)
            if not (skip_bookmarks and ev["type"] == "BOOKMARK"):
                return ev

    def end(self, timeout=5):
        """How the stream ends: "clean" or "abrupt" (other chunks are skipped)."""
        try:
            while True:
                self.next_chunk(timeout)
        except EOFError as e:
            return str(e)

    def close(self):
        self.sock.close()


class H2Response:
    """One HTTP/2 stream as the client saw it: the headers, each DATA frame's payload, and
    how it ended (END_STREAM; RST_STREAM with its error code; or "eof", the connection
    closed)."""

    def __init__(self, client, stream_id):
        self.client = client
        self.id = stream_id
        self.headers = None  # [(name, value)] in wire order
        self.frames = []
        self.ended = False
        self.reset_code = None
        self.read = 0  # bytes of `body` handed out by next_line

    @property
    def status(self):
        return int(dict(self.headers)[":status"])

    def header(self, name):
        return dict(self.headers).get(name)

    @property
    def body(self):
        return b"".join(self.frames)

    def _end(self):
        if self.ended:
            return "clean"
        return "eof" if self.reset_code == "eof" else "reset"

    def wait_headers(self, timeout=5):
        self.client.wait(lambda: self.headers is not None or self.reset_code is not None,
                         timeout)
        return self

    def wait_end(self, timeout=5):
        """"clean" (END_STREAM), "reset" (RST_STREAM) or "eof" (the connection closed)."""
        self.client.wait(lambda: self.ended or self.reset_code is not None, timeout)
        return self._end()

    def next_line(self, timeout=5, skip_bookmarks=False):
        """The next whole line; EOFError(how) if the stream ends first, TimeoutError."""
        while True:
            self.client.wait(lambda: (b"\n" in self.body[self.read:] or self.ended or
                                      self.reset_code is not None), timeout)
            rest = self.body[self.read:]
            if b"\n" not in rest:
                raise EOFError(self._end())
            line = rest[:rest.index(b"\n") + 1]
            self.read += len(line)
            if not (skip_bookmarks and json.loads(line)["type"] == "BOOKMARK"):
                return line


class H2Client:
    """A small HTTP/2 client on the h2 library: TLS with ALPN h2, one connection, many
    streams. It reads only inside wait() and pump(), so a test decides when frames are
    taken in. `window` sets the client's SETTINGS_INITIAL_WINDOW_SIZE (per stream); with
    `auto_ack=False` received DATA is acknowledged only by ack(), so windows close."""

    def __init__(self, fake, window=None, auto_ack=True):
        ctx = ssl.create_default_context(cafile=fake.info["ca_file"])
        ctx.set_alpn_protocols(["h2", "http/1.1"])
        raw = socket.create_connection(("127.0.0.1", fake.info["api_port"]), timeout=10)
        self.sock = ctx.wrap_socket(raw, server_hostname="127.0.0.1")
        self.alpn = self.sock.selected_alpn_protocol()
        self.port = fake.info["api_port"]
        self.conn = h2.connection.H2Connection(h2.config.H2Configuration(
            client_side=True, header_encoding="utf-8"))
        if window is not None:
            self.conn.local_settings = h2.settings.Settings(client=True, initial_values={
                h2.settings.SettingCodes.INITIAL_WINDOW_SIZE: window})
        self.conn.initiate_connection()
        self.auto_ack = auto_ack
        self.streams = {}
        self.goaway = None  # the error code of a GOAWAY from the server
        self.eof = False
        self.unacked = []   # (stream_id, length) while not auto_ack
        self._flush()

    def _flush(self):
        data = self.conn.data_to_send()
        if data:
            self.sock.sendall(data)

    def request(self, path, token=TOKEN, headers=()):
        sid = self.conn.get_next_available_stream_id()
        hs = [(":method", "GET"), (":path", path), (":scheme", "https"),
              (":authority", f"127.0.0.1:{self.port}"), ("accept", "application/json"),
              ("user-agent", "fake-apiserver-test")]
        if token:
            hs.append(("authorization", "Bearer " + token))
        self.conn.send_headers(sid, hs + list(headers), end_stream=True)
        self._flush()
        self.streams[sid] = H2Response(self, sid)
        return self.streams[sid]

    def get(self, path, timeout=10, **kw):
        r = self.request(path, **kw)
        check(r.wait_end(timeout) == "clean", f"{path}: the stream did not end cleanly")
        return r

    def ack(self):
        for sid, n in self.unacked:
            self.conn.acknowledge_received_data(n, sid)
        self.unacked = []
        self._flush()

    def pump(self, timeout):
        """Reads once (waiting up to `timeout` s) and handles the frames; False if nothing."""
        if self.eof:
            return False
        self.sock.settimeout(max(0.01, timeout))
        try:
            data = self.sock.recv(65536)
        except socket.timeout:
            return False
        except OSError:  # reset, TLS error
            data = b""
        if not data:
            self.eof = True
            for r in self.streams.values():
                if not r.ended and r.reset_code is None:
                    r.reset_code = "eof"
            return True
        for ev in self.conn.receive_data(data):
            r = self.streams.get(getattr(ev, "stream_id", None))
            if isinstance(ev, h2.events.ResponseReceived):
                r.headers = ev.headers
            elif isinstance(ev, h2.events.DataReceived):
                r.frames.append(ev.data)
                if self.auto_ack:
                    self.conn.acknowledge_received_data(ev.flow_controlled_length, ev.stream_id)
                else:
                    self.unacked.append((ev.stream_id, ev.flow_controlled_length))
            elif isinstance(ev, h2.events.StreamEnded):
                r.ended = True
            elif isinstance(ev, h2.events.StreamReset):
                r.reset_code = ev.error_code
            elif isinstance(ev, h2.events.ConnectionTerminated):
                self.goaway = ev.error_code
        self._flush()
        return True

    def wait(self, cond, timeout):
        deadline = time.monotonic() + timeout
        while not cond():
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError()
            if not self.pump(left) and self.eof:
                raise EOFError("eof")

    def close(self):
        try:
            if not self.eof:
                self.conn.close_connection()
                self._flush()
        except Exception:
            pass
        self.sock.close()


def service(name, ns="default", ip="10.96.5.5", port=80, labels=None):
    meta = {"name": name, "namespace": ns}
    if labels:
        meta["labels"] = labels
    return {"kind": "Service", "apiVersion": "v1", "metadata": meta,
            "spec": {"clusterIP": ip, "clusterIPs": [ip], "ports": [{"name": "http",
                                                                   "port": port}]}}


def check(cond, what):
    if not cond:
        raise AssertionError(what)


# ---- tests --------------------------------------------------------------------------------

def test_tls_certificates(f):
    for host in ("127.0.0.1", "localhost"):
        c = http.client.HTTPSConnection(host, f.info["api_port"], context=f.ctx, timeout=5)
        c.request("GET", "/version", headers={"Authorization": "Bearer " + TOKEN})
        check(c.getresponse().status == 200, f"TLS to {host}")
        c.close()
    other = ssl.create_default_context(cafile=f.info["other_ca_file"])
    try:
        f.get("/version", ctx=other)
        raise AssertionError("a foreign CA verified the server")
    except ssl.SSLCertVerificationError:
        pass


def test_discovery_and_version(f):
    status, _, body = f.get("/version")
    check(status == 200 and body == fixture("08-version.body"), "/version bytes")
    status, _, body = f.get("/apis/discovery.k8s.io/v1")
    check(body == fixture("08-discovery-v1.body"), "discovery v1 bytes")
    status, _, body = f.get("/apis/discovery.k8s.io")
    check(body == fixture("08-discovery-group.body"), "discovery group bytes")
    status, doc = f.get_json("/apis")
    check([g["name"] for g in doc["groups"]] == ["discovery.k8s.io"], "/apis groups")
    status, doc = f.get_json("/api")
    check(doc["versions"] == ["v1"], "/api versions")
    status, doc = f.get_json("/api/v1")
    check({r["name"] for r in doc["resources"]} == {"services", "endpoints", "pods"}, "/api/v1")
    status, _, body = f.get("/apis/discovery.k8s.io/v1beta1/endpointslices")
    check(status == 404 and body == fixture("06-notfound-groupversion.body"), "v1beta1 404")
    status, _, body = f.get("/api/v1/servicez")
    check(status == 404 and body == fixture("06-notfound-resource.body"), "servicez 404")


def test_unauthorized(f):
    for token in ("not-a-valid-token", None):
        status, headers, body = f.get("/api/v1/services?limit=3", token=token)
        check(status == 401, f"status {status} for token {token}")
        check(body == fixture("06-bad-token.body"), "401 body bytes")
        check("X-Kubernetes-Pf-Flowschema-Uid" not in headers, "401 has no flow headers")
        check(headers["Content-Length"] == str(len(body)), "401 Content-Length")


def test_client_cert_auth(f):
    ctx = ssl.create_default_context(cafile=f.info["ca_file"])
    ctx.load_cert_chain(f.info["client_cert_file"], f.info["client_key_file"])
    status, _, _ = f.get("/api/v1/services", token=None, ctx=ctx)
    check(status == 200, f"client cert: {status}")


def test_token_rotation(f):
    f.ctl("/control/tokens", {"tokens": [TOKEN, "new-token"]})
    check(f.get("/version", token="new-token")[0] == 200, "new token accepted")
    check(f.get("/version", token=TOKEN)[0] == 200, "old token still accepted")
    f.ctl("/control/tokens", {"tokens": ["new-token"]})
    check(f.get("/version", token=TOKEN)[0] == 401, "old token refused after switch")
    check(f.get("/version", token="new-token")[0] == 200, "new token accepted after switch")
    f.ctl("/control/tokens", {"tokens": [TOKEN]})


def test_pagination_walk(f):
    status, full = f.get_json("/api/v1/services")
    names, token, rvs, pages = [], None, set(), 0
    while True:
        path = "/api/v1/services?limit=3" + (f"&continue={token}" if token else "")
        status, page = f.get_json(path)
        check(status == 200, f"page status {status}")
        pages += 1
        rvs.add(page["metadata"]["resourceVersion"])
        for item in page["items"]:
            check("kind" not in item and "apiVersion" not in item, "list item has kind")
            names.append(f'{item["metadata"]["namespace"]}/{item["metadata"]["name"]}')
        token = page["metadata"].get("continue")
        if token is None:
            check("remainingItemCount" not in page["metadata"], "last page remainingItemCount")
            break
        check(page["metadata"]["remainingItemCount"] == len(full["items"]) - len(names),
              "remainingItemCount")
        decoded = json.loads(base64.urlsafe_b64decode(token + "=" * (-len(token) % 4)))
        check(decoded["v"] == "meta.k8s.io/v1" and decoded["start"].endswith("\x00"), "token")
        check(str(decoded["rv"]) == page["metadata"]["resourceVersion"], "token rv")
        # a write between pages must not change the pinned snapshot
        if pages == 1:
            f.ctl("/control/objects", service("aaa-between-pages", ns="aaa"))
    check(len(rvs) == 1, f"every page reports the first page's RV: {rvs}")
    check(names == sorted(names) and len(names) == len(full["items"]), "walk = sorted snapshot")
    check("aaa/aaa-between-pages" not in names, "snapshot is pinned")
    f.ctl("/control/delete", {"kind": "Service", "metadata": {"namespace": "aaa",
                                                              "name": "aaa-between-pages"}})


def test_list_shape_matches_capture(f):
    status, headers, body = f.get("/apis/discovery.k8s.io/v1/endpointslices?limit=500")
    ours = json.loads(body)
    theirs = json.loads(fixture("02-list-endpointslices.body"))
    check(list(ours) == list(theirs), f"top-level keys {list(ours)}")
    check(ours["kind"] == "EndpointSliceList" and ours["apiVersion"] == "discovery.k8s.io/v1",
          "list kind")
    check(list(ours["metadata"]) == list(theirs["metadata"]), "list metadata keys")
    want_item = list(theirs["items"][0])
    want_meta = list(theirs["items"][0]["metadata"])
    for item in ours["items"]:
        check(list(item) == want_item, f"item keys {list(item)}")
        check(list(item["metadata"]) == want_meta, f"item metadata keys {list(item['metadata'])}")
    check(headers.get("Transfer-Encoding") == "chunked", "a big list is chunked")
    check(body.endswith(b"]}\n"), "body ends like Go's encoder")


def test_gzip_only_above_128k(f):
    def fetch():
        c = f.conn()
        c.request("GET", "/apis/discovery.k8s.io/v1/endpointslices", headers={
            "Authorization": "Bearer " + TOKEN, "Accept-Encoding": "gzip"})
        r = c.getresponse()
        body = r.read()
        c.close()
        return r.headers, body
    headers, body = fetch()
    check(headers.get("Content-Encoding") is None and json.loads(body), "small: plain")
    big = json.loads(f.get("/apis/discovery.k8s.io/v1/namespaces/load/endpointslices/big-1")[2])
    for name in ("big-2", "big-3"):
        copy = dict(big, metadata={"name": name, "namespace": "load",
                                   "labels": big["metadata"]["labels"]})
        f.ctl("/control/objects", copy)
    headers, body = fetch()
    check(headers.get("Content-Encoding") == "gzip", "big: gzip")
    check(len(json.loads(gzip.decompress(body))["items"]) == 9, "gzip body decodes")
    f.ctl("/control/delete", {"items": [
        {"kind": "EndpointSlice", "metadata": {"namespace": "load", "name": n}}
        for n in ("big-2", "big-3")]})


def test_rv0_ignores_limit(f):
    status, full = f.get_json("/api/v1/services")
    status, page = f.get_json("/api/v1/services?resourceVersion=0&limit=3")
    check(len(page["items"]) == len(full["items"]), "limit ignored with RV=0")
    check("continue" not in page["metadata"], "no continue with RV=0")


def test_list_errors(f):
    status, _, body = f.get("/api/v1/services?limit=3&continue=bogus")
    check(status == 400 and body == fixture("05a-list-continue-bogus.body"), "bogus continue")
    status, _, body = f.get("/api/v1/services?resourceVersion=abc")
    check(status == 500 and body == fixture("06-list-rv-not-a-number.body"), "rv abc")
    status, _, body = f.get("/api/v1/services?watch=1&resourceVersion=abc&timeoutSeconds=5")
    check(status == 500 and body == fixture("06-watch-rv-not-a-number.body"), "watch rv abc")
    status, _, body = f.get("/api/v1/services?resourceVersionMatch=NotOlderThan")
    check(status == 422 and body == fixture("07-list-services-match-without-rv.body"), "422")
    status, headers, body = f.get("/api/v1/services?resourceVersion=99999999")
    check(status == 504 and headers["Retry-After"] == "1", f"too large: {status}")
    check(json.loads(body)["details"]["causes"][0]["reason"] == "ResourceVersionTooLarge", "504")
    status, _, body = f.get("/api/v1/namespaces/default/services/nope")
    check(status == 404 and body == fixture("06-notfound-object.body"), "404 object")
    status, doc = f.get_json("/api/v1/namespaces/no-such-ns/services")
    check(status == 200 and doc["items"] == [], "missing namespace lists empty")


def test_namespaced_list_and_get(f):
    status, doc = f.get_json("/api/v1/namespaces/default/services?limit=2")
    check(all(i["metadata"]["namespace"] == "default" for i in doc["items"]), "namespace filter")
    token = doc["metadata"]["continue"]
    start = json.loads(base64.urlsafe_b64decode(token + "=" * (-len(token) % 4)))["start"]
    check("/" not in start, f"namespaced start key is relative: {start!r}")
    status, obj = f.get_json("/api/v1/namespaces/default/services/dual")
    check(obj["kind"] == "Service" and obj["metadata"]["name"] == "dual", "GET one")


def test_exact_rv_and_compaction(f):
    status, before = f.get_json("/api/v1/services")
    rv = before["metadata"]["resourceVersion"]
    status, p1 = f.get_json("/api/v1/services?limit=3")
    f.ctl("/control/objects", service("exact-test"))
    status, old = f.get_json(f"/api/v1/services?resourceVersion={rv}&resourceVersionMatch=Exact")
    check(status == 200 and old["metadata"]["resourceVersion"] == rv, "Exact list RV")
    check("exact-test" not in [i["metadata"]["name"] for i in old["items"]], "Exact = old state")
    f.ctl("/control/compact", {})
    status, _, body = f.get(f"/api/v1/services?resourceVersion={rv}&resourceVersionMatch=Exact")
    check(status == 410 and body == fixture("05a-list-exact-rv-compacted.body"), "Exact 410")
    token = p1["metadata"]["continue"]
    status, _, body = f.get(f"/api/v1/services?limit=3&continue={token}")
    gone = json.loads(body)
    check(status == 410 and gone["reason"] == "Expired", "continue after compaction: 410")
    theirs = json.loads(fixture("05a-list-continue-expired.body"))
    check(list(gone) == list(theirs) and gone["message"] == theirs["message"], "410 shape")
    inconsistent = gone["metadata"]["continue"]
    decoded = json.loads(base64.urlsafe_b64decode(inconsistent + "=" * (-len(inconsistent) % 4)))
    check(decoded["rv"] == -1, "inconsistent token has rv -1")
    status, rest = f.get_json(f"/api/v1/services?limit=3&continue={inconsistent}")
    check(status == 200 and int(rest["metadata"]["resourceVersion"]) > int(rv), "current RV")
    f.ctl("/control/delete", {"kind": "Service", "metadata": {"name": "exact-test"}})


def test_watch_events_bookmark_timeout(f):
    status, doc = f.get_json("/api/v1/services")
    rv = int(doc["metadata"]["resourceVersion"])
    w = f.watch(f"resourceVersion={rv}&allowWatchBookmarks=true&timeoutSeconds=2")
    check(w.status == 200 and "Transfer-Encoding: chunked" in w.head, "watch head")
    started = time.monotonic()
    f.ctl("/control/objects", service("web", labels={"app": "web"}))
    f.ctl("/control/objects", service("web", labels={"app": "web-v2"}))
    f.ctl("/control/objects", service("web", labels={"app": "web-v2"}))  # no-op: no event
    f.ctl("/control/delete", {"kind": "Service", "metadata": {"name": "web"}})
    events = [w.next_event() for _ in range(3)]
    check([e["type"] for e in events] == ["ADDED", "MODIFIED", "DELETED"], "event types")
    rvs = [int(e["object"]["metadata"]["resourceVersion"]) for e in events]
    check(rvs == [rv + 1, rv + 2, rv + 3], f"event RVs {rvs} after {rv}")
    check(all(e["object"]["kind"] == "Service" and e["object"]["apiVersion"] == "v1"
              for e in events), "watch objects carry kind/apiVersion")
    check(list(events[0]["object"]) == ["kind", "apiVersion", "metadata", "spec", "status"],
          "watch object key order")
    bookmark = w.next_chunk(3)
    want = ('{"type":"BOOKMARK","object":{"kind":"Service","apiVersion":"v1","metadata":'
            '{"resourceVersion":"%d","creationTimestamp":null},"spec":{},"status":'
            '{"loadBalancer":{}}}}\n' % (rv + 3)).encode()
    check(bookmark == want, f"bookmark bytes {bookmark!r}")
    check(all(c.endswith(b"\n") and c.count(b"\n") == 1 for c in w.chunks), "one line a chunk")
    check(w.end() == "clean", "clean end at timeoutSeconds")
    elapsed = time.monotonic() - started
    check(1.5 < elapsed < 3.5, f"timeout after {elapsed:.2f} s")
    w.close()


def test_watch_without_rv_sends_state(f):
    status, doc = f.get_json("/api/v1/services")
    w = f.watch("timeoutSeconds=1")
    n = 0
    try:
        while True:
            ev = json.loads(w.next_chunk(3))
            check(ev["type"] == "ADDED", "synthetic ADDED")
            n += 1
    except EOFError as e:
        check(str(e) == "clean", "clean end")
    check(n == len(doc["items"]), f"{n} synthetic events for {len(doc['items'])} services")
    w.close()


def test_watch_too_old_rv(f):
    status, doc = f.get_json("/api/v1/services")
    rv = int(doc["metadata"]["resourceVersion"])
    for i in range(25):  # history holds 20 events per resource in this instance
        f.ctl("/control/objects", service("churn", labels={"i": str(i)}))
    f.ctl("/control/delete", {"kind": "Service", "metadata": {"name": "churn"}})
    w = f.watch(f"resourceVersion={rv}&allowWatchBookmarks=true&timeoutSeconds=10")
    check(w.status == 200, "a too-old watch is HTTP 200")
    ev = json.loads(w.next_chunk(3))
    check(ev["type"] == "ERROR" and ev["object"]["code"] == 410 and
          ev["object"]["reason"] == "Expired", f"ERROR 410: {ev}")
    check(ev["object"]["message"].startswith(f"too old resource version: {rv} ("), "message")
    check(w.end(3) == "clean", "stream ends cleanly after the ERROR")
    w.close()


def test_watch_future_rv_is_silent(f):
    w = f.watch("resourceVersion=99999999&allowWatchBookmarks=true&timeoutSeconds=1")
    check(w.end(3) == "clean" and w.chunks == [], f"silent until timeout: {w.chunks}")
    w.close()


def test_restart_down_period(f):
    f.ctl("/control/restart", {"down_s": 0.5})
    try:
        status = f.get("/version")[0]
        raise AssertionError(f"answered while down: {status}")
    except (ConnectionError, ssl.SSLError, http.client.HTTPException, OSError):
        pass
    check(harness.wait_until(lambda: f.get("/version")[0] == 200, 5, ignore=(
        ConnectionError, ssl.SSLError, http.client.HTTPException, OSError)), "back after down_s")
    check(f.ctl("/control/stats")["dropped_while_down"] >= 1, "counted")


def test_restart(f):
    status, doc = f.get_json("/api/v1/services")
    rv = int(doc["metadata"]["resourceVersion"])
    w = f.watch(f"resourceVersion={rv}&allowWatchBookmarks=true&timeoutSeconds=30")
    w.next_chunk(3)  # a bookmark: the watch is up
    out = f.ctl("/control/restart", {})
    check(out["watches_cut"] >= 1, "restart cut the open watch")
    check(w.end(3) == "abrupt", "restart ends the stream with no final chunk")
    w.close()
    w = f.watch(f"resourceVersion={rv}&timeoutSeconds=5")
    body = w.next_chunk(3)
    want = fixture("05b-watch-services-old-rv-after-restart.body").replace(
        b"142 (143)", f"{rv} ({rv + 1})".encode())
    check(body == want, f"after restart: {body!r}")
    check(w.end(3) == "clean", "clean end after ERROR")
    w.close()
    status, doc = f.get_json("/api/v1/services")
    check(int(doc["metadata"]["resourceVersion"]) == rv + 1, "revision keeps growing")


def test_fault_drop_mid_line(f):
    status, doc = f.get_json("/api/v1/services")
    rv = doc["metadata"]["resourceVersion"]
    f.ctl("/control/fault/drop", {"count": 1, "path_prefix": "/api/v1/services"})
    w = f.watch(f"resourceVersion={rv}&timeoutSeconds=10")
    f.ctl("/control/objects", service("dropme"))
    try:
        w.next_chunk(3)
        raise AssertionError("the event arrived whole")
    except EOFError as e:
        check(str(e) == "abrupt", "abrupt close")
    check(w.buf and not w.buf.endswith(b"\n"), f"half a line arrived: {w.buf[-20:]!r}")
    w.close()
    w = f.watch(f"resourceVersion={rv}&timeoutSeconds=1")  # the client resumes
    ev = w.next_event(3)
    check(ev["type"] == "ADDED" and ev["object"]["metadata"]["name"] == "dropme", "resumed")
    w.close()
    ends = f.ctl("/control/stats")["watch_ends"]
    check(ends.get("dropped", 0) >= 1, f"stats count the drop: {ends}")
    f.ctl("/control/delete", {"kind": "Service", "metadata": {"name": "dropme"}})


def test_fault_drop_now(f):
    w = f.watch("resourceVersion=0&allowWatchBookmarks=true&timeoutSeconds=10")
    w.next_chunk(3)
    check(harness.wait_until(lambda: f.ctl("/control/stats")["open_watch_count"] >= 1, 3),
          "the watch is open")
    check(f.ctl("/control/fault/drop", {"now": True})["watches_cut"] >= 1, "cut now")
    check(w.end(3) == "abrupt", "abrupt")
    w.close()


def test_fault_stall(f):
    status, doc = f.get_json("/api/v1/services")
    rv = doc["metadata"]["resourceVersion"]
    w = f.watch(f"resourceVersion={rv}&timeoutSeconds=10")
    f.ctl("/control/fault/stall", {"seconds": 1.0, "path_prefix": "/api/v1/services"})
    started = time.monotonic()
    f.ctl("/control/objects", service("stalled"))
    try:
        w.next_chunk(0.6)
        raise AssertionError("an event arrived during the stall")
    except TimeoutError:
        pass
    ev = w.next_event(3)
    check(ev["object"]["metadata"]["name"] == "stalled", "event after the stall")
    check(time.monotonic() - started >= 0.9, "held back for the stall")
    w.close()
    f.ctl("/control/delete", {"kind": "Service", "metadata": {"name": "stalled"}})


def test_fault_malformed(f):
    status, doc = f.get_json("/api/v1/services")
    rv = doc["metadata"]["resourceVersion"]
    w = f.watch(f"resourceVersion={rv}&timeoutSeconds=10")
    f.ctl("/control/fault/malformed", {"count": 1})
    line = w.next_chunk(3)
    check(line.endswith(b"\n"), "malformed line is a line")
    try:
        json.loads(line)
        raise AssertionError("the malformed line parsed")
    except ValueError:
        pass
    w.close()


def test_fault_http_errors(f):
    f.ctl("/control/fault/http", {"status": 429, "count": 2, "retry_after_s": 2,
                                  "path_prefix": "/api/v1/services", "verb": "list"})
    for _ in range(2):
        status, headers, body = f.get("/api/v1/services")
        check(status == 429 and headers["Retry-After"] == "2", f"429: {status}")
        check(headers["Content-Type"].startswith("text/plain"), "429 is plain text")
    check(f.get("/api/v1/services")[0] == 200, "third request passes")
    f.ctl("/control/fault/http", {"status": 500, "count": 1})
    status, doc = f.get_json("/version")
    check(status == 500 and doc["code"] == 500 and doc["kind"] == "Status", "500 Status")
    f.ctl("/control/fault/http", {"status": 504, "count": 1, "path_prefix": "/apis/"})
    check(f.get("/api/v1/services")[0] == 200, "prefix limits the fault")
    status, headers, _ = f.get("/apis/discovery.k8s.io/v1/endpointslices")
    check(status == 504 and headers["Retry-After"] == "1", "504 with Retry-After")
    stats = f.ctl("/control/stats")
    check(stats["by_verb"]["list"].get("429") == 2, f"stats: {stats['by_verb']}")


def test_discovery_switch(f):
    f.ctl("/control/discovery", {"enabled": False})
    try:
        check(f.get("/apis/discovery.k8s.io/v1")[0] == 404, "group gone")
        check(f.get("/apis/discovery.k8s.io/v1/endpointslices")[0] == 404, "slices gone")
        check(f.get_json("/apis")[1]["groups"] == [], "no groups listed")
        check(f.get("/api/v1/endpoints")[0] == 200, "v1 Endpoints still served")
    finally:
        f.ctl("/control/discovery", {"enabled": True})
    check(f.get("/apis/discovery.k8s.io/v1/endpointslices")[0] == 200, "slices back")


def test_stats_and_request_log(f):
    # watches closed by earlier tests are noticed within 0.5 s
    harness.wait_until(lambda: not f.ctl("/control/stats")["open_watch_count"], 3)
    f.ctl("/control/reset-stats", {})
    f.get("/api/v1/services?limit=1")
    f.get("/api/v1/services", token="bad")
    w = f.watch("resourceVersion=0&timeoutSeconds=5")
    w.next_chunk(3)
    stats = f.ctl("/control/stats")
    check(stats["open_watch_count"] == 1, f"open watches: {stats['open_watch_count']}")
    check(stats["by_verb"]["list"] == {"200": 1, "401": 1}, f"by_verb {stats['by_verb']}")
    log = f.ctl("/control/requests?since=0")["requests"]
    check([e["verb"] for e in log] == ["list", "list", "watch"], f"log {log}")
    check(log[2]["query"]["resourceVersion"] == "0", "log keeps the query")
    check([e["proto"] for e in log] == ["HTTP/1.1"] * 3, f"proto in the log {log}")
    check(len({e["conn"] for e in log}) == 3, f"a connection each: {log}")
    w.close()


# ---- HTTP/2 (the second instance, started with --http2) -----------------------------------

def endpoint_slice(name, svc, ip, ns="default"):
    return {"kind": "EndpointSlice", "apiVersion": "discovery.k8s.io/v1",
            "metadata": {"name": name, "namespace": ns,
                         "labels": {"kubernetes.io/service-name": svc}},
            "addressType": "IPv4",
            "endpoints": [{"addresses": [ip], "conditions": {"ready": True}}],
            "ports": [{"name": "http", "port": 8080, "protocol": "TCP"}]}


def last_seq(f):
    log = f.ctl("/control/requests?since=0")["requests"]
    return log[-1]["seq"] if log else 0


def list_rv(f, path="/api/v1/services"):
    return f.get_json(path)[1]["metadata"]["resourceVersion"]


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


def _ctl_status(f, path, body):
    c = http.client.HTTPConnection("127.0.0.1", f.info["control_port"], timeout=10)
    c.request("POST", path, body=json.dumps(body))
    r = c.getresponse()
    r.read()
    c.close()
    return r.status


def _generated_cleanup(f, prefixes):
    items = []
    for kind in ("Service", "EndpointSlice"):
        for o in f.ctl(f"/control/objects?kind={kind}")["items"]:
            if o["metadata"]["namespace"].startswith(prefixes):
                items.append({"kind": kind, "metadata": {"namespace": o["metadata"]["namespace"],
                                                         "name": o["metadata"]["name"]}})
    f.ctl("/control/delete", {"items": items})


def test_generate(f):
    spec = {"services": 12, "endpoints_per_service": 10, "namespace_prefix": "gentest",
            "services_per_namespace": 5, "max_endpoints_per_slice": 8}
    counts = [6 + (i * 7) % 9 for i in range(12)]
    try:
        out = f.ctl("/control/generate", spec)
        check(out["services"] == 12 and out["headless"] == 3, f"generate: {out}")
        check(out["endpoints"] == sum(counts), f"endpoints {out['endpoints']}")
        check(out["endpoint_slices"] == sum((c + 7) // 8 for c in counts), f"slices {out}")
        status, svc = f.get_json("/api/v1/namespaces/gentest-1/services/svc-5")
        check(status == 200 and svc["spec"]["clusterIP"] == "None", "svc-5 is headless")
        status, svc = f.get_json("/api/v1/namespaces/gentest-1/services/svc-6")
        check(svc["spec"]["clusterIP"] == "10.96.1.6", f"svc-6 {svc['spec']}")
        check(svc["spec"]["sessionAffinity"] == "None", "defaults filled in")
        status, sl = f.get_json("/apis/discovery.k8s.io/v1/namespaces/gentest-0/"
                                "endpointslices/svc-1-0")
        check([e["addresses"][0] for e in sl["endpoints"]] ==
              ["10.128.0.%d" % n for n in range(counts[0], counts[0] + 8)], "svc-1-0 addresses")
        check(sl["metadata"]["labels"]["kubernetes.io/service-name"] == "svc-1", "slice label")
        # LIST pages join cached encodings: the bytes must be what encoding the page gives.
        for path in ("/apis/discovery.k8s.io/v1/endpointslices?limit=7",
                     "/apis/discovery.k8s.io/v1/namespaces/gentest-2/endpointslices",
                     "/api/v1/services?limit=500"):
            status, headers, body = f.get(path)
            doc = json.loads(body)
            again = json.dumps(doc, separators=(",", ":"), ensure_ascii=False).encode() + b"\n"
            check(status == 200 and body == again, f"{path}: canonical bytes")
            check(list(doc) == ["kind", "apiVersion", "metadata", "items"], f"{path}: keys")
        status, doc = f.get_json("/apis/discovery.k8s.io/v1/namespaces/gentest-2/endpointslices")
        check(len(doc["items"]) == sum((c + 7) // 8 for c in counts[10:]), "namespaced list")
        again = f.ctl("/control/generate", spec)
        check(again["unchanged"] == out["services"] + out["endpoint_slices"], "idempotent")
        for bad in ({"services": -1}, {"servces": 1}, {"namespace_prefix": "a/b"}):
            check(_ctl_status(f, "/control/generate", bad) == 400, f"generate {bad}")
    finally:
        _generated_cleanup(f, ("gentest-",))


def test_churn(f):
    f.ctl("/control/generate", {"services": 20, "namespace_prefix": "churntest"})
    f.ctl("/control/objects", [
        {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "p", "namespace": "probe"},
         "spec": {"clusterIP": "None", "ports": [{"name": "http", "port": 80}]}},
        {"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
         "metadata": {"name": "p-1", "namespace": "probe",
                      "labels": {"kubernetes.io/service-name": "p"}},
         "addressType": "IPv4", "endpoints": [{"addresses": ["10.1.1.1"]}], "ports": []}])
    f.ctl("/control/config", {"history_size": 5000})
    try:
        rv0 = int(f.ctl("/control/health")["revision"])
        w = f.watch(f"resourceVersion={rv0}", "/apis/discovery.k8s.io/v1/endpointslices")
        out = f.ctl("/control/churn", {"rate": 400, "seconds": 1, "probe_namespace": "probe",
                                       "probe_rate": 40, "namespace_prefix": "churntest-"})
        check(out["running"] and out["slices"] == 20 and out["probe_slices"] == 1, f"{out}")
        # A paginated LIST while the churn writes: one pinned snapshot, every slice once.
        names, token, rvs = [], None, set()
        while True:
            path = "/apis/discovery.k8s.io/v1/endpointslices?limit=3" + (
                f"&continue={token}" if token else "")
            status, page = f.get_json(path)
            check(status == 200, f"page status {status}")
            rvs.add(page["metadata"]["resourceVersion"])
            for item in page["items"]:
                check(int(item["metadata"]["resourceVersion"]) <=
                      int(page["metadata"]["resourceVersion"]), "item newer than the list")
                names.append(item["metadata"]["namespace"] + "/" + item["metadata"]["name"])
            token = page["metadata"].get("continue")
            if token is None:
                break
            time.sleep(0.02)  # pacing, not a wait: the churn writes between the pages
        check(len(rvs) == 1, f"pages at one RV: {rvs}")
        check(names == sorted(names) and len(set(names)) == len(names), "sorted, no repeats")
        check(sum(n.startswith("churntest-") for n in names) == 20, "every slice listed")
        harness.wait_until(lambda: not f.ctl("/control/churn")["running"], 5)
        st = f.ctl("/control/churn?log=1")
        check(not st["running"] and st["error"] is None, f"churn ended: {st}")
        check(st["applied"] == 400 and st["probe_applied"] == 40, f"applied {st}")
        log = st["probe_log"]
        check(len(log) == 40 and len({e["ip"] for e in log}) == 40, "40 distinct probe IPs")
        check(all(a["t"] <= b["t"] for a, b in zip(log, log[1:])), "probe times in order")
        check(log[0]["service"] == "p" and log[0]["ip"] == "10.240.0.0", f"probe {log[0]}")
        status, sl = f.get_json("/apis/discovery.k8s.io/v1/namespaces/probe/endpointslices/p-1")
        check(sl["endpoints"] == [{"addresses": [log[-1]["ip"]], "conditions": {"ready": True}}],
              f"probe slice {sl['endpoints']}")
        events = 0
        try:
            while events < 400:
                ev = w.next_event(2)
                check(ev["type"] == "MODIFIED", f"churn event {ev['type']}")
                events += 1
        except (TimeoutError, EOFError):
            pass
        w.close()
        check(events == 400 - st["unchanged"], f"watch saw {events} events")
        check(f.ctl("/control/churn?log=1&since=39")["probe_log"] == log[39:], "since")
        out = f.ctl("/control/churn", {"rate": 100, "seconds": 30,
                                       "namespace_prefix": "churntest-"})
        check(f.ctl("/control/churn/stop", {})["running"] in (True, False), "stop answers")
        harness.wait_until(lambda: not f.ctl("/control/churn")["running"], 5)
        st = f.ctl("/control/churn")
        check(not st["running"] and st["applied"] < 100, f"stopped: {st}")
        check(st["unchanged"] == 0, f"a second churn repeats addresses: {st}")
        for bad in ({"rate": 0}, {"rate": 10, "probe_rate": 5, "probe_namespace": "none"}):
            check(_ctl_status(f, "/control/churn", bad) == 400, f"churn {bad}")
    finally:
        f.ctl("/control/churn/stop", {})
        f.ctl("/control/config", {"history_size": 20})
        _generated_cleanup(f, ("churntest-", "probe"))


def test_plain_http_mode():
    f = Fake("--plain-http", "--objects", OBJECTS)
    try:
        status, doc = f.get_json("/api/v1/services")
        with open(OBJECTS) as fh:
            want = sum(1 for o in json.load(fh)["items"] if o["kind"] == "Service")
        check(status == 200 and len(doc["items"]) == want, "plain HTTP list")
        check(f.get("/api/v1/services", token="bad")[0] == 401, "plain HTTP auth")
        check("ca_file" not in f.info, "no PKI in plain mode")
    finally:
        f.stop()


def main():
    flags = ["--objects", OBJECTS, "--history-size", "20", "--bookmark-interval", "0.3",
             "--client-cert-auth", "--too-large-wait", "0.3"]
    fake = Fake(*flags)
    fake_h2 = None
    try:
        fake_h2 = Fake(*flags, "--http2")

        def bound(name, fn):
            """test(env) for the runner: a test without parameters starts its own
            instance; test_h2_* get the fake that offers h2. A failing check raises."""
            def run(_):
                if not inspect.signature(fn).parameters:
                    return fn()
                return fn(fake_h2 if name.startswith("test_h2_") else fake)
            run.__name__ = name
            return run

        def clear_faults():
            fake.ctl("/control/fault/clear", {})
            fake_h2.ctl("/control/fault/clear", {})

        tests = [bound(name, fn) for name, fn in globals().items()
                 if name.startswith("test_") and callable(fn)]
        passed, failed = harness.run_tests(tests, None, after_each=clear_faults)
    finally:
        if fake_h2:
            fake_h2.stop()
        fake.stop()
    return harness.finish(passed, failed)


if __name__ == "__main__":
    sys.exit(main())
