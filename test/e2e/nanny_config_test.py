#!/usr/bin/python3
"""The nanny applying the kube-dns ConfigMap to frontend-cache, end to end.

The real nanny ($KDNS_BIN, default build/bin) supervises frontend-cache on a free port it
binds itself (the child's --port/--listen-address after "--"), with real upstreams and
kubedns (nanny_env.py). Shown here:

  - changes applied in place after the `..data` swap (how soon: a printed figure), an
    invalid update ignored while the old configuration keeps serving, the nanny's figures
    in frontend-cache's /metrics; a change that arrives while frontend-cache is still
    starting (its SIGHUP must neither kill it nor be lost);
  - stub servers given as host names: under the cluster domain through kubedns, others
    through the system resolver; looked up again, the last address kept when kubedns is
    gone.

Closes with `N passed, M failed`. KDNS_ONLY=substring runs the matching tests only;
KDNS_KEEP_TMP=1 keeps the temporary directory (every process's log).
"""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import dns_wire  # noqa: E402
import harness  # noqa: E402
import nanny_env  # noqa: E402
from nanny_env import (  # noqa: E402
    FIGURES,
    Kubedns,
    Nanny,
    SWAP_A,
    SWAP_B,
    apply_latency,
    servers_bind)


def test_changes_apply_in_place(env):
    """Kubelet-style swaps reach frontend-cache in place; invalid ones never do."""
    p = []
    tmp, nsd, unbound, stub_a, stub_b = (env["tmp"], env["nsd"], env["unbound"], env["stub_a"],
                                         env["stub_b"])
    cfg = harness.ConfigMapDir(os.path.join(tmp, "cfg-apply"))
    base = {"upstreamNameservers": json.dumps(["127.0.0.1:%d" % unbound.port])}

    def stubs(swap_port):
        return json.dumps({"example.test": ["127.0.0.1:%d" % nsd.port],
                           "swap.test": ["127.0.0.1:%d" % swap_port]})

    cfg.publish(dict(base, stubDomains=stubs(stub_a.port)))
    # The long spellings of the nanny's flags work as well as the short ones.
    nanny = Nanny(tmp, "nanny-apply", cfg.path, flags=["--syncInterval=30s"], kubedns=env["kd"])
    try:
        child = nanny.child()
        if sorted(dns_wire.ask_udp(nanny.port, "www.example.test")[1]) != ["192.0.2.10", "192.0.2.11"]:
            p.append("stub domain example.test not served by nsd")
        if dns_wire.ask_udp(nanny.port, "www.other.test")[1] != ["198.51.100.7"]:
            p.append("upstreamNameservers (unbound) not used")
        if dns_wire.ask_udp(nanny.port, "swap.test")[1] != [SWAP_A]:
            p.append("swap.test not routed to stub-a")
        if dns_wire.ask_udp(nanny.port, "kubernetes.default.svc.cluster.local")[1] != ["10.96.0.1"]:
            p.append("cluster.local (the child's own --server) not routed to kubedns")
        # Warm a cached answer outside swap.test: it must survive every change. Watched at
        # its upstream (nsd, example.test's stub): asking again after the changes must not
        # reach it. (A cache-hit count would grow anyway: apply_latency's polls of swap.test
        # hit the cache.)
        dns_wire.ask_udp(nanny.port, "www.example.test")
        nsd_series = 'kdns_frontend_upstream_queries_total{upstream="127.0.0.1#%d"}' % nsd.port
        sent_to_nsd = nanny.metrics().get(nsd_series)
        if sent_to_nsd is None:
            p.append("no %s in the metrics" % nsd_series)

        latencies = []
        for i in range(6):
            target, want = (stub_b, SWAP_B) if i % 2 == 0 else (stub_a, SWAP_A)
            swapped = cfg.publish(dict(base, stubDomains=stubs(target.port)))
            # Applied at all, in place (same child, below); how soon is a figure: the
            # nanny's debounce and frontend-cache's reload take milliseconds, a loaded
            # machine's scheduling the rest.
            latency = apply_latency(nanny.port, "swap.test", want, swapped, timeout=15.0)
            if latency is None:
                p.append("change %d not applied within 15 s" % i)
            else:
                latencies.append(latency)
        if latencies:
            FIGURES.append(("config change applied after the ..data swap (max of %d)" %
                            len(latencies), "%.1f ms" % (max(latencies) * 1000)))
        if nanny.child() != child:
            p.append("the child was restarted by a change (in-place mode must not restart)")
        # (In either order: the cache rotates its answers, --loadbalance.)
        if sorted(dns_wire.ask_udp(nanny.port, "www.example.test")[1]) != ["192.0.2.10",
                                                                           "192.0.2.11"]:
            p.append("www.example.test no longer answered after the changes")
        if nanny.metrics().get(nsd_series) != sent_to_nsd:
            p.append("the cache of an unchanged domain did not survive the changes: "
                     "www.example.test was asked of nsd again (%s, then %s)" %
                     (sent_to_nsd, nanny.metrics().get(nsd_series)))

        m = nanny.metrics()
        if m.get("kdns_nanny_config_generation") != 7:
            p.append("kdns_nanny_config_generation %s, want 7" %
                     m.get("kdns_nanny_config_generation"))
        versions = [k for k in m if k.startswith("kdns_nanny_config_info{")]
        if len(versions) != 1:
            p.append("kdns_nanny_config_info: %s" % versions)

        # An invalid update (four upstreams; a bad stub address) is ignored; the old
        # configuration keeps serving; the rejection is counted and logged.
        before = servers_bind(nanny.port)
        bad = dict(base, stubDomains=stubs(stub_b.port),
                   upstreamNameservers=json.dumps(["1.1.1.1", "1.1.1.2", "1.1.1.3", "1.1.1.4"]))
        cfg.publish(bad)
        if not harness.wait_until(lambda: nanny.metrics().get(
                "kdns_nanny_config_updates_rejected_total") == 1, 3):
            p.append("the invalid update was not counted as rejected")
        if dns_wire.ask_udp(nanny.port, "swap.test")[1] != [SWAP_A]:
            p.append("after an invalid update swap.test no longer answered by the old route")
        if servers_bind(nanny.port) != before:
            p.append("the invalid update changed the upstreams: %s" % servers_bind(nanny.port))
        if nanny.metrics().get("kdns_nanny_config_error") != 1:
            p.append("kdns_nanny_config_error is not 1 after a rejected update")
        if "more than three entries" not in nanny.log():
            p.append("the rejection's reason is not in the nanny's log")
        cfg.publish(dict(base, stubDomains=json.dumps({"swap.test": ["not_an_ip"]})))
        if not harness.wait_until(lambda: nanny.metrics().get(
                "kdns_nanny_config_updates_rejected_total") == 2, 3):
            p.append("the second invalid update was not counted")
        if dns_wire.ask_udp(nanny.port, "swap.test")[1] != [SWAP_A]:
            p.append("after the second invalid update swap.test changed")
        # A valid update clears the error.
        swapped = cfg.publish(dict(base, stubDomains=stubs(stub_b.port)))
        if apply_latency(nanny.port, "swap.test", SWAP_B, swapped) is None:
            p.append("a valid update after rejected ones was not applied")
        if nanny.metrics().get("kdns_nanny_config_error") != 0:
            p.append("kdns_nanny_config_error stays 1 after a valid update")
        # Removing upstreamNameservers: resolv.conf again, as kube-dns (no --no-resolv).
        swapped = cfg.publish({"stubDomains": stubs(stub_a.port)})
        if apply_latency(nanny.port, "swap.test", SWAP_A, swapped) is None:
            p.append("an update removing upstreamNameservers was not applied")
        if "127.0.0.1#%d" % unbound.port in servers_bind(nanny.port):
            p.append("unbound still listed after upstreamNameservers went away")
        if nanny.child() != child:
            p.append("the child was restarted")
    finally:
        code = nanny.stop()
        if code != 0:
            p.append("nanny exit status %s after SIGTERM" % code)
    return p


def test_change_during_child_start(env):
    """A change that arrives while frontend-cache starts neither kills it nor gets lost."""
    p = []
    tmp, stub_a, stub_b = env["tmp"], env["stub_a"], env["stub_b"]
    for attempt in range(5):
        cfg = harness.ConfigMapDir(os.path.join(tmp, "cfg-early-%d" % attempt))
        cfg.publish({"stubDomains": json.dumps({"swap.test": ["127.0.0.1:%d" % stub_a.port]})})
        nanny = Nanny(tmp, "nanny-early-%d" % attempt, cfg.path, wait=False, threads=1)
        try:
            child = harness.wait_until(nanny.child, 5, 0.0005)
            # The child is still in the trampoline or frontend-cache's start-up.
            cfg.publish({"stubDomains": json.dumps({"swap.test": ["127.0.0.1:%d" % stub_b.port]})})
            if not harness.wait_until(lambda: dns_wire.ask_udp(
                    nanny.port, "swap.test", timeout=0.2)[1] == [SWAP_B], 5):
                p.append("attempt %d: the early change was lost: %s" %
                         (attempt, dns_wire.ask_udp(nanny.port, "swap.test")))
            if nanny.child() != child:
                p.append("attempt %d: the child was replaced (killed by the early SIGHUP?)" %
                         attempt)
            if "exited unasked" in nanny.log():
                p.append("attempt %d: the child died" % attempt)
        finally:
            nanny.stop()
    return p


def test_stub_host_names_resolved(env):
    """Host names: cluster ones through kubedns, others through the system resolver."""
    p = []
    tmp = env["tmp"]
    workdir = os.path.join(tmp, "kd-hosts")
    os.makedirs(workdir, exist_ok=True)
    kd = Kubedns(workdir)
    cfg = harness.ConfigMapDir(os.path.join(tmp, "cfg-hosts"))
    cfg.publish({"stubDomains": json.dumps({
        "corp.test": ["stubdns.kube-system.svc.cluster.local"],
        "local.test": ["localhost"],
        "mixed.test": ["127.0.0.1:%d" % env["nsd"].port, "nowhere.invalid"]})})
    nanny = Nanny(tmp, "nanny-hosts", cfg.path, kubedns=kd,
                  flags=["-stubResolveInterval=500ms", "-syncInterval=30s"])
    try:
        servers = servers_bind(nanny.port)
        for want in ("10.0.0.53#53", "127.0.0.1#53", "127.0.0.1#%d" % env["nsd"].port):
            if want not in servers:
                p.append("%s not among the upstreams %s" % (want, servers))
        if "nowhere.invalid" not in nanny.log():
            p.append("the unresolvable stub server is not logged")
        # The Service's ClusterIP changes: the next lookup brings the new address.
        kd.write_objects("10.0.0.54")
        if not harness.wait_until(lambda: "10.0.0.54#53" in servers_bind(nanny.port), 5):
            p.append("the new ClusterIP did not reach frontend-cache: %s" %
                     servers_bind(nanny.port))
        # kubedns goes away: lookups fail, the last address stays (through two refreshes
        # that failed, each logged).
        kd.stop()
        if not harness.wait_until(
                lambda: nanny.log().count("keeping its last address 10.0.0.54") >= 2, 10):
            p.append("the failed lookups are not logged")
        if "10.0.0.54#53" not in servers_bind(nanny.port):
            p.append("the last known address was dropped when kubedns went away")
        if "keeping its last address 10.0.0.54" not in nanny.log():
            p.append("the failed lookup is not logged")
        m = nanny.metrics()
        if not m.get('kdns_nanny_stub_lookups_total{result="failed"}', 0) > 0:
            p.append("failed lookups not counted")
        if m.get("kdns_nanny_stub_hosts_unresolved") != 1:
            p.append("kdns_nanny_stub_hosts_unresolved %s, want 1 (nowhere.invalid)" %
                     m.get("kdns_nanny_stub_hosts_unresolved"))
    finally:
        nanny.stop()
        kd.stop()
    return p


TESTS = [test_changes_apply_in_place,
         test_change_during_child_start,
         test_stub_host_names_resolved]


if __name__ == "__main__":
    sys.exit(nanny_env.main(TESTS))
