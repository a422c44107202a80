"""The Kubernetes API side of the fake: authentication, injected HTTP errors, discovery,
and GET/LIST/WATCH of the served resources, answered with the captured byte shapes.

The logic here does not depend on the protocol. `Api.handle(request)` turns a `Request`
into a `Reply`: a status, the headers, and either a whole body or a stream (a generator
of lines and markers, for WATCH). Each protocol writes a Reply its own way:
`http1server.py` for HTTP/1.1 (one handler thread per connection, keep-alive,
Content-Length or chunked), and `h2server.py` for HTTP/2 (one thread per stream, DATA
frames). State is read under the shared lock; bodies are encoded and written outside it.
"""
import email.utils
import gzip
import random
import re
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
    r"/(api/v1|apis/[^/]+/[^/]+)(?:/namespaces/([^/]+))?/([^/]+)(?:/([^/]+))?/?")


class ClientGone(Exception):
    pass


def _first(query, name):
    values = query.get(name)
    return values[0] if values else None


def http_date():
    return email.utils.formatdate(usegmt=True)


# ---- the protocol-neutral request and reply -----------------------------------------------

class Request:
    """One API request as the logic sees it, whatever the protocol.

    `headers` needs a case-insensitive `get(name, default)`; `has_client_cert()` says
    whether the TLS peer presented a certificate the CA verified; `gone()` whether the
    client has hung up (polled by watches about twice a second). `conn` numbers the TCP
    connection (from 1, in accept order), so a test can see which requests shared one.
    """

    def __init__(self, method, target, headers, proto, has_client_cert, gone, conn=0,
                 host=None):
        self.method = method
        self.target = target  # path and query, as sent
        self.headers = headers
        self.proto = proto    # "HTTP/1.1" or "HTTP/2"
        self.has_client_cert = has_client_cert
        self.gone = gone
        self.conn = conn
        self.host = host if host is not None else headers.get("Host", "127.0.0.1")


class Reply:
    """What to send. `headers` is the sorted list of (Canonical-Name, value) without Date
    and framing headers, which each protocol adds its own way. Exactly one of `body`
    (bytes) and `stream` (a generator, see `Api._watch_stream`) is set, unless `abort`:
    then the connection is closed at once with nothing sent."""

    def __init__(self, status=0, headers=(), body=None, stream=None, abort=False, close=False):
        self.status = status
        self.headers = list(headers)
        self.body = body
        self.stream = stream
        self.abort = abort
        self.close = close  # HTTP/1.1: close the connection after this reply


# Items a watch stream yields besides data lines (bytes, one line each):
HEAD = "head"  # first item: send the status and headers now
END = "end"    # a clean end: HTTP/1.1's 0 chunk, HTTP/2's END_STREAM


class Cut:
    """An abrupt end. `line`: a whole line of which the first half (and, over HTTP/1.1,
    the chunk header for the whole line) goes out first; the drop faults set it.
    `restart`: the cut stands for the apiserver going away (POST /control/restart),
    which over HTTP/2 takes the whole connection with it; other cuts end one stream."""

    def __init__(self, line=None, restart=False):
        self.line = line
        self.restart = restart

    @property
    def partial(self):
        return self.line is not None


def _headers(headers, flow=True, content_type="application/json"):
    all_headers = {"Audit-Id": str(uuid.uuid4()), "Cache-Control": "no-cache, private",
                   "Content-Type": content_type}
    if flow:
        all_headers["X-Kubernetes-Pf-Flowschema-Uid"] = FLOW_SCHEMA_UID
        all_headers["X-Kubernetes-Pf-Prioritylevel-Uid"] = PRIORITY_LEVEL_UID
    all_headers.update(headers or {})
    return [(name, all_headers[name]) for name in sorted(all_headers)]


# ---- the API logic ------------------------------------------------------------------------

class Api:
    def __init__(self, state):
        self.state = state

    def handle(self, req):
        """The Reply for one request (never raises for a well-formed request)."""
        if req.method != "GET":
            return self._bytes_reply(req, 405, _json(shapes.status(
                405, "the server does not allow this method on the requested resource",
                "MethodNotAllowed", {})), close=True)  # the body is not read
        url = urllib.parse.urlsplit(req.target)
        path = url.path
        query = urllib.parse.parse_qs(url.query, keep_blank_values=True)
        qflat = {k: v[0] for k, v in query.items()}
        verb = self._verb(path, query)
        with self.state.lock:
            if time.monotonic() < self.state.down_until:
                self.state.dropped_while_down += 1
                return Reply(abort=True)
        auth = self._authenticate(req)
        if auth is None:
            self._record(req, path, qflat, verb, 401, "none")
            return self._json_reply(req, 401, shapes.status_unauthorized(), flow=False)
        with self.state.lock:
            rule = self.state.faults.take_http_error(path, verb)
        if rule is not None:
            self._record(req, path, qflat, verb, rule.status, auth)
            return self._fault_reply(req, rule)
        return self._route(req, path, query, qflat, verb, auth)

    # ---- replies ----------------------------------------------------------------------

    @staticmethod
    def _bytes_reply(req, code, body, headers=None, flow=True,
                     content_type="application/json", close=False):
        headers = dict(headers or {})
        if len(body) > GZIP_THRESHOLD_BYTES and "gzip" in req.headers.get("Accept-Encoding", ""):
            body = gzip.compress(body, 1)  # as the apiserver does above 128 KiB (level 1)
            headers.update({"Content-Encoding": "gzip", "Vary": "Accept-Encoding"})
        return Reply(code, _headers(headers, flow, content_type), body=body, close=close)

    def _json_reply(self, req, code, obj, headers=None, flow=True):
        return self._bytes_reply(req, code, _json(obj), headers, flow)

    def _record(self, req, path, qflat, verb, status, auth):
        with self.state.lock:
            entry = self.state.record("GET", path, qflat, verb, status, auth)
            entry.update(proto=req.proto, conn=req.conn)
            return entry

    def _verb(self, path, query):
        m = RESOURCE_PATH.fullmatch(path)
        if m and shapes.resource_at(m.group(1), m.group(3)) is not None:
            if _first(query, "watch") in ("1", "true"):
                return "watch"
            return "get" if m.group(4) else "list"
        if path == "/version":
            return "version"
        if path in ("/api", "/apis") or path.startswith(("/api/", "/apis/")):
            return "discovery"
        return "other"

    def _authenticate(self, req):
        """"token", "client-cert", or None (401)."""
        header = req.headers.get("Authorization", "") or ""
        if header.startswith("Bearer "):
            with self.state.lock:
                if header[len("Bearer "):].strip() in self.state.tokens:
                    return "token"
            return None  # a bad token is refused even with a good client cert
        if req.has_client_cert():
            return "client-cert"
        return None

    def _fault_reply(self, req, rule):
        headers = {}
        if rule.retry_after_s is not None:
            headers["Retry-After"] = str(rule.retry_after_s)
        if rule.status == 429:
            # The max-in-flight / APF filters answer with Go's http.Error: plain text.
            headers["X-Content-Type-Options"] = "nosniff"
            return self._bytes_reply(req, 429, b"Too many requests, please try again later.\n",
                                     headers, content_type="text/plain; charset=utf-8")
        return self._json_reply(req, rule.status, shapes.status_fault(rule.status), headers)

    def _route(self, req, path, query, qflat, verb, auth):
        def reply(code, obj, headers=None):
            self._record(req, path, qflat, verb, code, auth)
            return self._json_reply(req, code, obj, headers)

        with self.state.lock:
            slices = self.state.slices_served
            crds_absent = set(self.state.crds_absent)
        if path == "/version":
            self._record(req, path, qflat, verb, 200, auth)
            return self._bytes_reply(req, 200, shapes.VERSION_BODY)
        if path == "/api":
            return reply(200, shapes.api_versions(req.host))
        if path == "/api/v1":
            return reply(200, shapes.resource_list("v1"))
        if path == "/apis":
            return reply(200, shapes.api_group_list(slices))
        if path == "/apis/discovery.k8s.io" and slices:
            return reply(200, shapes.discovery_group())
        if path == "/apis/discovery.k8s.io/v1" and slices:
            return reply(200, shapes.resource_list("discovery.k8s.io/v1"))
        m = RESOURCE_PATH.fullmatch(path)
        res = shapes.resource_at(m.group(1), m.group(3)) if m else None
        if (res is None or (res.group == "discovery.k8s.io" and not slices)
                or res.group in crds_absent):
            return reply(404, shapes.status_not_found_generic())
        if m.group(4):
            return self._get_one(res, m.group(2), m.group(4), reply)
        if verb == "watch":
            return self._watch(req, res, m.group(2), path, query, qflat, auth)
        return reply(*self._list_result(res, m.group(2), query))

    def _get_one(self, res, namespace, name, reply):
        if namespace is None:
            return reply(404, shapes.status_not_found_generic())
        with self.state.lock:
            obj = self.state.store.objects[res.plural].get(f"{namespace}/{name}")
        if obj is None:
            return reply(404, shapes.status_not_found_object(res, name))
        return reply(200, obj)

    # ---- LIST -------------------------------------------------------------------------

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
                st.count_read(res.plural, "etcd")  # every continue reads etcd
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
                # The watch cache serves rv=0, and a NotOlderThan without limit; a limit
                # or Exact goes to etcd (captures 07-*).
                cached = match != "Exact" and (want == 0 or not limit)
                st.count_read(res.plural, "cache" if cached else "etcd")
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
                st.count_read(res.plural, "etcd")  # a consistent (quorum) read
                snap, list_rv = st.store.snapshot(res.plural), st.store.revision
        selector = _first(query, "labelSelector")
        if selector:  # filtered before paging, as the apiserver's storage does
            match = shapes.selector_matcher(selector)
            snap = {k: o for k, o in snap.items() if match(o)}
        return 200, self._page(res, namespace, snap, list_rv, start, limit, sort), None

    @staticmethod
    def _page(res, namespace, snap, list_rv, start, limit, sort):
        """One page of a list; keys in continue tokens are relative to the list's prefix."""
        if namespace is not None:
            prefix = namespace + "/"
            rel = [(k[len(prefix):], o) for k, o in snap.items() if k.startswith(prefix)]
        elif sort and isinstance(snap, store.ObjectMap):  # sorted once, binary search
            rel, sort, start = snap.sorted_from(start), False, ""
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

    # ---- WATCH ------------------------------------------------------------------------

    def _watch(self, req, res, namespace, path, query, qflat, auth):
        st = self.state
        rv_s = _first(query, "resourceVersion") or None
        if rv_s is not None and not rv_s.isdigit():
            self._record(req, path, qflat, "watch", 500, auth)
            return self._json_reply(req, 500, shapes.status_rv_not_a_number(rv_s))
        bookmarks = _first(query, "allowWatchBookmarks") in ("1", "true")
        match = _first(query, "resourceVersionMatch") or None
        initial = _first(query, "sendInitialEvents") in ("1", "true")
        refusal = None
        if match and not st.watch_list:
            # 1.25 (and later servers without the WatchList feature) validate ListOptions so.
            refusal = shapes.status_forbidden_option(
                "resourceVersionMatch", "resourceVersionMatch is forbidden for watch")
        elif st.watch_list and initial and match != "NotOlderThan":
            refusal = shapes.status_forbidden_option(
                "resourceVersionMatch",
                "sendInitialEvents requires setting resourceVersionMatch to NotOlderThan")
        elif st.watch_list and initial and not bookmarks:
            refusal = shapes.status_forbidden_option(
                "allowWatchBookmarks", "sendInitialEvents requires allowWatchBookmarks=true")
        elif st.watch_list and match and not initial:
            refusal = shapes.status_forbidden_option(
                "resourceVersionMatch",
                "resourceVersionMatch is forbidden for watch unless sendInitialEvents is provided")
        if refusal is not None:
            self._record(req, path, qflat, "watch", 422, auth)
            return self._json_reply(req, 422, refusal)
        try:
            timeout_s = float(_first(query, "timeoutSeconds") or st.default_watch_timeout_s)
        except ValueError:
            timeout_s = st.default_watch_timeout_s
        if timeout_s <= 0:
            timeout_s = st.default_watch_timeout_s
        cap = getattr(st, "max_watch_timeout_s", 0)  # --max-watch-timeout
        if cap and timeout_s > cap:
            timeout_s = cap
        return Reply(200, _headers({}), stream=self._watch_stream(
            req, res, namespace, path, rv_s, qflat, auth, bookmarks, timeout_s,
            shapes.selector_matcher(_first(query, "labelSelector")), initial and st.watch_list))

    def _watch_stream(self, req, res, namespace, path, rv_s, qflat, auth, bookmarks,
                      timeout_s, selected, initial_events=False):
        """A generator: HEAD, then data lines (bytes), then END or a Cut.

        The writer sends each item as it comes. If the client is gone it raises
        ClientGone into its own code and closes this generator, so the `finally` below
        records the end of the watch either way; the reason is set only after the yield
        that ends the stream has returned (the bytes went out).
        """
        st = self.state
        prefix = None if namespace is None else namespace + "/"

        def wanted(ev):
            return prefix is None or ev.key.startswith(prefix)

        def seen_as(ev):
            """The event as a watch with a labelSelector sees it: an object that starts or
            stops matching is ADDED or DELETED there (as the apiserver's watch cache does);
            None when it matches neither before nor after."""
            now, before = selected(ev.obj), ev.prev is not None and selected(ev.prev)
            if ev.type == "DELETED":
                return "DELETED" if before else None
            if now and before:
                return ev.type
            if now:
                return "ADDED"
            return "DELETED" if before else None

        with st.lock:
            w = st.open_watch(path, qflat)
            w.log_entry = st.record("GET", path, qflat, "watch", 200, auth)
            w.log_entry.update(proto=req.proto, conn=req.conn)
            epoch = st.store.epoch  # a restart bumps it
            first_lines, expired = [], None
            if initial_events:
                # Watch-list: the state from the watch cache as ADDED events (at least as
                # new as the rv asked for), then a bookmark that marks their end.
                st.count_read(res.plural, "cache")
                snap = st.store.snapshot(res.plural)
                first_lines = [shapes.watch_line("ADDED", o)
                               for k, o in sorted(snap.items()) if (prefix is None or
                               k.startswith(prefix)) and selected(o)]
                end = shapes.bookmark(res, st.store.revision)
                end["metadata"]["annotations"] = {"k8s.io/initial-events-end": "true"}
                first_lines.append(shapes.watch_line("BOOKMARK", end))
                w.cursor = st.store.revision
            elif rv_s is None or rv_s == "0":
                snap = st.store.snapshot(res.plural)
                first_lines = [shapes.watch_line("ADDED", o)
                               for k, o in sorted(snap.items()) if (prefix is None or
                               k.startswith(prefix)) and selected(o)]
                w.cursor = st.store.revision
            else:
                w.cursor = int(rv_s)
                try:
                    st.store.events_after(res.plural, w.cursor)
                except store.Expired as e:
                    expired = e
                    st.count_read(res.plural, "etcd")  # the cache sends it to etcd
        reason = "client-gone"
        try:
            yield HEAD
            if expired is not None:
                yield shapes.watch_line("ERROR", shapes.status_too_old_watch(
                    expired.rv, expired.horizon))
                yield END
                reason = "expired"
                return
            for line in first_lines:
                yield line
            reason = yield from self._stream(req, res, w, path, wanted, seen_as, bookmarks,
                                             time.monotonic() + timeout_s, epoch)
        finally:
            with st.lock:
                st.close_watch(w, reason)

    def _stream(self, req, res, w, path, wanted, seen_as, bookmarks, deadline, epoch):
        """Yields events until the deadline or a fault; returns why the stream ended."""
        st = self.state
        last_send = time.monotonic()
        while True:
            lines, action = [], None
            with st.lock:
                while True:
                    now = time.monotonic()
                    if w.cut_at is not None:
                        if now >= w.cut_at:
                            action, restart = "cut", st.store.epoch != epoch
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
                        lines += [("event", shapes.watch_line(seen_as(ev), ev.obj))
                                  for ev in events if wanted(ev) and seen_as(ev)]
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
                    # A connection another watch's cut just closed (HTTP/2: one connection
                    # carries many watches) still ends this one as a cut.
                    if req.gone() and w.cut_at is None:
                        return "client-gone"
            if action == "cut":
                line = None
                if w.cut_partial:
                    line = shapes.watch_line("BOOKMARK", shapes.bookmark(res, w.cursor))
                yield Cut(line, restart)
                return "cut"
            if action == "timeout":
                yield END
                return "timeout"
            if action == "expired":
                yield shapes.watch_line("ERROR", shapes.status_too_old_watch(
                    expired.rv, expired.horizon))
                yield END
                return "expired"
            for kind, line in lines:
                if kind == "event":
                    with st.lock:
                        drop = st.faults.take_drop(path)
                    if drop:
                        yield Cut(line)
                        return "dropped"
                yield line
            last_send = time.monotonic()


def _json(obj):
    return shapes.encode(obj) + b"\n"  # Go's json.Encoder ends with a newline
