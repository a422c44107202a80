"""A steady DNS load from a client on the node, every query counted: the lifecycle tests'
measure of what a node cache's update, kill or restart costs the pods.

SteadyLoad sends one name's A query at a fixed rate to each target (a name and an address:
the ClusterIP, the link-local address), from a pool of UDP sockets bound to the client's
own address (as a pod's: not the node-local address itself, which the kernel would pick as
the source of a query to a local address, and which goes away), each connected to its
target (a new source port per query in turn, as pods' resolvers use, so SO_REUSEPORT
spreads them over the node caches; a refusal, ICMP port unreachable, is reported). Each
query waits `timeout_s` for its answer; one without is lost. Bounded: it stops by itself
after `max_s`. One thread for all targets.

Per target: sent, answered (NOERROR), servfail, other rcodes, refused (ECONNREFUSED seen on
its socket), lost (no answer within the timeout), the slowest answer (late answers: queries
that waited) and the longest gap: the longest stretch of send times with no query answered
NOERROR, less the send interval (0 when none went unanswered).

Python reaches 2,200 q/s here (2 cores shared with other work): `achieved_qps()` says what
a run reached, and the suites check it.
"""
import errno
import selectors
import socket
import struct
import threading
import time

import dns_wire

SOCKETS_PER_TARGET = 32


class Target:
    def __init__(self, load, label, address, qps):
        self.load, self.label, self.address, self.qps = load, label, address, qps
        self.sent = self.answered = self.servfail = self.other = self.refused = self.lost = 0
        self.slowest_s = 0.0
        self.longest_gap_s = 0.0
        self.last_ok_sent = None
        self.pending = {}  # (socket index, id) -> send time
        self.send_times = []  # every query's
        self.ok_send_times = []  # send times of NOERROR answers, in order of sending
        self.lost_send_times = []
        self.sockets = []

    def figures(self):
        return {"sent": self.sent, "answered": self.answered, "servfail": self.servfail,
                "other": self.other, "refused": self.refused, "lost": self.lost,
                "slowest_ms": round(self.slowest_s * 1000, 1),
                "longest_gap_ms": round(self.longest_gap(), 1)}

    def longest_gap(self, since=None, until=None):
        """ms: the longest stretch of send times without a query answered NOERROR, less one
        send interval, within [since, until] (default: while it sent)."""
        since = self.load.started_at if since is None else since
        until = self.load.ended_at if until is None else until
        times = [since] + sorted(t for t in self.ok_send_times if since <= t <= until) + [until]
        gaps = [b - a for a, b in zip(times, times[1:])]
        return max(0.0, (max(gaps) if gaps else 0.0) - 1.0 / self.qps) * 1000

    def first_ok_after(self, t):
        """ms from t to the send time of the first query sent after t answered NOERROR."""
        later = [s for s in self.ok_send_times if s >= t]
        return (min(later) - t) * 1000 if later else None

    def lost_between(self, since, until):
        return sum(1 for t in self.lost_send_times if since <= t <= until)

    def sent_between(self, since, until):
        return sum(1 for t in self.send_times if since <= t <= until)


class SteadyLoad(threading.Thread):
    def __init__(self, name, targets, source, timeout_s=2.0, max_s=60.0, port=53):
        """`targets`: (label, IPv4 address, queries per second) each, to `port` (53), from
        the address `source`."""
        super().__init__(daemon=True)
        self.query = dns_wire.build_query(name, "A", ident=0, edns=False)
        self.targets = [Target(self, label, address, qps) for label, address, qps in targets]
        self.timeout_s, self.max_s = timeout_s, max_s
        self.selector = selectors.DefaultSelector()
        for target in self.targets:
            for index in range(SOCKETS_PER_TARGET):
                sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
                sock.setblocking(False)
                sock.bind((source, 0))
                sock.connect((target.address, port))
                target.sockets.append(sock)
                self.selector.register(sock, selectors.EVENT_READ, (target, index))
        self.stopping = threading.Event()
        self.started_at = self.ended_at = None

    def stop(self):
        """Stops sending, waits for the last answers (the timeout), and returns."""
        self.stopping.set()
        self.join(self.timeout_s + 5)

    def figures(self):
        return {target.label: target.figures() for target in self.targets}

    def target(self, label):
        return next(t for t in self.targets if t.label == label)

    def achieved_qps(self):
        elapsed = (self.ended_at or time.monotonic()) - self.started_at
        return sum(t.sent for t in self.targets) / elapsed if elapsed > 0 else 0.0

    def run(self):
        self.started_at = time.monotonic()
        stop_sending_at = self.started_at + self.max_s
        next_expiry = self.started_at
        while True:
            now = time.monotonic()
            if self.stopping.is_set() or now >= stop_sending_at:
                if self.ended_at is None:
                    self.ended_at = now
                if not any(t.pending for t in self.targets) or now > self.ended_at + self.timeout_s:
                    break
            else:
                for target in self.targets:
                    self._send_due(target, now)
            wait = 0.0005 if self.ended_at is None else 0.01
            for key, _ in self.selector.select(wait):
                self._receive(key.fileobj, *key.data)
            if now >= next_expiry:
                self._expire(now)
                next_expiry = now + 0.05
        self._expire(float("inf"))
        for target in self.targets:
            for sock in target.sockets:
                self.selector.unregister(sock)
                sock.close()
        self.selector.close()

    def _send_due(self, target, now):
        due = int((now - self.started_at) * target.qps) + 1
        while target.sent < due:
            index = target.sent % SOCKETS_PER_TARGET
            ident = (target.sent // SOCKETS_PER_TARGET) & 0xFFFF
            packet = struct.pack("!H", ident) + self.query[2:]
            target.pending[(index, ident)] = now
            target.send_times.append(now)
            target.sent += 1
            try:
                target.sockets[index].send(packet)
            except OSError as e:
                if e.errno == errno.ECONNREFUSED:
                    target.refused += 1  # the last query's refusal, reported on this send

    def _receive(self, sock, target, index):
        while True:
            try:
                data = sock.recv(4096)
            except BlockingIOError:
                return
            except OSError as e:
                if e.errno == errno.ECONNREFUSED:
                    target.refused += 1
                    continue
                return
            if len(data) < 12:
                continue
            ident, flags = struct.unpack("!HH", data[:4])
            sent = target.pending.pop((index, ident), None)
            if sent is None:
                continue  # late, already counted lost
            now = time.monotonic()
            target.slowest_s = max(target.slowest_s, now - sent)
            rcode = flags & 0xF
            if rcode == 0:
                target.answered += 1
                target.ok_send_times.append(sent)
            elif rcode == 2:
                target.servfail += 1
            else:
                target.other += 1

    def _expire(self, now):
        for target in self.targets:
            expired = [key for key, sent in target.pending.items()
                       if now - sent > self.timeout_s]
            for key in expired:
                target.lost_send_times.append(target.pending.pop(key))
                target.lost += 1


class TcpQueries(threading.Thread):
    """DNS over TCP, one query per connection (as a resolver falling back to TCP), one after
    another from `source` to `address`:53 until stop(): answered, failed (refused, reset,
    no answer within `timeout_s`)."""

    def __init__(self, name, address, source, timeout_s=2.0, max_s=60.0):
        super().__init__(daemon=True)
        self.query = dns_wire.build_query(name, "A", ident=7, edns=False)
        self.address, self.source, self.timeout_s, self.max_s = address, source, timeout_s, max_s
        self.answered = self.failed = 0
        self.errors = {}
        self.stopping = threading.Event()

    def stop(self):
        self.stopping.set()
        self.join(self.timeout_s + 5)

    def run(self):
        ends_at = time.monotonic() + self.max_s
        while not self.stopping.is_set() and time.monotonic() < ends_at:
            try:
                with socket.create_connection((self.address, 53), timeout=self.timeout_s,
                                              source_address=(self.source, 0)) as sock:
                    dns_wire.tcp_exchange(sock, self.query)
                self.answered += 1
            except OSError as e:
                self.failed += 1
                kind = type(e).__name__
                self.errors[kind] = self.errors.get(kind, 0) + 1
