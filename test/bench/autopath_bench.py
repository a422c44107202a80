#!/usr/bin/python3
"""Driver of autopath_bench.sh: server CPU per external lookup of a pod, with and without
kubedns --autopath, kubedns and frontend-cache together.

A lookup is what glibc's `getent ahosts NAME` sends from a pod in `default` (search list
default.svc.cluster.local svc.cluster.local cluster.local, ndots:5): A and AAAA together
for each suffix in turn, then for the name itself, stopping at the first suffix that
answers with records. The client is this script (the same sequence, so that no namespace
is needed); the servers are the real ones: frontend-cache as the pod's nameserver
(--no-negcache, as the manifests run it; cluster.local to kubedns, example.test to NSD as a
stub domain) and kubedns (the conformance objects; NSD as its upstream), each with one
serving thread, started afresh for each mode. Two workloads per mode:
  hot   one popular name (www.example.test), asked LOOKUPS times: the steady state, where
        every answer the cache may keep is cached;
  cold  a new name every time (<n>.wild.example.test, a wildcard in NSD's zone): nothing
        cached.
Printed: queries the cache answered per lookup, and CPU per lookup of kubedns and
frontend-cache together (utime+stime of both processes from /proc/PID/stat, before and
after, over the lookups), then the with/without ratio. Figures only: nothing fails on them.
"""
import os
import random
import select
import socket
import struct
import sys
import time

BIN = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else "build/bin")
os.environ["KDNS_BIN"] = BIN
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "e2e"))
import dns_wire  # noqa: E402
import harness  # noqa: E402
import servers  # noqa: E402
from kubedns_api_bench_lib import bench_workdir  # noqa: E402

LOOKUPS = int(os.environ.get("LOOKUPS", "2000"))
SEARCH = ["default.svc.cluster.local", "svc.cluster.local", "cluster.local"]
TICKS = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid):
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICKS  # utime, stime


class Walker:
    """glibc's walk over one UDP socket: A and AAAA per candidate name, first with answers
    wins. Counts the queries it sent."""

    def __init__(self, port):
        self.port = port
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.sock.connect(("127.0.0.1", port))
        self.queries = 0

    def ask_both(self, name):
        """True when the A or AAAA answer of `name` has records."""
        pending = {}
        for qtype in ("A", "AAAA"):
            ident = random.randrange(65536)
            pending[ident] = qtype
            self.sock.send(dns_wire.build_query(name, qtype, ident=ident, edns=False))
            self.queries += 1
        found = False
        deadline = time.monotonic() + 5
        while pending:
            ready, _, _ = select.select([self.sock], [], [], max(0, deadline - time.monotonic()))
            if not ready:
                raise RuntimeError("no answer for %s within 5 s" % name)
            reply = self.sock.recv(65535)
            ident = struct.unpack("!H", reply[:2])[0]
            if pending.pop(ident, None) is None:
                continue  # a late reply of an earlier lookup
            msg = dns_wire.parse_message(reply)
            found = found or (msg["rcode"] == 0 and bool(msg["answers"]))
        return found

    def lookup(self, name):
        for suffix in SEARCH:
            if self.ask_both(name + "." + suffix):
                return True
        return self.ask_both(name)


def measure(workdir, nsd, autopath, names):
    """(queries per lookup, CPU microseconds per lookup) of the lookups of `names`."""
    flags = ["--objects-file=" + os.path.join(harness.ROOT, "test", "conformance",
                                              "objects.json"),
             "--nameservers=127.0.0.1:%d" % nsd.port]
    if autopath:
        flags += ["--autopath", "--autopath-search="]
    kubedns = servers.Kubedns(workdir, "kubedns-%s" % ("with" if autopath else "without"),
                              *flags, threads=1)
    cache = None
    try:
        cache = servers.FrontendCache(
            workdir, "cache-%s" % ("with" if autopath else "without"), "--no-negcache",
            "--cache-size=10000", "--server=/cluster.local/127.0.0.1#%d" % kubedns.port,
            "--server=/example.test/127.0.0.1#%d" % nsd.port, threads=1, metrics=False)
        walker = Walker(cache.port)
        if not walker.lookup(names[0]):  # warm: the popular name cached, paths exercised
            raise RuntimeError("%s does not resolve" % names[0])
        walker.queries = 0
        pids = (kubedns.process.pid, cache.process.pid)
        before = sum(cpu_seconds(pid) for pid in pids)
        for name in names:
            if not walker.lookup(name):
                raise RuntimeError("%s does not resolve" % name)
        used = sum(cpu_seconds(pid) for pid in pids) - before
        return walker.queries / len(names), used * 1e6 / len(names)
    finally:
        if cache is not None:
            cache.stop()
        kubedns.stop()


def main():
    with bench_workdir("kdns-autopath-bench-") as workdir:
        nsd = None
        try:
            nsd = servers.Nsd(workdir)
            print("autopath_bench: %d lookups per figure; a pod's getent ahosts (A+AAAA per "
                  "suffix, search list of %d, ndots:5); CPU of kubedns + frontend-cache, one "
                  "thread each" % (LOOKUPS, len(SEARCH)))
            for workload in ("hot", "cold"):
                results = {}
                for autopath in (False, True):
                    if workload == "hot":
                        names = ["www.example.test"] * LOOKUPS
                    else:
                        tag = "w" if autopath else "o"
                        names = ["%s%d.wild.example.test" % (tag, i) for i in range(LOOKUPS)]
                    results[autopath] = measure(workdir, nsd, autopath, names)
                    queries, micros = results[autopath]
                    print("  %-4s %-17s %4.1f queries at the cache, %7.1f us CPU per lookup" %
                          (workload, "with --autopath" if autopath else "without", queries,
                           micros))
                ratio = (results[True][1] / results[False][1] if results[False][1] else
                         float("nan"))
                print("  %-4s CPU ratio with/without: %.2f" % (workload, ratio))
            return 0
        finally:
            if nsd is not None:
                nsd.stop()


if __name__ == "__main__":
    sys.exit(main())
