#!/usr/bin/python3
"""Abuse: DNS over TCP held by a few clients, on frontend-cache and on kubedns.

Two attacks, each against both servers.

From 127.0.0.2 the attacker opens ATTACK_CONNECTIONS connections (bounded; reopened when
the server closes them, up to ATTACK_ATTEMPTS in all): half trickle one byte of a large
message every TRICKLE_S, half stay silent. Meanwhile a victim at 127.0.0.1 opens a new TCP
connection for each of VICTIM_QUERIES queries for a name the server answers (cached for
frontend-cache, a cluster Service for kubedns) and must get every answer. The test asserts
the victim's outcome only; the limits doing it are --tcp-frame-timeout,
--tcp-idle-timeout, --tcp-max-connections(-per-source) (docs/operators.md, "Limits").

Held queries: with --tcp-max-connections=128, HOLDERS (127.0.0.2-.5) each open
HOLD_PER_SOURCE connections and keep one query for a name the upstream never answers in
flight on each (the next one sent as soon as one is answered), so every slot of the cap is
held by a connection that is not idle. Real `dig +tcp -b 127.0.0.1` must then get its
answer: at the cap the server closes a connection of the source that holds the most
(its query in flight dropped) rather than refuse the light newcomer. Before asserting, the
test confirms that all 128 queries reached the upstream (the cap was full of busy
connections) and, from kdns_limit_hits_total, that dig's connection met the cap and that a
connection with a query in flight was evicted for it.

Overdue query: with --tcp-query-timeout=1s, a query from 127.0.0.2 for a name the upstream
never answers gets SERVFAIL from the query timeout (kdns_limit_hits_total{limit=
"tcp_query_timeout"} grew: not the forwarder's own 5 s budget), and the same connection
then gets the answer to its next query.

KDNS_BIN=/work/before-build/bin gives the figure before the limits (the flags are not
passed: the defaults are what is measured).
"""
import os
import resource
import socket
import struct
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import dns_wire  # noqa: E402
import harness  # noqa: E402
from fake_upstream import FakeUpstream  # noqa: E402
from servers import FrontendCache, Kubedns  # noqa: E402

ATTACKER = "127.0.0.2"
VICTIM = "127.0.0.1"
ATTACK_CONNECTIONS = 2500
ATTACK_ATTEMPTS = 6000
TRICKLE_S = 0.2
VICTIM_QUERIES = 15
VICTIM_TIMEOUT_S = 3.0
HOLDERS = ["127.0.0.%d" % i for i in range(2, 6)]
HOLD_PER_SOURCE = 32
HOLD_CAP = len(HOLDERS) * HOLD_PER_SOURCE  # 128, the manifests' cap
HOLD_S = 60  # the holders give up after this, whatever happens
ROOT = harness.ROOT


def raise_fd_limit(needed):
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < needed:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(needed, hard), hard))
    return resource.getrlimit(resource.RLIMIT_NOFILE)[0]


class Slowloris:
    """The attacker: opens, trickles and reopens connections from ATTACKER, in a thread."""

    def __init__(self, port):
        self.port = port
        self.sockets = []
        self.attempts = 0
        self.refused = 0
        self.stop_event = threading.Event()
        self.opened = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _connect(self, index):
        if self.attempts >= ATTACK_ATTEMPTS:
            return None
        self.attempts += 1
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        try:
            s.bind((ATTACKER, 0))
            s.settimeout(2)
            s.connect((VICTIM, self.port))
            s.setblocking(False)
        except OSError:
            self.refused += 1
            s.close()
            return None
        # Even: trickles a message announced as 1000 bytes; odd: silent.
        return [s, index % 2 == 0, 0]

    def _run(self):
        try:
            for i in range(ATTACK_CONNECTIONS):
                if self.stop_event.is_set():
                    return
                c = self._connect(i)
                if c:
                    self.sockets.append(c)
            self.opened.set()
            payload = struct.pack("!H", 1000) + b"x" * 1000
            while not self.stop_event.wait(TRICKLE_S):
                for i, c in enumerate(self.sockets):
                    if c is None:
                        c = self.sockets[i] = self._connect(i)
                        if c is None:
                            continue
                    s, trickles, sent = c
                    try:
                        if trickles:
                            s.send(payload[sent % len(payload):sent % len(payload) + 1])
                            c[2] += 1
                        elif s.recv(1, socket.MSG_PEEK) == b"":
                            raise OSError("closed")
                    except BlockingIOError:
                        pass
                    except OSError:
                        s.close()
                        self.sockets[i] = None
        finally:
            self.opened.set()

    def start(self):
        self.thread.start()
        return self.opened.wait(120)

    def stop(self):
        self.stop_event.set()
        self.thread.join(30)
        for c in self.sockets:
            if c:
                c[0].close()


def tcp_query(port, name, ident):
    """One query on a new TCP connection from VICTIM: the reply, or an error string."""
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        s.bind((VICTIM, 0))
        s.settimeout(VICTIM_TIMEOUT_S)
        s.connect((VICTIM, port))
        return dns_wire.parse_message(
            dns_wire.tcp_exchange(s, dns_wire.build_query(name, ident=ident)))
    except OSError as e:
        return "%s: %s" % (type(e).__name__, e)
    finally:
        s.close()


def victim_outcome(port, name):
    """The victim's queries during the attack: (answered, problems)."""
    answered, problems = 0, []
    for i in range(VICTIM_QUERIES):
        reply = tcp_query(port, name, 0x4000 + i)
        if isinstance(reply, str):
            problems.append("query %d: %s" % (i, reply))
        elif reply["rcode"] != 0 or not reply["answers"]:
            problems.append("query %d: rcode %d, %d answers" % (i, reply["rcode"],
                                                                len(reply["answers"])))
        else:
            answered += 1
        time.sleep(0.1)  # spread over the attack (pacing the client, not a wait for a result)
    return answered, problems


def attack(server_name, port, name):
    p = []
    first = tcp_query(port, name, 1)  # warms the cache; the server answers TCP at all
    if isinstance(first, str) or first["rcode"] != 0:
        return ["%s: no TCP answer before the attack: %s" % (server_name, first)]
    attacker = Slowloris(port)
    try:
        if not attacker.start():
            return ["%s: the attacker could not open its connections" % server_name]
        held = sum(1 for c in attacker.sockets if c)
        answered, problems = victim_outcome(port, name)
    finally:
        attacker.stop()
    print("  %s: attacker opened %d connections (%d attempts, %d refused at connect), %d of "
          "them not yet seen closed when the victim started; victim answered %d of %d" % (
              server_name, ATTACK_CONNECTIONS, attacker.attempts, attacker.refused, held,
              answered, VICTIM_QUERIES))
    if problems:
        p.append("%s: %d of %d victim TCP queries failed during the attack: %s" % (
            server_name, len(problems), VICTIM_QUERIES, problems[:5]))
    return p


class Holders:
    """HOLD_PER_SOURCE connections from each of HOLDERS, each with one query in flight for
    a name the fake upstream never answers ("silent-..."), the next sent on a connection as
    soon as its query is answered; in a thread, for at most HOLD_S."""

    def __init__(self, port):
        self.port = port
        self.sockets = []  # [socket, buffered bytes]
        self.sent = 0
        self.answered = 0
        self.closed = 0
        self.stop_event = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _send(self, c):
        self.sent += 1
        query = dns_wire.build_query("silent-%d.hold.fake.test" % self.sent,
                                     ident=self.sent & 0xffff)
        c[0].sendall(struct.pack("!H", len(query)) + query)

    def open(self):
        """Opens every connection and sends each its first query; False if one failed."""
        for source in HOLDERS:
            for _ in range(HOLD_PER_SOURCE):
                s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
                try:
                    s.bind((source, 0))
                    s.settimeout(2)
                    s.connect((VICTIM, self.port))
                    c = [s, b""]
                    self._send(c)
                except OSError:
                    s.close()
                    return False
                s.setblocking(False)
                self.sockets.append(c)
        self.thread.start()
        return True

    def _run(self):
        deadline = time.monotonic() + HOLD_S
        while not self.stop_event.wait(0.05) and time.monotonic() < deadline:
            for c in self.sockets:
                if c[0] is None:
                    continue
                try:
                    chunk = c[0].recv(65536)
                    if not chunk:
                        raise OSError("closed")
                    c[1] += chunk
                    while len(c[1]) >= 2 and len(c[1]) >= 2 + struct.unpack("!H", c[1][:2])[0]:
                        c[1] = c[1][2 + struct.unpack("!H", c[1][:2])[0]:]
                        self.answered += 1
                        self._send(c)
                except BlockingIOError:
                    pass
                except OSError:
                    c[0].close()
                    c[0] = None
                    self.closed += 1

    def open_count(self):
        return sum(1 for c in self.sockets if c[0] is not None)

    def stop(self):
        self.stop_event.set()
        if self.thread.is_alive():
            self.thread.join(30)
        for c in self.sockets:
            if c[0] is not None:
                c[0].close()


def hold_and_dig(server_name, server, upstream, name):
    """The held-queries attack on `server` (its upstream `upstream`): the problems."""
    warm = server_dig(server, name)
    if warm.status != "NOERROR" or not warm.answer:
        return ["%s: no TCP answer before the attack: %r" % (server_name, warm)]
    holders = Holders(server.port)
    try:
        if not holders.open():
            return ["%s: the holders could not open their %d connections" % (server_name,
                                                                             HOLD_CAP)]
        def at_upstream():
            return sum(1 for q in upstream.received() if q["name"].lower().startswith("silent-"))
        if not harness.wait_until(lambda: at_upstream() >= HOLD_CAP, 20):
            return ["%s: only %d of %d held queries reached the upstream" % (
                server_name, at_upstream(), HOLD_CAP)]
        before = server.metrics()
        answer = server_dig(server, name, "-b", VICTIM)
        after = server.metrics()
        held = holders.open_count()
    finally:
        holders.stop()

    def grew(limit):
        series = 'kdns_limit_hits_total{limit="%s"}' % limit
        return harness.metric_sum(after, series) - harness.metric_sum(before, series)

    cap_hits, evicted_busy = grew("tcp_connections"), grew("tcp_evicted_in_flight")
    print("  %s: %d held connections, %d queries sent, %d answered (SERVFAIL), %d closed; "
          "dig met the cap %d time(s), %d busy connection(s) evicted; dig: %s" % (
              server_name, HOLD_CAP, holders.sent, holders.answered, holders.closed,
              cap_hits, evicted_busy, answer.status))
    p = []
    if cap_hits < 1:
        p.append("%s: dig's connection did not meet the cap (the attack did not land)" %
                 server_name)
    elif evicted_busy < 1:
        p.append("%s: no connection with a query in flight was evicted for dig" % server_name)
    if answer.status != "NOERROR" or not answer.answer:
        p.append("%s: dig +tcp from %s got no answer while the cap was held: %s %r" % (
            server_name, VICTIM, answer.returncode, answer))
    if held < HOLD_CAP - 2:
        p.append("%s: %d of the %d held connections were closed; only dig's room should be "
                 "made" % (server_name, HOLD_CAP - held, HOLD_CAP))
    return p


def exchange(s, name, ident):
    """Sends one query on the connected socket `s` and reads one reply (parsed)."""
    return dns_wire.parse_message(dns_wire.tcp_exchange(s, dns_wire.build_query(name, ident=ident)))


def overdue_query(server_name, server, name):
    """The query-timeout case on `server` (--tcp-query-timeout=1s): the problems."""
    series = 'kdns_limit_hits_total{limit="tcp_query_timeout"}'
    before = server.metric(series)
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        s.bind((HOLDERS[0], 0))
        s.settimeout(4)  # below the forwarder's 5 s: only the query timeout can answer
        s.connect((VICTIM, server.port))
        overdue = exchange(s, "silent-overdue.fake.test", 0x77)
        hits = server.metric(series) - before
        following = exchange(s, name, 0x78)
    except OSError as e:
        return ["%s: %s: %s" % (server_name, type(e).__name__, e)]
    finally:
        s.close()
    print("  %s: overdue query answered rcode %d (tcp_query_timeout +%d); the next one on the "
          "same connection rcode %d with %d answer(s)" % (
              server_name, overdue["rcode"], hits, following["rcode"],
              len(following["answers"])))
    p = []
    if hits < 1:
        p.append("%s: the query timeout did not fire" % server_name)
    if overdue["rcode"] != 2 or overdue["id"] != 0x77:
        p.append("%s: the overdue query got rcode %d, ID %#x (want SERVFAIL)" % (
            server_name, overdue["rcode"], overdue["id"]))
    if following["rcode"] != 0 or not following["answers"]:
        p.append("%s: the connection did not serve its next query: %r" % (server_name,
                                                                       following))
    return p


def server_dig(server, name, *options):
    return harness.dig(server.port, name, "A", None, "+tcp", *options, timeout=3)


def test_frontend_cache_answers_a_new_tcp_client_during_a_slowloris(env):
    upstream = FakeUpstream()
    env["owned"].append(upstream)
    cache = FrontendCache(env["workdir"], "frontend-cache", "--server=" + upstream.address,
                          "--cache-size=1000")
    env["owned"].append(cache)
    return attack("frontend-cache", cache.port, "cached.fake.test")


def test_kubedns_answers_a_new_tcp_client_during_a_slowloris(env):
    dns = Kubedns(env["workdir"], "kubedns", "--objects-file=" +
                  os.path.join(ROOT, "kubedns", "demo-cluster.json"))
    env["owned"].append(dns)
    return attack("kubedns", dns.port, "kubernetes.default.svc.cluster.local")


def test_frontend_cache_answers_dig_while_four_sources_hold_the_tcp_cap(env):
    upstream = FakeUpstream()
    env["owned"].append(upstream)
    cache = FrontendCache(env["workdir"], "frontend-cache-held", "--server=" + upstream.address,
                          "--cache-size=1000", "--dns-forward-max=1000",
                          "--tcp-max-connections=%d" % HOLD_CAP)
    env["owned"].append(cache)
    return hold_and_dig("frontend-cache", cache, upstream, "cached.fake.test")


def test_kubedns_answers_dig_while_four_sources_hold_the_tcp_cap(env):
    upstream = FakeUpstream()
    env["owned"].append(upstream)
    dns = Kubedns(env["workdir"], "kubedns-held", "--objects-file=" +
                  os.path.join(ROOT, "kubedns", "demo-cluster.json"),
                  "--nameservers=127.0.0.1:%d" % upstream.port,
                  "--tcp-max-connections=%d" % HOLD_CAP)
    env["owned"].append(dns)
    return hold_and_dig("kubedns", dns, upstream, "kubernetes.default.svc.cluster.local")


def test_frontend_cache_answers_an_overdue_tcp_query_servfail_and_serves_on(env):
    upstream = FakeUpstream()
    env["owned"].append(upstream)
    cache = FrontendCache(env["workdir"], "frontend-cache-overdue",
                          "--server=" + upstream.address, "--tcp-query-timeout=1s")
    env["owned"].append(cache)
    return overdue_query("frontend-cache", cache, "cached.fake.test")


def test_kubedns_answers_an_overdue_tcp_query_servfail_and_serves_on(env):
    upstream = FakeUpstream()
    env["owned"].append(upstream)
    dns = Kubedns(env["workdir"], "kubedns-overdue", "--objects-file=" +
                  os.path.join(ROOT, "kubedns", "demo-cluster.json"),
                  "--nameservers=127.0.0.1:%d" % upstream.port, "--tcp-query-timeout=1s")
    env["owned"].append(dns)
    return overdue_query("kubedns", dns, "kubernetes.default.svc.cluster.local")


TESTS = [test_frontend_cache_answers_a_new_tcp_client_during_a_slowloris,
         test_kubedns_answers_a_new_tcp_client_during_a_slowloris,
         test_frontend_cache_answers_dig_while_four_sources_hold_the_tcp_cap,
         test_kubedns_answers_dig_while_four_sources_hold_the_tcp_cap,
         test_frontend_cache_answers_an_overdue_tcp_query_servfail_and_serves_on,
         test_kubedns_answers_an_overdue_tcp_query_servfail_and_serves_on]


def fd_limit_too_low():
    """Why the suite cannot run here: too few file descriptors for the attack (or None)."""
    limit = raise_fd_limit(ATTACK_CONNECTIONS + 1024)
    if limit < ATTACK_CONNECTIONS + 256:
        return "RLIMIT_NOFILE %d is too low for %d connections" % (limit, ATTACK_CONNECTIONS)
    return None


def main():
    return harness.main("kdns-abuse-tcp-", TESTS, needs=fd_limit_too_low, skip_unmet=True,
                        reset_each=True)


if __name__ == "__main__":
    sys.exit(main())
