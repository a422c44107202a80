#!/usr/bin/python3
"""kubedns with --pod-records=verified, following Pods on the fake API server, end to end.

a-b-c-d.ns.pod.cluster.local answers only while a live pod (not Succeeded or Failed) of
namespace ns has that IP: checked with real dig as pods come, change IP, finish, share an
IP, go away, and across a re-LIST after 410 (a pod deleted while the watch was cut is gone
after it). Closes with `N passed, M failed`.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
import kubedns_api as api  # noqa: E402


def pod(ns, name, ips, phase="Running"):
    status = {"phase": phase}
    if ips:
        status["podIP"] = ips[0]
        status["podIPs"] = [{"ip": ip} for ip in ips]
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": ns},
            "spec": {"containers": [{"name": "c", "image": "busybox"}]}, "status": status}


def name_of(ip, ns):
    return "%s.%s.pod.cluster.local." % (ip.replace(".", "-").replace(":", "-"), ns)


def test_pods_come_change_finish_and_go(env):
    fake, dns = env["fake"], env["dns"]
    p = []

    def want(ip, ns, rcode, qtype="A"):
        problem = api.expect(dns, name_of(ip, ns), qtype, rcode,
                             [ip] if rcode == "NOERROR" else None)
        if problem:
            p.append(problem)

    want("10.244.7.1", "team", "NXDOMAIN")  # no pod has it yet
    fake.control("/control/objects", pod("team", "web-0", ["10.244.7.1", "fd00::7:1"]))
    want("10.244.7.1", "team", "NOERROR")
    want("fd00::7:1", "team", "NOERROR", "AAAA")
    want("10.244.7.1", "other", "NXDOMAIN")  # the namespace is part of the check
    # A new IP (a restarted pod keeps its name here): the old one stops answering.
    fake.control("/control/objects", pod("team", "web-0", ["10.244.7.2"]))
    want("10.244.7.2", "team", "NOERROR")
    want("10.244.7.1", "team", "NXDOMAIN")
    want("fd00::7:1", "team", "NXDOMAIN", "AAAA")
    # Two pods on one IP (hostNetwork): the name stays until both are gone.
    fake.control("/control/objects", pod("team", "agent", ["10.244.7.2"]))
    fake.control("/control/objects", pod("team", "web-0", ["10.244.7.2"], phase="Succeeded"))
    want("10.244.7.2", "team", "NOERROR")
    api.delete(fake, "Pod", "team", "agent")
    want("10.244.7.2", "team", "NXDOMAIN")
    api.delete(fake, "Pod", "team", "web-0")
    return p


def test_relist_after_410_drops_pods_deleted_meanwhile(env):
    fake, dns = env["fake"], env["dns"]
    p = []
    fake.control("/control/objects", [pod("relist", "a", ["10.244.8.1"]),
                                      pod("relist", "b", ["10.244.8.2"])])
    for ip in ("10.244.8.1", "10.244.8.2"):
        problem = api.expect(dns, name_of(ip, "relist"), "A", "NOERROR", [ip])
        if problem:
            p.append(problem)
    relists = dns.metric('kdns_kubedns_api_relists_total{resource="pods"}')
    # Hold the pod watches, delete one pod, compact so the watch's RV is gone, cut it: the
    # watch comes back with 410 and kubedns must re-LIST pods.
    fake.control("/control/fault/stall", {"seconds": 1.0, "path_prefix": "/api/v1/pods"})
    api.delete(fake, "Pod", "relist", "a")
    fake.control("/control/compact", {})
    fake.control("/control/fault/drop", {"now": True, "path_prefix": "/api/v1/pods"})
    for ip, rcode in (("10.244.8.1", "NXDOMAIN"), ("10.244.8.2", "NOERROR")):
        problem = api.expect(dns, name_of(ip, "relist"), "A", rcode,
                             [ip] if rcode == "NOERROR" else None, 30)
        if problem:
            p.append(problem)
    if harness.eventually(lambda: dns.metric('kdns_kubedns_api_relists_total{resource="pods"}')
                          <= relists and "no re-LIST of pods", 15):
        p.append("no pod re-LIST counted after the 410")
    api.delete(fake, "Pod", "relist", "b")
    return p


def test_metrics_count_pod_events(env):
    dns = env["dns"]
    events = dns.metric('kdns_kubedns_api_events_total{resource="pods"')
    return [] if events > 0 else ["no pod watch events counted: %s" % events]


TESTS = [test_pods_come_change_finish_and_go, test_relist_after_410_drops_pods_deleted_meanwhile,
         test_metrics_count_pod_events]


if __name__ == "__main__":
    sys.exit(api.main(TESTS, kubedns_flags=("--pod-records=verified",)))
