#!/usr/bin/python3
"""--loadbalance end to end (common/dns/loadbalance.h), asked with real dig.

kubedns answers a headless Service of three IPv4 and two IPv6 endpoints (an objects file):
with --loadbalance=round_robin each answer puts the next address first, every address still
there; by default (off, as kube-dns's kubedns) the order never changes. frontend-cache's
cache hits rotate by default (round_robin, as dnsmasq's cache in kube-dns's pod did) while the
miss that filled the entry keeps the upstream's order; a CNAME chain from NSD keeps its CNAMEs
first, in chain order, while the addresses behind it take turns; --no-round-robin (dnsmasq's
switch) and --loadbalance=off keep every hit in the upstream's order. A hosts file's name
with three addresses takes turns the same way. Debian's dnsmasq, asked the same way, rotates
its cache hits and its hosts answers too: the default we copy.

The servers run one DNS thread each: the turn is a counter per thread, so with one thread
answering, successive answers take successive turns.

Closes with `N passed, M failed`. KDNS_ONLY=substring runs the matching tests only;
KDNS_KEEP_TMP=1 keeps the temporary directory (logs of every process) after a failure.
"""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
import servers  # noqa: E402

NAME = "web.default.svc.cluster.local."
IPV4 = ["10.244.1.1", "10.244.1.2", "10.244.1.3"]
IPV6 = ["fd00::1", "fd00::2"]
CHAIN = "chain.example.test."  # chain -> alias -> www, two A records (servers.default_zones)
HOSTS_IPS = ["10.9.0.1", "10.9.0.2", "10.9.0.3"]


def objects():
    def slice_(name, family, addresses):
        return {"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
                "metadata": {"name": name, "namespace": "default",
                             "labels": {"kubernetes.io/service-name": "web"}},
                "addressType": family,
                "endpoints": [{"addresses": [a], "conditions": {"ready": True}}
                              for a in addresses],
                "ports": [{"name": "http", "port": 80, "protocol": "TCP"}]}
    return {"apiVersion": "v1", "kind": "List", "items": [
        {"apiVersion": "v1", "kind": "Service",
         "metadata": {"name": "web", "namespace": "default"},
         "spec": {"clusterIP": "None", "clusterIPs": ["None"],
                  "ports": [{"name": "http", "port": 80, "protocol": "TCP"}]}},
        slice_("web-v4", "IPv4", IPV4), slice_("web-v6", "IPv6", IPV6)]}


def start_kubedns(workdir, name, *flags):
    path = os.path.join(workdir, "objects.json")
    with open(path, "w") as f:
        json.dump(objects(), f)
    resolv = os.path.join(workdir, "resolv.conf")
    with open(resolv, "w") as f:
        f.write("# none: nothing is forwarded here\n")
    return servers.Kubedns(workdir, name, "--objects-file=" + path, "--resolv-conf=" + resolv,
                           *flags, threads=1)


def addresses(got, rtype):
    return [r.rdata for r in got.answer if r.type == rtype]


def orders(ask, name, rtype, want, times):
    """The address order of `times` answers to `name`; problems when one is not NOERROR or
    lacks one of `want` (every address must be in every answer)."""
    seen, p = [], []
    for _ in range(times):
        got = ask(name, rtype)
        order = addresses(got, rtype)
        if got.status != "NOERROR" or sorted(order) != sorted(want):
            p.append("%s %s: %s, want NOERROR with %s" % (name, rtype, got, want))
        seen.append(order)
    return seen, p


def rotations(first, count):
    """`first` rotated left by 0, 1, ... count-1 places."""
    return [first[i % len(first):] + first[:i % len(first)] for i in range(count)]


def test_kubedns_round_robin_rotates_headless_answers(env):
    kd = start_kubedns(env["workdir"], "kubedns-rr", "--loadbalance=round_robin")
    try:
        ask = lambda name, rtype: harness.dig(kd.port, name, rtype)  # noqa: E731
        p = []
        for rtype, want in (("A", IPV4), ("AAAA", IPV6)):
            seen, problems = orders(ask, NAME, rtype, want, 2 * len(want))
            p += problems
            if seen and seen != rotations(seen[0], len(seen)):
                p.append("%s answers did not rotate one place each: %s" % (rtype, seen))
            if len({tuple(o[:1]) for o in seen}) != len(want):
                p.append("not every %s address came first: %s" % (rtype, seen))
        return p
    finally:
        kd.stop()


def test_kubedns_keeps_the_records_order_by_default(env):
    kd = start_kubedns(env["workdir"], "kubedns-off")
    try:
        ask = lambda name, rtype: harness.dig(kd.port, name, rtype)  # noqa: E731
        seen, p = orders(ask, NAME, "A", IPV4, 4)
        if len({tuple(o) for o in seen}) != 1:
            p.append("the order changed without --loadbalance: %s" % seen)
        return p
    finally:
        kd.stop()


def hits_through_frontend_cache(env, name, *flags):
    """Answers to `name` through frontend-cache (`flags`) in front of kubedns (off) for the
    cluster and NSD for the rest: the miss's order, the hits' orders, problems."""
    kd = start_kubedns(env["workdir"], "kubedns-" + name)
    fe = None
    try:
        fe = servers.FrontendCache(env["workdir"], "fe-" + name, *flags,
                                   "--server=/cluster.local/127.0.0.1#%d" % kd.port,
                                   "--server=" + env["nsd"].address, threads=1)
        miss, p = orders(fe.dig, NAME, "A", IPV4, 1)
        hits, problems = orders(fe.dig, NAME, "A", IPV4, 6)
        p += problems
        hits_metric = fe.metric("kdns_frontend_cache_hits_total")
        if hits_metric < 6:
            p.append("kdns_frontend_cache_hits_total = %s, want 6 or more" % hits_metric)
        return miss[0], hits, p
    finally:
        if fe:
            fe.stop()
        kd.stop()


def test_frontend_cache_hits_rotate_by_default(env):
    miss, hits, p = hits_through_frontend_cache(env, "rr")
    if hits != rotations(hits[0], len(hits)):
        p.append("cache hits did not rotate one place each: %s" % hits)
    if len({tuple(o[:1]) for o in hits}) != len(IPV4):
        p.append("not every address came first from the cache: %s" % hits)
    if sorted(miss) != sorted(IPV4):
        p.append("the miss answered %s" % miss)
    return p


def test_frontend_cache_keeps_order_with_no_round_robin(env):
    p = []
    for flag in ("--no-round-robin", "--loadbalance=off"):
        miss, hits, problems = hits_through_frontend_cache(env, flag.strip("-").replace("=", "-"),
                                                           flag)
        p += problems
        if any(order != miss for order in hits):
            p.append("%s: cache hits changed the upstream's order %s: %s" % (flag, miss, hits))
    return p


def test_frontend_cache_keeps_cname_chains_first(env):
    fe = servers.FrontendCache(env["workdir"], "fe-chain", "--server=" + env["nsd"].address,
                               threads=1)
    try:
        p, firsts = [], set()
        for _ in range(5):
            got = fe.dig(CHAIN)
            types = [r.type for r in got.answer]
            chain = [(r.name, r.rdata) for r in got.answer if r.type == "CNAME"]
            if types[:2] != ["CNAME", "CNAME"] or chain != [
                    (CHAIN, "alias.example.test."), ("alias.example.test.", "www.example.test.")]:
                p.append("%s: the CNAME chain is not first and in order: %s" % (CHAIN, got))
            if sorted(addresses(got, "A")) != ["192.0.2.10", "192.0.2.11"]:
                p.append("%s: addresses %s" % (CHAIN, addresses(got, "A")))
            firsts.add(tuple(addresses(got, "A")[:1]))
        if len(firsts) != 2:
            p.append("the addresses behind the chain never took turns: %s" % firsts)
        return p
    finally:
        fe.stop()


def test_hosts_file_answers_rotate_as_dnsmasqs(env):
    """A name with three addresses in an --addn-hosts file: frontend-cache's answers take
    turns by default and keep the file's order with --no-round-robin; Debian's dnsmasq, given
    the same file, takes turns too (the behaviour we copy)."""
    hosts = os.path.join(env["workdir"], "rotating.hosts")
    with open(hosts, "w") as f:
        f.write("".join("%s hosts-rr.test\n" % ip for ip in HOSTS_IPS))
    p = []
    for flags, rotates in (((), True), (("--no-round-robin",), False)):
        fe = servers.FrontendCache(env["workdir"], "fe-hosts" + "".join(flags), "--no-hosts",
                                   "--addn-hosts=" + hosts, *flags, threads=1)
        try:
            ask = lambda name, rtype: harness.dig(fe.port, name, rtype)  # noqa: E731
            seen, problems = orders(ask, "hosts-rr.test.", "A", HOSTS_IPS, 6)
            p += problems
            if rotates and seen != rotations(seen[0], len(seen)):
                p.append("hosts answers did not rotate one place each: %s" % seen)
            if not rotates and any(order != HOSTS_IPS for order in seen):
                p.append("--no-round-robin: hosts answers left the file's order: %s" % seen)
        finally:
            fe.stop()
    dm = servers.Dnsmasq(env["workdir"], "dnsmasq-hosts", "--addn-hosts=" + hosts)
    try:
        ask = lambda name, rtype: harness.dig(dm.port, name, rtype)  # noqa: E731
        seen, problems = orders(ask, "hosts-rr.test.", "A", HOSTS_IPS, 6)
        p += problems
        if len({tuple(o[:1]) for o in seen}) < 2:
            p.append("dnsmasq's hosts answers came in one order: %s" % seen)
    finally:
        dm.stop()
    return p


def test_dnsmasq_rotates_its_cache_hits_too(env):
    """The evidence for frontend-cache's default: Debian's dnsmasq (without --no-round-robin)
    answers cache hits in turns; with it, in the upstream's order."""
    kd = start_kubedns(env["workdir"], "kubedns-dnsmasq")
    p = []
    try:
        for flags, rotates in (((), True), (("--no-round-robin",), False)):
            dm = servers.Dnsmasq(env["workdir"], "dnsmasq" + "".join(flags),
                                 "--server=127.0.0.1#%d" % kd.port, *flags)
            try:
                ask = lambda name, rtype: harness.dig(dm.port, name, rtype)  # noqa: E731
                _, problems = orders(ask, NAME, "A", IPV4, 1)
                hits, more = orders(ask, NAME, "A", IPV4, 6)
                p += problems + more
                if (len({tuple(o[:1]) for o in hits}) > 1) != rotates:
                    p.append("dnsmasq %s: hits %s, want %s" % (
                        " ".join(flags), hits, "rotated" if rotates else "in one order"))
            finally:
                dm.stop()
        return p
    finally:
        kd.stop()


TESTS = [test_kubedns_round_robin_rotates_headless_answers,
         test_kubedns_keeps_the_records_order_by_default,
         test_frontend_cache_hits_rotate_by_default,
         test_frontend_cache_keeps_order_with_no_round_robin,
         test_frontend_cache_keeps_cname_chains_first,
         test_hosts_file_answers_rotate_as_dnsmasqs,
         test_dnsmasq_rotates_its_cache_hits_too]


def setup(workdir, owned):
    return servers.start_nsd(workdir, owned)


def main():
    return harness.main("kdns-loadbalance-", TESTS,
                        tools=(os.path.join(harness.BIN, "frontend-cache"),
                               os.path.join(harness.BIN, "kubedns"), servers.NSD,
                               servers.DNSMASQ),
                        setup=setup)


if __name__ == "__main__":
    sys.exit(main())
