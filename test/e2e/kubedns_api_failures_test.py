#!/usr/bin/python3
"""kubedns following a (fake) Kubernetes API server, end to end: its failure paths.

Against test/fake_apiserver (kubedns_api.py): 500s, 429, stalls and malformed lines with
back-off and recovery; an API server restart and an outage during which answers and
readiness hold; a bad token and token rotation through a token file; a wrong CA refused.
Closes with `N passed, M failed`.
"""
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
import kubedns_api  # noqa: E402
from kubedns_api import (  # noqa: E402
    Kubedns,
    dig,
    expect,
    kubeconfig,
    service)


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
    config = os.path.join(workdir, "rotating.kubeconfig")
    with open(config, "w") as f:
        f.write(kubeconfig(fake.info["api_url"], fake.info["ca_file"], "tokenFile: " + token_file))
    fake.control("/control/tokens", {"tokens": ["test-token", "rotating-1"]})
    dns = Kubedns(workdir, config, "kubedns-rotation")
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
    config = os.path.join(workdir, "wrong-ca.kubeconfig")
    with open(config, "w") as f:
        f.write(kubeconfig(fake.info["api_url"], fake.info["other_ca_file"],
                           "token: " + fake.info["token"]))
    dns = Kubedns(workdir, config, "kubedns-wrong-ca")
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


TESTS = [test_errors_backoff_and_recovery,
         test_outage_keeps_answering,
         test_bad_token_and_rotation,
         test_wrong_ca_is_refused]


if __name__ == "__main__":
    sys.exit(kubedns_api.main(TESTS))
