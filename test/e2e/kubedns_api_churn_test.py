#!/usr/bin/python3
"""Which names get SERVFAIL while endpoints churn (issue 37, item 6): the kubedns API bench
once counted 33 SERVFAIL among 103k queries under churn. The bench's query mix is fixed
before the churn and asks PTRs of headless endpoints' addresses; the churn replaces
addresses, and a PTR of an address the cluster no longer has is not kubedns's any more: it
is forwarded, as kube-dns does, and the bench then forwarded to the machine's resolver,
which timed some out (bench commit 0813c6b gave it a loopback upstream). Not a snapshot
swap: cluster names never fail while the records change.

Reproduced small: the fake API server generates 60 services (half headless, ~10 endpoints
each), kubedns follows it and forwards to an upstream that never answers (the worst
resolver), the fake churns 100 addresses/s while this suite asks, at a steady rate, every
service name (A) and the PTR of every headless endpoint address as it was before the
churn. Conditions checked: no cluster-zone name gets anything but NOERROR; every SERVFAIL
is a PTR that kubedns forwarded (the upstream received it), kdns_kubedns_forward_failures
counts them all as `timeout`, and some PTRs did go that way (the churn reached the names
asked). The figures are printed.

Closes with `N passed, M failed, K skipped`."""
import os
import selectors
import socket
import struct
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import dns_wire  # noqa: E402
import fake_upstream  # noqa: E402
import harness  # noqa: E402
import servers  # noqa: E402

sys.path.insert(0, os.path.join(harness.ROOT, "test", "fake_apiserver"))
import generate  # noqa: E402

ZONE = "cluster.local."
SPEC = {"services": 60, "endpoints_per_service": 10, "headless_percent": 50,
        "services_per_namespace": 30, "namespace_prefix": "churn"}
QPS = 300
CHURN = {"rate": 100, "seconds": 8, "namespace_prefix": "churn"}
FORWARD_TOTAL_S = 5  # the forwarder's total timeout: a held query's SERVFAIL comes by then


def names(spec):
    """[(kind, name, qtype)]: every service's A, every headless endpoint address's PTR."""
    out = []
    for i in range(spec["services"]):
        fqdn = "svc-%d.%s.svc.%s" % (i, generate.namespace(spec, i), ZONE)
        out.append(("service", fqdn, "A"))
        if generate.is_headless(spec, i):
            first = generate.first_endpoint(spec, i)
            for n in range(first, first + generate.endpoint_count(spec, i)):
                ip = generate.endpoint_ip(n)
                out.append(("ptr", ".".join(reversed(ip.split("."))) + ".in-addr.arpa.",
                            "PTR"))
    return out


def ask_during(port, asked, until):
    """Asks `asked` round robin at QPS from one socket until until() is true, then waits for
    the answers still due; returns ({(kind, name): {rcode: count}}, sent, unanswered)."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.connect(("127.0.0.1", port))
    sock.setblocking(False)
    selector = selectors.DefaultSelector()
    selector.register(sock, selectors.EVENT_READ)
    pending, outcomes, sent = {}, {}, 0
    started = time.monotonic()
    stopped_at = None
    try:
        while True:
            now = time.monotonic()
            if stopped_at is None and until():
                stopped_at = now
            if stopped_at is None:
                while sent < int((now - started) * QPS) + 1:
                    kind, name, qtype = asked[sent % len(asked)]
                    ident = sent & 0xFFFF
                    pending[ident] = (kind, name)
                    sock.send(dns_wire.build_query(name, qtype, ident=ident, edns=False))
                    sent += 1
            elif not pending or now > stopped_at + FORWARD_TOTAL_S + 3:
                break
            for _ in selector.select(0.002):
                while True:
                    try:
                        data = sock.recv(4096)
                    except BlockingIOError:
                        break
                    ident, flags = struct.unpack("!HH", data[:4])
                    key = pending.pop(ident, None)
                    if key is not None:
                        counts = outcomes.setdefault(key, {})
                        counts[flags & 0xF] = counts.get(flags & 0xF, 0) + 1
    finally:
        selector.close()
        sock.close()
    return outcomes, sent, len(pending)


def test_under_churn_only_forwarded_ptrs_fail(env):
    workdir = env["workdir"]
    upstream = fake_upstream.FakeUpstream(name="silent-resolver", default="silent")
    fake = kd = None
    p = []
    try:
        fake = servers.FakeApiserver(os.path.join(workdir, "fake"))
        fake.control("/control/generate", SPEC)
        kd = servers.Kubedns(workdir, "kubedns-churn", "--kubecfg-file=" + fake.info["kubeconfig"],
                             "--domain=" + ZONE, "--nameservers=127.0.0.1:%d" % upstream.port)
        asked = names(SPEC)
        before = kd.metrics()
        fake.control("/control/churn", CHURN)
        outcomes, sent, unanswered = ask_during(
            kd.port, asked, lambda: not fake.control("/control/churn")["running"])
        after = kd.metrics()
        churn = fake.control("/control/churn")

        def delta(series):
            return harness.metric_sum(after, series) - harness.metric_sum(before, series)

        servfail = {key: counts[dns_wire.SERVFAIL] for key, counts in outcomes.items()
                    if counts.get(dns_wire.SERVFAIL)}
        bad_services = {name: counts for (kind, name), counts in outcomes.items()
                        if kind == "service" and set(counts) != {dns_wire.NOERROR}}
        if bad_services:
            p.append("cluster names answered other than NOERROR: %s"
                     % sorted(bad_services.items())[:5])
        not_forwarded = [name for (kind, name) in servfail
                         if kind != "ptr" or not upstream.received(name)]
        if not_forwarded:
            p.append("SERVFAIL for names kubedns did not forward: %s" % not_forwarded[:5])
        failures = delta("kdns_kubedns_forward_failures_total")
        timeouts = delta('kdns_kubedns_forward_failures_total{reason="timeout"}')
        if failures != timeouts:
            p.append("forward failures %d, of them timeout %d: another reason" % (failures,
                                                                                  timeouts))
        if sum(servfail.values()) > failures:
            p.append("%d SERVFAIL seen, %d counted as forward failures"
                     % (sum(servfail.values()), failures))
        if not servfail:
            p.append("no PTR went upstream: the churn (%s) did not reach the names asked"
                     % churn)
        if unanswered:
            p.append("%d of %d queries unanswered" % (unanswered, sent))
        print("    %d queries, churn applied %s writes; SERVFAIL: %d queries for %d names, "
              "all PTRs of replaced addresses, forwarded and timed out (failures %d, timeout "
              "%d); forwarded in all %d"
              % (sent, churn.get("applied"), sum(servfail.values()), len(servfail), failures,
                 timeouts, delta("kdns_kubedns_forward_queries_total")))
    finally:
        if kd is not None:
            kd.stop()
        if fake is not None:
            fake.stop()
        upstream.stop()
    return p


TESTS = [test_under_churn_only_forwarded_ptrs_fail]

if __name__ == "__main__":
    sys.exit(harness.main("kdns-kubedns-churn-", TESTS))
