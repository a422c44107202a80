"""The Kubernetes API side of the fake: authentication, injected HTTP errors, discovery,
and GET/LIST/WATCH of the served resources, answered with the captured byte shapes.

One handler thread per connection (HTTP/1.1 keep-alive). State is read under the shared
lock; response bodies are encoded and written outside it.
"""
import email.utils
import gzip
import http.server
import random
import re
import select
import socket
import ssl
import time
import urllib.parse
import uuid

import shapes
import store

FLOW_SCHEMA_UID = str(uuid.uuid4())
PRIORITY_LEVEL_UID = str(uuid.uuid4())
# Go's net/http buffers this much before choosing between Content-Length and chunked.
GO_BUFFER_BYTES = 2048
LIST_CHUNK_BYTES = 16384
GZIP_THRESHOLD_BYTES = 128 * 1024  # defaultGzipThresholdBytes

RESOURCE_PATH = re.compile(
    r"/(api/v1|apis/discovery\.k8s\.io/v1)(?:/namespaces/([^/]+))?/([^/]+)(?:/([^/]+))?/?")


class ClientGone(Exception):
    pass


def _first(query, name):
    values = query.get(name)
    return values[0] if values else None


class ApiHandler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    timeout = 300  # idle keep-alive and stuck writes
    server_version = "kdns-fake-apiserver"

    def log_message(self, fmt, *args):
        if self.server.verbose:
            super().log_message(fmt, *args)

    @property
    def state(self):
        return self.server.state

    # ---- response writing ---------------------------------------------------------------

    def _start(self, code, headers, flow=True, content_type="application/json"):
        self.send_response_only(code)
        all_headers = {"Audit-Id": str(uuid.uuid4()), "Cache-Control": "no-cache, private",
                       "Content-Type": content_type}
        if flow:
            all_headers["X-Kubernetes-Pf-Flowschema-Uid"] = FLOW_SCHEMA_UID
            all_headers["X-Kubernetes-Pf-Prioritylevel-Uid"] = PRIORITY_LEVEL_UID
        all_headers.update(headers or {})
        for name in sorted(all_headers):
            self.send_header(name, all_headers[name])
        self.send_header("Date", email.utils.formatdate(usegmt=True))

    def _write(self, data):
        try:
            self.wfile.write(data)
        except (OSError, ssl.SSLError, ValueError) as e:
            self.close_connection = True
            raise ClientGone() from e

    def _chunk(self, data):
        self._write(b"%x\r\n%s\r\n" % (len(data), data))

    def send_bytes(self, code, body, headers=None, flow=True, content_type="application/json"):
        headers = dict(headers or {})
        if len(body) > GZIP_THRESHOLD_BYTES and "gzip" in self.headers.get("Accept-Encoding", ""):
            body = gzip.compress(body)  # as the apiserver does above 128 KiB
            headers.update({"Content-Encoding": "gzip", "Vary": "Accept-Encoding"})
        self._start(code, headers, flow, content_type)
        if len(body) <= GO_BUFFER_BYTES:
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self._write(body)
            return
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        for i in range(0, len(body), LIST_CHUNK_BYTES):
            self._chunk(body[i:i + LIST_CHUNK_BYTES])
        self._write(b"0\r\n\r\n")

    def send_json(self, code, obj, headers=None, flow=True):
        self.send_bytes(code, shapes.encode(obj) + b"\n", headers, flow)  # Go json.Encoder

    def abort_connection(self):
        """Closes the TCP connection at once: no final chunk, no TLS close_notify."""
        self.close_connection = True
        try:
            self.connection.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass

    # ---- request entry ------------------------------------------------------------------

    def do_GET(self):
        url = urllib.parse.urlsplit(self.path)
        path = url.path
        query = urllib.parse.parse_qs(url.query, keep_blank_values=True)
        qflat = {k: v[0] for k, v in query.items()}
        verb = self._verb(path, query)
        with self.state.lock:
            if time.monotonic() < self.state.down_until:
                self.state.dropped_while_down += 1
                self.abort_connection()
                return
        auth = self._authenticate()
        try:
            if auth is None:
                self._finish_record(path, qflat, verb, 401, "none")
                self.send_json(401, shapes.status_unauthorized(), flow=False)
                return
            with self.state.lock:
                rule = self.state.faults.take_http_error(path, verb)
            if rule is not None:
                self._finish_record(path, qflat, verb, rule.status, auth)
                self._send_fault(rule)
                return
            self._route(path, query, qflat, verb, auth)
        except ClientGone:
            pass

    def do_POST(self):
        self._not_allowed()

    do_PUT = do_PATCH = do_DELETE = do_POST

    def _not_allowed(self):
        self.close_connection = True  # the body is not read
        try:
            self.send_json(405, shapes.status(
                405, "the server does not allow this method on the requested resource",
                "MethodNotAllowed", {}))
        except ClientGone:
            pass

    def _verb(self, path, query):
        m = RESOURCE_PATH.fullmatch(path)
        if m and m.group(3) in shapes.RESOURCES:
            if _first(query, "watch") in ("1", "true"):
                return "watch"
            return "get" if m.group(4) else "list"
        if path == "/version":
            return "version"
        if path in ("/api", "/apis") or path.startswith(("/api/", "/apis/")):
            return "discovery"
        return "other"

    def _authenticate(self):
        """"token", "client-cert", or None (401)."""
        header = self.headers.get("Authorization", "")
        if header.startswith("Bearer "):
            with self.state.lock:
                if header[len("Bearer "):].strip() in self.state.tokens:
                    return "token"
            return None  # a bad token is refused even with a good client cert
        if isinstance(self.connection, ssl.SSLSocket):
            try:
                if self.connection.getpeercert():
                    return "client-cert"
            except (ValueError, ssl.SSLError):
                pass
        return None

    def _finish_record(self, path, qflat, verb, status, auth):
        with self.state.lock:
            return self.state.record("GET", path, qflat, verb, status, auth)

    def _send_fault(self, rule):
        headers = {}
        if rule.retry_after_s is not None:
            headers["Retry-After"] = str(rule.retry_after_s)
        if rule.status == 429:
            # The max-in-flight / APF filters answer with Go's http.Error: plain text.
            headers["X-Content-Type-Options"] = "nosniff"
            self.send_bytes(429, b"Too many requests, please try again later.\n", headers,
                            content_type="text/plain; charset=utf-8")
            return
        self.send_json(rule.status, shapes.status_fault(rule.status), headers)

    def _route(self, path, query, qflat, verb, auth):
        def reply(code, obj, headers=None):
            self._finish_record(path, qflat, verb, code, auth)
            self.send_json(code, obj, headers)

        with self.state.lock:
            slices = self.state.slices_served
        if path == "/version":
            self._finish_record(path, qflat, verb, 200, auth)
            self.send_bytes(200, shapes.VERSION_BODY)
        elif path == "/api":
            reply(200, shapes.api_versions(self.headers.get("Host", "127.0.0.1")))
        elif path == "/api/v1":
            reply(200, shapes.resource_list("v1"))
        elif path == "/apis":
            reply(200, shapes.api_group_list(slices))
        elif path == "/apis/discovery.k8s.io" and slices:
            reply(200, shapes.discovery_group())
        elif path == "/apis/discovery.k8s.io/v1" and slices:
            reply(200, shapes.resource_list("discovery.k8s.io/v1"))
        else:
            m = RESOURCE_PATH.fullmatch(path)
            res = shapes.RESOURCES.get(m.group(3)) if m else None
            if res is None or res.prefix() != "/" + m.group(1) or (res.group and not slices):
                reply(404, shapes.status_not_found_generic())
            elif m.group(4):
                self._get_one(res, m.group(2), m.group(4), reply)
            elif verb == "watch":
                self._watch(res, m.group(2), path, query, qflat, auth)
            else:
                self._list(res, m.group(2), query, reply)

    def _get_one(self, res, namespace, name, reply):
        if namespace is None:
            reply(404, shapes.status_not_found_generic())
            return
        with self.state.lock:
            obj = self.state.store.objects[res.plural].get(f"{namespace}/{name}")
        if obj is None:
            reply(404, shapes.status_not_found_object(res, name))
        else:
            reply(200, obj)

    # ---- LIST ---------------------------------------------------------------------------

    def _list(self, res, namespace, query, reply):
        code, obj, headers = self._list_result(res, namespace, query)
        reply(code, obj, headers)

    def _list_result(self, res, namespace, query):
        """(status, body, extra headers) of a LIST, with the apiserver's RV semantics."""
        rv_s = _first(query, "resourceVersion") or None
        match = _first(query, "resourceVersionMatch") or None
        token = _first(query, "continue") or None
        try:
            limit = max(0, int(_first(query, "limit") or 0))
        except ValueError:
            limit = 0
        if match and rv_s is None:
            return 422, shapes.status_match_without_rv(), None
        if rv_s is not None and not rv_s.isdigit():
            return 500, shapes.status_rv_not_a_number(rv_s), None
        st = self.state
        start, sort = "", True
        with st.lock:
            if token is not None:
                try:
                    token_rv, start = shapes.decode_continue(token)
                except ValueError as e:
                    return 400, shapes.status_bad_continue(str(e)), None
                if token_rv < 0:  # the inconsistent token a 410 hands out
                    snap, list_rv = st.store.snapshot(res.plural), st.store.revision
                else:
                    try:
                        snap, list_rv = st.store.snapshot(res.plural, token_rv), token_rv
                    except store.Expired:
                        return 410, shapes.status_continue_expired(
                            shapes.encode_continue(-1, start)), None
            elif rv_s is not None:
                want = int(rv_s)
                # The watch cache waits up to 3 s for a future revision, then gives up.
                deadline = time.monotonic() + st.too_large_wait_s
                while want > st.store.revision and time.monotonic() < deadline:
                    st.cond.wait(max(0.001, deadline - time.monotonic()))
                if want > st.store.revision:
                    return (504, shapes.status_rv_too_large(want, st.store.revision),
                            {"Retry-After": "1"})
                if match == "Exact":
                    try:
                        snap, list_rv = st.store.snapshot(res.plural, want), want
                    except store.Expired:
                        return 410, shapes.status_list_rv_expired(), None
                else:
                    snap, list_rv = st.store.snapshot(res.plural), st.store.revision
                    if want == 0 or not limit:
                        # Served from the watch cache: limit ignored, hash order.
                        limit, sort = 0, False
                        snap = dict(random.sample(list(snap.items()), len(snap)))
            else:
                snap, list_rv = st.store.snapshot(res.plural), st.store.revision
        return 200, self._page(res, namespace, snap, list_rv, start, limit, sort), None

    @staticmethod
    def _page(res, namespace, snap, list_rv, start, limit, sort):
        """One page of a list; keys in continue tokens are relative to the list's prefix."""
        if namespace is not None:
            prefix = namespace + "/"
            rel = [(k[len(prefix):], o) for k, o in snap.items() if k.startswith(prefix)]
        else:
            rel = list(snap.items())
        if sort:
            rel.sort(key=lambda kv: kv[0].encode())
        if start:
            rel = [kv for kv in rel if kv[0].encode() >= start.encode()]
        meta = {"resourceVersion": str(list_rv)}
        if limit and len(rel) > limit:
            meta["continue"] = shapes.encode_continue(list_rv, rel[limit - 1][0] + "\x00")
            meta["remainingItemCount"] = len(rel) - limit
            rel = rel[:limit]
        return {"kind": res.list_kind, "apiVersion": res.api_version, "metadata": meta,
                "items": [shapes.list_item(o) for _, o in rel]}

    # ---- WATCH --------------------------------------------------------------------------

    def _peer_closed(self):
        try:
            readable, _, _ = select.select([self.connection], [], [], 0)
            if readable:
                return socket.socket.recv(self.connection, 1, socket.MSG_PEEK) == b""
        except (OSError, ValueError):
            return True
        return False

    def _watch(self, res, namespace, path, query, qflat, auth):
        st = self.state
        rv_s = _first(query, "resourceVersion") or None
        if rv_s is not None and not rv_s.isdigit():
            self._finish_record(path, qflat, "watch", 500, auth)
            return self.send_json(500, shapes.status_rv_not_a_number(rv_s))
        bookmarks = _first(query, "allowWatchBookmarks") in ("1", "true")
        try:
            timeout_s = float(_first(query, "timeoutSeconds") or st.default_watch_timeout_s)
        except ValueError:
            timeout_s = st.default_watch_timeout_s
        if timeout_s <= 0:
            timeout_s = st.default_watch_timeout_s
        prefix = None if namespace is None else namespace + "/"

        def wanted(ev):
            return prefix is None or ev.key.startswith(prefix)

        with st.lock:
            w = st.open_watch(path, qflat)
            w.log_entry = st.record("GET", path, qflat, "watch", 200, auth)
            first_lines, expired = [], None
            if rv_s is None or rv_s == "0":
                snap = st.store.snapshot(res.plural)
                first_lines = [shapes.watch_line("ADDED", o)
                               for k, o in sorted(snap.items()) if prefix is None or
                               k.startswith(prefix)]
                w.cursor = st.store.revision
            else:
                w.cursor = int(rv_s)
                try:
                    st.store.events_after(res.plural, w.cursor)
                except store.Expired as e:
                    expired = e
        reason = "client-gone"
        try:
            self._start(200, {})
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            if expired is not None:
                self._chunk(shapes.watch_line("ERROR", shapes.status_too_old_watch(
                    expired.rv, expired.horizon)))
                self._write(b"0\r\n\r\n")
                reason = "expired"
                return
            for line in first_lines:
                self._chunk(line)
            reason = self._stream(res, w, path, wanted, bookmarks, time.monotonic() + timeout_s)
        except ClientGone:
            pass
        finally:
            with st.lock:
                st.close_watch(w, reason)

    def _stream(self, res, w, path, wanted, bookmarks, deadline):
        """Sends events until the deadline or a fault; returns why the stream ended."""
        st = self.state
        last_send = time.monotonic()
        while True:
            lines, action = [], None
            with st.lock:
                while True:
                    now = time.monotonic()
                    if w.cut_at is not None:
                        if now >= w.cut_at:
                            action = "cut"
                            break
                        st.cond.wait(min(w.cut_at - now, 0.5))
                        continue
                    stall = st.faults.stalled_until(path)
                    if stall > now:
                        st.cond.wait(min(stall - now, 0.5))
                        continue
                    if now >= deadline:
                        action = "timeout"
                        break
                    bad = st.faults.take_malformed(path)
                    if bad is not None:
                        lines.append(("raw", bad))
                    try:
                        events = st.store.events_after(res.plural, w.cursor)
                    except store.Expired as e:
                        action, expired = "expired", e
                        break
                    if events:
                        w.cursor = events[-1].rv
                        lines += [("event", shapes.watch_line(ev.type, ev.obj))
                                  for ev in events if wanted(ev)]
                    if lines:
                        break
                    if (bookmarks and now - last_send >= st.bookmark_interval_s
                            and w.cursor <= st.store.revision):
                        w.cursor = st.store.revision
                        lines.append(("bookmark", shapes.watch_line(
                            "BOOKMARK", shapes.bookmark(res, w.cursor))))
                        break
                    wait = deadline - now
                    if bookmarks:
                        wait = min(wait, last_send + st.bookmark_interval_s - now)
                    st.cond.wait(max(0.005, min(wait, 0.5)))
                    if self._peer_closed():
                        return "client-gone"
            if action == "cut":
                if w.cut_partial:
                    line = shapes.watch_line("BOOKMARK", shapes.bookmark(res, w.cursor))
                    self._write(b"%x\r\n%s" % (len(line), line[:len(line) // 2]))
                self.abort_connection()
                return "cut"
            if action == "timeout":
                self._write(b"0\r\n\r\n")
                return "timeout"
            if action == "expired":
                self._chunk(shapes.watch_line("ERROR", shapes.status_too_old_watch(
                    expired.rv, expired.horizon)))
                self._write(b"0\r\n\r\n")
                return "expired"
            for kind, line in lines:
                if kind == "event":
                    with st.lock:
                        drop = st.faults.take_drop(path)
                    if drop:
                        self._write(b"%x\r\n%s" % (len(line), line[:len(line) // 2]))
                        self.abort_connection()
                        return "dropped"
                self._chunk(line)
            last_send = time.monotonic()
