#!/usr/bin/python3
"""kubedns following a (fake) Kubernetes API server, end to end.

Starts test/fake_apiserver (HTTPS, its own CA, bearer tokens) with the conformance
objects and the real kubedns binary pointed at it with a kubeconfig, then checks with real
dig: every conformance case; every kind of change (added, updated, deleted, ClusterIP <->
headless <-> ExternalName, endpoint churn, a slice moving between services, a namespace
emptied); each failure path (a watch cut mid-line, 410 in both forms, 500s, 429, stalls,
malformed lines, an API server restart and an outage, a bad token and token rotation, a
wrong CA); and a randomized model test: random mutations and faults, and after each quiet
period every name answers exactly as the fake's objects say. The main fake offers only
HTTP/1.1; test_http2 and test_http2_goaway start their own with --http2 and check from
the fake's request log that kubedns's LISTs and WATCHes then run over HTTP/2, multiplexed
on one connection, through changes, clean ends and faults. KDNS_API_HTTP2=1 runs every
test with the main fake offering HTTP/2 as well.
Closes with `N passed, M failed`.
"""
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
import traceback

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
import servers  # noqa: E402
import kubedns_conformance_test as conformance  # noqa: E402

ROOT = harness.ROOT
BIN = harness.BIN
ZONE = "cluster.local."
MAIN_HTTP2 = bool(os.environ.get("KDNS_API_HTTP2"))  # the main fake offers h2 too


def start_fake(workdir, *extra):
    """The fake API server serving the conformance objects."""
    return servers.FakeApiserver(
        os.path.join(workdir, "fake"),
        "--objects", os.path.join(ROOT, "test", "conformance", "objects.json"),
        "--bookmark-interval", "0.5", *extra)


def Kubedns(workdir, kubeconfig, name="kubedns", *extra):
    """kubedns following the fake API server through `kubeconfig`, not waited for."""
    return servers.Kubedns(workdir, name, "--kubecfg-file=" + kubeconfig, "--domain=" + ZONE,
                           "--api-backoff-max=1s", "--api-stall-timeout=4s", *extra,
                           wait=False)


def dig(server, name, qtype="A"):
    """(rcode, sorted answer rdata) for name/qtype."""
    run = subprocess.run(["dig", "@127.0.0.1", "-p", str(server.port), name, qtype,
                          "+time=2", "+tries=1", "+nocookie", "+noall", "+comments",
                          "+answer"], capture_output=True, text=True, timeout=20)
    got = conformance.parse(run.stdout)
    answers = sorted(r.split(" ", 4)[4] for r in got["sections"].get("ANSWER", [])
                     if r.split(" ")[3] == qtype)
    return got["status"], answers


def expect(server, name, qtype, rcode, answers=None, timeout=15.0):
    def check():
        got_rcode, got = dig(server, name, qtype)
        if got_rcode != rcode or (answers is not None and got != sorted(answers)):
            return "%s %s: %s %s, want %s %s" % (name, qtype, got_rcode, got, rcode, answers)
        return None
    return harness.eventually(check, timeout)


def service(ns, name, cluster_ip=None, external=None, ports=(("http", 80),), rv_free=True):
    spec = {"ports": [{"name": n, "port": p, "protocol": "TCP"} for n, p in ports]}
    if external:
        spec = {"type": "ExternalName", "externalName": external}
    else:
        spec["type"] = "ClusterIP"
        spec["clusterIP"] = cluster_ip or "None"
        spec["clusterIPs"] = [cluster_ip or "None"]
    return {"apiVersion": "v1", "kind": "Service",
            "metadata": {"name": name, "namespace": ns}, "spec": spec}


def slice_(ns, name, svc, ips, ready=True):
    return {"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
            "metadata": {"name": name, "namespace": ns,
                         "labels": {"kubernetes.io/service-name": svc}},
            "addressType": "IPv4",
            "endpoints": [{"addresses": [ip], "conditions": {"ready": ready}} for ip in ips],
            "ports": [{"name": "http", "port": 8080, "protocol": "TCP"}]}


def delete(fake, kind, ns, name):
    fake.control("/control/delete", {"kind": kind, "metadata": {"namespace": ns, "name": name}})


# ---------------------------------------------------------------------------------------
# The tests. Each returns a list of problems (empty: passed).

def api_requests(fake, since=0):
    """The fake's request log: kubedns's LIST and WATCH requests, oldest first."""
    return [e for e in fake.control("/control/requests?since=%d" % since)["requests"]
            if e["verb"] in ("list", "watch")]


def conformance_problems(dns):
    with open(os.path.join(ROOT, "test", "conformance", "cases.json")) as f:
        spec = json.load(f)
    problems = []
    for case in spec["cases"]:
        got, _ = conformance.ask("dig", dns.port, case)
        for p in conformance.check(case, got, spec["ttl"]):
            problems.append("%s: %s" % (case["id"], p))
    return problems


def test_ready_and_conformance(env):
    fake, dns = env["fake"], env["dns"]
    if harness.eventually(lambda: None if dns.ready() else "not ready", 30):
        return ["kubedns never became ready: " + dns.log()[-2000:]]
    problems = conformance_problems(dns)
    # Without --http2 the fake offers only http/1.1 (ALPN), so kubedns's HTTP/2-capable
    # client falls back.
    want = "HTTP/2" if MAIN_HTTP2 else "HTTP/1.1"
    log = api_requests(fake)
    if {e["verb"] for e in log} != {"list", "watch"}:
        problems.append("no LIST and WATCH in the request log: %s" % log)
    if any(e["proto"] != want for e in log):
        problems.append("not %s: %s" % (want, [(e["verb"], e["proto"]) for e in log]))
    return problems


def test_changes(env):
    fake, dns = env["fake"], env["dns"]
    p = []
    fake.control("/control/objects", service("chg", "web", "10.96.50.1"))
    p.append(expect(dns, "web.chg.svc.cluster.local.", "A", "NOERROR", ["10.96.50.1"]))
    fake.control("/control/objects", service("chg", "web", "10.96.50.2"))
    p.append(expect(dns, "web.chg.svc.cluster.local.", "A", "NOERROR", ["10.96.50.2"]))
    # ClusterIP -> headless (with endpoints) -> ExternalName -> deleted
    fake.control("/control/objects", [service("chg", "web"),
                                      slice_("chg", "web-a", "web", ["10.244.50.1", "10.244.50.2"])])
    p.append(expect(dns, "web.chg.svc.cluster.local.", "A", "NOERROR",
                    ["10.244.50.1", "10.244.50.2"]))
    fake.control("/control/objects", slice_("chg", "web-a", "web", ["10.244.50.3"]))
    p.append(expect(dns, "web.chg.svc.cluster.local.", "A", "NOERROR", ["10.244.50.3"]))
    fake.control("/control/objects", service("chg", "web", external="example.org"))
    p.append(expect(dns, "web.chg.svc.cluster.local.", "CNAME", "NOERROR", ["example.org."]))
    # A slice moving to another service.
    fake.control("/control/objects", [service("chg", "other"),
                                      slice_("chg", "web-a", "other", ["10.244.50.3"])])
    p.append(expect(dns, "other.chg.svc.cluster.local.", "A", "NOERROR", ["10.244.50.3"]))
    # A namespace emptied.
    delete(fake, "Service", "chg", "web")
    delete(fake, "Service", "chg", "other")
    delete(fake, "EndpointSlice", "chg", "web-a")
    p.append(expect(dns, "web.chg.svc.cluster.local.", "A", "NXDOMAIN"))
    p.append(expect(dns, "chg.svc.cluster.local.", "A", "NXDOMAIN"))
    return [x for x in p if x]


def test_watch_cut_resumes_from_last_rv(env):
    fake, dns = env["fake"], env["dns"]
    lists_before = dns.metric("kdns_kubedns_api_lists_total")
    relists_before = dns.metric("kdns_kubedns_api_relists_total")
    fake.control("/control/fault/drop", {"count": 1})
    fake.control("/control/objects", service("cut", "a", "10.96.51.1"))
    p = [expect(dns, "a.cut.svc.cluster.local.", "A", "NOERROR", ["10.96.51.1"])]
    fake.control("/control/fault/drop", {"now": True})
    fake.control("/control/objects", service("cut", "b", "10.96.51.2"))
    p.append(expect(dns, "b.cut.svc.cluster.local.", "A", "NOERROR", ["10.96.51.2"]))
    if dns.metric("kdns_kubedns_api_relists_total") != relists_before:
        p.append("a dropped watch caused a re-LIST instead of resuming")
    if dns.metric("kdns_kubedns_api_lists_total") != lists_before:
        p.append("a dropped watch caused a LIST")
    return [x for x in p if x]


def test_410_relists_and_keeps_answering(env):
    fake, dns = env["fake"], env["dns"]
    p = []
    relists_before = dns.metric("kdns_kubedns_api_relists_total")
    # History forgotten + watches cut: the resumed watch gets the 200 + ERROR 410 form.
    fake.control("/control/restart", {"silence_s": 0, "down_s": 0})
    fake.control("/control/objects", service("gone", "x", "10.96.52.1"))
    p.append(expect(dns, "x.gone.svc.cluster.local.", "A", "NOERROR", ["10.96.52.1"], 20))
    p.append(expect(dns, "kubernetes.default.svc.cluster.local.", "A", "NOERROR", ["10.96.0.1"]))
    if dns.metric("kdns_kubedns_api_relists_total") <= relists_before:
        p.append("no re-LIST counted after a 410")
    # An object deleted while the watch could not see it disappears after the re-LIST.
    fake.control("/control/compact", {})
    delete(fake, "Service", "gone", "x")
    fake.control("/control/fault/drop", {"now": True})
    p.append(expect(dns, "x.gone.svc.cluster.local.", "A", "NXDOMAIN", None, 20))
    return [x for x in p if x]


def test_errors_backoff_and_recovery(env):
    fake, dns = env["fake"], env["dns"]
    p = []
    fake.control("/control/fault/http", {"status": 500, "count": 4, "verb": "any"})
    fake.control("/control/fault/http", {"status": 429, "count": 2, "verb": "any",
                                         "retry_after_s": 1})
    fake.control("/control/fault/drop", {"now": True})
    fake.control("/control/objects", service("err", "a", "10.96.53.1"))
    p.append(expect(dns, "a.err.svc.cluster.local.", "A", "NOERROR", ["10.96.53.1"], 30))
    fake.control("/control/fault/malformed", {"count": 1})
    fake.control("/control/objects", service("err", "b", "10.96.53.2"))
    p.append(expect(dns, "b.err.svc.cluster.local.", "A", "NOERROR", ["10.96.53.2"], 30))
    fake.control("/control/fault/stall", {"seconds": 6})
    fake.control("/control/objects", service("err", "c", "10.96.53.3"))
    p.append(expect(dns, "c.err.svc.cluster.local.", "A", "NOERROR", ["10.96.53.3"], 30))
    if not dns.ready():
        p.append("readiness failed during API errors")
    if dns.metric("kdns_kubedns_api_errors_total") <= 0:
        p.append("API errors were not counted")
    return [x for x in p if x]


def test_outage_keeps_answering(env):
    fake, dns = env["fake"], env["dns"]
    p = []
    dropped = fake.control("/control/stats")["dropped_while_down"]
    fake.control("/control/restart", {"silence_s": 0, "down_s": 8})

    def refused_twice():
        """kubedns has been refused twice by the API server that is down (it is retrying;
        its log line about the outage is rate-limited, so not a signal)."""
        return fake.control("/control/stats")["dropped_while_down"] >= dropped + 2

    # Answers and readiness hold from the restart until kubedns has found the API down and
    # kept failing to reach it (at most the 6 s it used to be watched for).
    deadline = time.monotonic() + 6
    while True:
        problem = expect(dns, "kubernetes.default.svc.cluster.local.", "A", "NOERROR",
                         ["10.96.0.1"], 2)
        if problem:
            p.append("during the outage: " + problem)
            break
        if not dns.ready():
            p.append("readiness failed during the outage")
            break
        if refused_twice():
            break
        if time.monotonic() > deadline:
            p.append("kubedns did not retry against the API server that is down")
            break
        time.sleep(0.1)
    fake.control("/control/objects", service("after", "a", "10.96.54.1"))
    p.append(expect(dns, "a.after.svc.cluster.local.", "A", "NOERROR", ["10.96.54.1"], 30))
    return [x for x in p if x]


def test_bad_token_and_rotation(env):
    fake, workdir = env["fake"], env["workdir"]
    token_file = os.path.join(workdir, "token")
    with open(token_file, "w") as f:
        f.write("rotating-1")
    kubeconfig = os.path.join(workdir, "rotating.kubeconfig")
    with open(kubeconfig, "w") as f:
        f.write(KUBECONFIG_TOKEN_FILE % (fake.info["api_url"], fake.info["ca_file"], token_file))
    fake.control("/control/tokens", {"tokens": ["test-token", "rotating-1"]})
    dns = Kubedns(workdir, kubeconfig, "kubedns-rotation")
    p = []
    try:
        if harness.eventually(lambda: None if dns.ready() else "not ready", 30):
            return ["not ready with a token file: " + dns.log()[-1500:]]
        # Rotate: the old token stops working; kubedns must re-read the file.
        with open(token_file + ".new", "w") as f:
            f.write("rotating-2")
        os.rename(token_file + ".new", token_file)
        fake.control("/control/tokens", {"tokens": ["test-token", "rotating-2"]})
        fake.control("/control/fault/drop", {"now": True})
        fake.control("/control/objects", service("rot", "a", "10.96.55.1"))
        p.append(expect(dns, "a.rot.svc.cluster.local.", "A", "NOERROR", ["10.96.55.1"], 30))
        # A bad token: answers go on from the last snapshot.
        fake.control("/control/tokens", {"tokens": ["test-token"]})
        fake.control("/control/fault/drop", {"now": True})
        if not harness.wait_until(lambda: dns.metric(
                'kdns_kubedns_api_errors_total{resource="services",code="401"}') > 0, 10):
            p.append("401s were not counted")
        p.append(expect(dns, "a.rot.svc.cluster.local.", "A", "NOERROR", ["10.96.55.1"], 5))
    finally:
        dns.stop()
        fake.control("/control/tokens", {"tokens": ["test-token"]})
    return [x for x in p if x]


def test_wrong_ca_is_refused(env):
    fake, workdir = env["fake"], env["workdir"]
    kubeconfig = os.path.join(workdir, "wrong-ca.kubeconfig")
    with open(kubeconfig, "w") as f:
        f.write(KUBECONFIG_TOKEN % (fake.info["api_url"], fake.info["other_ca_file"],
                                    fake.info["token"]))
    dns = Kubedns(workdir, kubeconfig, "kubedns-wrong-ca")
    p = []
    try:
        def refused():
            log = dns.log().lower()
            return "certificate" in log or "tls" in log or "ssl" in log
        # Once kubedns has logged the refused certificate, it must not be ready nor answer.
        if not harness.wait_until(refused, 10):
            p.append("the log does not say the certificate was refused")
        if dns.ready():
            p.append("ready although the server's certificate is not trusted")
        rcode, _ = dig(dns, "kubernetes.default.svc.cluster.local.")
        if rcode != "SERVFAIL":
            p.append("answered %s before any sync" % rcode)
    finally:
        dns.stop()
    return p


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


def test_random_model(env):
    """Random mutations and faults; after each quiet period, every name matches the model."""
    fake, dns = env["fake"], env["dns"]
    rng = random.Random(int(os.environ.get("KDNS_MODEL_SEED", "1")))
    model = {}  # name -> ("clusterip", ip) | ("headless", [ips]) ; namespace "model"
    p = []
    for round_ in range(4):
        for _ in range(12):
            name = "s%d" % rng.randrange(8)
            action = rng.random()
            if action < 0.4:
                ip = "10.96.60.%d" % rng.randrange(1, 250)
                fake.control("/control/objects", service("model", name, ip))
                fake.control("/control/delete", {"items": [
                    {"kind": "EndpointSlice", "metadata": {"namespace": "model", "name": name + "-s"}}]})
                model[name] = ("clusterip", [ip])
            elif action < 0.75:
                ips = sorted({"10.244.60.%d" % rng.randrange(1, 250)
                              for _ in range(rng.randrange(1, 4))})
                fake.control("/control/objects", [service("model", name),
                                                  slice_("model", name + "-s", name, ips)])
                model[name] = ("headless", ips)
            elif name in model:
                delete(fake, "Service", "model", name)
                fake.control("/control/delete", {"items": [
                    {"kind": "EndpointSlice", "metadata": {"namespace": "model", "name": name + "-s"}}]})
                del model[name]
            fault = rng.random()
            if fault < 0.1:
                fake.control("/control/fault/drop", {"now": True})
            elif fault < 0.15:
                fake.control("/control/fault/http", {"status": 500, "count": 1})
            elif fault < 0.18:
                fake.control("/control/compact", {})
                fake.control("/control/fault/drop", {"now": True})
        # Quiet period: everything must converge.
        for i in range(8):
            name = "s%d" % i
            fqdn = "%s.model.svc.cluster.local." % name
            if name in model:
                problem = expect(dns, fqdn, "A", "NOERROR", model[name][1], 30)
            else:
                problem = expect(dns, fqdn, "A", "NXDOMAIN", None, 30)
            if problem:
                p.append("round %d: %s" % (round_, problem))
    return p


KUBECONFIG_TOKEN = """apiVersion: v1
kind: Config
clusters:
- name: fake
  cluster:
    server: %s
    certificate-authority: %s
users:
- name: u
  user:
    token: %s
contexts:
- name: c
  context: {cluster: fake, user: u}
current-context: c
"""

KUBECONFIG_TOKEN_FILE = """apiVersion: v1
kind: Config
clusters:
- name: fake
  cluster:
    server: %s
    certificate-authority: %s
users:
- name: u
  user:
    tokenFile: %s
contexts:
- name: c
  context: {cluster: fake, user: u}
current-context: c
"""

TESTS = [test_ready_and_conformance, test_changes, test_watch_cut_resumes_from_last_rv,
         test_410_relists_and_keeps_answering, test_errors_backoff_and_recovery,
         test_outage_keeps_answering, test_bad_token_and_rotation, test_wrong_ca_is_refused,
         test_http2, test_http2_goaway, test_random_model]


def main():
    workdir = tempfile.mkdtemp(prefix="kdns-api-e2e-")
    passed = failed = 0
    fake = dns = None
    try:
        fake = start_fake(workdir, "--history-size", "50", *(["--http2"] if MAIN_HTTP2 else []))
        dns = Kubedns(workdir, fake.info["kubeconfig"])
        env = {"fake": fake, "dns": dns, "workdir": workdir}
        p, f = harness.run_tests(TESTS, env,
                            after_each=lambda: fake.control("/control/fault/clear", {}))
        passed += p
        failed += f
    except Exception:
        traceback.print_exc()
        failed += 1
    finally:
        if dns:
            dns.stop()
        if fake:
            fake.stop()
        if failed and os.environ.get("KDNS_KEEP_TMP"):
            print("kept " + workdir)
        else:
            shutil.rmtree(workdir, ignore_errors=True)
    print("%d passed, %d failed" % (passed, failed))
    return 0 if failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
