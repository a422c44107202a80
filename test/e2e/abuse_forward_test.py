#!/usr/bin/python3
"""Forwarding isolation under attack (DESIGN §7, issue 15), end to end.

Starts the real binaries, unprivileged on free loopback ports, next to Debian's NSD (the
healthy upstream: example.test, whose *.wild names give distinct cache misses) and a
black hole (a bound UDP socket that never answers):

- frontend-cache with a stub domain (blackhole.test) routed to the black hole and the
  default route to NSD, flooded from 127.0.0.2 with random names under the black hole at
  several times --dns-forward-max, while 127.0.0.1 asks distinct names under example.test:
  not one of the victim's queries may fail;
- kubedns the same way, the stub domain in its ConfigMap directory, the victim asking
  cluster names and names under example.test (through --nameservers);
- a frontend-cache restarted cold (kill -9 on sockets kept by its parent, as the nanny
  does) facing a burst of distinct misses queued meanwhile, to an upstream 300 ms away
  (in flight = rate x RTT: every distinct name is in flight at once): no SERVFAIL.

The attacks use flags the binaries before the forwarding budgets knew too
(--dns-forward-max, --forward-max), so KDNS_BIN=/work/before-build/bin gives the before
figures. Each test prints its figure. Closes with `N passed, M failed`.
"""
import heapq
import os
import select
import socket
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import dns_wire  # noqa: E402
import fake_upstream as fu  # noqa: E402
import harness  # noqa: E402
import paced_flood  # noqa: E402
import servers  # noqa: E402
from frontend_cache import KeptSockets  # noqa: E402

FORWARD_MAX = 100  # the process ceiling both servers run with here
FLOOD_QPS = 400    # each flood query holds a slot for the 5 s time budget: 20 x the ceiling
VICTIM_QUERIES = 40
WILD_IP = "192.0.2.55"  # NSD's *.wild.example.test
CLUSTER_IP = "10.96.0.1"

OBJECTS = """{"apiVersion": "v1", "kind": "List", "items": [
 {"apiVersion": "v1", "kind": "Service",
  "metadata": {"name": "kubernetes", "namespace": "default"},
  "spec": {"clusterIP": "10.96.0.1", "clusterIPs": ["10.96.0.1"],
           "ports": [{"name": "https", "port": 443, "protocol": "TCP"}]}}]}
"""


class BlackHole:
    """A UDP socket on 127.0.0.1 that receives and never answers (no ICMP either)."""

    def __init__(self):
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.sock.bind(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]

    def stop(self):
        self.sock.close()


class DelayedUpstream:
    """A UDP upstream answering every A query (A 192.0.2.1) `delay` seconds later, from one
    thread (no thread per query), so a burst of distinct names is all in flight at once."""

    def __init__(self, delay):
        self.delay = delay
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 << 20)
        self.sock.bind(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        self.address = "127.0.0.1#%d" % self.port
        self.received = 0
        self.stopping = False
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self):
        due = []  # (time, sequence, reply, peer)
        while not self.stopping:
            timeout = 0.05 if not due else max(0.0, min(0.05, due[0][0] - time.monotonic()))
            readable, _, _ = select.select([self.sock], [], [], timeout)
            if readable:
                try:
                    query, peer = self.sock.recvfrom(65535)
                    msg = dns_wire.parse_message(query)
                except (OSError, ValueError, IndexError, KeyError):
                    continue
                self.received += 1
                answers = [fu.rr(b"\xc0\x0c", dns_wire.TYPES["A"], 60,
                                 socket.inet_aton("192.0.2.1"))] if msg.get("qtype") == 1 else []
                reply = fu.build_reply(query, answers=answers)
                heapq.heappush(due, (time.monotonic() + self.delay, self.received, reply, peer))
            while due and due[0][0] <= time.monotonic():
                _, _, reply, peer = heapq.heappop(due)
                try:
                    self.sock.sendto(reply, peer)
                except OSError:
                    pass

    def stop(self):
        self.stopping = True
        self.thread.join(5)
        self.sock.close()


def victim(port, names):
    """Asks each (name, want) from 127.0.0.1, one try of 3 s each, paced over about 2 s;
    returns the failures: (name, rcode or None for no reply, records)."""
    failures = []
    for name, want in names:
        started = time.monotonic()
        rcode, records = dns_wire.ask_udp(port, name, timeout=3.0)
        if rcode != "NOERROR" or want not in records:
            failures.append((name, rcode, records))
        time.sleep(max(0.0, 0.05 - (time.monotonic() - started)))
    return failures


# The forwarding budgets a flood of one black-holed domain runs into
# (kdns_limit_hits_total{limit}): the route's, its upstream's, the process ceiling, and
# the fair shares of the route's and the upstream's reserve.
BUDGET_LIMITS = ("route_in_flight", "upstream_in_flight", "forward_in_flight",
                 "route_client_share", "upstream_client_share")


def budget_hits(server):
    return harness.limit_hits(server, BUDGET_LIMITS)


def under_flood(server, names, log_of):
    """Floods the black-holed domain until the server's metrics show it past a forwarding
    budget, runs the victim, and checks the flood still held the budgets meanwhile (so the
    victim's answers were had under the attack, not after it); the problems and the figure
    line."""
    port = server.port
    p = []
    flood = paced_flood.Flood(port, "blackhole.test", FLOOD_QPS)
    try:
        if not harness.wait_until(lambda: budget_hits(server) > 0, 10):
            p.append("the flood never reached a forwarding budget (kdns_limit_hits_total "
                     "of %s stayed 0)" % ", ".join(BUDGET_LIMITS))
        before = budget_hits(server)
        failures = victim(port, names)
        during = budget_hits(server) - before
    finally:
        flood.stop()
    figure = ("victim failures: %d of %d while %d flood queries were sent from 127.0.0.2 "
              "(%d budget refusals during the victim's queries)" % (
                  len(failures), len(names), flood.sent, during))
    print("    " + figure)
    if during <= 0:
        p.append("the flood did not hold the budgets while the victim asked: " + figure)
    if failures:
        p.append(figure + "; first: %s" % failures[:5])
    if flood.sent < FORWARD_MAX * 3:
        p.append("the flood sent only %d queries, not several times the ceiling" % flood.sent)
    p += log_of()
    return p


def wild_names(tag):
    return [("%s-%d.wild.example.test" % (tag, i), WILD_IP) for i in range(VICTIM_QUERIES)]


def test_frontend_cache_black_holed_stub(env):
    workdir, nsd = env["workdir"], env["nsd"]
    hole = BlackHole()
    fe = None
    try:
        fe = servers.FrontendCache(workdir, "fe-flood", "--dns-forward-max=%d" % FORWARD_MAX,
                                   "--server=/blackhole.test/127.0.0.1#%d" % hole.port,
                                   "--server=" + nsd.address)

        def log_of():
            return [] if fe.process.alive() else ["frontend-cache exited: " +
                                                  fe.process.log()[-1500:]]
        return under_flood(fe, wild_names("fe"), log_of)
    finally:
        if fe:
            fe.stop()
        hole.stop()


def test_kubedns_black_holed_stub(env):
    workdir, nsd = env["workdir"], env["nsd"]
    hole = BlackHole()
    kd = None
    try:
        objects = os.path.join(workdir, "objects.json")
        with open(objects, "w") as f:
            f.write(OBJECTS)
        resolv = os.path.join(workdir, "resolv.conf")
        with open(resolv, "w") as f:
            f.write("# none: --nameservers and the ConfigMap only\n")
        config = harness.ConfigMapDir(os.path.join(workdir, "config"))
        config.publish({"stubDomains": '{"blackhole.test": ["127.0.0.1:%d"]}' % hole.port})
        kd = servers.Kubedns(workdir, "kubedns-flood", "--objects-file=" + objects,
                             "--forward-max=%d" % FORWARD_MAX,
                             "--nameservers=127.0.0.1:%d" % nsd.port,
                             "--config-dir=" + config.path, "--config-period=100ms",
                             "--resolv-conf=" + resolv)
        if not harness.wait_until(
                lambda: kd.metric("kdns_kubedns_forward_stub_domains") == 1, 15,
                ignore=(Exception,)):
            return ["the stub domain was never routed: " + kd.log()[-1500:]]
        names = []
        for name, want in wild_names("kd"):
            names += [(name, want), ("kubernetes.default.svc.cluster.local", CLUSTER_IP)]

        def log_of():
            return [] if kd.process.alive() else ["kubedns exited: " + kd.log()[-1500:]]
        return under_flood(kd, names, log_of)
    finally:
        if kd:
            kd.stop()
        hole.stop()


def test_cold_restart_burst_of_distinct_misses(env):
    """frontend-cache is stopped (SIGSTOP) while 1,000 queries over 500 names (5,000 q/s for
    200 ms, the issue's load) queue in the socket its parent keeps, then killed -9 and
    started again: the new, cold process meets them all at once. Each distinct name is a
    miss to an upstream 300 ms away, so all 500 are in flight together."""
    upstream = DelayedUpstream(0.3)
    sockets = KeptSockets(env["workdir"], upstream.address, name="fe-cold")
    client = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    client.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 << 20)
    client.bind(("127.0.0.1", 0))
    p = []
    try:
        if not harness.wait_until(sockets.answers, 20):
            return ["frontend-cache did not answer: " + sockets.log_tail()]
        pid = sockets.child.pid
        os.kill(pid, 19)  # SIGSTOP: what arrives now waits in the kept socket
        if not harness.wait_until(lambda: open("/proc/%d/stat" % pid).read().split()[2] == "T",
                                  10, 0.01):
            return ["frontend-cache did not stop"]
        sent = {}
        for i in range(1000):
            name = "n%d.cold.test" % (i % 500)
            client.sendto(dns_wire.build_query(name, ident=i, edns=False),
                          ("127.0.0.1", sockets.port))
            sent[i] = name
        sockets.kill()
        sockets.spawn()
        replies = {}
        client.settimeout(0.5)
        deadline = time.monotonic() + 30
        while len(replies) < len(sent) and time.monotonic() < deadline:
            try:
                reply = dns_wire.parse_message(client.recv(4096))
            except socket.timeout:
                continue
            replies[reply["id"]] = reply["rcode"]
        servfail = sum(1 for rcode in replies.values() if rcode == dns_wire.SERVFAIL)
        other = sum(1 for rcode in replies.values() if rcode not in (0, dns_wire.SERVFAIL))
        missing = len(sent) - len(replies)
        figure = "cold restart: %d SERVFAIL, %d other errors, %d unanswered of %d queries " \
                 "(%d distinct names)" % (servfail, other, missing, len(sent), 500)
        print("    " + figure)
        if servfail or other or missing:
            p.append(figure)
        if sockets.child.poll() is not None:
            p.append("frontend-cache exited: " + sockets.log_tail())
    finally:
        client.close()
        sockets.stop()
        upstream.stop()
    return p


TESTS = [test_frontend_cache_black_holed_stub,
         test_kubedns_black_holed_stub,
         test_cold_restart_burst_of_distinct_misses]


def main():
    return harness.main("kdns-abuse-forward-", TESTS,
                        tools=(os.path.join(harness.BIN, "frontend-cache"),
                               os.path.join(harness.BIN, "kubedns"), servers.NSD),
                        setup=servers.start_nsd)


if __name__ == "__main__":
    sys.exit(main())
