"""The victim of the attack tests: a light client on 127.0.0.1 that asks one name at a time
at a steady rate, each with a deadline of ANSWER_DEADLINE_S, and counts the answers it
accepts."""
import random
import socket
import threading
import time

import dns_wire

VICTIM = "127.0.0.1"
# How long the victim waits for each answer: the C library resolver's default (resolv.conf
# `timeout:5`), what a pod's client gives a query. What the attack tests judge is whether
# the server answers the victim or drops it; a shorter deadline would also judge how fast
# a loaded 2-core machine schedules the test's own threads (one run here: 99.75% answered
# within 1 s under the flood).
ANSWER_DEADLINE_S = 5.0


class LightClient:
    """Asks `name_at(i)` for i = 0, 1, ... at about `qps` from VICTIM to `port` until
    stopped; an answer counts when `accept(message)` takes it. Keeps the first five
    failures for the report."""

    def __init__(self, port, qps, name_at, accept):
        self.port, self.qps, self.name_at, self.accept = port, qps, name_at, accept
        self.asked = self.answered = 0
        self.failures = []
        self.stopping = False
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self):
        sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        sock.bind((VICTIM, 0))
        next_at = time.monotonic()
        while not self.stopping:
            name = self.name_at(self.asked)
            ident = random.randrange(65536)
            sock.sendto(dns_wire.build_query(name, ident=ident, edns=False), (VICTIM, self.port))
            self.asked += 1
            ok = self._answered(sock, name, ident)
            self.answered += ok
            next_at += 1.0 / self.qps
            time.sleep(max(0.0, next_at - time.monotonic()))
        sock.close()

    def _answered(self, sock, name, ident):
        deadline = time.monotonic() + ANSWER_DEADLINE_S
        try:
            while True:
                sock.settimeout(max(0.001, deadline - time.monotonic()))
                msg = dns_wire.parse_message(sock.recv(4096))
                if msg["id"] != ident:
                    continue
                ok = bool(self.accept(msg))
                if not ok:
                    self._failed("%s: rcode %d" % (name, msg["rcode"]))
                return ok
        except OSError:
            self._failed("%s: no answer within %.0f s" % (name, ANSWER_DEADLINE_S))
            return False

    def _failed(self, what):
        if len(self.failures) < 5:
            self.failures.append(what)

    def stop(self):
        self.stopping = True
        self.thread.join(5)
