#!/usr/bin/python3
"""sidecar end to end, against Debian's real dnsmasq and against our frontend-cache.

Two "pods" run side by side, each a cache (dnsmasq, or frontend-cache) forwarding to NSD
(example.test), and a sidecar ($KDNS_BIN/sidecar, default build/bin) polling the cache's
CHAOS statistics and probing, every second:
  ok          www.example.test through the cache (a name that answers)
  nxdomain    nope.example.test through the cache (a name that does not)
  notpresent  a loopback port nothing listens on (a server that is not there)
Everything runs unprivileged on free 127.0.0.1 ports, and every process is stopped at the
end. Checked from the outside, over HTTP: after 100 queries through the cache `hits`
exceeds 100 and `max_size` is the configured cache size; `notpresent` and `nxdomain` have
at least 5 errors each and `ok` none; /healthcheck/ok is 200 with kube-dns's JSON and the
others 503 with theirs; exact metric names, types and help texts; 404/405; the health
check turns 503 within two probe intervals when the cache stops and 200 again when it is
back; the dnsmasq counters, sampled all along, never decrease, also across the restart.
Bad flags stop the sidecar at start with one line.

Closes with `N passed, M failed`. KDNS_ONLY=substring runs the matching tests only;
KDNS_KEEP_TMP=1 keeps the temporary directory (logs of every process) after a failure.
"""
import json
import os
import re
import socket
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import dns_wire  # noqa: E402
import harness  # noqa: E402
import servers  # noqa: E402

SIDECAR = os.path.join(harness.BIN, "sidecar")
INTERVAL_S = 1
POLL_MS = 300
COUNTERS = ["kubedns_dnsmasq_hits", "kubedns_dnsmasq_misses", "kubedns_dnsmasq_evictions",
            "kubedns_dnsmasq_insertions", "kubedns_dnsmasq_max_size", "kubedns_dnsmasq_errors"]

# kube-dns's help texts and types (pkg/sidecar/metrics.go, dnsprobe.go).
LEGACY_FAMILIES = {
    "kubedns_dnsmasq_hits": ("counter", "Number of DNS cache hits (from start of process)"),
    "kubedns_dnsmasq_misses": ("counter", "Number of DNS cache misses (from start of process)"),
    "kubedns_dnsmasq_evictions": ("counter",
                                  "Counter of DNS cache evictions (from start of process)"),
    "kubedns_dnsmasq_insertions": ("counter",
                                   "Counter of DNS cache insertions (from start of process)"),
    "kubedns_dnsmasq_max_size": ("counter", "Maximum size of the DNS cache"),
    "kubedns_dnsmasq_errors": ("counter", "Number of errors that have occurred getting metrics"),
    "kubedns_probe_ok_latency_ms": ("histogram", "Latency of the DNS probe request ok"),
    "kubedns_probe_ok_errors": ("counter", "Count of errors in name resolution of ok"),
    "kubedns_probe_nxdomain_errors": ("counter", "Count of errors in name resolution of nxdomain"),
    "kubedns_probe_notpresent_errors": ("counter",
                                        "Count of errors in name resolution of notpresent"),
}
BUCKETS = ["0.25", "0.5", "1", "2", "4", "8", "16", "32", "64", "128", "256", "512", "1024",
           "2048", "4096", "8192", "+Inf"]


# -- the pods -------------------------------------------------------------------------------

class Sidecar:
    def __init__(self, workdir, name, args):
        self.port = harness.free_port()
        argv = [SIDECAR, "--prometheus-addr=127.0.0.1", "--prometheus-port=%d" % self.port,
                "--v=0"] + args
        self.process = harness.Process(argv, os.path.join(workdir, name + ".log"))
        if not harness.wait_until(lambda: not self.process.alive() or
                                  "serving HTTP on" in self.process.log(), 20):
            raise RuntimeError("%s did not start: %s" % (name, self.process.log()[-1500:]))
        if not self.process.alive():
            raise RuntimeError("%s exited: %s" % (name, self.process.log()[-1500:]))

    def metrics_text(self):
        return harness.http_get(self.port, "/metrics")[2]

    def metrics(self):
        return harness.parse_metrics(self.metrics_text())

    def health(self, label):
        status, _, body = harness.http_get(self.port, "/healthcheck/" + label)
        return status, body

    def stop(self):
        return self.process.stop()


class Pod:
    """A cache (dnsmasq or frontend-cache) forwarding to NSD, and its sidecar."""

    def __init__(self, workdir, kind, nsd, cache_size, ok_type=None, extra_probes=()):
        self.workdir, self.kind, self.cache_size = workdir, kind, cache_size
        self.restarts = 0
        if kind == "dnsmasq":
            self.cache = servers.Dnsmasq(workdir, "dnsmasq", "--server=" + nsd.address,
                                         "--cache-size=%d" % cache_size)
        else:
            self.cache = servers.FrontendCache(workdir, "frontend-cache", "--server=" + nsd.address,
                                               "--cache-size=%d" % cache_size, metrics=False)
        self.cache_port = self.cache.port
        self.cache_argv = self.cache.process.argv
        self.absent_port = harness.free_port()
        ok = "ok,127.0.0.1:%d,www.example.test,%d" % (self.cache_port, INTERVAL_S)
        if ok_type:
            ok += "," + ok_type
        probes = [ok,
                  "nxdomain,127.0.0.1:%d,nope.example.test,%d" % (self.cache_port, INTERVAL_S),
                  "notpresent,127.0.0.1:%d,www.example.test,%d" % (self.absent_port, INTERVAL_S)]
        probes += [p % self.cache_port for p in extra_probes]
        self.sidecar = Sidecar(workdir, kind + "-sidecar",
                               ["--probe=" + p for p in probes] +
                               ["--dnsmasq-addr=127.0.0.1", "--dnsmasq-port=%d" % self.cache_port,
                                "--dnsmasq-poll-interval-ms=%d" % POLL_MS])
        self.samples = []  # (time, {counter: value}) from the sampler thread
        self.sampler_errors = []
        self._stop_sampling = threading.Event()
        self._sampler = threading.Thread(target=self._sample, daemon=True)
        self._sampler.start()

    def _sample(self):
        while not self._stop_sampling.is_set():
            try:
                metrics = self.sidecar.metrics()
                self.samples.append((time.time(), {c: metrics.get(c) for c in COUNTERS}))
            except Exception as e:  # the sidecar must answer all along
                self.sampler_errors.append(repr(e))
            self._stop_sampling.wait(0.1)

    def stop_sampling(self):
        self._stop_sampling.set()
        self._sampler.join(5)

    def cache_alive(self):
        return self.cache.process.alive()

    def stop_cache(self):
        self.cache.process.stop()

    def start_cache(self):
        """The same cache again, same arguments and port (a restarted container)."""
        self.restarts += 1
        name = "%s-restart%d" % (self.kind, self.restarts)
        self.cache.process = harness.Process(self.cache_argv,
                                             os.path.join(self.workdir, name + ".log"))
        ready = harness.wait_until(lambda: not self.cache.process.alive() or
                                   harness.dig(self.cache_port, "version.bind", "TXT", "CH",
                                               timeout=1).status == "NOERROR", 20)
        if not ready or not self.cache.process.alive():
            raise RuntimeError("%s did not come back: %s" % (name, self.cache.process.log()[-1500:]))

    def stop(self):
        self.stop_sampling()
        self.sidecar.stop()
        self.cache.process.stop()


# -- the tests ------------------------------------------------------------------------------
# Each returns a list of problems (empty: passed).

def test_bad_flags_stop_the_start(env):
    problems = []
    cases = [
        (["--probe=dnsmasq,[::1]:53"], "invalid format to --probe"),
        (["--probe=dn$m@s#,[::1]:53,kubernetes.default.svc.cluster.local,5,SRV"],
         "label must be of format ^[a-zA-Z0-9_]+$"),
        (["--probe=d,[::1]:53,kubernetes.default.svc.cluster.local,0.5,SRV"],
         'strconv.Atoi: parsing "0.5": invalid syntax'),
        (["--probe=d,[::1]:53,kubernetes.default.svc.cluster.local,5,BogusType"],
         "invalid type for DNS: BogusType"),
        (["--probe=d,127.0.0.1,a,0"], "interval 0 is not in 1..86400 seconds"),
        (["--probe=d,127.0.0.1,a", "--probe", "d,127.0.0.2,b"], 'duplicate label "d"'),
        (["--probe"], "--probe needs a value"),
        (["--prometheus-port=70000"], "--prometheus-port: 70000 is not a port"),
        (["--dnsmasq-addr=dnsmasq"], '--dnsmasq-addr: "dnsmasq" is not an IP address'),
        (["--dnsmasq-poll-interval-ms=0"], "--dnsmasq-poll-interval-ms"),
        (["--prometheus-namespace=kube-dns"], "--prometheus-namespace"),
        (["stray"], "unknown argument: stray"),
    ]
    for args, text in cases:
        run = subprocess.run([SIDECAR, "--prometheus-port=0"] + args, capture_output=True,
                             text=True, timeout=20)
        lines = run.stderr.strip().splitlines()
        if run.returncode == 0 or len(lines) != 1 or text not in lines[0]:
            problems.append("%s: exit %d, stderr %r; want one line with %r" %
                            (args, run.returncode, run.stderr, text))
    run = subprocess.run([SIDECAR, "--nosuchflag"], capture_output=True, text=True, timeout=20)
    if run.returncode == 0:
        problems.append("an unknown flag was accepted")
    return problems


def check_pod_after_100_queries(pod):
    p = []
    for i in range(100):
        reply = dns_wire.ask_udp(pod.cache_port, "www.example.test", timeout=3.0, full=True)
        if reply is None or reply["rcode"] != 0 or reply["counts"][1] < 1:
            p.append("query %d through %s: %s" % (i, pod.kind, reply or "no answer"))
            break
    answer = harness.dig(pod.cache_port, "www.example.test")
    if answer.rdatas("A") != ["192.0.2.10", "192.0.2.11"]:
        p.append("dig through %s: %s" % (pod.kind, answer))

    def settled():
        m = pod.sidecar.metrics()
        return (m.get("kubedns_dnsmasq_hits", 0) > 100 and
                m.get("kubedns_probe_notpresent_errors", 0) >= 5 and
                m.get("kubedns_probe_nxdomain_errors", 0) >= 5 and
                m.get("kubedns_probe_ok_latency_ms_count", 0) >= 5 and m)

    m = harness.wait_until(settled, 30, 0.2) or pod.sidecar.metrics()
    if not m.get("kubedns_dnsmasq_hits", 0) > 100:
        p.append("hits %s, want > 100" % m.get("kubedns_dnsmasq_hits"))
    if m.get("kubedns_dnsmasq_max_size") != pod.cache_size:
        p.append("max_size %s, want %d" % (m.get("kubedns_dnsmasq_max_size"), pod.cache_size))
    if m.get("kdns_sidecar_dnsmasq_cache_size") != pod.cache_size:
        p.append("kdns_sidecar_dnsmasq_cache_size %s" % m.get("kdns_sidecar_dnsmasq_cache_size"))
    if not m.get("kubedns_dnsmasq_misses", 0) >= 1:
        p.append("misses %s, want >= 1 (the first query)" % m.get("kubedns_dnsmasq_misses"))
    if not m.get("kubedns_dnsmasq_insertions", 0) >= 1:
        p.append("insertions %s, want >= 1" % m.get("kubedns_dnsmasq_insertions"))
    for label in ("notpresent", "nxdomain"):
        if not m.get("kubedns_probe_%s_errors" % label, 0) >= 5:
            p.append("%s errors %s, want >= 5" % (label, m.get("kubedns_probe_%s_errors" % label)))
        if m.get("kubedns_probe_%s_latency_ms_count" % label) != 0:
            p.append("%s has latency samples" % label)
    if m.get("kubedns_probe_ok_errors") != 0:
        p.append("ok errors %s, want 0" % m.get("kubedns_probe_ok_errors"))
    if not m.get("kubedns_probe_ok_latency_ms_count", 0) >= 5:
        p.append("ok latency count %s, want >= 5" % m.get("kubedns_probe_ok_latency_ms_count"))
    if m.get("kubedns_dnsmasq_errors") != 0:
        p.append("dnsmasq errors %s, want 0" % m.get("kubedns_dnsmasq_errors"))
    if not m.get('kdns_sidecar_probe_rcode_total{probe="nxdomain",rcode="NXDOMAIN"}', 0) >= 5:
        p.append("no NXDOMAIN rcodes counted for nxdomain")
    if not m.get('kdns_sidecar_probe_failures_total{probe="notpresent",reason="refused"}', 0) >= 5:
        p.append("no refused failures counted for notpresent")

    status, body = pod.sidecar.health("ok")
    doc = json.loads(body) if body.startswith("{") else {}
    if status != 200 or not re.fullmatch(
            r'\{"IsOk":true,"LatencySeconds":[0-9.e-]+,"Err":""\}', body) or \
            not 0 < doc.get("LatencySeconds", 0) < 1:
        p.append("ok: %d %s" % (status, body))
    status, body = pod.sidecar.health("nxdomain")
    if status != 503 or body != ('{"IsOk":false,"LatencySeconds":0,'
                                 '"Err":"no RRs for domain \\"nope.example.test.\\""}'):
        p.append("nxdomain: %d %s" % (status, body))
    status, body = pod.sidecar.health("notpresent")
    want = ('{"IsOk":false,"LatencySeconds":0,"Err":"query %s \\"www.example.test.\\" to '
            '127.0.0.1:%d: connection refused"}')
    if status != 503 or body not in (want % ("ANY", pod.absent_port),
                                     want % ("A", pod.absent_port)):
        p.append("notpresent: %d %s" % (status, body))
    return ["%s: %s" % (pod.kind, x) for x in p]


def test_dnsmasq_probes_and_counters(env):
    return check_pod_after_100_queries(env["dnsmasq"])


def test_frontend_cache_probes_and_counters(env):
    pod = env["frontend"]
    problems = check_pod_after_100_queries(pod)
    status, body = pod.sidecar.health("srv")
    if status != 200:
        problems.append("frontend-cache: SRV probe: %d %s" % (status, body))
    return problems


def test_metric_names_types_and_help(env):
    problems = []
    for pod in (env["dnsmasq"], env["frontend"]):
        text = pod.sidecar.metrics_text()
        for name, (kind, help_text) in LEGACY_FAMILIES.items():
            block = "# HELP %s %s\n# TYPE %s %s\n" % (name, help_text, name, kind)
            if block not in text:
                problems.append("%s: missing %r" % (pod.kind, block))
        for le in BUCKETS:
            if 'kubedns_probe_ok_latency_ms_bucket{le="%s"} ' % le not in text:
                problems.append("%s: no bucket le=%s" % (pod.kind, le))
        if re.search(r"^kubedns_probe_ok_latency_ms_bucket\{le=\"0\.125\"\}", text, re.M):
            problems.append("%s: a bucket below 0.25" % pod.kind)
    return problems


def test_http_endpoints(env):
    problems = []
    pod = env["frontend"]
    status, headers, body = harness.http_get(pod.sidecar.port, "/healthz")
    if status != 200 or not re.fullmatch(r"ok \(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(\.\d+)? "
                                         r"\+0000 UTC\)\n", body):
        problems.append("/healthz: %d %r" % (status, body))
    status, headers, _ = harness.http_get(pod.sidecar.port, "/metrics")
    if status != 200 or not headers.get("Content-Type", "").startswith("text/plain; version=0.0.4"):
        problems.append("/metrics: %d %s" % (status, headers.get("Content-Type")))
    status, headers, _ = harness.http_get(pod.sidecar.port, "/healthcheck/ok")
    if headers.get("Content-Type") != "application/json":
        problems.append("/healthcheck/ok Content-Type %s" % headers.get("Content-Type"))
    for path in ("/healthcheck/unknown", "/healthcheck/", "/", "/metrics/x", "/healthcheck/ok/x"):
        status = harness.http_get(pod.sidecar.port, path)[0]
        if status != 404:
            problems.append("GET %s: %d, want 404" % (path, status))
    for method, path in (("POST", "/healthcheck/ok"), ("PUT", "/metrics"), ("DELETE", "/healthz")):
        status, headers, _ = harness.http_get(pod.sidecar.port, path, method)
        if status != 405 or headers.get("Allow") != "GET, HEAD":
            problems.append("%s %s: %d Allow=%s, want 405" % (method, path, status,
                                                              headers.get("Allow")))
    # Bounded requests: an oversized head is refused, a slow client does not hold the loop.
    with socket.create_connection(("127.0.0.1", pod.sidecar.port), timeout=5) as s:
        s.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * 20000 + b"\r\n\r\n")
        reply = s.recv(100)
        if not reply.startswith(b"HTTP/1.1 431"):
            problems.append("oversized request: %r" % reply)
    with socket.create_connection(("127.0.0.1", pod.sidecar.port), timeout=5) as slow:
        slow.sendall(b"GET /healthz HTTP/1.1\r\n")  # and nothing more
        if harness.http_get(pod.sidecar.port, "/healthz")[0] != 200:
            problems.append("a half-sent request blocked other clients")
    return problems


def wait_health(pod, label, want, limit_s):
    """Seconds until /healthcheck/<label> returns `want`, or None past limit_s."""
    return harness.time_until(lambda: pod.sidecar.health(label)[0] == want, limit_s, 0.05)


def restart(pod):
    problems = []
    before = pod.sidecar.metrics()
    if pod.sidecar.health("ok")[0] != 200:
        return ["%s: ok not healthy before the restart" % pod.kind]
    pod.stop_cache()
    took = wait_health(pod, "ok", 503, 2 * INTERVAL_S)
    print("    %s stopped: /healthcheck/ok 503 after %s s" % (
        pod.kind, "%.2f" % took if took is not None else "-"))
    if took is None:
        problems.append("%s stopped: /healthcheck/ok not 503 within %d s" % (pod.kind,
                                                                             2 * INTERVAL_S))
    status, body = pod.sidecar.health("ok")
    if status != 503 or "connection refused" not in body or '"IsOk":false' not in body:
        problems.append("%s stopped: ok %d %s" % (pod.kind, status, body))
    # Statistics cannot be read meanwhile: errors count, counters stay.
    errors = pod.sidecar.metrics().get("kubedns_dnsmasq_errors", 0)
    if not harness.wait_until(lambda: pod.sidecar.metrics().get("kubedns_dnsmasq_errors", 0) > errors,
                              5):
        problems.append("%s stopped: no poll errors counted" % pod.kind)
    pod.start_cache()
    took = wait_health(pod, "ok", 200, 2 * INTERVAL_S)
    print("    %s back: /healthcheck/ok 200 after %s s" % (
        pod.kind, "%.2f" % took if took is not None else "-"))
    if took is None:
        problems.append("%s back: /healthcheck/ok not 200 within %d s" % (pod.kind,
                                                                          2 * INTERVAL_S))
    for i in range(20):
        reply = dns_wire.ask_udp(pod.cache_port, "www.example.test", timeout=3.0, full=True)
        if reply is None or reply["rcode"] != 0 or reply["counts"][1] < 1:
            problems.append("%s back: query %d: %s" % (pod.kind, i, reply or "no answer"))
            break
    if not harness.wait_until(lambda: pod.sidecar.metrics().get(
            "kdns_sidecar_dnsmasq_restarts_total", 0) >= 1, 5):
        problems.append("%s: the restart was not recognised" % pod.kind)
    def grown():
        m = pod.sidecar.metrics()
        return m if m["kubedns_dnsmasq_hits"] > before["kubedns_dnsmasq_hits"] + 10 else None

    after = harness.wait_until(grown, 5) or pod.sidecar.metrics()
    raw = harness.dig(pod.cache_port, "hits.bind", "TXT", "CH").rdatas("TXT")
    print("    %s: hits %d before the restart, %d after; the new process says %s" % (
        pod.kind, before["kubedns_dnsmasq_hits"], after["kubedns_dnsmasq_hits"], raw))
    if not raw or int(raw[0].strip('"')) >= after["kubedns_dnsmasq_hits"]:
        problems.append("%s: the exported hits %d are not above the new process's own %s" % (
            pod.kind, after["kubedns_dnsmasq_hits"], raw))
    for name in COUNTERS:
        if after.get(name, 0) < before.get(name, 0):
            problems.append("%s: %s went from %s to %s across the restart" % (
                pod.kind, name, before.get(name), after.get(name)))
    if not after["kubedns_dnsmasq_hits"] > before["kubedns_dnsmasq_hits"] + 10:
        problems.append("%s: hits %s -> %s: the new process's hits were not added" % (
            pod.kind, before["kubedns_dnsmasq_hits"], after["kubedns_dnsmasq_hits"]))
    if after.get("kubedns_dnsmasq_max_size") != pod.cache_size:
        problems.append("%s: max_size %s after the restart" % (pod.kind,
                                                               after.get("kubedns_dnsmasq_max_size")))
    return problems


def test_dnsmasq_stopped_and_back(env):
    return restart(env["dnsmasq"])


def test_frontend_cache_stopped_and_back(env):
    return restart(env["frontend"])


def test_counters_never_decreased(env):
    problems = []
    for pod in (env["dnsmasq"], env["frontend"]):
        pod.stop_sampling()
        problems += ["%s: sampler: %s" % (pod.kind, e) for e in pod.sampler_errors[:3]]
        if len(pod.samples) < 20:
            problems.append("%s: only %d samples" % (pod.kind, len(pod.samples)))
        last = {}
        for when, values in pod.samples:
            for name, value in values.items():
                if value is None:
                    problems.append("%s: %s missing at %.1f" % (pod.kind, name, when))
                elif name in last and value < last[name]:
                    problems.append("%s: %s decreased from %s to %s" % (pod.kind, name,
                                                                        last[name], value))
                else:
                    last[name] = value
    return problems


TESTS = [
    test_bad_flags_stop_the_start,
    test_dnsmasq_probes_and_counters,
    test_frontend_cache_probes_and_counters,
    test_metric_names_types_and_help,
    test_http_endpoints,
    test_dnsmasq_stopped_and_back,
    test_frontend_cache_stopped_and_back,
    test_counters_never_decreased,
]


def start(workdir, owned):
    """NSD, and a pod of each kind (dnsmasq, frontend-cache) forwarding to it."""
    nsd = servers.Nsd(workdir)
    owned.append(nsd)
    env = {"nsd": nsd}
    env["dnsmasq"] = Pod(workdir, "dnsmasq", nsd, cache_size=500)
    owned.append(env["dnsmasq"])
    env["frontend"] = Pod(workdir, "frontend-cache", nsd, cache_size=700, ok_type="A",
                          extra_probes=["srv,127.0.0.1:%d,_http._tcp.example.test,1,SRV"])
    owned.append(env["frontend"])
    return env


def run(env, checks):
    """The tests, then a check that neither sidecar exited."""
    checks.run(TESTS, env)
    for pod in (env["dnsmasq"], env["frontend"]):
        checks.check("the %s sidecar is still running" % pod.kind, pod.sidecar.process.alive(),
                     pod.sidecar.process.log()[-1500:])


def main():
    return harness.main(
        "kdns-sidecar-e2e-", run,
        tools=(SIDECAR, os.path.join(harness.BIN, "frontend-cache"), servers.NSD,
               servers.DNSMASQ, "/usr/bin/dig"),
        setup=start)


if __name__ == "__main__":
    sys.exit(main())
