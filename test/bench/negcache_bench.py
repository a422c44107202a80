#!/usr/bin/python3
"""Driver of negcache_bench.sh: server CPU per query of a pod on the ndots mix, as the
manifests configure the pod (the cluster domain's negative answers cached, kept exact by
kubedns's NOTIFY and the SOA poll) and as kube-dns's manifests do (--no-negcache: every
search-path miss goes to kubedns, every time).

The servers are the real ones, one serving thread each, started afresh per configuration:
frontend-cache (cluster.local to kubedns, example.test to NSD as a stub domain, whose
negative answers stay uncached in both configurations, as the manifests' flags say) and
kubedns (the conformance objects plus SERVICES generated Services (10,000) with 15 endpoints
each, the 5000-node profile of kubedns_scale_bench.py). The mix: PODS pods (8), each in a
namespace of its own (search app<i>.svc.cluster.local svc.cluster.local cluster.local,
ndots:5), look up, as glibc's getent ahosts does (A and AAAA per candidate, first with
records wins; autopath_bench.py's Walker), short names of Services in other namespaces
(kubernetes.default, kube-dns.kube-system, dual.default: one miss in its own namespace
first) and external names (www.example.test, mail.example.test: three cluster misses first).
Everything the cache may keep is cached first: the steady state.

Two loads, each CPU per query of kubedns and frontend-cache together (utime+stime from
/proc/PID/stat over the run):
  pods    the PODS pods as threads of this script, each one lookup at a time (closed loop,
          LOOKUPS lookups in all); also counts queries per lookup and how many reach kubedns.
  stream  the exact queries those pods sent (one pass of the mix per pod, recorded), offered
          by dnsperf for DURATION s at each of RATES queries/s (a node's pods ask at their
          own pace, not the server's) and as fast as it goes (0 in RATES).
The issue's target (at least 2.5x less CPU per query as the manifests configure the pod) is
about the loads a node sees: the fixed rates. As fast as it goes, each query costs little
but its packets (about 90% of the CPU is the kernel's UDP path), and a search-path miss
costs three more packets than a hit (to kubedns, its answer, and kubedns's own pair), so the
ratio there is bounded near 1 + 2 x (the share of queries that reach kubedns); at a fixed
rate the wake-ups of the extra hops count too. Figures only: nothing fails on them.
"""
import json
import os
import sys
import threading

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import autopath_bench as ab  # noqa: E402  (sets KDNS_BIN and the e2e path)
import harness  # noqa: E402
import kubedns_scale_bench  # noqa: E402
import servers  # noqa: E402
from kubedns_api_bench_lib import bench_workdir, env_int, run_dnsperf  # noqa: E402

LOOKUPS = env_int("LOOKUPS", 10000)  # enough CPU ticks (10 ms) to count
# Pods asking at once (each a thread with its own socket, one lookup at a time), so the
# servers see concurrent queries as in a cluster rather than one round trip at a time.
PODS = env_int("PODS", 8)
SERVICES = env_int("SERVICES", 10000)
DURATION = env_int("DURATION", 4)
RATES = [int(r) for r in os.environ.get("RATES", "5000 20000 0").split()]
NAMES = ["kubernetes.default", "www.example.test", "kube-dns.kube-system",
         "mail.example.test", "dual.default"]


class PodWalker(ab.Walker):
    """A pod of namespace `namespace`: its search list is its own. Records what it asks
    while `recording` is set."""

    def __init__(self, port, namespace):
        super().__init__(port)
        self.search = [namespace + ".svc.cluster.local", "svc.cluster.local", "cluster.local"]
        self.recording = None

    def ask_both(self, name):
        if self.recording is not None:
            self.recording += [(name, "A"), (name, "AAAA")]
        return super().ask_both(name)

    def lookup(self, name):
        for suffix in self.search:
            if self.ask_both(name + "." + suffix):
                return True
        return self.ask_both(name)


def write_objects(workdir):
    """The conformance objects and SERVICES generated Services in one objects file."""
    generated = os.path.join(workdir, "generated.json")
    kubedns_scale_bench.write_objects(generated, SERVICES, 100, 15)
    with open(os.path.join(harness.ROOT, "test", "conformance", "objects.json")) as f:
        objects = json.load(f)
    with open(generated) as f:
        objects["items"] += json.load(f)["items"]
    os.remove(generated)
    path = os.path.join(workdir, "objects.json")
    with open(path, "w") as f:
        json.dump(objects, f, separators=(",", ":"))
    return path


def cpu_of(pids):
    return sum(ab.cpu_seconds(pid) for pid in pids)


def pods_load(cache, kubedns, pids):
    """The closed loop: (queries per lookup, kubedns queries per lookup, CPU us per query,
    the queries of one pass of the mix per pod)."""
    walkers = [PodWalker(cache.port, "app%d" % i) for i in range(PODS)]
    stream = []
    for walker in walkers:  # one recorded pass per pod, which also warms its names
        walker.recording = stream
        for name in NAMES:
            if not walker.lookup(name):
                raise RuntimeError("%s does not resolve" % name)
        walker.recording = None
        walker.queries = 0
    failures = []

    def run(walker, count):
        try:
            # Each pod starts at its own place in the mix, so that pods seldom ask the
            # same name at the same moment (which the cache would coalesce).
            start = walkers.index(walker)
            for i in range(start, start + count):
                if not walker.lookup(NAMES[i % len(NAMES)]):
                    failures.append("%s does not resolve" % NAMES[i % len(NAMES)])
                    return
        except RuntimeError as e:
            failures.append(str(e))

    asked_before = kubedns.metric("kdns_kubedns_queries_total") or 0
    before = cpu_of(pids)
    threads = [threading.Thread(target=run, args=(w, LOOKUPS // PODS)) for w in walkers]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    used = cpu_of(pids) - before
    if failures:
        raise RuntimeError(failures[0])
    asked = (kubedns.metric("kdns_kubedns_queries_total") or 0) - asked_before
    queries = sum(w.queries for w in walkers)
    return queries / LOOKUPS, asked / LOOKUPS, used * 1e6 / queries, stream


def stream_load(workdir, cache, pids, stream, rate):
    """dnsperf offering the recorded stream: (CPU us per query, queries/s, lost)."""
    path = os.path.join(workdir, "stream.txt")
    with open(path, "w") as f:
        f.writelines("%s %s\n" % query for query in stream)
    before = cpu_of(pids)
    result = run_dnsperf(cache.port, path, DURATION, PODS, rate)
    used = cpu_of(pids) - before
    completed = result["completed"] or 0
    return (used * 1e6 / completed if completed else float("nan"), result["qps"],
            result["lost"])


def measure(workdir, nsd, objects, exact):
    """{"pods": (...), rate: (...)} for one configuration."""
    label = "manifests" if exact else "kube-dns"
    cache_port = harness.free_port()
    flags = ["--objects-file=" + objects, "--nameservers=127.0.0.1:%d" % nsd.port]
    if exact:
        flags.append("--notify=127.0.0.1:%d" % cache_port)
    kubedns = servers.Kubedns(workdir, "kubedns-" + label, *flags, threads=1)
    cache = None
    try:
        cache_flags = ["--no-negcache", "--cache-size=1000",
                       "--server=/cluster.local/127.0.0.1#%d" % kubedns.port,
                       "--server=/example.test/127.0.0.1#%d" % nsd.port]
        if exact:
            cache_flags.append("--serial-zones=cluster.local")
        cache = servers.FrontendCache(workdir, "cache-" + label, *cache_flags, port=cache_port,
                                      threads=1, metrics=False)
        warm = PodWalker(cache.port, "app0")
        for name in NAMES:  # warm: everything the cache may keep is cached
            if not warm.lookup(name):
                raise RuntimeError("%s does not resolve" % name)
        pids = (kubedns.process.pid, cache.process.pid)
        results = {"pods": pods_load(cache, kubedns, pids)}
        stream = results["pods"][3]
        for rate in RATES:
            results[rate] = stream_load(workdir, cache, pids, stream, rate)
        return results
    finally:
        if cache is not None:
            cache.stop()
        kubedns.stop()


def ratio(slow, fast):
    return slow / fast if fast else float("nan")


def main():
    with bench_workdir("kdns-negcache-bench-") as workdir:
        nsd = None
        try:
            objects = write_objects(workdir)
            nsd = servers.Nsd(workdir)
            print("negcache_bench: the ndots mix (%s; A+AAAA per suffix, ndots:5) from %d pods; "
                  "kubedns holds the conformance objects and %d Services x 15 endpoints; CPU of "
                  "kubedns + frontend-cache, one thread each" % (", ".join(NAMES), PODS, SERVICES))
            manifests = measure(workdir, nsd, objects, True)
            kube_dns = measure(workdir, nsd, objects, False)
            print("  %-46s %12s %12s %7s" % ("", "manifests", "--no-negcache", "ratio"))
            for i, what in ((0, "queries per lookup"), (1, "queries reaching kubedns per lookup")):
                print("  %-46s %12.1f %12.1f" % (what, manifests["pods"][i], kube_dns["pods"][i]))
            print("  %-46s %12.2f %12.2f %6.2fx" % (
                "CPU us/query, %d pods one lookup at a time" % PODS, manifests["pods"][2],
                kube_dns["pods"][2], ratio(kube_dns["pods"][2], manifests["pods"][2])))
            for rate in RATES:
                (fast, fast_qps, fast_lost), (slow, slow_qps, slow_lost) = \
                    manifests[rate], kube_dns[rate]
                what = ("CPU us/query, the stream at %d q/s" % rate if rate else
                        "CPU us/query, the stream as fast as it goes")
                note = ""
                if rate and min(fast_qps, slow_qps) < 0.95 * rate:
                    note = "  (short of the rate: %.0f / %.0f q/s)" % (fast_qps, slow_qps)
                elif not rate:
                    note = "  (%.0f / %.0f q/s)" % (fast_qps, slow_qps)
                if fast_lost or slow_lost:
                    note += "  (lost %s / %s)" % (fast_lost, slow_lost)
                print("  %-46s %12.2f %12.2f %6.2fx%s" % (what, fast, slow, ratio(slow, fast),
                                                          note))
            print("  issue 38's target: at least 2.5x at the fixed rates (a node's load); as fast "
                  "as it goes the packets bound it (see negcache_bench.py)")
            return 0
        finally:
            if nsd is not None:
                nsd.stop()


if __name__ == "__main__":
    sys.exit(main())
