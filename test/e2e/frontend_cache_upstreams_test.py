#!/usr/bin/python3
"""frontend-cache with upstreams that fail, end to end.

Against scripted upstreams (test/e2e/fake_upstream.py; see frontend_cache.py): failover on
a timeout and on SERVFAIL, a slow upstream whose late answer still wins, serve-stale
(RFC 8767) when the upstream goes silent, the --dns-forward-max cap with coalescing,
--dns-loop-detect disabling an upstream that loops back to us, and a tcp:// upstream asked
over one persistent pipelined TCP connection.

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
    OK_IP,
    STALE_IP,
    expect)


def test_failover_on_timeout_and_servfail(env):
    fe = env["fe"]
    f_timeout, f_servfail, f_ok = env["f_timeout"], env["f_servfail"], env["f_ok"]
    p = []
    got = fe.dig("a.fo-timeout.test", timeout=12)
    p += expect(got, "NOERROR", [OK_IP], what="first upstream silent")
    if not f_timeout.received("a.fo-timeout.test"):
        p.append("the silent first upstream was never asked (no failover happened)")
    if not f_ok.received("a.fo-timeout.test"):
        p.append("the second upstream was never asked")
    got = fe.dig("a.fo-servfail.test", timeout=12)
    p += expect(got, "NOERROR", [OK_IP], what="first upstream SERVFAIL")
    if not f_servfail.received("a.fo-servfail.test"):
        p.append("the SERVFAILing first upstream was never asked")
    if not f_ok.received("a.fo-servfail.test"):
        p.append("the second upstream was never asked after a SERVFAIL")
    if fe.metric("kdns_frontend_forward_failovers_total") < 2:
        p.append("kdns_frontend_forward_failovers_total %s, want >= 2"
                 % fe.metric("kdns_frontend_forward_failovers_total"))
    if fe.metric('kdns_frontend_upstream_failures_total{upstream="%s"}'
                 % f_servfail.address) < 1:
        p.append("the SERVFAIL was not counted against its upstream")
    # Every upstream of the route failing: SERVFAIL to the client.
    p += expect(fe.dig("servfail-all.fake.test", timeout=12), "SERVFAIL",
                what="only upstream SERVFAIL")
    return p


def test_slow_upstream(env):
    fe, fake = env["fe"], env["fake"]
    # Slower than the retry timeout of a measured server: the late answer still wins.
    fake.set("slow-1.fake.test", "slow", delay=1.0)
    started = time.time()
    got = fe.dig("slow-1.fake.test", timeout=12)
    took = time.time() - started
    p = expect(got, "NOERROR", ["192.0.2.1"],
               what="an upstream answering after 1 s (once its RTT was measured as small)")
    if got.status != "NOERROR":
        p.append("our answer came after %.2f s, with %d tries to the upstream; the late "
                 "answer must still win within the time budget" % (
                     took, len(fake.received("slow-1.fake.test"))))
    elif took < 0.9:
        p.append("answered after %.2f s, before the upstream did" % took)
    return p


def test_serve_stale(env):
    fe, fake = env["fe"], env["f_stale"]
    p = []
    fake.set("host.stale.test", "answer", ttl=1)
    stale_before = fe.metric("kdns_frontend_cache_stale_answers_total")
    p += expect(fe.dig("host.stale.test"), "NOERROR", [STALE_IP], what="before")
    time.sleep(2.2)  # the clock under test: the entry's TTL of 1 s runs out
    fake.set("host.stale.test", "silent")
    got = fe.dig("host.stale.test", timeout=15)
    p += expect(got, "NOERROR", [STALE_IP], what="upstream silent, entry expired")
    if got.answer and any(r.ttl != 30 for r in got.answer):
        p.append("stale answer TTLs %s, want 30 (RFC 8767)" % got.answer)
    if len(fake.received("host.stale.test")) < 2:
        p.append("the expired entry was served without asking the upstream first")
    stale = fe.metric("kdns_frontend_cache_stale_answers_total") - stale_before
    if stale != 1:
        p.append("kdns_frontend_cache_stale_answers_total went up by %d, want 1" % stale)
    # Never cached: SERVFAIL, not stale.
    fake.set("never.stale.test", "silent")
    p += expect(fe.dig("never.stale.test", timeout=15), "SERVFAIL", what="nothing to serve")
    fake.set("host.stale.test", "answer", ttl=1)
    return p


def test_forward_cap(env):
    """--dns-forward-max=2 on one thread (the route's and the upstream's budgets as large:
    by default each is a quarter of it; no client reserve, which would keep one of the two
    slots from our only client): a third distinct query is SERVFAILed at once, and a query
    identical to one in flight is coalesced with it (not rejected)."""
    workdir = env["workdir"]
    fake = fu.FakeUpstream(name="cap")
    fe = None
    p = []
    held = []
    try:
        fe = servers.FrontendCache(workdir, "fe-cap", "--dns-forward-max=2",
                                   "--forward-max-per-route=2", "--forward-max-per-upstream=2",
                                   "--forward-client-reserve=0",
                                   "--server=" + fake.address, threads=1)
        held = [harness.dig_async(fe.port, "hold-%d.cap.test" % i, timeout=15) for i in (1, 2)]
        for i in (1, 2):
            if not fake.wait_for("hold-%d.cap.test" % i, 1, 15):
                p.append("hold-%d.cap.test never reached the upstream" % i)
        if p:
            return p
        got = fe.dig("third.cap.test", timeout=10)
        still = [proc.poll() is None for proc in held]
        p += expect(got, "SERVFAIL", what="a third query over the cap")
        if not all(still):
            p.append("the held queries finished before the SERVFAIL: it was not at once")
        if fake.received("third.cap.test"):
            p.append("the query over the cap was forwarded")
        # A query identical to one in flight (in another case) joins it, even at the cap.
        joined = harness.dig_async(fe.port, "HOLD-1.CAP.TEST", "A", timeout=15)
        held.append(joined)
        if not harness.wait_until(
                lambda: fe.metric("kdns_frontend_forward_coalesced_total") >= 1, 5):
            p.append("a query identical to one in flight was not coalesced")
        if joined.poll() is not None:
            p.append("the coalesced query was answered before the upstream answered")
        rejected = fe.metric("kdns_frontend_forward_rejected_total")
        if rejected != 1:
            p.append("kdns_frontend_forward_rejected_total %s, want 1" % rejected)
        overloaded = fe.metric('kdns_frontend_servfail_total{reason="overloaded"}')
        if overloaded != 1:
            p.append('kdns_frontend_servfail_total{reason="overloaded"} %s, want 1' % overloaded)
        fake.release()
        for i, proc in enumerate(held, 1):
            out, _ = proc.communicate(timeout=30)
            got = harness.Answer(out, proc.returncode)
            p += expect(got, "NOERROR", ["192.0.2.1"], what="held query %d once released" % i)
            if proc is joined and [r.name for r in got.answer] != ["HOLD-1.CAP.TEST."]:
                p.append("the coalesced answer does not echo its own case: %s" % got)
        # Names go upstream in random case (0x20): one query for the name, in any case.
        if len(fake.received("hold-1.cap.test")) != 1:
            p.append("the coalesced query was sent upstream on its own")
        p += expect(fe.dig("third.cap.test"), "NOERROR", ["192.0.2.1"],
                    what="after the cap cleared")
    finally:
        fake.release()
        for proc in held:
            if proc.poll() is None:
                proc.kill()
            proc.wait()
        if fe:
            fe.stop()
        fake.stop()
    return p


def test_loop_detect(env):
    workdir, nsd = env["workdir"], env["nsd"]
    port = harness.free_port()
    looper = fu.FakeUpstream(name="looper", loop_to=("127.0.0.1", port))
    fe = None
    p = []
    try:
        fe = servers.FrontendCache(workdir, "fe-loop", "--dns-loop-detect",
                                   "--server=" + nsd.address,
                                   "--server=/loop.test/" + looper.address, port=port)
        disabled = harness.wait_until(
            lambda: fe.metric("kdns_frontend_upstreams_loop_disabled") >= 1, 15)
        if not disabled:
            return ["the looping upstream was not disabled: " + fe.process.log()[-1500:]]
        if fe.metric("kdns_frontend_upstreams_loop_disabled") != 1:
            p.append("%s upstreams disabled, want 1 (nsd does not loop)"
                     % fe.metric("kdns_frontend_upstreams_loop_disabled"))
        probes = [q for q in looper.received() if q["name"].endswith("kdns-loop-check.")]
        if not probes:
            p.append("no loop probe went through the looping upstream")
        got = fe.dig("www.loop.test", timeout=10)
        p += expect(got, "SERVFAIL", what="a name routed only to the disabled upstream")
        if looper.received("www.loop.test"):
            p.append("a query was forwarded to the loop-disabled upstream")
        p += expect(fe.dig("www.example.test"), "NOERROR", ["192.0.2.10", "192.0.2.11"],
                    what="the other upstream")
        if not fe.process.alive():
            p.append("frontend-cache exited: " + fe.process.log()[-1500:])
        if "loop" not in fe.process.log():
            p.append("no log line about the loop")
    finally:
        if fe:
            fe.stop()
        looper.stop()
    return p


def test_tcp_upstream(env):
    """--server=/cluster.local/tcp://ip#port: every query to it goes over TCP, many of them
    on one persistent connection (one serving thread: one Forwarder), pipelined: queries the
    fake holds do not keep the next ones from being sent on the same connection."""
    workdir = env["workdir"]
    fake = fu.FakeUpstream(name="tcp", answer_ip="192.0.2.53")
    fe = None
    p = []
    held = []
    try:
        fe = servers.FrontendCache(workdir, "fe-tcp",
                                   "--server=/cluster.local/tcp://" + fake.address,
                                   "--server=" + env["nsd"].address, threads=1)
        for i in range(20):
            p += expect(fe.dig("svc-%d.default.svc.cluster.local" % i), "NOERROR",
                        ["192.0.2.53"], what="a cluster name through the tcp:// upstream")
        held = [harness.dig_async(fe.port, "hold-%d.cluster.local" % i, timeout=15)
                for i in range(5)]
        for i in range(5):
            if not fake.wait_for("hold-%d.cluster.local" % i, 1, 15):
                p.append("hold-%d.cluster.local never reached the upstream while the "
                         "others were held: not pipelined" % i)
        fake.release()
        for proc in held:
            out, _ = proc.communicate(timeout=30)
            p += expect(harness.Answer(out, proc.returncode), "NOERROR", ["192.0.2.53"],
                        what="a query pipelined behind held ones")
        held = []
        if fake.received(transport="udp"):
            p.append("the tcp:// upstream got %d queries over UDP"
                     % len(fake.received(transport="udp")))
        if len(fake.received(transport="tcp")) < 25:
            p.append("the upstream got %d queries over TCP, want 25"
                     % len(fake.received(transport="tcp")))
        if fake.tcp_connections != 1:
            p.append("%d TCP connections for 25 queries, want 1 (persistent, pipelined)"
                     % fake.tcp_connections)
        label = 'kdns_frontend_upstream_queries_total{upstream="tcp://%s"}' % fake.address
        if fe.metric(label) < 25:
            p.append("%s is %s, want >= 25" % (label, fe.metric(label)))
        p += expect(fe.dig("www.example.test"), "NOERROR", what="the other (UDP) upstream")
    finally:
        for proc in held:
            proc.kill()
        if fe:
            fe.stop()
        fake.stop()
    return p


TESTS = [test_failover_on_timeout_and_servfail,
         test_slow_upstream,
         test_serve_stale,
         test_forward_cap,
         test_loop_detect,
         test_tcp_upstream]


if __name__ == "__main__":
    sys.exit(frontend_cache.main(TESTS))
