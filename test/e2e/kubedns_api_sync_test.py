#!/usr/bin/python3
"""kubedns following a (fake) Kubernetes API server, end to end: sync and changes.

test/fake_apiserver (HTTPS, its own CA, bearer tokens) serves the conformance objects and
the real kubedns binary follows it through a kubeconfig (kubedns_api.py); checked with
real dig: every conformance case, LIST and WATCH in the fake's request log; every kind of
change (added, updated, deleted, ClusterIP <-> headless <-> ExternalName, endpoint churn,
a slice moving between services, a namespace emptied); a watch cut mid-line resumed from
the last resourceVersion; 410 in both forms re-listed; and a randomized model test:
random mutations and faults, and after each quiet period every name answers exactly as
the fake's objects say. KDNS_API_HTTP2=1 runs every test with the main fake offering
HTTP/2 as well. Closes with `N passed, M failed`.
"""
import os
import random
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
import kubedns_api  # noqa: E402
from kubedns_api import (  # noqa: E402
    MAIN_HTTP2,
    api_requests,
    conformance_problems,
    delete,
    expect,
    service,
    slice_)


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


TESTS = [test_ready_and_conformance,
         test_changes,
         test_watch_cut_resumes_from_last_rv,
         test_410_relists_and_keeps_answering,
         test_random_model]


if __name__ == "__main__":
    sys.exit(kubedns_api.main(TESTS))
