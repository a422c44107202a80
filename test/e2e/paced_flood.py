"""The attacker of the forwarding tests: random names under one domain, sent at a steady rate
from another loopback address, replies ignored."""
import random
import socket
import threading
import time

import dns_wire


class Flood:
    """Random names under `domain` sent to 127.0.0.1:port from `attacker` at `qps` on a
    thread, replies ignored, until stop() or `max_s` (a flood stops by itself)."""

    def __init__(self, port, domain, qps, attacker="127.0.0.2", max_s=60):
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.sock.bind((attacker, 0))
        self.port, self.domain, self.qps, self.max_s = port, domain, qps, max_s
        self.sent = 0
        self.stopping = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self):
        started = time.monotonic()
        while not self.stopping.is_set() and time.monotonic() - started < self.max_s:
            delay = started + self.sent / self.qps - time.monotonic()
            if delay > 0:
                self.stopping.wait(delay)
                continue
            name = "%08x.%s" % (random.getrandbits(32), self.domain)
            try:
                self.sock.sendto(dns_wire.build_query(name, ident=self.sent & 0xFFFF),
                                 ("127.0.0.1", self.port))
            except OSError:
                pass
            self.sent += 1

    def stop(self):
        self.stopping.set()
        self.thread.join(5)
        self.sock.close()
