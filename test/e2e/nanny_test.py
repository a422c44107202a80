#!/usr/bin/python3
"""The nanny end to end: the real nanny, frontend-cache, kubedns and Debian's dnsmasq.

Real servers run unprivileged on free loopback ports (harness: NSD with example.test,
unbound with other.test, dnsmasq instances answering swap.test with different addresses),
kubedns serves an objects file, and the nanny ($KDNS_BIN, default build/bin) supervises
frontend-cache on a free port it binds itself (the child's --port/--listen-address after
"--"). The ConfigMap directory is written the way the kubelet writes it (a timestamped
directory, `..data` renamed over, key symlinks, the old directory removed). Shown here:

  - changes applied within one second of the `..data` swap (measured and printed), an
    invalid update ignored while the old configuration keeps serving, the nanny's figures
    in frontend-cache's /metrics; a change that arrives while frontend-cache is still
    starting (its SIGHUP must neither kill it nor be lost);
  - stub servers given as host names: under the cluster domain through kubedns, others
    through the system resolver; looked up again, the last address kept when kubedns is
    gone;
  - under a steady dnsperf load (>= 5000 queries/s) through nanny + frontend-cache: 20
    configuration changes, then kill -9 of frontend-cache: lost queries, SERVFAILs and the
    time until answers resume (printed);
  - restart mode with Debian's dnsmasq (-dnsmasqExec=/usr/sbin/dnsmasq -restartDnsmasq):
    its arguments, restarts on change and after a kill, never two at once, its exit;
  - SIGTERM: the child's lameduck, then exit 0; a crash loop: exit non-zero.

Closes with `N passed, M failed`. KDNS_ONLY=substring runs the matching tests only;
KDNS_KEEP_TMP=1 keeps the temporary directory (every process's log).
"""
import json
import os
import pwd
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402

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
    _, records = harness.ask_udp(port, "servers.bind", 16, 3)
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


class Kubedns:
    def __init__(self, workdir, stub_ip="10.0.0.53"):
        self.objects_path = os.path.join(workdir, "objects.json")
        self.write_objects(stub_ip)
        self.port = harness.free_port()
        healthz = harness.free_port()
        argv = [KUBEDNS, "--objects-file=" + self.objects_path, "--dns-bind-address=127.0.0.1",
                "--dns-port=%d" % self.port, "--healthz-port=%d" % healthz,
                "--metrics-port=%d" % harness.free_port(),
                "--http-bind-address=127.0.0.1", "--dns-threads=1", "--logtostderr"]
        self.process = harness.Process(argv, os.path.join(workdir, "kubedns.log"))
        if not harness.wait_until(lambda: harness.ask_udp(self.port, "kubernetes.default.svc.cluster.local")[1], 20):
            raise RuntimeError("kubedns did not start: " + self.process.log()[-1500:])

    def write_objects(self, stub_ip):
        tmp = self.objects_path + ".tmp"
        with open(tmp, "w") as f:
            json.dump(objects(stub_ip), f)
        os.rename(tmp, self.objects_path)

    def stop(self):
        return self.process.stop()


class Nanny:
    """The nanny with frontend-cache (or another child) on 127.0.0.1 and a free port."""

    def __init__(self, workdir, name, config_dir, flags=(), child_args=None, kubedns=None,
                 port=None, metrics=True, wait=True, lameduck="0s", threads=2):
        self.port = port or harness.free_port()
        self.metrics_port = harness.free_port() if metrics else None
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
                               "--prometheus-address=127.0.0.1"]
        self.argv = argv + child_args
        self.log_path = os.path.join(workdir, name + ".log")
        self.process = harness.Process(self.argv, self.log_path)
        if wait and not harness.wait_until(lambda: not self.process.alive() or harness.ask_udp(
                self.port, "version.bind", 16, 3, timeout=0.2)[0] == "NOERROR", 20):
            raise RuntimeError("%s: no answer: %s" % (name, self.process.log()[-2000:]))
        if wait and not self.process.alive():
            raise RuntimeError("%s exited: %s" % (name, self.process.log()[-2000:]))

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


# -- the tests ------------------------------------------------------------------------------

def apply_latency(port, name, want, swapped, timeout=3.0):
    """Seconds from the swap until `name` answers `want` (None: not within timeout)."""
    deadline = swapped + timeout
    while time.monotonic() < deadline:
        rcode, records = harness.ask_udp(port, name, timeout=0.05)
        if want in records:
            return time.monotonic() - swapped
        time.sleep(0.005)
    return None


def test_changes_apply_within_a_second(env):
    """Kubelet-style swaps reach frontend-cache in place; invalid ones never do."""
    p = []
    tmp, nsd, unbound, stub_a, stub_b = (env["tmp"], env["nsd"], env["unbound"], env["stub_a"],
                                         env["stub_b"])
    cfg = harness.ConfigMapDir(os.path.join(tmp, "cfg-apply"))
    base = {"upstreamNameservers": json.dumps(["127.0.0.1:%d" % unbound.port])}

    def stubs(swap_port):
        return json.dumps({"example.test": ["127.0.0.1:%d" % nsd.port],
                           "swap.test": ["127.0.0.1:%d" % swap_port]})

    cfg.publish(dict(base, stubDomains=stubs(stub_a.port)))
    # The long spellings of the nanny's flags work as well as the short ones.
    nanny = Nanny(tmp, "nanny-apply", cfg.path, flags=["--syncInterval=30s"], kubedns=env["kd"])
    try:
        child = nanny.child()
        if harness.ask_udp(nanny.port, "www.example.test")[1] != ["192.0.2.10", "192.0.2.11"]:
            p.append("stub domain example.test not served by nsd")
        if harness.ask_udp(nanny.port, "www.other.test")[1] != ["198.51.100.7"]:
            p.append("upstreamNameservers (unbound) not used")
        if harness.ask_udp(nanny.port, "swap.test")[1] != [SWAP_A]:
            p.append("swap.test not routed to stub-a")
        if harness.ask_udp(nanny.port, "kubernetes.default.svc.cluster.local")[1] != ["10.96.0.1"]:
            p.append("cluster.local (the child's own --server) not routed to kubedns")
        # Warm a cached answer outside swap.test: it must survive every change.
        harness.ask_udp(nanny.port, "www.example.test")
        hits = nanny.metrics().get("kdns_frontend_cache_hits_total", 0)

        latencies = []
        for i in range(6):
            target, want = (stub_b, SWAP_B) if i % 2 == 0 else (stub_a, SWAP_A)
            swapped = cfg.publish(dict(base, stubDomains=stubs(target.port)))
            latency = apply_latency(nanny.port, "swap.test", want, swapped)
            if latency is None or latency > 1.0:
                p.append("change %d not applied within 1 s (%s)" % (i, latency))
            else:
                latencies.append(latency)
        if latencies:
            FIGURES.append(("config change applied after the ..data swap (max of %d)" %
                            len(latencies), "%.1f ms" % (max(latencies) * 1000)))
        if nanny.child() != child:
            p.append("the child was restarted by a change (in-place mode must not restart)")
        harness.ask_udp(nanny.port, "www.example.test")
        if nanny.metrics().get("kdns_frontend_cache_hits_total", 0) <= hits:
            p.append("the cache of an unchanged domain did not survive the changes")

        m = nanny.metrics()
        if m.get("kdns_nanny_config_generation") != 7:
            p.append("kdns_nanny_config_generation %s, want 7" %
                     m.get("kdns_nanny_config_generation"))
        versions = [k for k in m if k.startswith("kdns_nanny_config_info{")]
        if len(versions) != 1:
            p.append("kdns_nanny_config_info: %s" % versions)

        # An invalid update (four upstreams; a bad stub address) is ignored; the old
        # configuration keeps serving; the rejection is counted and logged.
        before = servers_bind(nanny.port)
        bad = dict(base, stubDomains=stubs(stub_b.port),
                   upstreamNameservers=json.dumps(["1.1.1.1", "1.1.1.2", "1.1.1.3", "1.1.1.4"]))
        cfg.publish(bad)
        if not harness.wait_until(lambda: nanny.metrics().get(
                "kdns_nanny_config_updates_rejected_total") == 1, 3):
            p.append("the invalid update was not counted as rejected")
        if harness.ask_udp(nanny.port, "swap.test")[1] != [SWAP_A]:
            p.append("after an invalid update swap.test no longer answered by the old route")
        if servers_bind(nanny.port) != before:
            p.append("the invalid update changed the upstreams: %s" % servers_bind(nanny.port))
        if nanny.metrics().get("kdns_nanny_config_error") != 1:
            p.append("kdns_nanny_config_error is not 1 after a rejected update")
        if "more than three entries" not in nanny.log():
            p.append("the rejection's reason is not in the nanny's log")
        cfg.publish(dict(base, stubDomains=json.dumps({"swap.test": ["not_an_ip"]})))
        if not harness.wait_until(lambda: nanny.metrics().get(
                "kdns_nanny_config_updates_rejected_total") == 2, 3):
            p.append("the second invalid update was not counted")
        if harness.ask_udp(nanny.port, "swap.test")[1] != [SWAP_A]:
            p.append("after the second invalid update swap.test changed")
        # A valid update clears the error.
        swapped = cfg.publish(dict(base, stubDomains=stubs(stub_b.port)))
        if apply_latency(nanny.port, "swap.test", SWAP_B, swapped) is None:
            p.append("a valid update after rejected ones was not applied")
        if nanny.metrics().get("kdns_nanny_config_error") != 0:
            p.append("kdns_nanny_config_error stays 1 after a valid update")
        # Removing upstreamNameservers: resolv.conf again, as kube-dns (no --no-resolv).
        swapped = cfg.publish({"stubDomains": stubs(stub_a.port)})
        if apply_latency(nanny.port, "swap.test", SWAP_A, swapped) is None:
            p.append("an update removing upstreamNameservers was not applied")
        if "127.0.0.1#%d" % unbound.port in servers_bind(nanny.port):
            p.append("unbound still listed after upstreamNameservers went away")
        if nanny.child() != child:
            p.append("the child was restarted")
    finally:
        code = nanny.stop()
        if code != 0:
            p.append("nanny exit status %s after SIGTERM" % code)
    return p


def test_change_during_child_start(env):
    """A change that arrives while frontend-cache starts neither kills it nor gets lost."""
    p = []
    tmp, stub_a, stub_b = env["tmp"], env["stub_a"], env["stub_b"]
    for attempt in range(5):
        cfg = harness.ConfigMapDir(os.path.join(tmp, "cfg-early-%d" % attempt))
        cfg.publish({"stubDomains": json.dumps({"swap.test": ["127.0.0.1:%d" % stub_a.port]})})
        nanny = Nanny(tmp, "nanny-early-%d" % attempt, cfg.path, wait=False, threads=1)
        try:
            child = harness.wait_until(nanny.child, 5, 0.0005)
            # The child is still in the trampoline or frontend-cache's start-up.
            cfg.publish({"stubDomains": json.dumps({"swap.test": ["127.0.0.1:%d" % stub_b.port]})})
            if not harness.wait_until(lambda: harness.ask_udp(nanny.port, "swap.test", timeout=0.2)[1] == [SWAP_B], 5):
                p.append("attempt %d: the early change was lost: %s" %
                         (attempt, harness.ask_udp(nanny.port, "swap.test")))
            if nanny.child() != child:
                p.append("attempt %d: the child was replaced (killed by the early SIGHUP?)" %
                         attempt)
            if "exited unasked" in nanny.log():
                p.append("attempt %d: the child died" % attempt)
        finally:
            nanny.stop()
    return p


def test_stub_host_names_resolved(env):
    """Host names: cluster ones through kubedns, others through the system resolver."""
    p = []
    tmp = env["tmp"]
    workdir = os.path.join(tmp, "kd-hosts")
    os.makedirs(workdir, exist_ok=True)
    kd = Kubedns(workdir)
    cfg = harness.ConfigMapDir(os.path.join(tmp, "cfg-hosts"))
    cfg.publish({"stubDomains": json.dumps({
        "corp.test": ["stubdns.kube-system.svc.cluster.local"],
        "local.test": ["localhost"],
        "mixed.test": ["127.0.0.1:%d" % env["nsd"].port, "nowhere.invalid"]})})
    nanny = Nanny(tmp, "nanny-hosts", cfg.path, kubedns=kd,
                  flags=["-stubResolveInterval=500ms", "-syncInterval=30s"])
    try:
        servers = servers_bind(nanny.port)
        for want in ("10.0.0.53#53", "127.0.0.1#53", "127.0.0.1#%d" % env["nsd"].port):
            if want not in servers:
                p.append("%s not among the upstreams %s" % (want, servers))
        if "nowhere.invalid" not in nanny.log():
            p.append("the unresolvable stub server is not logged")
        # The Service's ClusterIP changes: the next lookup brings the new address.
        kd.write_objects("10.0.0.54")
        if not harness.wait_until(lambda: "10.0.0.54#53" in servers_bind(nanny.port), 5):
            p.append("the new ClusterIP did not reach frontend-cache: %s" %
                     servers_bind(nanny.port))
        # kubedns goes away: lookups fail, the last address stays.
        kd.stop()
        time.sleep(1.5)  # several refresh periods with kubedns down
        if "10.0.0.54#53" not in servers_bind(nanny.port):
            p.append("the last known address was dropped when kubedns went away")
        if "keeping its last address 10.0.0.54" not in nanny.log():
            p.append("the failed lookup is not logged")
        m = nanny.metrics()
        if not m.get('kdns_nanny_stub_lookups_total{result="failed"}', 0) > 0:
            p.append("failed lookups not counted")
        if m.get("kdns_nanny_stub_hosts_unresolved") != 1:
            p.append("kdns_nanny_stub_hosts_unresolved %s, want 1 (nowhere.invalid)" %
                     m.get("kdns_nanny_stub_hosts_unresolved"))
    finally:
        nanny.stop()
        kd.stop()
    return p


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
                _, packet = harness.build_query(self.name, self.qtype, self.qclass, qid=qid)
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
                rid, rcode, _, _ = harness.parse_reply(data)
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


def test_load_changes_and_kill(env):
    """>= 5000 q/s through nanny + frontend-cache, 20 changes, then kill -9 of the child."""
    p = []
    tmp, nsd, unbound, stub_a, stub_b, kd = (env["tmp"], env["nsd"], env["unbound"],
                                             env["stub_a"], env["stub_b"], env["kd"])
    cfg = harness.ConfigMapDir(os.path.join(tmp, "cfg-load"))

    def config(i):
        target = stub_a if i % 2 == 0 else stub_b
        stubs = {"example.test": ["127.0.0.1:%d" % nsd.port],
                 "swap.test": ["127.0.0.1:%d" % target.port]}
        stubs["extra%d.test" % i] = ["127.0.0.1:%d" % nsd.port]  # a domain nobody asks for
        return {"stubDomains": json.dumps(stubs),
                "upstreamNameservers": json.dumps(["127.0.0.1:%d" % unbound.port])}

    cfg.publish(config(0))
    nanny = Nanny(tmp, "nanny-load", cfg.path, kubedns=kd, threads=2)
    names = ["www.example.test A", "mail.example.test A", "txt.example.test TXT",
             "example.test MX", "www.other.test A", "other.test TXT", "swap.test A",
             "kubernetes.default.svc.cluster.local A", "www.example.test AAAA",
             "alias.example.test A", "nope.example.test A", "short.example.test A"]
    queries = os.path.join(tmp, "queries.txt")
    with open(queries, "w") as f:
        f.write("\n".join(names) + "\n")
    for line in names:  # warm the cache
        name, qtype = line.split()
        harness.ask_udp(nanny.port, name, {"A": 1, "TXT": 16, "MX": 15, "AAAA": 28}[qtype])
    duration = 12
    perf_log = os.path.join(tmp, "dnsperf.out")
    perf = subprocess.Popen(["dnsperf", "-s", "127.0.0.1", "-p", str(nanny.port), "-d", queries,
                             "-l", str(duration), "-Q", "5500", "-q", "2000", "-c", "8",
                             "-T", "2", "-t", "5", "-S", "1"],
                            stdout=open(perf_log, "w"), stderr=subprocess.STDOUT)
    prober = Prober(nanny.port, "www.example.test")
    prober.start()
    try:
        time.sleep(1.5)
        first_child = nanny.child()
        applied, worst = 0, 0.0
        for i in range(1, 21):
            swapped = cfg.publish(config(i))
            want = SWAP_A if i % 2 == 0 else SWAP_B
            latency = apply_latency(nanny.port, "swap.test", want, swapped)
            if latency is not None:
                applied += 1
                worst = max(worst, latency)
            time.sleep(0.1)
        if applied != 20:
            p.append("only %d of 20 changes applied under load" % applied)
        FIGURES.append(("config changes under load applied after the swap (max of 20)",
                        "%.1f ms" % (worst * 1000)))
        if nanny.child() != first_child:
            p.append("the child was restarted by the changes")
        time.sleep(0.5)
        child = nanny.child()
        t_kill = time.monotonic()
        os.kill(child, signal.SIGKILL)
        new_child = harness.wait_until(lambda: nanny.child() not in (None, child) and nanny.child(), 5)
        if not new_child:
            p.append("no new frontend-cache after kill -9")
        perf.wait(timeout=duration + 30)
    finally:
        prober.stop_flag = True
        prober.join()
        if perf.poll() is None:
            perf.kill()
    with open(perf_log) as f:
        text = f.read()
    result = harness.parse_dnsperf(text)
    resume_ms, longest_ms, unanswered = prober.resume_after(t_kill)
    FIGURES.append(("dnsperf queries/s (target >= 5000)", "%s" % result["qps"]))
    FIGURES.append(("dnsperf queries sent / completed / lost",
                    "%s / %s / %s" % (result["sent"], result["completed"], result["lost"])))
    FIGURES.append(("dnsperf response codes", json.dumps(result["codes"])))
    FIGURES.append(("answers resume after kill -9 of frontend-cache (target <= 100 ms)",
                    "%.1f ms" % resume_ms if resume_ms is not None else "never"))
    FIGURES.append(("longest wait of a 1 ms prober query across the kill",
                    "%.1f ms" % longest_ms if longest_ms is not None else "-"))
    FIGURES.append(("prober queries sent / unanswered", "%d / %d" % (len(prober.sent),
                                                                     unanswered)))
    if result["qps"] is None or result["qps"] < 5000:
        p.append("load below 5000 q/s: %s" % result["qps"])
    if result["lost"] != 0:
        p.append("dnsperf lost %s queries" % result["lost"])
    if result["codes"].get("SERVFAIL", 0) != 0:
        p.append("%d SERVFAIL answers" % result["codes"]["SERVFAIL"])
    if unanswered != 0:
        p.append("%d prober queries unanswered, sent at %s ms from the kill" %
                 (unanswered, prober.unanswered_at(t_kill)))
    if resume_ms is None or resume_ms > 1000:
        p.append("answers did not resume within a second of the kill: %s" % resume_ms)
    m = nanny.metrics()
    crashes = m.get('kdns_nanny_child_restarts_total{reason="crash"}')
    if crashes != 1:
        p.append("crash restarts %s, want 1" % crashes)
    if m.get("kdns_nanny_config_generation") != 21:
        p.append("generation %s, want 21" % m.get("kdns_nanny_config_generation"))
    code = nanny.stop()
    if code != 0:
        p.append("nanny exit status %s" % code)
    return p


def test_restart_mode_with_dnsmasq(env):
    """Debian's dnsmasq under the nanny: its arguments, its restarts, its exit."""
    p = []
    tmp, nsd, unbound, stub_a, stub_b = (env["tmp"], env["nsd"], env["unbound"], env["stub_a"],
                                         env["stub_b"])
    cfg = harness.ConfigMapDir(os.path.join(tmp, "cfg-dnsmasq"))
    cfg.publish({"stubDomains": json.dumps({"example.test": ["127.0.0.1:%d" % nsd.port],
                                            "swap.test": ["127.0.0.1:%d" % stub_a.port]}),
                 "upstreamNameservers": json.dumps(["127.0.0.1:%d" % unbound.port])})
    port = harness.free_port()
    user_args = ["-k", "-C", "/dev/null", "--no-hosts", "--port=%d" % port,
                 "--listen-address=127.0.0.1", "--bind-interfaces",
                 "--user=" + pwd.getpwuid(os.getuid()).pw_name, "--pid-file=",
                 "--log-facility=-", "--cache-size=1000"]
    nanny = Nanny(tmp, "nanny-dnsmasq", cfg.path, port=port, metrics=False,
                  flags=["-dnsmasqExec=" + harness.DNSMASQ, "-restartDnsmasq=true",
                         "-syncInterval=30s"], child_args=user_args)
    seen, overlap = set(), [0]
    stop_watch = [False]

    def watch():  # never two dnsmasq at once
        while not stop_watch[0]:
            # (By its command line: a sanitizer build's exit-time helper is a child too.)
            kids = [k for k in children_of(nanny.pid) if alive(k) and harness.DNSMASQ in cmdline(k)]
            seen.update(kids)
            overlap[0] = max(overlap[0], len(kids))
            time.sleep(0.001)

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    try:
        first = nanny.child()
        args = cmdline(first)
        want = [harness.DNSMASQ] + user_args + [
            "--server=/example.test/127.0.0.1#%d" % nsd.port,
            "--server=/swap.test/127.0.0.1#%d" % stub_a.port,
            "--server=127.0.0.1#%d" % unbound.port, "--no-resolv"]
        if args != want:
            p.append("dnsmasq's arguments:\n  %s\nwant\n  %s" % (args, want))
        if harness.ask_udp(port, "www.example.test")[1] != ["192.0.2.10", "192.0.2.11"]:
            p.append("dnsmasq does not route example.test to nsd")
        if harness.ask_udp(port, "www.other.test")[1] != ["198.51.100.7"]:
            p.append("dnsmasq does not use the upstream")
        if harness.ask_udp(port, "swap.test")[1] != [SWAP_A]:
            p.append("dnsmasq does not route swap.test to stub-a")

        # A change: dnsmasq is stopped, reaped, started again with the new arguments. (A
        # prober shows what restart mode costs: the queries sent in the gap are lost.)
        prober = Prober(port, "version.bind", qtype=16, qclass=3)
        prober.start()
        time.sleep(0.2)
        swapped = cfg.publish({"stubDomains": json.dumps(
            {"swap.test": ["127.0.0.1:%d" % stub_b.port]})})
        latency = apply_latency(port, "swap.test", SWAP_B, swapped)
        time.sleep(0.3)
        prober.stop_flag = True
        prober.join()
        FIGURES.append(("restart mode (dnsmasq): 1 ms prober queries lost across one restart",
                        "%d of %d" % (len(prober.sent) - len(prober.answered),
                                      len(prober.sent))))
        if latency is None:
            p.append("the change did not reach dnsmasq")
        else:
            FIGURES.append(("restart mode (dnsmasq): change answered after the swap",
                            "%.1f ms" % (latency * 1000)))
        second = nanny.child()
        if second == first or alive(first):
            p.append("dnsmasq was not replaced (%s -> %s)" % (first, second))
        if cmdline(second) != [harness.DNSMASQ] + user_args + [
                "--server=/swap.test/127.0.0.1#%d" % stub_b.port]:
            p.append("new dnsmasq arguments: %s" % cmdline(second))

        # An invalid update: dnsmasq is left alone.
        cfg.publish({"upstreamNameservers": "[\"dns.example\"]"})
        harness.wait_until(lambda: "rejected" in nanny.log(), 3)
        if nanny.child() != second:
            p.append("an invalid update restarted dnsmasq")

        # kill -9: restarted at once with the same arguments.
        second_args = cmdline(second)
        os.kill(second, signal.SIGKILL)
        third = harness.wait_until(lambda: nanny.child() not in (None, second) and nanny.child(), 5)
        if not third:
            p.append("dnsmasq not restarted after kill -9")
        elif not harness.wait_until(lambda: cmdline(third)[:1] == [harness.DNSMASQ], 5) or \
                cmdline(third) != second_args:
            p.append("restarted dnsmasq has other arguments: %s" % cmdline(third))
        if not harness.wait_until(lambda: harness.ask_udp(port, "swap.test", timeout=0.2)[1] == [SWAP_B], 5):
            p.append("the restarted dnsmasq does not answer")

        with open(os.path.join(nanny.run_dir, "nanny.prom")) as f:
            prom = f.read()
        for line in ('kdns_nanny_child_restarts_total{reason="config"} 1',
                     'kdns_nanny_child_restarts_total{reason="crash"} 1',
                     "kdns_nanny_config_generation 2",
                     "kdns_nanny_config_updates_rejected_total 1"):
            if line not in prom:
                p.append("nanny.prom lacks %r" % line)

        # SIGTERM: dnsmasq exits, then the nanny, with status 0.
        nanny.process.signal(signal.SIGTERM)
        code = nanny.process.wait(10)
        if code != 0:
            p.append("nanny exit status %s after SIGTERM" % code)
        if third and alive(third):
            p.append("dnsmasq still running after the nanny exited")
    finally:
        stop_watch[0] = True
        watcher.join()
        nanny.stop()
    if overlap[0] > 1:
        p.append("%d dnsmasq processes ran at once" % overlap[0])
    if len(seen) != 3:
        p.append("%d dnsmasq processes seen, want 3" % len(seen))
    return p


def test_sigterm_lameduck_then_exit(env):
    p = []
    tmp = env["tmp"]
    cfg = harness.ConfigMapDir(os.path.join(tmp, "cfg-term"))
    cfg.publish({"stubDomains": json.dumps({"example.test": ["127.0.0.1:%d" % env["nsd"].port]})})
    nanny = Nanny(tmp, "nanny-term", cfg.path, lameduck="1s", metrics=False,
                  flags=["-logInterval=100ms"])
    child = nanny.child()
    # -logInterval: SIGUSR1 makes frontend-cache log its statistics, into the nanny's log.
    if not harness.wait_until(lambda: nanny.log().count("queries forwarded") >= 2, 5):
        p.append("-logInterval: no statistics lines from the child")
    if nanny.child() != child:
        p.append("SIGUSR1 killed the child")
    t0 = time.monotonic()
    nanny.process.signal(signal.SIGTERM)
    time.sleep(0.4)
    if harness.ask_udp(nanny.port, "www.example.test", timeout=0.3)[1] != ["192.0.2.10", "192.0.2.11"]:
        p.append("no answer during the lameduck period")
    if not nanny.process.alive():
        p.append("the nanny exited before the child's lameduck ended")
    code = nanny.process.wait(10)
    elapsed = time.monotonic() - t0
    if code != 0:
        p.append("exit status %s" % code)
    if not 0.9 <= elapsed <= 5:
        p.append("exited %.2f s after SIGTERM; the lameduck is 1 s" % elapsed)
    if alive(child):
        p.append("frontend-cache still alive")
    if "lameduck: answering for 1000 ms more" not in nanny.log():
        p.append("the child's lameduck line is not in the nanny's log")
    nanny.stop()
    return p


def test_crash_loop_exits_nonzero(env):
    p = []
    tmp = env["tmp"]
    cfg = harness.ConfigMapDir(os.path.join(tmp, "cfg-crash"))
    port = harness.free_port()
    nanny = Nanny(tmp, "nanny-crash", cfg.path, port=port, wait=False, metrics=False,
                  flags=["-crashLoopRestarts=3"],
                  child_args=["--port=%d" % port, "--listen-address=127.0.0.1",
                              "--cache-size=many"])
    t0 = time.monotonic()
    code = nanny.process.wait(20)
    elapsed = time.monotonic() - t0
    if code is None or code == 0:
        p.append("exit status %s, want non-zero" % code)
    if "giving up" not in nanny.log():
        p.append("no 'giving up' line")
    if nanny.log().count("--cache-size: ") < 3:
        p.append("the child's error lines are not in the nanny's log")
    FIGURES.append(("crash loop: nanny exit after 3 fast crashes", "%.2f s, status %s" %
                    (elapsed, code)))
    nanny.stop()
    # A missing child binary is a start-up error.
    run = subprocess.run([NANNY, "-configDir=" + cfg.path, "-dnsmasqExec=/nonexistent/dnsmasq",
                          "--", "--port=%d" % port], capture_output=True, text=True, timeout=20)
    if run.returncode != 2 or "not an executable file" not in run.stderr:
        p.append("missing -dnsmasqExec: status %s, %r" % (run.returncode, run.stderr))
    return p


TESTS = [test_changes_apply_within_a_second, test_change_during_child_start,
         test_stub_host_names_resolved,
         test_load_changes_and_kill, test_restart_mode_with_dnsmasq,
         test_sigterm_lameduck_then_exit, test_crash_loop_exits_nonzero]


def main():
    for tool in (NANNY, FRONTEND, KUBEDNS, harness.NSD, harness.UNBOUND, harness.DNSMASQ, "/usr/bin/dnsperf"):
        if not os.path.exists(tool):
            print("nanny_test: %s is missing" % tool)
            print("0 passed, 1 failed")
            return 1
    tmp = tempfile.mkdtemp(prefix="kdns-nanny-e2e-")
    env = {"tmp": tmp}
    servers = []
    passed = failed = 0
    try:
        env["nsd"] = harness.Nsd(tmp)
        servers.append(env["nsd"])
        env["unbound"] = harness.Unbound(tmp)
        servers.append(env["unbound"])
        env["stub_a"] = harness.Dnsmasq(tmp, "stub-a", "--address=/swap.test/" + SWAP_A,
                                   "--local-ttl=300")
        servers.append(env["stub_a"])
        env["stub_b"] = harness.Dnsmasq(tmp, "stub-b", "--address=/swap.test/" + SWAP_B,
                                   "--local-ttl=300")
        servers.append(env["stub_b"])
        os.makedirs(os.path.join(tmp, "kd"), exist_ok=True)
        env["kd"] = Kubedns(os.path.join(tmp, "kd"))
        servers.append(env["kd"])
        p, f = harness.run_tests(TESTS, env)
        passed += p
        failed += f
    finally:
        for server in reversed(servers):
            try:
                server.stop()
            except Exception:
                pass
        if failed == 0 or not os.environ.get("KDNS_KEEP_TMP"):
            shutil.rmtree(tmp, ignore_errors=True)
        else:
            print("logs kept in " + tmp)
    if FIGURES:
        print("figures:")
        for what, value in FIGURES:
            print("  %-70s %s" % (what, value))
    print("%d passed, %d failed" % (passed, failed))
    return 0 if failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
