#!/usr/bin/python3
"""Abuse: one client floods a slow domain on a healthy route (DESIGN §7, issue 30).

The upstream resolver (fake_upstream.FakeUpstream) answers every name at once except those
under slow.test, which it never answers, as a recursive resolver facing a domain whose
servers are dead. Both are on the same route: the default upstreams. An attacker on
127.0.0.2 asks FLOOD_QPS random names under slow.test (a modest rate: what it holds is
slots, each for the whole 5 s time budget), until the route's budget is past its reserve
and the attacker is refused its share (kdns_limit_hits_total{limit="route_client_share"}
grew, the forwarder's in-flight gauge is near the budget); then, while the flood goes on,
a victim on 127.0.0.1 asks VICTIM_QUERIES distinct uncached names under good.test, one at
a time, through the same route: at least 99% must be answered with the upstream's address.

The same runs against frontend-cache and kubedns (the names forwarded to --nameservers),
each with a forwarding ceiling of FORWARD_MAX (a route's budget is a quarter of it), a flag
older binaries knew too, so KDNS_BIN=/work/before-build/bin shows the victim failing there;
and against frontend-cache with three attackers (127.0.0.2-4) at once, each stopped at the
average client's share.

Closes with `N passed, M failed`. KDNS_ONLY=substring runs the matching tests only;
KDNS_KEEP_TMP=1 keeps the temporary directory (logs) after a failure.
"""
import json
import os
import random
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import dns_wire  # noqa: E402
import fake_upstream as fu  # noqa: E402
import harness  # noqa: E402
import light_client  # noqa: E402
import paced_flood  # noqa: E402
import servers  # noqa: E402

ATTACKERS = ["127.0.0.2", "127.0.0.3", "127.0.0.4"]
FORWARD_MAX = 256  # a route's budget: 64 slots, its reserve (a tenth) 6
ROUTE_BUDGET = FORWARD_MAX // 4
FLOOD_QPS = 200
FLOOD_MAX_S = 30  # the flood stops by then whatever happens
VICTIM_QUERIES = 40
GOOD_IP = "192.0.2.1"  # what the fake upstream answers
VICTIM_GAP_S = 0.025  # the victim's pace: the flood goes on while it asks (about 1 s)
SHARE_HITS = 'kdns_limit_hits_total{limit="route_client_share"}'
# Binaries without shares: the route's budget, or its one upstream's (the same size), full.
FULL_HITS = ['kdns_limit_hits_total{limit="route_in_flight"}',
             'kdns_limit_hits_total{limit="upstream_in_flight"}']


def attack(server, in_flight_gauge, owned, attackers=1):
    """Floods `server` (a servers.FrontendCache or Kubedns) from `attackers` addresses until
    they are refused their share, then asks the victim's names. Returns the problems."""
    floods = [paced_flood.Flood(server.port, "slow.test", FLOOD_QPS, address, FLOOD_MAX_S)
              for address in ATTACKERS[:attackers]]
    owned.extend(floods)

    def sent():
        return sum(flood.sent for flood in floods)
    # The attack landed: the route is past its reserve and the attacker is refused (or,
    # in binaries without shares, the route is full).
    if not harness.wait_until(
            lambda: sum(server.metric(series) for series in [SHARE_HITS] + FULL_HITS) > 0,
            timeout=10):
        return ["the flood (%d queries sent) never filled the route: %s = %s, %s = %s" % (
            sent(), SHARE_HITS, server.metric(SHARE_HITS), in_flight_gauge,
            server.metric(in_flight_gauge))]
    in_flight = server.metric(in_flight_gauge)
    hits_before = server.metric(SHARE_HITS)
    tag = "%06x" % random.getrandbits(24)
    bad = []
    for i in range(VICTIM_QUERIES):
        name = "v%d-%s.good.test" % (i, tag)  # never asked before: a miss, forwarded
        rcode, records = dns_wire.ask_udp(server.port, name,
                                          timeout=light_client.ANSWER_DEADLINE_S)
        if rcode != "NOERROR" or GOOD_IP not in records:
            bad.append("%s: %s %s" % (name, rcode, records))
        time.sleep(VICTIM_GAP_S)
    hits_during = server.metric(SHARE_HITS) - hits_before
    for flood in floods:
        flood.stop()
    answered = VICTIM_QUERIES - len(bad)
    print("    victim: %d/%d answered while the flood (%d queries from %d attackers) held %d of "
          "the route's %d slots; %d flood queries refused their share meanwhile" % (
              answered, VICTIM_QUERIES, sent(), len(floods), in_flight, ROUTE_BUDGET,
              hits_during))
    problems = []
    if in_flight < ROUTE_BUDGET // 2:
        problems.append("the flood held only %d slots of %d" % (in_flight, ROUTE_BUDGET))
    if hits_during <= 0:
        problems.append("the flood was not refused while the victim asked")
    if answered < 0.99 * VICTIM_QUERIES:
        problems.append("victim answered %d/%d: %s" % (answered, VICTIM_QUERIES, bad[:5]))
    return problems


def slow_resolver(owned):
    """The default upstream: answers everything at once, never anything under slow.test."""
    resolver = fu.FakeUpstream(name="resolver")
    resolver.set_zone("slow.test", "silent")
    owned.append(resolver)
    return resolver


def test_frontend_cache_slow_domain_leaves_the_route_to_others(env):
    workdir, owned = env["workdir"], env["owned"]
    resolver = slow_resolver(owned)
    fc = servers.FrontendCache(workdir, "frontend-cache", "--server=" + resolver.address,
                               "--dns-forward-max=%d" % FORWARD_MAX)
    owned.append(fc)
    return attack(fc, "kdns_frontend_forward_in_flight", owned)


def test_frontend_cache_three_slow_floods_leave_the_reserve_to_others(env):
    workdir, owned = env["workdir"], env["owned"]
    resolver = slow_resolver(owned)
    fc = servers.FrontendCache(workdir, "frontend-cache", "--server=" + resolver.address,
                               "--dns-forward-max=%d" % FORWARD_MAX)
    owned.append(fc)
    return attack(fc, "kdns_frontend_forward_in_flight", owned, attackers=3)


OBJECTS = {
    "apiVersion": "v1", "kind": "List", "items": [
        {"apiVersion": "v1", "kind": "Service",
         "metadata": {"name": "kubernetes", "namespace": "default"},
         "spec": {"clusterIP": "10.96.0.1", "clusterIPs": ["10.96.0.1"]}}],
}


def test_kubedns_slow_domain_leaves_the_route_to_others(env):
    workdir, owned = env["workdir"], env["owned"]
    resolver = slow_resolver(owned)
    objects = os.path.join(workdir, "objects.json")
    with open(objects, "w") as f:
        json.dump(OBJECTS, f)
    dns = servers.Kubedns(workdir, "kubedns", "--objects-file=" + objects,
                          "--domain=cluster.local.", "--nameservers=127.0.0.1:%d" % resolver.port,
                          "--forward-max=%d" % FORWARD_MAX)
    owned.append(dns)
    return attack(dns, "kdns_kubedns_forward_in_flight", owned)


TESTS = [test_frontend_cache_slow_domain_leaves_the_route_to_others,
         test_frontend_cache_three_slow_floods_leave_the_reserve_to_others,
         test_kubedns_slow_domain_leaves_the_route_to_others]


def main():
    return harness.main("kdns-abuse-share-", TESTS, reset_each=True)


if __name__ == "__main__":
    sys.exit(main())
