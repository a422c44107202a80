#!/usr/bin/python3
"""What frontend-cache answers, end to end, with real upstreams and a scripted fake one.

Against NSD, unbound and test/e2e/fake_upstream.py (see frontend_cache.py), frontend-cache
as built ($KDNS_BIN, default build/bin) is checked from the outside, with real dig and
kdig, its /metrics and its CHAOS answers: routing by zone and the client's case, TTLs
decreasing in cached answers, negative caching and its --neg-ttl cap, --no-negcache, no
cache poisoning (wrong ID, wrong question, spoofed source), TCP paths and truncation, and
CHAOS statistics (exact values).

Closes with `N passed, M failed`. KDNS_ONLY=substring runs the matching tests only;
KDNS_KEEP_TMP=1 keeps the temporary directory (logs of every process) after a failure.
"""
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fake_upstream as fu  # noqa: E402
import frontend_cache  # noqa: E402
import harness  # noqa: E402
import servers  # noqa: E402
from frontend_cache import (  # noqa: E402
    NEG_TTL,
    expect,
    settled,
    upstream_sent)


def test_routing_by_zone(env):
    fe, fake = env["fe"], env["fake"]
    p = []
    p += expect(fe.dig("www.example.test"), "NOERROR", ["192.0.2.10", "192.0.2.11"],
                what="nsd (default route)")
    p += expect(fe.dig("www.example.test", "AAAA"), "NOERROR", ["2001:db8::10"], "AAAA",
                what="nsd AAAA")
    p += expect(fe.dig("10.2.0.192.in-addr.arpa", "PTR"), "NOERROR", ["www.example.test."],
                "PTR", what="nsd PTR")
    p += expect(fe.dig("www.other.test"), "NOERROR", ["198.51.100.7"],
                what="unbound (--server=/other.test/)")
    p += expect(fe.dig("route.fake.test"), "NOERROR", ["192.0.2.1"], what="fake.test")
    if not fake.received("route.fake.test"):
        p.append("route.fake.test did not reach the fake upstream")
    # Most specific domain wins: sub.example.test goes to the fake, not to nsd.
    p += expect(fe.dig("www.sub.example.test"), "NOERROR", ["192.0.2.1"],
                what="--server=/sub.example.test/ over the default")
    if not fake.received("www.sub.example.test"):
        p.append("www.sub.example.test did not reach the fake upstream")
    # A local-only domain: NXDOMAIN, never forwarded.
    before = sum(upstream_sent(fe, a) for a in env["all_upstreams"])
    got = fe.dig("host.local.test")
    p += expect(got, "NXDOMAIN", what="local-only --server=/local.test/")
    if sum(upstream_sent(fe, a) for a in env["all_upstreams"]) != before:
        p.append("a local-only name was forwarded")
    if fake.received("host.local.test"):
        p.append("a local-only name reached the fake")
    # The client's case is echoed, on a miss and on a hit.
    for name in ("mIxEd.ExAmPlE.tEsT.", "MIXED.EXAMPLE.TEST."):
        got = fe.dig(name)
        p += expect(got, "NOERROR", ["192.0.2.44"], what=name)
        if [r.name for r in got.answer] != [name]:
            p.append("%s: owner %s, want the question's case" % (name, got.answer))
    got = fe.dig("MiXeD.example.test.", client="kdig")
    p += expect(got, "NOERROR", ["192.0.2.44"], what="kdig")
    return p


def test_ttl_decreases_in_cached_answers(env):
    fe = env["fe"]
    p = []
    first = fe.dig("short.example.test")
    p += expect(first, "NOERROR", ["192.0.2.12"], what="first")
    if p:
        return p
    started = time.time()
    time.sleep(2)  # the clock under test: the cached TTL counts these seconds down
    second = fe.dig("short.example.test")
    elapsed = time.time() - started
    p += expect(second, "NOERROR", ["192.0.2.12"], what="second")
    if p:
        return p
    t1, t2 = first.answer[0].ttl, second.answer[0].ttl
    if t1 > 300:
        p.append("first TTL %d above the zone's 300" % t1)
    if not t1 - int(elapsed) - 1 <= t2 <= t1 - 2:
        p.append("TTL %d then %d, %.1f s apart: want a decrease of 2..%d" %
                 (t1, t2, elapsed, int(elapsed) + 1))
    third = fe.dig("short.example.test", client="kdig")
    if not third.answer or third.answer[0].ttl > t2:
        p.append("kdig saw TTL %s after %d" % (third.answer, t2))
    return p


def test_negative_caching_capped_by_neg_ttl(env):
    fe, fake, nsd = env["fe"], env["fake"], env["nsd"]
    p = []
    sent = upstream_sent(fe, nsd.address)
    first_at = time.monotonic()
    first = fe.dig("nope-neg.example.test")
    p += expect(first, "NXDOMAIN", what="first NXDOMAIN")
    soa = [r for r in first.authority if r.type == "SOA"]
    if not soa or not 1 <= soa[0].ttl <= NEG_TTL:
        p.append("NXDOMAIN SOA %s: want its TTL capped at --neg-ttl=%d (zone: 3600)"
                 % (soa, NEG_TTL))
    sent_after_first = upstream_sent(fe, nsd.address)
    if sent_after_first <= sent:
        p.append("the first NXDOMAIN was not forwarded")
    second = fe.dig("nope-neg.example.test")
    p += expect(second, "NXDOMAIN", what="cached NXDOMAIN")
    if upstream_sent(fe, nsd.address) != sent_after_first:
        p.append("the NXDOMAIN was not answered from the cache")
    soa2 = [r for r in second.authority if r.type == "SOA"]
    if not soa2 or soa2[0].ttl > NEG_TTL:
        p.append("cached NXDOMAIN SOA %s" % soa2)
    # NODATA, the same way.
    nodata = fe.dig("onlytxt.example.test", "A")
    p += expect(nodata, "NOERROR", [], what="NODATA")
    soa = [r for r in nodata.authority if r.type == "SOA"]
    if not soa or not 1 <= soa[0].ttl <= NEG_TTL:
        p.append("NODATA SOA %s: want its TTL capped at %d" % (soa, NEG_TTL))
    # RFC 2308 §5: min(SOA TTL, SOA MINIMUM) when that is below the cap.
    fake.set("neg-min.fake.test", "nxdomain", soa_ttl=2, minimum=100)
    got = fe.dig("neg-min.fake.test")
    soa = [r for r in got.authority if r.type == "SOA"]
    if got.status != "NXDOMAIN" or not soa or soa[0].ttl > 2:
        p.append("NXDOMAIN with SOA TTL 2 / MINIMUM 100: got %s, want SOA TTL <= 2" % got)
    # Without an SOA: cached for --neg-ttl (dnsmasq's meaning of the flag).
    fe.dig("nxnosoa-1.fake.test")
    before = settled(fe, fake, "nxnosoa-1.fake.test")
    got = fe.dig("nxnosoa-1.fake.test")
    p += expect(got, "NXDOMAIN", what="NXDOMAIN without SOA")
    if settled(fe, fake, "nxnosoa-1.fake.test") != before:
        p.append("an NXDOMAIN without SOA was not cached for --neg-ttl")
    # After the cap, the NXDOMAIN is asked again: by NEG_TTL + 1.2 s after the first.
    def asked_again():
        sent = upstream_sent(fe, nsd.address)
        p.extend(expect(fe.dig("nope-neg.example.test"), "NXDOMAIN", what="after --neg-ttl"))
        return upstream_sent(fe, nsd.address) > sent
    limit = first_at + NEG_TTL + 1.2 - time.monotonic()
    if not harness.wait_until(asked_again, limit, 0.2):
        p.append("the NXDOMAIN was still cached %.1f s after it, with --neg-ttl=%d"
                 % (NEG_TTL + 1.2, NEG_TTL))
    return p


def test_no_negcache(env):
    workdir = env["workdir"]
    fake = fu.FakeUpstream(name="noneg")
    fe = None
    p = []
    try:
        fe = servers.FrontendCache(workdir, "fe-noneg", "--no-negcache", "--neg-ttl=60",
                                   "--server=" + fake.address)
        for name, status, cached in (("nxdomain-nn.test", "NXDOMAIN", False),
                                     ("nodata-nn.test", "NOERROR", False),
                                     ("answer-nn.test", "NOERROR", True)):
            p += expect(fe.dig(name), status, what=name)
            first = settled(fe, fake, name)
            p += expect(fe.dig(name), status, what=name + " again")
            again = settled(fe, fake, name) > first
            if first < 1 or again == cached:
                p.append("--no-negcache: %s %s the second time, want %s" % (
                    name, "forwarded" if again else "answered from the cache",
                    "the cache" if cached else "forwarded"))
    finally:
        if fe:
            fe.stop()
        fake.stop()
    return p


def test_no_poisoning(env):
    fe, fake = env["fe"], env["fake"]
    p = []
    bad_before = fe.metric("kdns_frontend_forward_bad_replies_total")
    names = ["wrongid.fake.test", "wrongq.fake.test", "spoofport.fake.test",
             "spoofaddr.fake.test"]
    for name in names:
        p += expect(fe.dig(name), "NOERROR", ["192.0.2.1"], what=name)
    # One poisoned reply per UDP try for the wrong ID and the wrong question (one try each
    # unless the machine is slow); the kernel drops the others (connected sockets).
    tries = sum(settled(fe, fake, n) for n in names[:2])
    bad = fe.metric("kdns_frontend_forward_bad_replies_total") - bad_before
    if not 2 <= bad <= tries:
        p.append("kdns_frontend_forward_bad_replies_total went up by %d, want 2..%d"
                 % (bad, tries))
    # Query again: the cache holds the right answer, nothing poisoned.
    for name in names:
        before = settled(fe, fake, name)
        p += expect(fe.dig(name), "NOERROR", ["192.0.2.1"], what="again " + name)
        if settled(fe, fake, name) != before:
            p.append("%s was forwarded again: the right answer was not cached" % name)
    # The wrong question's record (victim.fake.test A 6.6.6.6) was not cached either.
    p += expect(fe.dig("victim.fake.test"), "NOERROR", ["192.0.2.1"], what="victim.fake.test")
    if not fake.received("victim.fake.test"):
        p.append("victim.fake.test was answered without asking the upstream")
    # Over TCP the same names are answered correctly too.
    p += expect(fe.dig("wrongid-tcp.fake.test", "A", "+tcp"), "NOERROR", ["192.0.2.1"],
                what="wrongid over TCP")
    return p


def test_tcp_paths(env):
    fe, fake = env["fe"], env["fake"]
    p = []
    # A client over TCP is forwarded over TCP.
    p += expect(fe.dig("tcp-client.fake.test", "A", "+tcp"), "NOERROR", ["192.0.2.1"],
                what="client TCP")
    transports = [q["transport"] for q in fake.received("tcp-client.fake.test")]
    if not transports or set(transports) != {"tcp"}:
        p.append("a TCP client's query went upstream over %s, want TCP only" % transports)
    # A truncated UDP reply is retried over TCP; the UDP client gets the whole answer.
    retries = fe.metric("kdns_frontend_forward_tcp_retries_total")
    got = fe.dig("tc-1.fake.test", "A", "+ignore")
    p += expect(got, "NOERROR", ["192.0.2.1"], what="upstream TC")
    if "tc" in got.flags:
        p.append("TC reached the client: %s" % got)
    transports = [q["transport"] for q in fake.received("tc-1.fake.test")]
    if transports[:1] != ["udp"] or "tcp" not in transports:
        p.append("truncated reply: upstream transports %s, want UDP then TCP" % transports)
    if fe.metric("kdns_frontend_forward_tcp_retries_total") < retries + 1:
        p.append("kdns_frontend_forward_tcp_retries_total did not go up")
    # A big answer to a UDP client without EDNS: TC, then the whole answer over TCP.
    big = ["10.1.0.%d" % i for i in range(1, 61)]
    got = fe.dig("big-1.fake.test", "A", "+noedns", "+ignore", "+notcp")
    if got.status != "NOERROR" or "tc" not in got.flags:
        p.append("big answer to a non-EDNS UDP client (miss): want TC, got %s" % got)
    if got.edns:
        p.append("OPT record in the reply to a query without one")
    got = fe.dig("big-1.fake.test", "A", "+noedns", "+ignore", "+notcp", client="kdig")
    if got.status != "NOERROR" or "tc" not in got.flags:
        p.append("big answer to a non-EDNS UDP client (kdig, hit): want TC, got %s" % got)
    p += expect(fe.dig("big-1.fake.test", "A", "+tcp"), "NOERROR", big, what="big over TCP")
    p += expect(fe.dig("big-1.fake.test", "A", "+tcp", client="kdig"), "NOERROR", big,
                what="big over TCP (kdig)")
    p += expect(fe.dig("big-1.fake.test", "A", "+noedns"), "NOERROR", big,
                what="dig's own fallback to TCP")
    got = fe.dig("big-1.fake.test", "A", "+bufsize=1232", "+notcp", "+ignore")
    p += expect(got, "NOERROR", big, what="big over EDNS UDP 1232")
    if "tc" in got.flags:
        p.append("TC for a 1 kB answer to an EDNS 1232 client")
    # The same with a real server's big TXT RRset (NSD).
    txt = fe.dig("bigtxt.big.test", "TXT", "+noedns", "+ignore", "+notcp")
    if "tc" not in txt.flags:
        p.append("NSD's big TXT RRset to a non-EDNS UDP client: want TC, got %s" % txt)
    txt = fe.dig("bigtxt.big.test", "TXT", "+tcp")
    if txt.status != "NOERROR" or len(txt.rdatas("TXT")) != 16:
        p.append("NSD's big TXT RRset over TCP: %s" % txt)
    p += expect(fe.dig("www.example.test", "A", "+tcp"), "NOERROR",
                ["192.0.2.10", "192.0.2.11"], what="nsd over TCP")
    return p


def test_chaos_statistics(env):
    """Exact CHAOS values on a fresh instance: every query below is counted."""
    workdir, nsd = env["workdir"], env["nsd"]
    fake = fu.FakeUpstream(name="chaos")
    fe = None
    p = []
    try:
        fe = servers.FrontendCache(workdir, "fe-chaos", "--cache-size=4",
                                   "--server=" + nsd.address,
                                   "--server=/fake.test/" + fake.address,
                                   "--server=/local.test/")
        for i in range(1, 7):  # 6 misses, 6 insertions; capacity 4: 2 evictions
            p += expect(fe.dig("c%d.fake.test" % i), "NOERROR", ["192.0.2.1"], what="c%d" % i)
        for _ in range(2):  # 2 hits
            p += expect(fe.dig("c6.fake.test"), "NOERROR", ["192.0.2.1"], what="c6 again")
        p += expect(fe.dig("servfail-c.fake.test"), "SERVFAIL", what="SERVFAIL")  # 1 miss
        p += expect(fe.dig("www.example.test"), "NOERROR", ["192.0.2.10", "192.0.2.11"],
                    what="nsd")  # 1 miss, 1 insertion, 1 eviction
        fe.dig("x.local.test")  # answered locally: not a cache lookup
        want = {"cachesize.bind.": "4", "insertions.bind.": "7", "evictions.bind.": "3",
                "misses.bind.": "8", "hits.bind.": "2"}
        for name, value in want.items():
            got = fe.chaos(name)
            if got.status != "NOERROR" or [(r.name, r.ttl, r.cls, r.type, r.rdata)
                                           for r in got.answer] != [
                    (name, 0, "CH", "TXT", '"%s"' % value)]:
                p.append("%s: got %s, want one CH TXT \"%s\" with TTL 0" % (name, got, value))
            if "aa" not in got.flags:
                p.append("%s: AA not set" % name)
        # servers.bind: one string per upstream, default first: `addr#port sent failed`.
        # Sent: what each upstream received (NSD: one query, plus retries if a try timed
        # out on a slow machine); failed: the SERVFAILs, plus timed-out tries.
        def timeouts(address):
            return int(fe.metric('kdns_frontend_upstream_timeouts_total{upstream="%s"}'
                                 % address))
        settled(fe, fake, None)
        sent_fake = len(fake.received())
        failed_fake = len([q for q in fake.received() if q["name"].lower().startswith("servfail")])
        got = fe.chaos("servers.bind")
        want = '"%s %d %d" "%s %d %d"' % (
            nsd.address, 1 + timeouts(nsd.address), timeouts(nsd.address), fake.address,
            sent_fake, failed_fake + timeouts(fake.address))
        if [r.rdata for r in got.answer] != [want]:
            p.append("servers.bind: %s, want [%s]" % ([r.rdata for r in got.answer], want))
        # The same figures in /metrics.
        for metric, value in (("kdns_frontend_cache_hits_total", 2),
                              ("kdns_frontend_cache_misses_total", 8),
                              ("kdns_frontend_cache_insertions_total", 7),
                              ("kdns_frontend_cache_evictions_total", 3),
                              ("kdns_frontend_cache_capacity_entries", 4)):
            if fe.metric(metric) != value:
                p.append("%s %s, want %d" % (metric, fe.metric(metric), value))
        # Other CHAOS queries: NOTIMP, never forwarded.
        got = fe.chaos("hits.bind", "A")
        if got.status != "NOTIMP":
            p.append("CH A hits.bind: %s, want NOTIMP" % got.status)
        got = fe.chaos("chaos.fake.test", "TXT")
        if got.status != "NOTIMP" or fake.received("chaos.fake.test"):
            p.append("CH TXT chaos.fake.test: %s, forwarded %d times; want NOTIMP, never"
                     % (got.status, len(fake.received("chaos.fake.test"))))
        got = fe.chaos("version.bind")
        if got.status != "NOERROR" or not got.answer or \
                not got.answer[0].rdata.startswith('"kdns-'):
            p.append("version.bind: %s" % got)
        # CHAOS queries are not cache lookups.
        if fe.chaos("misses.bind").rdatas("TXT") != ['"8"']:
            p.append("the CHAOS queries changed misses.bind")
    finally:
        if fe:
            fe.stop()
        fake.stop()
    return p


TESTS = [test_routing_by_zone,
         test_ttl_decreases_in_cached_answers,
         test_negative_caching_capped_by_neg_ttl,
         test_no_negcache,
         test_no_poisoning,
         test_tcp_paths,
         test_chaos_statistics]


if __name__ == "__main__":
    sys.exit(frontend_cache.main(TESTS))
