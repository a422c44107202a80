#!/usr/bin/python3
"""kubedns on SIGTERM, end to end (issue 37, item 6), as kubedns/main.cc and its README
("Shutdown") say: readiness fails at once and DNS is still answered for --lameduck; then
Stop answers every query still waiting for an upstream SERVFAIL (DnsHandler's CancelAll,
issue 31) before the sockets close; the process exits 0 and the port is closed.

kubedns serves test/conformance/objects.json from a file, its upstream a FakeUpstream that
holds every query under held.test (never answers). A light steady load (50 q/s) asks a
cluster name throughout. Conditions, not clocks: the lameduck is seen as /readiness 503
while the process lives; answering in it as a query sent after that, answered while the
process still lives; the held query is sent after SIGTERM, so it has waited less than the
lameduck (2 s) when Stop comes, under the forwarder's 5 s total timeout: still waiting.
The only time bound is the grace the manifests give (terminationGracePeriodSeconds 30)
on top of the lameduck.

Closes with `N passed, M failed, K skipped`."""
import os
import signal
import socket
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import dns_wire  # noqa: E402
import fake_upstream  # noqa: E402
import harness  # noqa: E402
import servers  # noqa: E402
from steady_load import SteadyLoad  # noqa: E402

NAME = "kubernetes.default.svc.cluster.local."
HELD = "w.held.test."
LAMEDUCK_S = 2
GRACE_S = 30  # manifests/: terminationGracePeriodSeconds


def refused(port):
    """Whether both UDP and TCP on 127.0.0.1:port are refused (nothing listens)."""
    udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    udp.settimeout(2)
    try:
        udp.connect(("127.0.0.1", port))
        udp.send(dns_wire.build_query(NAME))
        udp.recv(512)
        return False
    except ConnectionRefusedError:
        pass
    except OSError:
        return False
    finally:
        udp.close()
    try:
        socket.create_connection(("127.0.0.1", port), timeout=2).close()
        return False
    except ConnectionRefusedError:
        return True
    except OSError:
        return False


def held_reply(sock, ident):
    """The rcode of the reply to the held query on `sock` (None: none came)."""
    sock.settimeout(5)
    try:
        while True:
            msg = dns_wire.parse_message(sock.recv(4096))
            if msg["id"] == ident:
                return msg["rcode"]
    except OSError:
        return None


def test_sigterm_lameduck_then_exit(env):
    workdir = env["workdir"]
    upstream = fake_upstream.FakeUpstream(name="held-upstream")
    upstream.set_zone("held.test", "hold", max_hold=300)
    kd, load, held = None, None, None
    p = []
    try:
        kd = servers.Kubedns(
            workdir, "kubedns-sigterm",
            "--objects-file=" + os.path.join(harness.ROOT, "test", "conformance", "objects.json"),
            "--domain=cluster.local.", "--nameservers=127.0.0.1:%d" % upstream.port,
            "--lameduck=%ds" % LAMEDUCK_S)
        load = SteadyLoad(NAME, [("kubedns", "127.0.0.1", 50)], "127.0.0.1", port=kd.port,
                          max_s=120)
        load.start()
        target = load.target("kubedns")
        if not harness.wait_until(lambda: target.answered >= 10, 20):
            return ["the load got no answers before SIGTERM: %s" % target.figures()]

        signalled = time.monotonic()
        kd.process.signal(signal.SIGTERM)
        lameduck = harness.wait_until(
            lambda: not kd.process.alive() or
            harness.http_status(kd.healthz, "/readiness", 1) == 503, 10)
        failing_seen = time.monotonic()
        if not lameduck or not kd.process.alive():
            p.append("readiness did not fail (503) while kubedns lived: %s" % kd.log()[-1500:])
            return p

        # A query that waits for the upstream, sent in the lameduck.
        held = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        held.connect(("127.0.0.1", kd.port))
        held.send(dns_wire.build_query(HELD, ident=0x5151))
        if not harness.wait_until(lambda: upstream.received(HELD), 10):
            p.append("the held query did not reach the upstream")
        # Answered in the lameduck: asked after readiness failed, answered while it lives.
        rcode, answers = dns_wire.ask_udp(kd.port, NAME, timeout=2)[:2]
        if rcode != "NOERROR" or not answers or not kd.process.alive():
            p.append("in the lameduck: %s %s, alive %s" % (rcode, answers, kd.process.alive()))

        rc = kd.wait(LAMEDUCK_S + GRACE_S)
        if rc != 0:
            p.append("exit code %s, want 0 within the lameduck and the grace period" % rc)
        got = held_reply(held, 0x5151)
        if got != dns_wire.SERVFAIL:
            p.append("the query waiting for the upstream at the exit: rcode %s, want SERVFAIL "
                     "(None: lost)" % got)
        if not refused(kd.port):
            p.append("port %d still open after the exit" % kd.port)
        for line in ("failing readiness, lameduck for %ds" % LAMEDUCK_S, "kubedns stopped"):
            if line not in kd.log():
                p.append("no log line %r" % line)

        load.stop()
        if target.servfail or target.other:
            p.append("the cluster name got %d SERVFAIL and %d other rcodes during shutdown"
                     % (target.servfail, target.other))
        lost = target.lost_between(signalled, failing_seen)
        if lost:
            p.append("%d of %d queries sent between SIGTERM and the failing readiness lost"
                     % (lost, target.sent_between(signalled, failing_seen)))
        if not any(t > failing_seen for t in target.ok_send_times):
            p.append("no load query sent in the lameduck was answered: %s" % target.figures())
        print("    load: %s; lameduck seen %.0f ms after SIGTERM"
              % (target.figures(), (failing_seen - signalled) * 1000))
    finally:
        if load is not None and load.is_alive():
            load.stop()
        if held is not None:
            held.close()
        if kd is not None:
            kd.stop()
        upstream.stop()
    return p


TESTS = [test_sigterm_lameduck_then_exit]

if __name__ == "__main__":
    sys.exit(harness.main("kdns-kubedns-sigterm-", TESTS))
