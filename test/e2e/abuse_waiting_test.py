#!/usr/bin/python3
"""Abuse: waiting queries piled up toward a black-holed upstream (DESIGN §7, issue 15).

An attacker on 127.0.0.2 sends, as fast as it can, queries for names under a domain
whose upstream never answers (a UDP socket that never reads, a TCP listener that never
accepts): UDP queries padded with an EDNS padding option up to their EDNS size (4096
bytes), then TCP connections each carrying 32 frames of 64 KiB (the same padding: a
well-formed query, nothing trailing). Every such query waits for the upstream. While
they wait, the server's resident memory (VmRSS of /proc/PID/status, sampled every few
milliseconds) must stay under RSS_BOUND_MIB, and a victim on 127.0.0.1 must still get
its answers: names frontend-cache has cached, cluster names from kubedns (its forwarding
path is the one attacked).

The same attack runs against frontend-cache and kubedns with their default flags (the
budgets are what the manifests run with). Each test prints the peak RSS it saw, so the
suite run against older binaries (KDNS_BIN=/work/before-build/bin) gives the figure to
compare with.

Closes with `N passed, M failed`. KDNS_ONLY=substring runs the matching tests only;
KDNS_KEEP_TMP=1 keeps the temporary directory (logs) after a failure.
"""
import json
import os
import socket
import struct
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import dns_wire  # noqa: E402
import fake_upstream as fu  # noqa: E402
import harness  # noqa: E402
import servers  # noqa: E402

ATTACKER = "127.0.0.2"
# Both containers' manifest limits are 100Mi (frontend-cache, with the nanny beside it)
# and 170Mi (kubedns); every budget together keeps a server far below this.
RSS_BOUND_MIB = 64
UDP_QUERIES = 40_000
UDP_PAYLOAD = 4096  # the EDNS size the attacker offers, and the size of its datagrams
TCP_CONNECTIONS = 48
FRAMES_PER_CONNECTION = 32  # each connection's outstanding queries before reading pauses
FRAME_BYTES = 65535
NAMES = 64  # distinct names: their waiters coalesce, as a real flood's would
EDNS_PADDING = 12  # RFC 7830


def padded_query(name, size, ident):
    """A query for `name` A with an OPT record (payload UDP_PAYLOAD) whose padding option
    makes the whole message `size` bytes."""
    pad = size - len(dns_wire.build_query(name, ident=ident, options=[(EDNS_PADDING, b"")]))
    return dns_wire.build_query(name, ident=ident, payload=UDP_PAYLOAD,
                                options=[(EDNS_PADDING, bytes(pad))])


class RssWatch:
    """Samples VmRSS of `pid` every few milliseconds in a thread; `peak_mib` after stop."""

    def __init__(self, pid):
        self.pid = pid
        self.peak_kib = 0
        self.running = True
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self):
        while self.running:
            try:
                self.peak_kib = max(self.peak_kib, harness.rss_kib(self.pid))
            except OSError:
                return
            time.sleep(0.005)

    def stop(self):
        self.running = False
        self.thread.join(timeout=2)
        return self.peak_kib / 1024.0


class BlackHole:
    """An upstream that never answers: a bound UDP socket nobody reads, and a listener
    whose connections are never accepted (their queries sit in the backlog)."""

    def __init__(self):
        self.port = harness.free_port()
        self.udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.udp.bind(("127.0.0.1", self.port))
        self.tcp = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.tcp.bind(("127.0.0.1", self.port))
        self.tcp.listen(4096)

    def stop(self):
        self.udp.close()
        self.tcp.close()


def flood_udp(port, domain):
    """UDP_QUERIES padded queries from ATTACKER, as fast as they go; replies not read."""
    socks = []
    for _ in range(8):
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        s.bind((ATTACKER, 0))
        s.setblocking(False)
        socks.append(s)
    packets = [padded_query("w%d.%s" % (i, domain), UDP_PAYLOAD, i) for i in range(NAMES)]
    sent = 0
    for i in range(UDP_QUERIES):
        try:
            socks[i % len(socks)].sendto(packets[i % NAMES], ("127.0.0.1", port))
            sent += 1
        except BlockingIOError:
            time.sleep(0.0005)
    return socks, sent


def flood_tcp(port, domain):
    """TCP_CONNECTIONS connections from ATTACKER, each sending FRAMES_PER_CONNECTION frames
    of FRAME_BYTES, in parallel; the connections are returned open (the queries wait)."""
    conns = []
    frames = []
    for i in range(FRAMES_PER_CONNECTION):
        message = padded_query("t%d.%s" % (i % NAMES, domain), FRAME_BYTES - 2, i)
        frames.append(struct.pack("!H", len(message)) + message)
    payload = b"".join(frames)

    def send(conn):
        try:
            conn.settimeout(10)
            conn.sendall(payload)
        except OSError:
            pass  # closed by a connection limit: that is the server's right

    threads = []
    for _ in range(TCP_CONNECTIONS):
        conn = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        conn.bind((ATTACKER, 0))
        try:
            conn.connect(("127.0.0.1", port))
        except OSError:
            conn.close()
            continue
        conns.append(conn)
        t = threading.Thread(target=send, args=(conn,), daemon=True)
        t.start()
        threads.append(t)
    for t in threads:
        t.join(timeout=20)
    return conns


# What the floods run into (kdns_limit_hits_total{limit}): the waiting-query budget and
# its shedding, the forwarding budgets, the TCP caps.
ATTACK_LIMITS = ("waiting_queries", "shed_waiting_queries", "waiters_per_query",
                 "route_in_flight", "upstream_in_flight", "forward_in_flight",
                 "route_client_share", "upstream_client_share", "tcp_connections",
                 "tcp_connections_per_source", "tcp_output_total",
                 "tcp_output_per_connection")


def attack(server, domain, victim):
    """Runs both floods toward `server` while watching its RSS, checks from its metrics
    that they reached its limits, then asks the victim's questions while the attacker's
    queries still wait. Returns the problems."""
    port = server.port
    watch = RssWatch(server.process.pid)
    problems = []
    udp_socks, sent = flood_udp(port, domain)
    conns = flood_tcp(port, domain)
    if not harness.wait_until(lambda: harness.limit_hits(server, ATTACK_LIMITS) > 0, 10):
        problems.append("the floods reached none of the limits %s" % ", ".join(ATTACK_LIMITS))
    print("    limits hit by the floods before the victim asked: %d" %
          harness.limit_hits(server, ATTACK_LIMITS))
    failures = [name for name in victim() if name]
    time.sleep(0.5)  # the last frames are read and parsed: RSS is sampled meanwhile
    peak = watch.stop()
    for s in udp_socks + conns:
        s.close()
    print("    peak VmRSS %.1f MiB (bound %d MiB): %d padded UDP queries sent, %d TCP "
          "connections of %d x %d-byte frames" % (peak, RSS_BOUND_MIB, sent, len(conns),
                                                  FRAMES_PER_CONNECTION, FRAME_BYTES))
    if peak > RSS_BOUND_MIB and not harness.SANITIZED:
        problems.append("peak VmRSS %.1f MiB over the bound of %d MiB" % (peak, RSS_BOUND_MIB))
    if failures:
        problems.append("victim not answered: %s" % failures[:10])
    return problems


def ask_victim(port, names):
    """Each name once from 127.0.0.1; the names not answered NOERROR with an address."""
    def run():
        bad = []
        for name in names:
            rcode, records = dns_wire.ask_udp(port, name, timeout=2.0)
            if rcode != "NOERROR" or not records:
                bad.append("%s: %s %s" % (name, rcode, records))
        return bad
    return run


def test_frontend_cache_waiting_queries_stay_bounded(env):
    workdir, owned = env["workdir"], env["owned"]
    hole = BlackHole()
    owned.append(hole)
    good = fu.FakeUpstream(name="good")
    owned.append(good)
    fc = servers.FrontendCache(workdir, "frontend-cache",
                               "--server=/hole.test/127.0.0.1#%d" % hole.port,
                               "--server=" + good.address)
    owned.append(fc)
    names = ["victim%d.good.test" % i for i in range(20)]
    problems = ["not cached first: %s" % n for n in ask_victim(fc.port, names)()]
    if problems:
        return problems
    return attack(fc, "hole.test", ask_victim(fc.port, names))


OBJECTS = {
    "apiVersion": "v1", "kind": "List", "items": [
        {"apiVersion": "v1", "kind": "Service",
         "metadata": {"name": "svc%d" % i, "namespace": "default"},
         "spec": {"clusterIP": "10.96.0.%d" % (i + 1), "clusterIPs": ["10.96.0.%d" % (i + 1)]}}
        for i in range(20)
    ],
}


def test_kubedns_waiting_queries_stay_bounded(env):
    workdir, owned = env["workdir"], env["owned"]
    hole = BlackHole()
    owned.append(hole)
    objects = os.path.join(workdir, "objects.json")
    with open(objects, "w") as f:
        json.dump(OBJECTS, f)
    dns = servers.Kubedns(workdir, "kubedns", "--objects-file=" + objects,
                          "--domain=cluster.local.", "--nameservers=127.0.0.1:%d" % hole.port)
    owned.append(dns)
    names = ["svc%d.default.svc.cluster.local" % i for i in range(20)]
    problems = ["not answered first: %s" % n for n in ask_victim(dns.port, names)()]
    if problems:
        return problems
    return attack(dns, "hole.example", ask_victim(dns.port, names))


TESTS = [test_frontend_cache_waiting_queries_stay_bounded,
         test_kubedns_waiting_queries_stay_bounded]


def main():
    return harness.main("kdns-abuse-waiting-", TESTS, reset_each=True)


if __name__ == "__main__":
    sys.exit(main())
