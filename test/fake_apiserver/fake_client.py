"""What the fake kube-apiserver's self-test suites (fake_apiserver_*_test.py) share: the
fake as a subprocess (Fake, over servers.FakeApiserver), a raw chunk-level watch client,
an h2 frame-level client, object builders, and main(tests), which starts the fake (and a
second instance with --http2 for the test_h2_* cases), runs each test on its instance (a
test without parameters starts its own; a failing check raises) and stops them.
"""
import inspect
import http.client
import json
import os
import shutil
import socket
import ssl
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

def main(tests, http2=False):
    """Runs `tests` (functions) against the fake, test_h2_* against a second instance
    started with --http2 (only when `http2`); the exit code."""
    flags = ["--objects", OBJECTS, "--history-size", "20", "--bookmark-interval", "0.3",
             "--client-cert-auth", "--too-large-wait", "0.3"]
    fakes = {}

    def start(workdir, owned):
        fakes["http1"] = Fake(*flags)
        owned.append(fakes["http1"])
        if http2:
            fakes["h2"] = Fake(*flags, "--http2")
            owned.append(fakes["h2"])
        return None

    def bound(fn):
        """test(env) for the runner: a test without parameters starts its own instance;
        test_h2_* get the fake that offers h2. A failing check raises."""
        def run(_):
            if not inspect.signature(fn).parameters:
                return fn()
            return fn(fakes.get("h2") if fn.__name__.startswith("test_h2_") else fakes["http1"])
        run.__name__ = fn.__name__
        return run

    def clear_faults():
        for fake in fakes.values():
            fake.ctl("/control/fault/clear", {})

    return harness.main("kdns-fake-client-", [bound(fn) for fn in tests], setup=start,
                        after_each=clear_faults)
