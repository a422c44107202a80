#!/usr/bin/python3
"""Negative caching as the manifests configure it (issue 35, item 5): the kube-dns pod's
frontend-cache caches negative answers (NXDOMAIN, NODATA) for at most 30 s of TTL, as
CoreDNS's `cache 30`, where kube-dns passed --no-negcache; so does the node-local
component's node cache.

The rendered manifests are read as the kubelet runs them (manifests.py), and frontend-cache
($KDNS_BIN) runs with the dnsmasq container's own arguments, after `--`, changed only where
a test must (loopback and free ports instead of port 53 and 10056, a scripted fake upstream
instead of the node's resolv.conf). What the cache does is read from the answers' TTLs and
from the upstream's count of queries received, never from a clock:

  - an NXDOMAIN and a NODATA whose SOA says an hour are answered with TTL 30 at most, and
    the second query is answered from the cache, also with TTL 30 at most;
  - an NXDOMAIN without an SOA is cached too (for --neg-ttl, dnsmasq's meaning);
  - a positive answer keeps its own TTL (only negative answers are capped at 30 s);
  - with kube-dns's --no-negcache added (the flag the guide names), the second query goes
    upstream again.

Closes with `N passed, M failed`.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fake_upstream as fu  # noqa: E402
import harness  # noqa: E402
import kustomize  # noqa: E402
import manifests  # noqa: E402
import servers  # noqa: E402
from frontend_cache import expect, settled  # noqa: E402

# CoreDNS's `cache 30`: the most a negative answer is cached for, and told to clients.
NEGATIVE_CAP_S = 30
# What the fake upstream's SOA says (fake_upstream.py's default): far above the cap.
UPSTREAM_NEGATIVE_TTL_S = 3600
NODE_LOCAL = os.path.join(manifests.MANIFESTS, "components", "node-local")


def cache_args(r):
    """frontend-cache's arguments in the kube-dns pod: the dnsmasq container's after "--"."""
    container = r.containers_running("nanny")
    if len(container) != 1:
        raise AssertionError("want one container running the nanny, got %d" % len(container))
    _, child = manifests.split_nanny_args(r.argv(container[0]))
    return child


def node_cache_args():
    """frontend-cache's arguments in the node-local component's DaemonSet."""
    r = manifests.render(components=[NODE_LOCAL])
    ds = r.one("DaemonSet", "node-local-dns")
    _, child = manifests.split_nanny_args(r.argv(kustomize.pod_spec(ds)["containers"][0]))
    return child


def negative_cache_problems(where, args):
    options = manifests.dnsmasq_options(args)
    p = []
    if any(name == "no-negcache" for name, _ in options):
        p.append("%s: --no-negcache: negative answers are not cached" % where)
    neg_ttl = manifests.last_option(options, "neg-ttl")
    if neg_ttl != str(NEGATIVE_CAP_S):
        p.append("%s: --neg-ttl=%s, want %d (CoreDNS's `cache 30`)"
                 % (where, neg_ttl, NEGATIVE_CAP_S))
    return p


def test_the_manifests_cache_negative_answers_for_30s(env):
    return (negative_cache_problems("kube-dns pod", cache_args(env["rendered"]))
            + negative_cache_problems("node-local", node_cache_args()))


def runnable(args, fake):
    """The manifest's frontend-cache arguments with the test's ports and upstream: the
    metrics port goes (servers.FrontendCache picks a free one), the fake upstream is the
    default route (servers.FrontendCache passes --no-resolv)."""
    kept = [a for a in args if not a.startswith("--prometheus-port")]
    return kept + ["--server=" + fake.address]


def negative_ttls(answer):
    return [r.ttl for r in answer.authority if r.type == "SOA"]


def test_negative_answers_are_cached_at_most_30s_of_ttl(env):
    fake = fu.FakeUpstream(name="negcache")
    env["owned"].append(fake)
    fe = servers.FrontendCache(env["workdir"], "fe-manifest",
                               *runnable(cache_args(env["rendered"]), fake))
    env["owned"].append(fe)
    fake.set("gone.example.test", "nxdomain", soa_ttl=UPSTREAM_NEGATIVE_TTL_S,
             minimum=UPSTREAM_NEGATIVE_TTL_S)
    fake.set("v4only.example.test", "nodata", soa_ttl=UPSTREAM_NEGATIVE_TTL_S,
             minimum=UPSTREAM_NEGATIVE_TTL_S)
    p = []
    for name, status in (("gone.example.test", "NXDOMAIN"), ("v4only.example.test", "NOERROR")):
        first = fe.dig(name)
        p += expect(first, status, [], what=name)
        asked = settled(fe, fake, name)
        second = fe.dig(name)
        p += expect(second, status, [], what=name + " again")
        if settled(fe, fake, name) != asked:
            p.append("%s: the second query went upstream: the negative answer was not "
                     "cached" % name)
        for which, answer in (("first", first), ("cached", second)):
            ttls = negative_ttls(answer)
            if not ttls or not all(1 <= ttl <= NEGATIVE_CAP_S for ttl in ttls):
                p.append("%s: %s answer's SOA TTL %s, want 1..%d (the upstream said %d)"
                         % (name, which, ttls, NEGATIVE_CAP_S, UPSTREAM_NEGATIVE_TTL_S))
    # No SOA: cached for --neg-ttl, dnsmasq's meaning of the flag.
    fe.dig("nxnosoa-manifest.example.test")
    asked = settled(fe, fake, "nxnosoa-manifest.example.test")
    p += expect(fe.dig("nxnosoa-manifest.example.test"), "NXDOMAIN", what="NXDOMAIN, no SOA")
    if settled(fe, fake, "nxnosoa-manifest.example.test") != asked:
        p.append("an NXDOMAIN without an SOA was not cached")
    # A positive answer keeps its TTL: only negative answers are capped at 30 s.
    fake.set("long.example.test", "answer", ips=["192.0.2.30"], ttl=600)
    positive = fe.dig("long.example.test")
    p += expect(positive, "NOERROR", ["192.0.2.30"], what="positive")
    if positive.answer and positive.answer[0].ttl <= NEGATIVE_CAP_S:
        p.append("positive answer's TTL %d: capped like a negative one (the upstream said 600)"
                 % positive.answer[0].ttl)
    return p


def test_no_negcache_gives_kube_dns_behaviour_back(env):
    fake = fu.FakeUpstream(name="kube-dns-like")
    env["owned"].append(fake)
    fe = servers.FrontendCache(env["workdir"], "fe-kube-dns",
                               *runnable(cache_args(env["rendered"]), fake), "--no-negcache")
    env["owned"].append(fe)
    p = []
    for name, kind, status in (("gone2.example.test", "nxdomain", "NXDOMAIN"),
                               ("v4only2.example.test", "nodata", "NOERROR")):
        fake.set(name, kind)
        p += expect(fe.dig(name), status, [], what=name)
        asked = settled(fe, fake, name)
        p += expect(fe.dig(name), status, [], what=name + " again")
        if settled(fe, fake, name) != asked + 1:
            p.append("%s: --no-negcache, yet the second query was answered from the cache"
                     % name)
    return p


def setup(workdir, owned):
    return {"rendered": manifests.render()}


def main():
    return harness.main("kdns-manifests-negcache-",
                        [test_the_manifests_cache_negative_answers_for_30s,
                         test_negative_answers_are_cached_at_most_30s_of_ttl,
                         test_no_negcache_gives_kube_dns_behaviour_back],
                        setup=setup, reset_each=True)


if __name__ == "__main__":
    sys.exit(main())
