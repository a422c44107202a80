#!/usr/bin/python3
"""abuse: HTTP probe lockout. Pods hold hundreds of HTTP connections to the ports the
kubelet probes (kubedns's /readiness port, its metrics port and the sidecar's 10054); the
kubelet's probes must still be answered.

Starts the real kubedns (the demo objects file) and a sidecar probing it, on free
127.0.0.1 ports. An attacker on 127.0.0.2 keeps ATTACK_CONNECTIONS connections open to each
of the three ports: reopened as soon as the server closes one, either idle (a keep-alive
client that sends nothing) or slow (a request head trickled a byte at a time, never
finished); then the same slow connections from MANY_SOURCES addresses (127.0.0.2 and up:
many pods, each holding up to its per-source cap, together over the server's cap).
Meanwhile the victim on 127.0.0.1, as the kubelet would, asks /readiness, /metrics and
/healthcheck/kubedns on fresh connections with the kubelet's 5 s timeout.
Asserted: every victim request gets 200 while the attack runs (for longer than the
servers' request timeout, so that slow connections are timed out and reopened), and
kubedns's RSS stays under RSS_BOUND_MIB. The counts are printed as the figures of the
note (KDNS_BIN=/work/before-build/bin gives the before figure: the requests get no status).

Closes with `N passed, M failed`. KDNS_ONLY=substring runs the matching tests only;
KDNS_KEEP_TMP=1 keeps the temporary directory (logs) after a failure.
"""
import errno
import os
import socket
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
import servers  # noqa: E402

ATTACKER = "127.0.0.2"
MANY_SOURCES = 20  # x 8 per source: over the servers' cap of 128
ATTACK_CONNECTIONS = 200  # per port: well over the servers' caps (8 per source, 128)
ATTACK_SECONDS = 7  # longer than the 5 s request timeout: slow connections are reopened
VICTIM_TIMEOUT_S = 5  # the manifests' timeoutSeconds
RSS_BOUND_MIB = 100  # kubedns with the demo objects is about 10 MiB; the caps bound the rest
SLOW_HEAD = b"GET /readiness HTTP/1.1\r\nHost: x\r\n"


class Attacker:
    """Keeps `count` connections from 127.0.0.2 open to each port, on a thread of its own:
    a closed one is reopened at the next round; `slow` ones trickle one header byte per
    round and never end their request."""

    def __init__(self, ports, count, slow, sources=(ATTACKER,)):
        self.ports, self.count, self.slow, self.sources = ports, count, slow, sources
        self.opened = 0  # connections the kernel completed (accepted, or queued to be)
        self.reopened = 0  # of those, to replace one the server closed
        self._stop = threading.Event()
        self._slots = [[None, 0] for _ in ports for _ in range(count)]  # [socket, bytes sent]
        self._thread = threading.Thread(target=self._run, daemon=True)

    def start(self):
        self._thread.start()

    def stop(self):
        self._stop.set()
        self._thread.join(10)
        for slot in self._slots:
            if slot[0] is not None:
                slot[0].close()

    def _open(self, port):
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.bind((self.sources[self.opened % len(self.sources)], 0))
        s.settimeout(1)
        try:
            s.connect(("127.0.0.1", port))
        except OSError:
            s.close()
            return None
        s.setblocking(False)
        self.opened += 1
        return s

    @staticmethod
    def _closed(s):
        try:
            return s.recv(4096, socket.MSG_DONTWAIT) == b""
        except BlockingIOError:
            return False
        except OSError:
            return True

    def _run(self):
        while not self._stop.is_set():
            for i, slot in enumerate(self._slots):
                port = self.ports[i // self.count]
                if slot[0] is not None and self._closed(slot[0]):
                    slot[0].close()
                    slot[0] = None
                    self.reopened += 1
                if slot[0] is None:
                    slot[0], slot[1] = self._open(port), 0
                    if slot[0] is None:
                        continue
                if self.slow:
                    try:
                        slot[0].send(SLOW_HEAD[slot[1] % len(SLOW_HEAD):][:1])
                        slot[1] += 1
                    except OSError as e:
                        if e.errno not in (errno.EAGAIN, errno.EWOULDBLOCK):
                            slot[0].close()
                            slot[0] = None
            self._stop.wait(0.2)


class Env:
    def __init__(self, workdir):
        self.workdir = workdir
        self.owned = []
        self.kubedns = servers.Kubedns(
            workdir, "kubedns",
            "--objects-file=" + os.path.join(harness.ROOT, "kubedns", "demo-cluster.json"))
        self.owned.append(self.kubedns)
        self.sidecar_port = harness.free_port()
        argv = [os.path.join(harness.BIN, "sidecar"), "--prometheus-addr=127.0.0.1",
                "--prometheus-port=%d" % self.sidecar_port, "--v=0",
                "--probe=kubedns,127.0.0.1:%d,kubernetes.default.svc.cluster.local,1,SRV"
                % self.kubedns.port,
                "--dnsmasq-addr=127.0.0.1", "--dnsmasq-port=%d" % self.kubedns.port]
        self.sidecar = harness.Process(argv, os.path.join(workdir, "sidecar.log"))
        self.owned.append(self.sidecar)
        if not harness.wait_until(lambda: harness.http_status(
                self.sidecar_port, "/healthcheck/kubedns", 1) == 200, 30):
            raise RuntimeError("the sidecar's health check did not turn 200: " +
                               self.sidecar.log()[-1500:])
        # What the kubelet asks: (port, path).
        self.probes = [(self.kubedns.healthz, "/readiness"),
                       (self.kubedns.metrics_port, "/metrics"),
                       (self.sidecar_port, "/healthcheck/kubedns")]

    def stop(self):
        harness.stop_all(self.owned)


def attack(env, slow, sources=(ATTACKER,)):
    """Runs the attack for ATTACK_SECONDS while the victim probes; returns the problems."""
    problems = []
    attacker = Attacker([port for port, _ in env.probes], ATTACK_CONNECTIONS, slow, sources)
    attacker.start()
    answered = asked = 0
    failures = []
    peak_rss = 0.0
    try:
        # The attack is in place once every slot was opened at least once.
        harness.wait_until(lambda: attacker.opened >= len(env.probes) * ATTACK_CONNECTIONS, 20)
        deadline = time.monotonic() + ATTACK_SECONDS
        while time.monotonic() < deadline:
            for port, path in env.probes:
                asked += 1
                status, _, body = harness.http_get(port, path, timeout=VICTIM_TIMEOUT_S)
                if status == 200:
                    answered += 1
                else:
                    failures.append("%s on %d: %s %s" % (path, port, status, body[:80]))
            peak_rss = max(peak_rss, harness.rss_kib(env.kubedns.process.pid) / 1024.0)
            time.sleep(0.2)
    finally:
        attacker.stop()
    kind = "slow" if slow else "idle"
    origin = sources[0] if len(sources) == 1 else "%d addresses" % len(sources)
    print("  measured: %d of %d probes answered 200 while %s connections from %s held "
          "(%d opened, %d reopened after the server closed them); kubedns peak RSS %.1f MiB"
          % (answered, asked, kind, origin, attacker.opened, attacker.reopened, peak_rss))
    sys.stdout.flush()
    if answered != asked:
        problems.append("%d of %d probes failed, e.g. %s" % (asked - answered, asked,
                                                             failures[:3]))
    if peak_rss > RSS_BOUND_MIB and not harness.SANITIZED:
        problems.append("kubedns RSS %.1f MiB over %d MiB" % (peak_rss, RSS_BOUND_MIB))
    # And after the attack, as before it.
    for port, path in env.probes:
        status = harness.http_status(port, path, VICTIM_TIMEOUT_S)
        if status != 200:
            problems.append("%s on %d after the attack: %s" % (path, port, status))
    return problems


def test_probes_answered_while_idle_keepalive_connections_are_held(env):
    return attack(env, slow=False)


def test_probes_answered_while_slowloris_connections_are_held(env):
    return attack(env, slow=True)


def test_probes_answered_while_many_sources_hold_slowloris_connections(env):
    return attack(env, slow=True,
                  sources=["127.0.0.%d" % (2 + i) for i in range(MANY_SOURCES)])


def attacker_address_missing():
    """Why the suite cannot run here: the attacker's address cannot be bound (or None)."""
    try:
        with socket.socket() as s:
            s.bind((ATTACKER, 0))
        return None
    except OSError:
        return "cannot bind %s" % ATTACKER


def start(workdir, owned):
    env = Env(workdir)
    owned.append(env)
    return env


def main():
    return harness.main(
        "kdns-abuse-http.",
        [test_probes_answered_while_idle_keepalive_connections_are_held,
         test_probes_answered_while_slowloris_connections_are_held,
         test_probes_answered_while_many_sources_hold_slowloris_connections],
        tools=[os.path.join(harness.BIN, tool) for tool in ("kubedns", "sidecar")],
        needs=attacker_address_missing, skip_unmet=True, setup=start)


if __name__ == "__main__":
    sys.exit(main())
