#!/usr/bin/python3
"""Attack: replaying frontend-cache's loop-probe names to disable its upstreams (issue 15).

With --dns-loop-detect, frontend-cache sends every upstream a TXT query for a random name
under kdns-loop-check.; if that name comes back to it as a query, the upstream forwards to
us and is disabled. The names travel to the upstreams, and kubedns forwards the one it gets
on to its own upstreams, so anyone on that path can learn them. Before, a name matched from
any source for as long as the process ran: one replay disabled the upstream until the next
reload, and for the route to kubedns every cluster name then got SERVFAIL.

The real binaries on loopback: kubedns serving test/conformance/objects.json, its
--nameservers a recording fake upstream (where the attacker reads the probe kubedns passed
on), a stub-domain upstream that records what it gets, and frontend-cache routing
cluster.local to kubedns and stub.test to the stub. The attacker replays every probe name it
learned from 127.0.0.2, within the probes' lifetime and again after it from the upstreams'
own address 127.0.0.1; the victim on 127.0.0.1 then looks up names it never asked before
(no cache can hide a disabled upstream) and must get every answer. A control shows that a
real loop is still found. kubedns sends no loop probes of its own, so there is nothing to
replay against its forwarding.

Figures (victim lookups that failed) are printed at the end. KDNS_BIN=/work/before-build/bin
gives the BEFORE figures. Closes with `N passed, M failed`; KDNS_ONLY=substring runs the
matching tests only; KDNS_KEEP_TMP=1 keeps the logs after a failure.
"""
import os
import random
import socket
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import dns_wire  # noqa: E402
import fake_upstream as fu  # noqa: E402
import harness  # noqa: E402
import servers  # noqa: E402

ATTACKER = "127.0.0.2"
PROBE_SUFFIX = "kdns-loop-check."
# How long frontend-cache accepts a probe (UpstreamTable::kLoopProbeLifetimeMs), plus room.
PROBE_LIFETIME_S = 5.0
REPLAYS_PER_NAME = 20
VICTIM_LOOKUPS = 20  # per route
STUB_IP = "192.0.2.77"
FIGURES = []


def learned_probes(marks):
    """The loop-probe names the upstreams saw after `marks` ({upstream: queries before}):
    what an attacker on their side reads; and when the first one arrived."""
    names, first = set(), None
    for upstream, seen in marks.items():
        for query in upstream.received()[seen:]:
            if query["name"].lower().endswith(PROBE_SUFFIX):
                names.add(query["name"].lower())
                first = query["time"] if first is None else min(first, query["time"])
    return sorted(names), first


def replay(port, names, source):
    """Sends each probe name REPLAYS_PER_NAME times from `source` (in random letter case,
    as a resolver using 0x20 would), each query answered before the next: what frontend-
    cache made of it has happened by the time this returns. The rcodes seen."""
    rcodes = {}
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.bind((source, 0))
    sock.settimeout(3)
    try:
        for name in names:
            for i in range(REPLAYS_PER_NAME):
                asked = "".join(c.upper() if random.random() < 0.5 else c for c in name)
                ident = random.randrange(65536)
                sock.sendto(dns_wire.build_query(asked, "TXT", ident=ident, edns=False),
                            ("127.0.0.1", port))
                try:
                    while True:
                        msg = dns_wire.parse_message(sock.recv(4096))
                        if msg["id"] == ident:
                            break
                    rcode = dns_wire.RCODE_NAMES.get(msg["rcode"], str(msg["rcode"]))
                except OSError:
                    rcode = "timeout"
                rcodes[rcode] = rcodes.get(rcode, 0) + 1
    finally:
        sock.close()
    return rcodes


def victim(fe, tag):
    """The victim's lookups of names never asked before, through both routes; the ones that
    failed, as text."""
    failures = []
    for i in range(VICTIM_LOOKUPS):
        name = "10-%d-%d-%d.default.pod.cluster.local" % (random.randrange(256), tag, i)
        want = name.split(".")[0].replace("-", ".")
        rcode, records = dns_wire.ask_udp(fe.port, name, timeout=3)
        if rcode != "NOERROR" or records != [want]:
            failures.append("%s: %s %s" % (name, rcode, records))
        name = "v%d-%d.stub.test" % (tag, i)
        rcode, records = dns_wire.ask_udp(fe.port, name, timeout=3)
        if rcode != "NOERROR" or records != [STUB_IP]:
            failures.append("%s: %s %s" % (name, rcode, records))
    return failures


def start_frontend(env, name):
    """frontend-cache routing cluster.local to kubedns and stub.test to the stub, probing
    both at its start; and a function that waits for the probe names the upstreams' side
    learned (and when the first arrived)."""
    marks = {env["recorder"]: len(env["recorder"].received()),
             env["stub"]: len(env["stub"].received())}
    fe = servers.FrontendCache(
        env["workdir"], name, "--dns-loop-detect", "--cache-size=1000",
        "--server=/cluster.local/127.0.0.1#%d" % env["kubedns"].port,
        "--server=/stub.test/" + env["stub"].address)

    def learn():
        learned = [[], None]

        def both_learned():
            learned[:] = learned_probes(marks)
            return len(learned[0]) >= 2

        if not harness.wait_until(both_learned, 15):
            raise RuntimeError("the upstreams' side saw probes %s, want one per upstream: %s"
                               % (learned[0], fe.process.log()[-1500:]))
        return learned

    return fe, learn


def test_replay_from_another_address(env):
    """Probe names replayed from 127.0.0.2 while they are fresh disable nothing."""
    fe, learn = start_frontend(env, "fe-replay")
    p = []
    try:
        names, _ = learn()
        rcodes = replay(fe.port, names, ATTACKER)
        if set(rcodes) != {"REFUSED"}:
            p.append("replayed probes got %s, want REFUSED (never forwarded)" % rcodes)
        failures = victim(fe, 1)
        FIGURES.append(("victim lookups failed after %d fresh probe replays from %s"
                        % (sum(rcodes.values()), ATTACKER),
                        "%d of %d" % (len(failures), 2 * VICTIM_LOOKUPS)))
        if failures:
            p.append("%d victim lookups failed after the replay, e.g. %s"
                     % (len(failures), failures[:3]))
        if not fe.process.alive():
            p.append("frontend-cache exited: " + fe.process.log()[-1500:])
    finally:
        fe.stop()
    return p


def test_replay_after_expiry(env):
    """Probe names replayed once they expired, even from the upstreams' own address,
    disable nothing."""
    fe, learn = start_frontend(env, "fe-expired")
    p = []
    try:
        names, first_seen = learn()
        # The probes were sent before they arrived: past this, every one has expired.
        time.sleep(max(0.0, first_seen + PROBE_LIFETIME_S + 0.5 - time.time()))
        rcodes = replay(fe.port, names, "127.0.0.1")
        failures = victim(fe, 2)
        FIGURES.append(("victim lookups failed after %d expired probe replays from 127.0.0.1"
                        % sum(rcodes.values()),
                        "%d of %d" % (len(failures), 2 * VICTIM_LOOKUPS)))
        if failures:
            p.append("%d victim lookups failed after the replay, e.g. %s"
                     % (len(failures), failures[:3]))
    finally:
        fe.stop()
    return p


def test_real_loop_still_found(env):
    """Control: an upstream that forwards our queries back to us is still disabled, and the
    names routed to it then fail at once instead of circling."""
    port = harness.free_port()
    looper = fu.FakeUpstream(name="looper", loop_to=("127.0.0.1", port))
    fe = None
    p = []
    try:
        fe = servers.FrontendCache(env["workdir"], "fe-loop", "--dns-loop-detect",
                                   "--server=/stub.test/" + env["stub"].address,
                                   "--server=/loop.test/" + looper.address, port=port)
        # Its metrics port may not listen yet (a slow start, e.g. under TSan): keep asking.
        if not harness.wait_until(
                lambda: fe.metric("kdns_frontend_upstreams_loop_disabled") >= 1, 15,
                ignore=(OSError,)):
            return ["the looping upstream was not disabled: " + fe.process.log()[-1500:]]
        before = len(looper.received())
        rcode, _ = dns_wire.ask_udp(fe.port, "www.loop.test", timeout=5)
        if rcode != "SERVFAIL":
            p.append("a name routed to the looping upstream got %s, want SERVFAIL" % rcode)
        if len(looper.received()) != before:
            p.append("a query still went to the looping upstream")
        rcode, records = dns_wire.ask_udp(fe.port, "www.stub.test", timeout=3)
        if rcode != "NOERROR" or records != [STUB_IP]:
            p.append("the healthy stub got %s %s" % (rcode, records))
    finally:
        if fe:
            fe.stop()
        looper.stop()
    return p


TESTS = [test_replay_from_another_address,
         test_replay_after_expiry,
         test_real_loop_still_found]


def start(workdir, owned):
    recorder = fu.FakeUpstream(name="kubedns-upstream")
    stub = fu.FakeUpstream(name="stub", answer_ip=STUB_IP)
    owned += [recorder, stub]
    kd = servers.Kubedns(workdir, "kubedns",
                         "--objects-file=" + os.path.join(harness.ROOT, "test", "conformance",
                                                          "objects.json"),
                         "--nameservers=127.0.0.1:%d" % recorder.port)
    owned.append(kd)
    return {"recorder": recorder, "stub": stub, "kubedns": kd}


def main():
    return harness.main(
        "kdns-abuse-probe-", TESTS,
        tools=[os.path.join(harness.BIN, tool) for tool in ("frontend-cache", "kubedns")],
        setup=start,
        report=lambda env, failed: harness.print_figures("figures (%s):" % harness.BIN, FIGURES,
                                                         78))


if __name__ == "__main__":
    sys.exit(main())
