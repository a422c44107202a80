"""What the nanny suites (nanny_*_test.py) share: the real servers they run against, kubedns
on an objects file, the nanny supervising frontend-cache (or another child) on a free port,
a 1 ms prober, and the measured figures they print at the end.

main(tests) starts, unprivileged on free loopback ports (servers.py): NSD with
example.test, unbound with other.test, two Debian dnsmasq instances answering swap.test
with different addresses, and kubedns serving an objects file; runs the tests, each
test(env), prints the figures, and stops everything. The ConfigMap directory is written
the way the kubelet writes it (harness.ConfigMapDir). KDNS_KEEP_TMP=1 keeps the temporary
directory (every process's log).
"""
import json
import os
import socket
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import dns_wire  # noqa: E402
import harness  # noqa: E402
import servers  # noqa: E402

BIN = harness.BIN
NANNY = os.path.join(BIN, "nanny")
FRONTEND = os.path.join(BIN, "frontend-cache")
KUBEDNS = os.path.join(BIN, "kubedns")
SWAP_A = "203.0.113.1"  # what stub-a answers for swap.test
SWAP_B = "203.0.113.2"
FIGURES = []  # (what, value) printed at the end


# -- what the servers tell --------------------------------------------------------------

def servers_bind(port):
    """The upstreams frontend-cache lists (CHAOS servers.bind), as 'addr#port'."""
    _, records = dns_wire.ask_udp(port, "servers.bind", "TXT", dns_wire.CLASS_CH)
    return sorted(r.split()[0] for r in records)


def children_of(pid):
    try:
        with open("/proc/%d/task/%d/children" % (pid, pid)) as f:
            return [int(p) for p in f.read().split()]
    except OSError:
        return []


def cmdline(pid):
    try:
        with open("/proc/%d/cmdline" % pid, "rb") as f:
            return [a.decode() for a in f.read().split(b"\0") if a]
    except OSError:
        return []


def alive(pid):
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().split(") ")[1][0] != "Z"
    except OSError:
        return False


# -- kubedns, the nanny ----------------------------------------------

def objects(stub_ip):
    return {"apiVersion": "v1", "kind": "List", "items": [
        {"apiVersion": "v1", "kind": "Service",
         "metadata": {"name": "kubernetes", "namespace": "default"},
         "spec": {"clusterIP": "10.96.0.1", "clusterIPs": ["10.96.0.1"],
                  "ports": [{"name": "https", "port": 443, "protocol": "TCP"}]}},
        {"apiVersion": "v1", "kind": "Service",
         "metadata": {"name": "stubdns", "namespace": "kube-system"},
         "spec": {"clusterIP": stub_ip, "clusterIPs": [stub_ip],
                  "ports": [{"name": "dns", "port": 53, "protocol": "UDP"}]}},
    ]}


class Kubedns(servers.Kubedns):
    """kubedns serving objects(stub_ip) from a file that write_objects() replaces."""

    def __init__(self, workdir, stub_ip="10.0.0.53"):
        self.objects_path = os.path.join(workdir, "objects.json")
        self.write_objects(stub_ip)
        super().__init__(workdir, "kubedns", "--objects-file=" + self.objects_path, threads=1)

    def write_objects(self, stub_ip):
        tmp = self.objects_path + ".tmp"
        with open(tmp, "w") as f:
            json.dump(objects(stub_ip), f)
        os.rename(tmp, self.objects_path)


class Nanny:
    """The nanny with frontend-cache (or another child) on 127.0.0.1 and a free port; with
    `debug`, frontend-cache's debug data (--debug-address) on a free port of its own."""

    def __init__(self, workdir, name, config_dir, flags=(), child_args=None, kubedns=None,
                 port=None, metrics=True, wait=True, lameduck="0s", threads=2, debug=False):
        self.port = port or harness.free_port()
        self.metrics_port = harness.free_port() if metrics else None
        self.debug_port = harness.free_port() if debug else None
        self.run_dir = os.path.join(workdir, name + "-run")
        os.makedirs(self.run_dir, exist_ok=True)
        argv = [NANNY, "-configDir=" + config_dir, "--runDir=" + self.run_dir]
        if kubedns is not None:
            argv.append("-kubednsServer=127.0.0.1:%d" % kubedns.port)
        argv += list(flags) + ["--"]
        if child_args is None:
            child_args = ["-k", "--port=%d" % self.port, "--listen-address=127.0.0.1",
                          "--threads=%d" % threads, "--lameduck=" + lameduck,
                          "--log-facility=-", "--cache-size=10000"]
            if kubedns is not None:
                child_args += ["--server=/cluster.local/127.0.0.1#%d" % kubedns.port]
            if metrics:
                child_args += ["--prometheus-port=%d" % self.metrics_port,
                               "--prometheus-addr=127.0.0.1"]
            if debug:
                child_args += ["--debug-address=127.0.0.1:%d" % self.debug_port]
        self.argv = argv + child_args
        self.log_path = os.path.join(workdir, name + ".log")
        self.process = harness.Process(self.argv, self.log_path)
        if wait and not harness.wait_until(lambda: not self.process.alive() or dns_wire.ask_udp(
                self.port, "version.bind", "TXT", dns_wire.CLASS_CH, timeout=0.2)[0] == "NOERROR",
                20):
            raise RuntimeError("%s: no answer: %s" % (name, self.process.log()[-2000:]))
        if wait and not self.process.alive():
            raise RuntimeError("%s exited: %s" % (name, self.process.log()[-2000:]))
        # The child answers DNS before its metrics port listens (on a slow machine, e.g.
        # under TSan, visibly): tests that scrape at once need both.
        if wait and metrics:
            servers.wait_metrics(self.process, self.metrics_port, name)

    @property
    def pid(self):
        return self.process.pid

    def child(self):
        kids = children_of(self.pid)
        return kids[0] if kids else None

    def log(self):
        return self.process.log()

    def metrics(self):
        return harness.scrape_metrics(self.metrics_port)

    def stop(self):
        return self.process.stop()


def apply_latency(port, name, want, swapped, timeout=3.0):
    """Seconds from the swap until `name` answers `want` (None: not within timeout)."""
    return harness.time_until(lambda: want in dns_wire.ask_udp(port, name, timeout=0.05)[1],
                              timeout, 0.005, start=swapped)


class Prober(threading.Thread):
    """One query per millisecond on its own socket; records send and answer times."""

    def __init__(self, port, name, qtype=1, qclass=1):
        super().__init__(daemon=True)
        self.port, self.name, self.qtype, self.qclass = port, name, qtype, qclass
        self.sent = {}      # id -> send time
        self.answered = {}  # id -> (answer time, rcode)
        self.stop_flag = False
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        # The answers held back during a restart arrive in one burst: room for all of them.
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 8 << 20)
        self.sock.setblocking(False)

    def run(self):
        qid = 0
        next_send = time.monotonic()
        drain_until = None
        while drain_until is None or time.monotonic() < drain_until:
            now = time.monotonic()
            if self.stop_flag and drain_until is None:
                drain_until = now + 0.5  # stop sending; answers still on their way count
            if drain_until is None and now >= next_send:
                qid = (qid + 1) % 65536
                packet = dns_wire.build_query(self.name, self.qtype, self.qclass, ident=qid,
                                              edns=False)
                self.sent[qid] = now
                try:
                    self.sock.sendto(packet, ("127.0.0.1", self.port))
                except OSError:
                    pass
                next_send += 0.001
            while True:
                try:
                    data = self.sock.recv(4096)
                except OSError:
                    break
                reply = dns_wire.parse_message(data)
                rid, rcode = reply["id"], reply["rcode"]
                if rid in self.sent and rid not in self.answered:
                    self.answered[rid] = (time.monotonic(), rcode)
            time.sleep(0.0002)

    def unanswered_at(self, t):
        """Send times of the unanswered queries, in ms relative to t."""
        return sorted(round((s - t) * 1000, 1) for i, s in self.sent.items()
                      if i not in self.answered)

    def resume_after(self, t_kill):
        """ms from t_kill to the first answer to a query sent after it; the longest wait."""
        after = [(self.answered[i][0], s) for i, s in self.sent.items()
                 if s > t_kill and i in self.answered]
        first = min(a for a, _ in after) if after else None
        waits = [self.answered[i][0] - s for i, s in self.sent.items() if i in self.answered]
        return ((first - t_kill) * 1000 if first else None, max(waits) * 1000 if waits else None,
                len(self.sent) - len(self.answered))


def start(tmp, owned):
    """The servers the nanny suites share: NSD, Unbound, two dnsmasq stubs, kubedns."""
    env = {"tmp": tmp}
    env["nsd"] = servers.Nsd(tmp)
    owned.append(env["nsd"])
    env["unbound"] = servers.Unbound(tmp)
    owned.append(env["unbound"])
    env["stub_a"] = servers.Dnsmasq(tmp, "stub-a", "--address=/swap.test/" + SWAP_A,
                                    "--local-ttl=300")
    owned.append(env["stub_a"])
    env["stub_b"] = servers.Dnsmasq(tmp, "stub-b", "--address=/swap.test/" + SWAP_B,
                                    "--local-ttl=300")
    owned.append(env["stub_b"])
    os.makedirs(os.path.join(tmp, "kd"), exist_ok=True)
    env["kd"] = Kubedns(os.path.join(tmp, "kd"))
    owned.append(env["kd"])
    return env


def main(tests):
    """Starts the servers the nanny suites share, runs the tests, stops everything; the
    exit code."""
    return harness.main(
        "kdns-nanny-e2e-", tests,
        tools=(NANNY, FRONTEND, KUBEDNS, servers.NSD, servers.UNBOUND, servers.DNSMASQ,
               "/usr/bin/dnsperf"),
        setup=start, report=lambda env, failed: harness.print_figures("figures:", FIGURES))
