"""The victim of the attack tests: a light client on 127.0.0.1 that asks one name at a time
at a steady rate, each with a 1 s deadline, and counts the answers it accepts."""
import random
import socket
import threading
import time

import dns_wire

VICTIM = "127.0.0.1"


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
        deadline = time.monotonic() + 1.0
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
            self._failed("%s: no answer within 1 s" % name)
            return False

    def _failed(self, what):
        if len(self.failures) < 5:
            self.failures.append(what)

    def stop(self):
        self.stopping = True
        self.thread.join(5)
