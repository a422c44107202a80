#!/usr/bin/python3
"""Driver of negcache_bench.sh: server CPU per query of a pod on the ndots mix, as the
manifests configure the pod (the cluster domain's negative answers cached, kept exact by
kubedns's NOTIFY and the SOA poll) and as kube-dns's manifests do (--no-negcache: every
search-path miss goes to kubedns, every time).

PODS pods (8), each in a namespace of its own (search app<i>.svc.cluster.local
svc.cluster.local cluster.local, ndots:5), each a thread asking one lookup at a time, look up, as glibc's getent ahosts does (A and AAAA per
candidate, first with records wins; autopath_bench.py's Walker), short names of Services in
other namespaces (kubernetes.default, kube-dns.kube-system, dual.default: one miss in its
own namespace first) and external names (www.example.test, mail.example.test: three
cluster misses first), in turn, LOOKUPS times: the steady state, where everything the
cache may keep is cached. The servers are the real ones, one serving thread each, started
afresh per configuration: frontend-cache (cluster.local to kubedns, example.test to NSD)
and kubedns (the conformance objects). Printed: queries per lookup, queries kubedns
answered per lookup, CPU per query of kubedns and frontend-cache together (utime+stime
from /proc/PID/stat over the lookups), and the ratio. The issue's target: at least 2.5x less
CPU per query as the manifests configure it. Figures only: nothing fails on them.
"""
import os
import shutil
import sys
import tempfile
import threading

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import autopath_bench as ab  # noqa: E402  (sets KDNS_BIN and the e2e path)
import harness  # noqa: E402
import servers  # noqa: E402

LOOKUPS = int(os.environ.get("LOOKUPS", "10000"))  # enough CPU ticks (10 ms) to count
# Pods asking at once (each a thread with its own socket, one lookup at a time), so the
# servers see concurrent queries as in a cluster rather than one round trip at a time.
PODS = int(os.environ.get("PODS", "8"))
NAMES = ["kubernetes.default", "www.example.test", "kube-dns.kube-system",
         "mail.example.test", "dual.default"]


class PodWalker(ab.Walker):
    """A pod of namespace `namespace`: its search list is its own."""

    def __init__(self, port, namespace):
        super().__init__(port)
        self.search = [namespace + ".svc.cluster.local", "svc.cluster.local", "cluster.local"]

    def lookup(self, name):
        for suffix in self.search:
            if self.ask_both(name + "." + suffix):
                return True
        return self.ask_both(name)


def kubedns_queries(kubedns):
    return kubedns.metric("kdns_kubedns_queries_total") or 0


def measure(workdir, nsd, exact):
    """(queries per lookup, kubedns queries per lookup, CPU us per query)."""
    label = "manifests" if exact else "kube-dns"
    cache_port = harness.free_port()
    flags = ["--objects-file=" + os.path.join(harness.ROOT, "test", "conformance",
                                              "objects.json"),
             "--nameservers=127.0.0.1:%d" % nsd.port]
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
        walker = PodWalker(cache.port, "app0")
        for name in NAMES:  # warm: everything the cache may keep is cached
            if not walker.lookup(name):
                raise RuntimeError("%s does not resolve" % name)
        walkers = [PodWalker(cache.port, "app%d" % i) for i in range(PODS)]
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

        asked_before = kubedns_queries(kubedns)
        pids = (kubedns.process.pid, cache.process.pid)
        before = sum(ab.cpu_seconds(pid) for pid in pids)
        threads = [threading.Thread(target=run, args=(w, LOOKUPS // PODS)) for w in walkers]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        used = sum(ab.cpu_seconds(pid) for pid in pids) - before
        if failures:
            raise RuntimeError(failures[0])
        asked = kubedns_queries(kubedns) - asked_before
        queries = sum(w.queries for w in walkers)
        return queries / LOOKUPS, asked / LOOKUPS, used * 1e6 / queries
    finally:
        if cache is not None:
            cache.stop()
        kubedns.stop()


def main():
    workdir = tempfile.mkdtemp(prefix="kdns-negcache-bench-")
    nsd = None
    try:
        nsd = servers.Nsd(workdir)
        print("negcache_bench: %d lookups per figure by %d pods on the ndots mix (%s; "
              "A+AAAA per suffix, ndots:5); CPU of kubedns + frontend-cache, one thread each" %
              (LOOKUPS, PODS, ", ".join(NAMES)))
        results = {}
        for exact in (True, False):
            results[exact] = measure(workdir, nsd, exact)
            queries, asked, micros = results[exact]
            print("  %-44s %4.1f queries/lookup, %4.1f to kubedns, %6.2f us CPU per query" %
                  ("as the manifests (cluster negatives cached):" if exact
                   else "as kube-dns (--no-negcache):", queries, asked, micros))
        ratio = results[False][2] / results[True][2] if results[True][2] else float("nan")
        print("  CPU per query, kube-dns's configuration / the manifests': %.2fx "
              "(issue 38's target: at least 2.5x)" % ratio)
        return 0
    finally:
        if nsd is not None:
            nsd.stop()
        if os.environ.get("KEEP_TMP") == "1":
            print("kept " + workdir)
        else:
            shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
