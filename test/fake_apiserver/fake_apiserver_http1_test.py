#!/usr/bin/python3
"""Self-test of the fake kube-apiserver over HTTP/1.1: starts it as a subprocess and
checks, over real HTTPS (http.client, ssl) and a raw chunk-level client, that it behaves
like the captures in test/fixtures/k8s-api: certificates, discovery, auth, LIST pages and
shapes, gzip, resource versions, watches (events, bookmarks, timeouts, too-old and future
RVs), restarts and the down period, faults (drop, stall, malformed lines, HTTP errors),
the discovery switch, stats and the request log, and the plain-HTTP mode.
Closes with `N passed, M failed`.
"""
import base64
import gzip
import http.client
import json
import os
import ssl
import sys
import time
import urllib.parse

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fake_client  # noqa: E402
from fake_client import (  # noqa: E402
    Fake,
    OBJECTS,
    TOKEN,
    check,
    fixture,
    service)
import harness  # noqa: E402


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


def test_service_import_crds_and_label_selector(f):
    mcs = "/apis/multicluster.x-k8s.io/v1alpha1/serviceimports"
    ks = "/apis/networking.kubeslice.io/v1beta1/serviceimports"
    imp = {"apiVersion": "multicluster.x-k8s.io/v1alpha1", "kind": "ServiceImport",
           "metadata": {"name": "web", "namespace": "shop"}, "spec": {"type": "ClusterSetIP"}}
    kimp = dict(imp, apiVersion="networking.kubeslice.io/v1beta1")
    f.ctl("/control/objects", [imp, kimp])
    status, doc = f.get_json(mcs)
    check(status == 200 and doc["kind"] == "ServiceImportList" and
          doc["apiVersion"] == "multicluster.x-k8s.io/v1alpha1" and len(doc["items"]) == 1,
          f"MCS list {doc}")
    check(len(f.get_json(ks)[1]["items"]) == 1, "kubeslice list, a separate store")
    check(f.get("/apis/multicluster.x-k8s.io/v1beta1/serviceimports")[0] == 404,
          "an unserved version is 404")
    f.ctl("/control/crd", {"group": "multicluster.x-k8s.io", "installed": False})
    try:
        status, _, body = f.get(mcs)
        check(status == 404 and body == fixture("06-notfound-resource.body"), "absent CRD 404")
        check(f.get(ks)[0] == 200, "the other group still served")
    finally:
        f.ctl("/control/crd", {"group": "multicluster.x-k8s.io", "installed": True})
    check(f.get(mcs)[0] == 200, "CRD back")
    # labelSelector: the LIST filters; a watch sees objects start and stop matching.
    label = "multicluster.kubernetes.io/service-name"
    sl = {"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
          "metadata": {"name": "mc-1", "namespace": "shop", "labels": {label: "web"}},
          "addressType": "IPv4", "endpoints": [], "ports": []}
    rv = f.ctl("/control/objects", sl)["resourceVersion"]
    slices = "/apis/discovery.k8s.io/v1/endpointslices"
    status, doc = f.get_json(slices + "?labelSelector=" + urllib.parse.quote(label))
    check([i["metadata"]["name"] for i in doc["items"]] == ["mc-1"], f"selected {doc['items']}")
    status, doc = f.get_json(slices + "?labelSelector=!" + urllib.parse.quote(label))
    check("mc-1" not in [i["metadata"]["name"] for i in doc["items"]], "negated selector")
    for selector, selected in (("%s in (db,web)" % label, True), ("%s in (db)" % label, False),
                               ("%s notin (db)" % label, True), ("%s notin (web)" % label, False)):
        status, doc = f.get_json(slices + "?labelSelector=" + urllib.parse.quote(selector))
        check(("mc-1" in [i["metadata"]["name"] for i in doc["items"]]) == selected,
              f"set-based selector {selector!r}")
    w = f.watch("resourceVersion=%s&labelSelector=%s" % (rv, urllib.parse.quote(label)),
                resource=slices)
    f.ctl("/control/objects", dict(sl, metadata={"name": "mc-1", "namespace": "shop"}))
    ev = w.next_event()
    check(ev["type"] == "DELETED", f"no longer matching: {ev['type']}")
    f.ctl("/control/objects", sl)
    ev = w.next_event()
    check(ev["type"] == "ADDED", f"matching again: {ev['type']}")
    w.close()
    f.ctl("/control/delete", [dict(imp), dict(kimp), dict(sl)])


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


TESTS = [test_tls_certificates,
         test_discovery_and_version,
         test_unauthorized,
         test_client_cert_auth,
         test_token_rotation,
         test_pagination_walk,
         test_list_shape_matches_capture,
         test_gzip_only_above_128k,
         test_rv0_ignores_limit,
         test_list_errors,
         test_namespaced_list_and_get,
         test_exact_rv_and_compaction,
         test_watch_events_bookmark_timeout,
         test_watch_without_rv_sends_state,
         test_watch_too_old_rv,
         test_watch_future_rv_is_silent,
         test_restart_down_period,
         test_restart,
         test_fault_drop_mid_line,
         test_fault_drop_now,
         test_fault_stall,
         test_service_import_crds_and_label_selector,
         test_fault_malformed,
         test_fault_http_errors,
         test_discovery_switch,
         test_stats_and_request_log,
         test_plain_http_mode]


if __name__ == "__main__":
    sys.exit(fake_client.main(TESTS))
