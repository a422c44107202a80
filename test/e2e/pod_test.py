#!/usr/bin/python3
"""The whole pod, end to end, inside a network and mount namespace this test creates.

Port 53 is free there and nothing leaves the machine. The pod runs as in a cluster: kubedns
on 10053 (the conformance objects), the nanny holding port 53 and supervising
frontend-cache with kube-dns's arguments, the sidecar probing both on 10054; NSD and
unbound stand in for the world outside (example.test, other.test) behind the kube-dns
ConfigMap's stubDomains, written the way the kubelet writes a ConfigMap volume. A pod-like
/etc/resolv.conf (search default.svc.cluster.local svc.cluster.local cluster.local,
ndots:5) is bind-mounted in the mount namespace, so the C library resolver (getent) and
`dig +search` see what a pod sees.

The multicluster zones are on (kubedns --multicluster-zone and --kubeslice-zone, with
test/conformance/multicluster_objects.json added to its objects; the nanny's -kubednsZones
routes them to kubedns).

Checks: getent hosts/ahosts for kubernetes, kubernetes.default, a headless service, a
pod's hostname.subdomain, an external name, and clusterset.local and slice.local names;
dig +search SRV and PTR; a stub domain added by a ConfigMap edit; ConfigMap edits under load with zero failed queries; kill -9 of
each process in turn, with the time to recover reported; the sidecar's health red while
kubedns is down and green after. Needs root (for the namespaces); prints `N passed, M
failed` last.
"""
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
import pod  # noqa: E402
import servers  # noqa: E402

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
BIN = os.path.abspath(os.environ.get("KDNS_BIN", os.path.join(ROOT, "build", "bin")))
INSIDE = "KDNS_POD_NAMESPACES"
POD_RESOLV_CONF = """search default.svc.cluster.local svc.cluster.local cluster.local
nameserver 127.0.0.1
options ndots:5
"""
CACHE_ARGS = ["-k", "--cache-size=1000", "--no-negcache", "--serial-zones=cluster.local",
              "--dns-loop-detect",
              "--log-facility=-", "--server=/cluster.local/127.0.0.1#10053",
              "--server=/in-addr.arpa/127.0.0.1#10053", "--server=/ip6.arpa/127.0.0.1#10053",
              "--listen-address=127.0.0.1", "--port=53", "--no-resolv", "--lameduck=1s",
              "--prometheus-port=10056", "--prometheus-addr=127.0.0.1"]
MEASURED = []  # (what, value) lines for the summary


def measured(what, value):
    MEASURED.append((what, value))
    print("     measured: %s: %s" % (what, value))


# The pod's real ports: the C library resolver asks port 53; the rest as in the manifest.
POD_PORTS = {"kubedns": 10053, "healthz": 8081, "kubedns_metrics": 10055, "cache": 53,
             "sidecar": 10054}


class Pod(pod.Pod):
    """The pod on its real ports, NSD and unbound as the world behind its stub domains."""

    def __init__(self, workdir, kubedns_flags=()):
        self.workdir = workdir
        self.nsd = servers.Nsd(workdir)
        try:
            self.unbound = servers.Unbound(workdir)
        except Exception:
            self.nsd.stop()
            raise
        config = harness.ConfigMapDir(os.path.join(workdir, "kube-dns-config"))
        config.publish(self.stub_domains(["example.test"]))
        try:
            super().__init__(
                workdir,
                ["--objects-file=" + self.objects_file(),
                 "--multicluster-zone=clusterset.local.", "--kubeslice-zone=slice.local.",
                 "--lameduck=0s",
                 "--notify=127.0.0.1:53",  # the cache drops its cluster-zone negatives then
                 # The node's resolver, as dnsPolicy: Default gives the kube-dns pod; never
                 # the cache in front of us (a loop, which --dns-loop-detect would rightly
                 # cut).
                 "--nameservers=127.0.0.1:%d" % self.nsd.port],
                kubedns_flags=kubedns_flags,
                nanny_flags=["-v=2", "-logtostderr", "-restartDnsmasq=true",
                             "-kubednsZones=clusterset.local,slice.local",
                             "-dnsmasqExec=" + os.path.join(BIN, "frontend-cache")],
                cache_args=CACHE_ARGS, ports=POD_PORTS, config=config)
        except Exception:
            self.unbound.stop()
            self.nsd.stop()
            raise

    def stub_domains(self, domains):
        servers = {"example.test": self.nsd.port, "big.test": self.nsd.port,
                   "other.test": self.unbound.port}
        stubs = {d: ["127.0.0.1:%d" % servers[d]] for d in domains}
        return {"stubDomains": json.dumps(stubs)}

    def objects_file(self):
        """The conformance objects and the multicluster ones, in one List."""
        items = []
        for name in ("objects.json", "multicluster_objects.json"):
            with open(os.path.join(ROOT, "test", "conformance", name)) as f:
                items += json.load(f)["items"]
        path = os.path.join(self.workdir, "objects.json")
        with open(path, "w") as f:
            json.dump({"apiVersion": "v1", "kind": "List", "items": items}, f)
        return path

    def cache_pid(self):
        """frontend-cache: the nanny's child."""
        return self.nanny.child()

    def stop(self):
        super().stop()
        self.unbound.stop()
        self.nsd.stop()


def getent(database, name):
    run = subprocess.run(["getent", database, name], capture_output=True, text=True,
                         timeout=30)
    return sorted({line.split()[0] for line in run.stdout.splitlines() if line.strip()})


def kubedns_addresses(name, qtype="A"):
    return sorted(harness.dig(10053, name, qtype).rdatas(qtype))


def kubedns_all_addresses(name):
    """A and AAAA: `getent hosts` prints one address, of either family."""
    return sorted(set(kubedns_addresses(name)) | set(kubedns_addresses(name, "AAAA")))


# ---------------------------------------------------------------------------------------

def test_libc_resolver(pod):
    p = []
    cases = [
        ("hosts", "kubernetes", kubedns_all_addresses("kubernetes.default.svc.cluster.local")),
        ("hosts", "kubernetes.default",
         kubedns_all_addresses("kubernetes.default.svc.cluster.local")),
        ("ahosts", "headless", kubedns_all_addresses("headless.default.svc.cluster.local")),
        ("hosts", "my-pet.headless",
         kubedns_all_addresses("my-pet.headless.default.svc.cluster.local")),
        ("ahosts", "www.example.test", ["192.0.2.10", "192.0.2.11", "2001:db8::10"]),
        # The multicluster zones, through frontend-cache's routes the nanny generated.
        ("hosts", "web.shop.svc.clusterset.local", ["10.42.0.10", "fd00:42::10"]),
        ("ahosts", "db.shop.svc.clusterset.local", ["10.1.0.5", "10.1.0.6", "10.2.0.5",
                                                    "fd00:2::5"]),
        ("ahosts", "db-0.west.db.shop.svc.clusterset.local", ["10.2.0.5", "fd00:2::5"]),
        ("ahosts", "iperf-server.iperf.svc.slice.local", ["10.1.1.5", "10.1.2.7", "fd00:1::6"]),
        ("hosts", "iperf.demo.slice.local", ["10.1.1.5", "10.1.2.7", "fd00:1::6"]),
    ]
    for database, name, want in cases:
        if not want:
            p.append("%s: kubedns itself has no answer to compare with" % name)
            continue
        got = getent(database, name)
        if database == "hosts":
            ok = len(got) == 1 and got[0] in want
        else:
            ok = got == sorted(want)
        if not ok:
            p.append("getent %s %s: %s, want %s" % (database, name, got, want))
    return p


def test_dig_search_srv_and_ptr(pod):
    p = []
    run = subprocess.run(["dig", "+search", "+short", "_https._tcp.kubernetes", "SRV"],
                         capture_output=True, text=True, timeout=30)
    if "kubernetes.default.svc.cluster.local." not in run.stdout:
        p.append("dig +search _https._tcp.kubernetes SRV: %r" % run.stdout)
    run = subprocess.run(["dig", "+short", "-x", "10.96.0.1"], capture_output=True, text=True,
                         timeout=30)
    if run.stdout.strip() != "kubernetes.default.svc.cluster.local.":
        p.append("dig -x 10.96.0.1: %r" % run.stdout)
    return p


def test_stub_domain_added_by_configmap(pod):
    p = []
    if pod.answers("www.other.test"):
        p.append("www.other.test answered before its stub domain exists")
    start = time.monotonic()
    pod.config.publish(pod.stub_domains(["example.test", "other.test"]))
    took = harness.time_until(lambda: pod.answers("www.other.test"), 10, 0.02)
    if took is None:
        p.append("www.other.test not answered after the ConfigMap gained other.test")
    else:
        measured("ConfigMap swap to a new stub domain answering", "%.0f ms" % (took * 1000))
        if time.monotonic() - start > 1.5:
            p.append("the change took %.2f s (want within about 1 s)" % took)
    if not pod.answers("www.example.test"):
        p.append("www.example.test stopped answering after the change")
    # An invalid update is ignored: the old config keeps serving, once both readers
    # (kubedns and the nanny) have logged that they rejected it.
    rejected = (pod.kubedns.log().count("invalid configuration rejected"),
                pod.nanny.log().count("rejected"))
    pod.config.publish({"stubDomains": '{"bad domain!": ["127.0.0.1"]}'})
    if not harness.wait_until(lambda: pod.kubedns.log().count(
            "invalid configuration rejected") > rejected[0] and pod.nanny.log().count(
            "rejected") > rejected[1], 15):
        p.append("the invalid ConfigMap was not rejected by both kubedns and the nanny")
    if not pod.answers("www.other.test") or not pod.answers("www.example.test"):
        p.append("an invalid ConfigMap broke the running stub domains")
    return p


def test_configmap_edits_under_load(pod):
    p = []
    queries = os.path.join(pod.workdir, "queries.txt")
    with open(queries, "w") as f:
        for name in ("kubernetes.default.svc.cluster.local A", "www.example.test A",
                     "headless.default.svc.cluster.local A", "mail.example.test A",
                     "kube-dns.kube-system.svc.cluster.local A"):
            f.write(name + "\n")
    duration = 8
    perf = subprocess.Popen(
        ["dnsperf", "-s", "127.0.0.1", "-p", "53", "-d", queries, "-l", str(duration),
         "-Q", "5000", "-c", "4", "-t", "2"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
        text=True)
    changes = 0
    time.sleep(0.5)  # pacing, not a wait: the load runs before the first change
    while perf.poll() is None and changes < 20:
        domains = ["example.test"] + (["other.test"] if changes % 2 == 0 else [])
        pod.config.publish(pod.stub_domains(domains))
        changes += 1
        time.sleep(0.3)  # pacing: about 20 changes spread over the load
    out, _ = perf.communicate(timeout=duration + 30)
    pod.config.publish(pod.stub_domains(["example.test", "other.test"]))
    result = harness.parse_dnsperf(out)
    sent, completed, lost = (int(result[key] or 0) for key in ("sent", "completed", "lost"))
    rcodes = result["codes"]
    measured("load during %d ConfigMap changes" % changes,
             "%d sent, %d completed, %d lost, rcodes %s" % (sent, completed, lost, rcodes))
    if changes < 20:
        p.append("only %d ConfigMap changes happened during the load" % changes)
    if sent == 0 or lost != 0 or set(rcodes) != {"NOERROR"}:
        p.append("queries failed during ConfigMap edits: sent %d, lost %d, rcodes %s" %
                 (sent, lost, rcodes))
    return p


def udp_port_free(port):
    """Whether nothing holds UDP 127.0.0.1:`port` (a plain bind succeeds)."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        try:
            s.bind(("127.0.0.1", port))
            return True
        except OSError:
            return False


def test_kill_each_process(pod):
    p = []
    name = "kubernetes.default.svc.cluster.local"
    # frontend-cache: the nanny restarts it on the sockets it holds.
    pid = pod.cache_pid()
    if pid is None:
        return ["no frontend-cache under the nanny"]
    os.kill(pid, signal.SIGKILL)
    took = harness.time_until(lambda: pod.cache_pid() not in (None, pid) and pod.answers(name), 10)
    if took is None:
        p.append("no answers after kill -9 of frontend-cache")
    else:
        measured("kill -9 frontend-cache -> answering again", "%.0f ms" % (took * 1000))
    # kubedns: the sidecar's kubedns health turns red, the cache keeps answering what it
    # holds, and after a restart (the kubelet's job) health is green again.
    os.kill(pod.kubedns.pid, signal.SIGKILL)
    pod.kubedns.wait(10)
    red = harness.time_until(
        lambda: harness.http_status(10054, "/healthcheck/kubedns") == 503, 10, 0.05)
    if red is None:
        p.append("/healthcheck/kubedns stayed 200 with kubedns down")
    else:
        measured("kubedns down -> /healthcheck/kubedns 503", "%.1f s" % red)
    if not pod.answers(name):
        p.append("a cached cluster name was not answered while kubedns was down")
    pod.kubedns.stop()
    pod.start_kubedns()
    green = harness.time_until(
        lambda: harness.http_status(10054, "/healthcheck/kubedns") == 200, 10, 0.05)
    if green is None:
        p.append("/healthcheck/kubedns did not turn 200 after kubedns came back")
    else:
        measured("kubedns back -> /healthcheck/kubedns 200", "%.1f s" % green)
    # The sidecar: DNS does not notice; a new one is healthy.
    os.kill(pod.sidecar.pid, signal.SIGKILL)
    pod.sidecar.wait(10)
    if not pod.answers(name):
        p.append("DNS failed while the sidecar was down")
    pod.sidecar.stop()
    pod.start_sidecar()
    # The nanny: a container restart (the kubelet kills what is left of the container and
    # starts it again); answers resume once the new nanny's child serves.
    os.kill(pod.nanny.pid, signal.SIGKILL)
    pod.nanny.stop()
    subprocess.run(["pkill", "-9", "-f", os.path.join(BIN, "frontend-cache")])
    # The kubelet starts the container again once its processes are gone. A SIGKILL is
    # sent, not waited for: the killed child's last threads still hold the port for a few
    # milliseconds after it shows as defunct (and pgrep no longer finds it).
    if not harness.wait_until(lambda: udp_port_free(pod.nanny.port), 10):
        p.append("port %d still held 10 s after the kill -9" % pod.nanny.port)
    start = time.monotonic()
    pod.start_nanny()
    measured("cache container restart (nanny and frontend-cache) -> answering",
             "%.0f ms" % ((time.monotonic() - start) * 1000))
    return p


TESTS = [test_libc_resolver, test_dig_search_srv_and_ptr, test_stub_domain_added_by_configmap,
         test_configmap_edits_under_load, test_kill_each_process]


def run_inside(tests=None, resolv_conf=POD_RESOLV_CONF, make_pod=Pod):
    """Inside the namespaces: `resolv_conf` as /etc/resolv.conf, the pod from make_pod(workdir),
    then `tests` (default: this suite's)."""
    subprocess.run(["ip", "link", "set", "lo", "up"], check=True)
    workdirs = []

    def setup(workdir, owned):
        workdirs.append(workdir)
        resolv = os.path.join(workdir, "resolv.conf")
        with open(resolv, "w") as f:
            f.write(resolv_conf)
        subprocess.run(["mount", "--bind", resolv, "/etc/resolv.conf"], check=True)
        pod = make_pod(workdir)
        owned.append(pod)
        return pod

    def report(pod, failed):
        for name in ("kubedns", "nanny", "sidecar") if failed and workdirs else ():
            path = os.path.join(workdirs[0], name + ".log")
            if os.path.exists(path):
                with open(path, errors="replace") as f:
                    print("--- %s log (tail) ---\n%s" % (name, f.read()[-2500:]))
        harness.print_figures("measured:", MEASURED, 60)

    return harness.main("kdns-pod-e2e-", TESTS if tests is None else tests, setup=setup,
                        report=report)


def main(script=__file__, inside=run_inside):
    """Runs `script` again inside a new network and mount namespace, where it calls `inside`."""
    if os.environ.get(INSIDE):
        return inside()
    if os.geteuid() != 0 or shutil.which("unshare") is None:
        print("%s: needs root and unshare(1) for its namespaces" % os.path.basename(script))
        return harness.finish(0, 1)
    env = dict(os.environ, **{INSIDE: "1", "KDNS_BIN": BIN})
    return subprocess.run(["unshare", "--net", "--mount", "--propagation", "private", "--",
                           sys.executable, os.path.abspath(script)], env=env).returncode


if __name__ == "__main__":
    sys.exit(main())
