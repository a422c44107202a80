"""The control port (plain HTTP, JSON, no auth, loopback only): tests write objects, rotate
tokens, inject faults and read statistics here. README.md lists every endpoint.
"""
import http.server
import json
import time
import urllib.parse

import faults
import generate
import shapes

MAX_BODY_BYTES = 64 << 20


class BadRequest(Exception):
    pass


def _items(body):
    if isinstance(body, dict) and isinstance(body.get("items"), list):
        return body["items"]
    if isinstance(body, list):
        return body
    if isinstance(body, dict):
        return [body]
    raise BadRequest("expected an object, a List or a JSON array")


def _num(body, name, default, kind=float):
    value = body.get(name, default)
    try:
        return None if value is None else kind(value)
    except (TypeError, ValueError):
        raise BadRequest(f"{name} must be a number") from None


class ControlHandler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    timeout = 60
    disable_nagle_algorithm = True  # no delayed-ACK stall between headers and body

    def log_message(self, fmt, *args):
        if self.server.verbose:
            super().log_message(fmt, *args)

    @property
    def state(self):
        return self.server.state

    def _reply(self, code, obj):
        data = json.dumps(obj, indent=1).encode() + b"\n"
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _body(self):
        length = int(self.headers.get("Content-Length") or 0)
        if length > MAX_BODY_BYTES:
            self.close_connection = True
            raise BadRequest(f"body over {MAX_BODY_BYTES} bytes")
        raw = self.rfile.read(length) if length else b"{}"
        try:
            return json.loads(raw or b"{}")
        except ValueError as e:
            raise BadRequest(f"body is not JSON: {e}") from None

    def do_GET(self):
        url = urllib.parse.urlsplit(self.path)
        query = {k: v[0] for k, v in urllib.parse.parse_qs(url.query).items()}
        st = self.state
        with st.lock:
            if url.path == "/control/health":
                out = {"ok": True, "revision": str(st.store.revision)}
            elif url.path == "/control/stats":
                out = st.stats()
            elif url.path == "/control/requests":
                out = {"requests": st.requests_since(int(query.get("since", 0)))}
            elif url.path == "/control/churn":
                churn, since = st.churn, query.get("since", "0")
                out = {"running": False} if churn is None else churn.describe(
                    query.get("log", "") in ("1", "true"), int(since) if since.isdigit() else 0)
            elif url.path == "/control/objects":
                res = shapes.resource_for(query.get("kind", "Service"),
                                          query.get("apiVersion"))
                if res is None:
                    out = None
                else:
                    out = {"kind": "List", "apiVersion": "v1",
                           "metadata": {"resourceVersion": str(st.store.revision)},
                           "items": [o for _, o in sorted(st.store.objects[res.plural].items())]}
            else:
                out = None
        if out is None:
            self._reply(404, {"error": f"no such control endpoint or kind: {self.path}"})
        else:
            self._reply(200, out)

    def do_POST(self):
        url = urllib.parse.urlsplit(self.path)
        query = {k: v[0] for k, v in urllib.parse.parse_qs(url.query).items()}
        handler = self.ROUTES.get(url.path)
        if handler is None:
            self._reply(404, {"error": f"no such control endpoint: {url.path}"})
            return
        try:
            body = self._body()
            if not isinstance(body, (dict, list)):
                raise BadRequest("body must be a JSON object")
            with self.state.lock:
                out = handler(self, body, query)
                out.setdefault("resourceVersion", str(self.state.store.revision))
                self.state.cond.notify_all()
        except (BadRequest, ValueError) as e:
            self._reply(400, {"error": str(e)})
            return
        self._reply(200, out)

    # ---- handlers (lock held) -----------------------------------------------------------

    def _apply(self, items, replace):
        st = self.state
        applied, unchanged, skipped, seen = [], 0, [], set()
        for obj in items:
            if not isinstance(obj, dict) or shapes.resource_for(
                    obj.get("kind"), obj.get("apiVersion")) is None:
                skipped.append(obj.get("kind") if isinstance(obj, dict) else repr(obj)[:40])
                continue
            ev = st.store.apply(obj)
            meta = obj.get("metadata") or {}
            res = shapes.resource_for(obj["kind"], obj.get("apiVersion"))
            seen.add((res.plural, meta.get("namespace", "default"), meta.get("name")))
            if ev is None:
                unchanged += 1
            else:
                applied.append({"type": ev.type, "kind": obj["kind"], "key": ev.key,
                                "resourceVersion": str(ev.rv)})
        deleted = []
        if replace:
            for res in shapes.RESOURCES.values():
                for key in sorted(st.store.objects[res.plural]):
                    ns, name = key.split("/", 1)
                    if (res.plural, ns, name) not in seen:
                        ev = st.store.delete(res.kind, ns, name, res.api_version)
                        deleted.append({"kind": res.kind, "key": key,
                                        "resourceVersion": str(ev.rv)})
        out = {"applied": applied, "unchanged": unchanged, "skipped": skipped,
               "deleted": deleted}
        if len(items) == 1 and applied:
            res = shapes.resource_for(items[0]["kind"], items[0].get("apiVersion"))
            out["object"] = st.store.objects[res.plural][applied[0]["key"]]
        return out

    def objects(self, body, query):
        replace = query.get("replace", "") in ("1", "true") or (
            isinstance(body, dict) and body.get("replace") is True)
        return self._apply(_items(body), replace)

    def load(self, body, query):
        path = body.get("path")
        if not isinstance(path, str):
            raise BadRequest("load needs a path")
        try:
            with open(path) as f:
                data = json.load(f)
        except (OSError, ValueError) as e:
            raise BadRequest(f"cannot read {path}: {e}") from None
        return self._apply(_items(data), bool(body.get("replace")))

    def delete(self, body, query):
        deleted, missing = [], []
        for obj in _items(body):
            meta = obj.get("metadata") or obj
            kind, ns, name = obj.get("kind"), meta.get("namespace", "default"), meta.get("name")
            ev = self.state.store.delete(kind, ns, name, obj.get("apiVersion"))
            if ev is None:
                missing.append(f"{kind} {ns}/{name}")
            else:
                deleted.append({"kind": kind, "key": ev.key, "resourceVersion": str(ev.rv)})
        return {"deleted": deleted, "missing": missing}

    def tokens(self, body, query):
        tokens = body.get("tokens")
        if not isinstance(tokens, list) or not all(isinstance(t, str) for t in tokens):
            raise BadRequest("tokens must be a list of strings")
        self.state.tokens = set(tokens)
        return {"tokens": len(tokens)}

    def fault_http(self, body, query):
        status = _num(body, "status", 500, int)
        if not 400 <= status <= 599:
            raise BadRequest("status must be 4xx or 5xx")
        verb = body.get("verb", "any")
        if verb not in ("any", "list", "watch", "get", "discovery", "version"):
            raise BadRequest("verb must be any, list, watch, get, discovery or version")
        retry_after = _num(body, "retry_after_s", 1 if status in (429, 503, 504) else None, int)
        self.state.faults.add_http_error(status, _num(body, "count", 1, int),
                                         body.get("path_prefix", ""), retry_after, verb)
        return {"faults": self.state.faults.describe()}

    def fault_drop(self, body, query):
        prefix = body.get("path_prefix", "")
        if body.get("now"):
            n = self.state.cut_watches(prefix, 0, partial=True)
            return {"watches_cut": n}
        self.state.faults.add_drop(_num(body, "count", 1, int), prefix)
        return {"faults": self.state.faults.describe()}

    def fault_stall(self, body, query):
        self.state.faults.add_stall(_num(body, "seconds", 5), body.get("path_prefix", ""))
        return {"faults": self.state.faults.describe()}

    def fault_malformed(self, body, query):
        line = body.get("line")
        line = (line.encode() if isinstance(line, str) else None)
        self.state.faults.add_malformed(_num(body, "count", 1, int),
                                        body.get("path_prefix", ""), line or faults.DEFAULT_MALFORMED)
        return {"faults": self.state.faults.describe()}

    def fault_clear(self, body, query):
        self.state.faults.clear()
        return {"faults": self.state.faults.describe()}

    def restart(self, body, query):
        st = self.state
        st.store.restart()
        n = st.cut_watches("", _num(body, "silence_s", 0), partial=False)
        st.down_until = time.monotonic() + _num(body, "down_s", 0)
        return {"watches_cut": n}

    def compact(self, body, query):
        self.state.store.compact()
        return {}

    def crd(self, body, query):
        group, installed = body.get("group"), body.get("installed", True)
        if group not in shapes.CRD_GROUPS or not isinstance(installed, bool):
            raise BadRequest("crd needs a group of %s and a boolean installed" %
                             ", ".join(shapes.CRD_GROUPS))
        if installed:
            self.state.crds_absent.discard(group)
        else:
            self.state.crds_absent.add(group)
            self.state.cut_watches("/apis/" + group + "/", 0, partial=False)
        return {"group": group, "installed": installed}

    def discovery(self, body, query):
        enabled = body.get("enabled")
        if not isinstance(enabled, bool):
            raise BadRequest("enabled must be true or false")
        self.state.slices_served = enabled
        if not enabled:  # an old cluster has no such group: watches on it end too
            self.state.cut_watches("/apis/discovery.k8s.io", 0, partial=False)
        return {"slices_served": enabled}

    def config(self, body, query):
        st = self.state
        st.bookmark_interval_s = _num(body, "bookmark_interval_s", st.bookmark_interval_s)
        st.too_large_wait_s = _num(body, "too_large_wait_s", st.too_large_wait_s)
        st.store.history_size = max(1, _num(body, "history_size", st.store.history_size, int))
        return {"bookmark_interval_s": st.bookmark_interval_s,
                "too_large_wait_s": st.too_large_wait_s,
                "history_size": st.store.history_size}

    def generate_cluster(self, body, query):
        if not isinstance(body, dict):
            raise BadRequest("generate needs a JSON object")
        try:
            spec = generate.parse_spec(body)
        except ValueError as e:
            raise BadRequest(str(e)) from None
        return generate.generate(self.state.store, spec)

    def churn(self, body, query):
        if not isinstance(body, dict):
            raise BadRequest("churn needs a JSON object")
        rate = _num(body, "rate", 1000)
        seconds = _num(body, "seconds", 10)
        probe_rate = _num(body, "probe_rate", 0)
        tick_s = _num(body, "tick_s", 0.005)
        probe_ns = body.get("probe_namespace", "")
        ns_prefix = body.get("namespace_prefix", "")
        if not 0 < rate <= generate.MAX_CHURN_RATE or seconds <= 0 or probe_rate < 0:
            raise BadRequest(f"rate must be in (0, {generate.MAX_CHURN_RATE}], seconds > 0 "
                             "and probe_rate >= 0")
        if not 0.001 <= tick_s <= 1 or not isinstance(probe_ns, str) or not isinstance(
                ns_prefix, str):
            raise BadRequest("tick_s must be in [0.001, 1], probe_namespace and "
                             "namespace_prefix strings")
        previous = self.state.churn
        if previous is not None:
            previous.stop()
        self.state.churn = generate.Churn(self.state, rate, seconds, probe_ns, probe_rate,
                                          _num(body, "seed", 1, int), tick_s, ns_prefix,
                                          previous)
        self.state.churn.start()
        return self.state.churn.describe()

    def churn_stop(self, body, query):
        churn = self.state.churn
        if churn is None:
            return {"running": False}
        churn.stop()
        return churn.describe()

    def reset_stats(self, body, query):
        self.state.reset_stats()
        return {}

    ROUTES = {
        "/control/objects": objects, "/control/load": load, "/control/delete": delete,
        "/control/tokens": tokens, "/control/fault/http": fault_http,
        "/control/fault/drop": fault_drop, "/control/fault/stall": fault_stall,
        "/control/fault/malformed": fault_malformed, "/control/fault/clear": fault_clear,
        "/control/restart": restart, "/control/compact": compact,
        "/control/discovery": discovery, "/control/config": config, "/control/crd": crd,
        "/control/reset-stats": reset_stats, "/control/generate": generate_cluster,
        "/control/churn": churn, "/control/churn/stop": churn_stop,
    }
