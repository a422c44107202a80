#!/usr/bin/python3
"""kubedns following a (fake) Kubernetes API server over HTTP/2, end to end.

Each test starts its own fake with --http2 (kubedns_api.py) and checks from the fake's
request log that kubedns's LISTs and WATCHes run over HTTP/2, multiplexed on one
connection, through changes, clean ends (END_STREAM), stream resets, a restart, and GOAWAY
(`--http2-drop connection`). Closes with `N passed, M failed`.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
import kubedns_api  # noqa: E402
from kubedns_api import (  # noqa: E402
    Kubedns,
    api_requests,
    conformance_problems,
    delete,
    expect,
    service,
    slice_,
    start_fake)


def test_http2(env):
    """A fake that offers h2: kubedns lists and watches over HTTP/2, multiplexed, and
    follows changes, re-watches after clean ends (END_STREAM), and recovers from stream
    resets and a restart as over HTTP/1.1."""
    workdir = os.path.join(env["workdir"], "h2")
    fake = start_fake(workdir, "--http2", "--history-size", "50", "--max-watch-timeout", "3")
    dns = Kubedns(workdir, fake.info["kubeconfig"], "kubedns-h2")
    p = []
    try:
        if harness.eventually(lambda: None if dns.ready() else "not ready", 30):
            return ["not ready against an HTTP/2 fake: " + dns.log()[-2000:]]
        p += ["over HTTP/2: " + x for x in conformance_problems(dns)]
        # Changes: create, update, headless with endpoints, delete.
        fake.control("/control/objects", service("h2", "web", "10.96.70.1"))
        p.append(expect(dns, "web.h2.svc.cluster.local.", "A", "NOERROR", ["10.96.70.1"]))
        fake.control("/control/objects", service("h2", "web", "10.96.70.2"))
        p.append(expect(dns, "web.h2.svc.cluster.local.", "A", "NOERROR", ["10.96.70.2"]))
        fake.control("/control/objects", [service("h2", "hl"),
                                          slice_("h2", "hl-a", "hl", ["10.244.70.1"])])
        p.append(expect(dns, "hl.h2.svc.cluster.local.", "A", "NOERROR", ["10.244.70.1"]))
        delete(fake, "Service", "h2", "web")
        p.append(expect(dns, "web.h2.svc.cluster.local.", "A", "NXDOMAIN"))

        log = api_requests(fake)
        for resource in ("/api/v1/services", "/apis/discovery.k8s.io/v1/endpointslices"):
            for verb in ("list", "watch"):
                protos = {e["proto"] for e in log if e["path"] == resource and e["verb"] == verb}
                if protos != {"HTTP/2"}:
                    p.append("%s %s went over %s, want HTTP/2" % (verb, resource,
                                                                  sorted(protos)))
        # libcurl multiplexes: the initial LISTs and WATCHes share one TCP connection.
        conns = {e["conn"] for e in log}
        if len(conns) != 1:
            p.append("LISTs and WATCHes on %d connections, want 1 (multiplexed): %s"
                     % (len(conns), [(e["verb"], e["path"], e["conn"]) for e in log]))

        # Every watch ends cleanly (END_STREAM) after 3 s: kubedns watches again from the
        # last RV it saw, on the same connection, with no LIST.
        lists_before = dns.metric("kdns_kubedns_api_lists_total")
        resources = {"/api/v1/services", "/apis/discovery.k8s.io/v1/endpointslices"}

        def clean_ends():
            done = [e for e in api_requests(fake) if e.get("end") == "timeout"]
            return None if {e["path"] for e in done} == resources else "no clean end yet"
        p.append(harness.eventually(clean_ends, 10))
        fake.control("/control/objects", service("h2", "after-end", "10.96.70.9"))
        p.append(expect(dns, "after-end.h2.svc.cluster.local.", "A", "NOERROR",
                        ["10.96.70.9"]))
        log = api_requests(fake)
        for ended in [e for e in log if e.get("end") == "timeout"]:
            following = [e for e in log if e["seq"] > ended["seq"] and
                         e["path"] == ended["path"]]
            if not following:
                continue
            nxt = following[0]
            if (nxt["verb"], nxt["query"].get("resourceVersion"), nxt["conn"]) != (
                    "watch", ended["last_resourceVersion"], ended["conn"]):
                p.append("after a clean end of %s at RV %s: %s" % (
                    ended["path"], ended["last_resourceVersion"], nxt))
        if dns.metric("kdns_kubedns_api_lists_total") != lists_before:
            p.append("a clean end of an HTTP/2 watch caused a LIST")

        # A drop over HTTP/2 is half a line and RST_STREAM on one stream: kubedns resumes
        # the watch from its last RV on the same connection, with no LIST.
        since = log[-1]["seq"]
        lists_before = dns.metric("kdns_kubedns_api_lists_total")
        fake.control("/control/fault/drop", {"count": 1, "path_prefix": "/api/v1/services"})
        fake.control("/control/objects", service("h2", "a", "10.96.71.1"))
        p.append(expect(dns, "a.h2.svc.cluster.local.", "A", "NOERROR", ["10.96.71.1"]))
        fake.control("/control/fault/drop", {"now": True})
        fake.control("/control/objects", service("h2", "b", "10.96.71.2"))
        p.append(expect(dns, "b.h2.svc.cluster.local.", "A", "NOERROR", ["10.96.71.2"]))
        if dns.metric("kdns_kubedns_api_lists_total") != lists_before:
            p.append("a reset HTTP/2 stream caused a LIST")
        after = api_requests(fake, since)
        if not any(e["verb"] == "watch" and e.get("end") == "dropped" for e in
                   fake.control("/control/requests?since=0")["requests"]):
            p.append("no watch was dropped")
        if not after or any(e["verb"] != "watch" or e["proto"] != "HTTP/2" for e in after):
            p.append("after the resets, want HTTP/2 WATCHes only: %s" % after)
        elif {e["conn"] for e in after} != conns:
            p.append("the resumed watches left the connection: %s" % after)

        # A restart closes the TCP connection: kubedns reconnects (HTTP/2 again), re-lists
        # after the 410 and keeps answering.
        since = after[-1]["seq"]
        fake.control("/control/restart", {"silence_s": 0, "down_s": 1})
        fake.control("/control/objects", service("h2", "c", "10.96.71.3"))
        p.append(expect(dns, "c.h2.svc.cluster.local.", "A", "NOERROR", ["10.96.71.3"], 30))
        p.append(expect(dns, "b.h2.svc.cluster.local.", "A", "NOERROR", ["10.96.71.2"]))
        after = api_requests(fake, since)
        if not any(e["verb"] == "list" for e in after):
            p.append("no re-LIST after the restart: %s" % after)
        if any(e["proto"] != "HTTP/2" for e in after):
            p.append("not HTTP/2 after the restart: %s" % after)
        if {e["conn"] for e in after} & conns:
            p.append("requests after the restart on the closed connection: %s" % after)

        # HTTP errors on HTTP/2 streams.
        fake.control("/control/fault/http", {"status": 500, "count": 2, "verb": "any"})
        fake.control("/control/fault/drop", {"now": True})
        fake.control("/control/objects", service("h2", "d", "10.96.71.4"))
        p.append(expect(dns, "d.h2.svc.cluster.local.", "A", "NOERROR", ["10.96.71.4"], 30))
        if not dns.ready():
            p.append("not ready after the faults")
    finally:
        dns.stop()
        fake.stop()
    return [x for x in p if x]


def test_http2_goaway(env):
    """Drops as GOAWAY and a closed connection (every stream on it ends mid-body):
    kubedns reconnects and resumes both watches from their last RVs, with no LIST."""
    workdir = os.path.join(env["workdir"], "h2-goaway")
    fake = start_fake(workdir, "--http2", "--http2-drop", "connection")
    dns = Kubedns(workdir, fake.info["kubeconfig"], "kubedns-h2-goaway")
    p = []
    try:
        if harness.eventually(lambda: None if dns.ready() else "not ready", 30):
            return ["not ready against an HTTP/2 fake: " + dns.log()[-2000:]]
        lists_before = dns.metric("kdns_kubedns_api_lists_total")
        since = api_requests(fake)[-1]["seq"]
        fake.control("/control/fault/drop", {"count": 1, "path_prefix": "/api/v1/services"})
        fake.control("/control/objects", service("goaway", "a", "10.96.72.1"))
        p.append(expect(dns, "a.goaway.svc.cluster.local.", "A", "NOERROR", ["10.96.72.1"]))
        fake.control("/control/fault/drop", {"now": True})
        fake.control("/control/objects", service("goaway", "b", "10.96.72.2"))
        p.append(expect(dns, "b.goaway.svc.cluster.local.", "A", "NOERROR", ["10.96.72.2"]))
        if dns.metric("kdns_kubedns_api_lists_total") != lists_before:
            p.append("a GOAWAY caused a LIST")
        log = api_requests(fake, since)
        if any(e["verb"] != "watch" or e["proto"] != "HTTP/2" for e in log):
            p.append("after GOAWAY, want HTTP/2 WATCHes only: %s" % log)
        if len({e["conn"] for e in log}) < 2:
            p.append("no new connection after GOAWAY: %s" % log)
    finally:
        dns.stop()
        fake.stop()
    return [x for x in p if x]


TESTS = [test_http2,
         test_http2_goaway]


if __name__ == "__main__":
    sys.exit(kubedns_api.main(TESTS, main_instance=False))
