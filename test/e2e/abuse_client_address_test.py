#!/usr/bin/python3
"""Abuse: kubedns sees the pods behind frontend-cache, not 127.0.0.1 (issue 30, DESIGN §7).

frontend-cache passes each asking client's address to kubedns in the client-address EDNS
option (65432), only to the upstreams --client-address-to names; kubedns believes it only
from --client-address-from (loopback by default). The flooder sends from 127.0.0.2, the
light client from 127.0.0.1, both through the same cache:

  - a flood of distinct cluster-zone misses from 127.0.0.2 through the cache is limited by
    kubedns (--client-rate-limit) as 127.0.0.2: its limit metric grows by most of the flood,
    /debug/top-clients and the query log name 127.0.0.2, and the light client keeps at least
    99% of its answers; a query to an external upstream carries no client address;
  - a query sent straight to kubedns from 127.0.0.2 with a forged option is not believed
    when 127.0.0.2 is outside --client-address-from (127.0.0.1/32 there): counted as
    client_address_untrusted and logged as 127.0.0.2; the same option from 127.0.0.1 is.

kubedns listens on 127.0.0.3, so that --client-address-to=127.0.0.3/32 tells it from the
external upstream on 127.0.0.1. Bounded: the flood is 6000 queries over 3 s.
Closes with `N passed, M failed`. KDNS_ONLY=substring runs the matching tests only.
"""
import json
import os
import socket
import struct
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import dns_wire  # noqa: E402
import fake_upstream as fu  # noqa: E402
import harness  # noqa: E402
import light_client  # noqa: E402
import servers  # noqa: E402

ATTACKER = "127.0.0.2"
VICTIM = "127.0.0.1"
KUBEDNS = "127.0.0.3"
OPTION = 65432
LIMIT = 100  # kubedns's answers per second per client
FLOOD_SECONDS = 3
FLOOD_QPS = 2000
LIGHT_QPS = 50
ZONE = "default.svc.cluster.local"

OBJECTS = {
    "apiVersion": "v1", "kind": "List", "items": [
        {"apiVersion": "v1", "kind": "Service",
         "metadata": {"name": "svc%d" % i, "namespace": "default"},
         "spec": {"clusterIP": "10.96.0.%d" % (i + 1), "clusterIPs": ["10.96.0.%d" % (i + 1)]}}
        for i in range(5)
    ],
}


def client_option(ip, port):
    """The client-address option's (code, data): family 1, port, the IPv4 address."""
    return (OPTION, struct.pack("!HH", 1, port) + socket.inet_aton(ip))


def start_kubedns(workdir, name, *flags):
    objects = os.path.join(workdir, "objects.json")
    with open(objects, "w") as f:
        json.dump(OBJECTS, f)
    return servers.Kubedns(workdir, name, "--objects-file=" + objects, "--domain=cluster.local.",
                           "--log-queries", "--log-queries-rate=0", *flags, debug=True)


def exchange(source, port, payload, host, timeout=2.0):
    """One datagram from `source`; the parsed reply, or None."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.bind((source, 0))
    sock.settimeout(timeout)
    try:
        sock.sendto(payload, (host, port))
        return dns_wire.parse_message(sock.recv(4096))
    except OSError:
        return None
    finally:
        sock.close()


def light_client_through(port):
    """Distinct cluster-zone misses from 127.0.0.1 at about LIGHT_QPS through the cache, each
    with light_client.ANSWER_DEADLINE_S; an answer is kubedns's NXDOMAIN."""
    return light_client.LightClient(port, LIGHT_QPS, lambda i: "light%d.%s" % (i, ZONE),
                                    lambda m: m["rcode"] == dns_wire.NXDOMAIN)


def flood(port):
    """FLOOD_QPS distinct misses from ATTACKER for FLOOD_SECONDS, paced; the rcodes of the
    replies that came back, by rcode."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.bind((ATTACKER, 0))
    sock.settimeout(0.2)
    rcodes = {}

    def count(msg):
        rcodes[msg["rcode"]] = rcodes.get(msg["rcode"], 0) + 1
    reader = dns_wire.ReplyReader(sock, count)
    sent = 0
    batch = FLOOD_QPS // 100
    start = time.monotonic()
    for tick in range(FLOOD_SECONDS * 100):
        for _ in range(batch):
            name = "f%d.%s" % (sent, ZONE)
            sock.sendto(dns_wire.build_query(name, ident=sent % 65536, edns=False),
                        (VICTIM, port))
            sent += 1
        time.sleep(max(0.0, start + (tick + 1) / 100 - time.monotonic()))
    time.sleep(1.5)  # the last replies
    reader.stop()
    sock.close()
    return sent, rcodes


def test_a_flood_through_the_cache_is_limited_by_kubedns_as_its_pod(env):
    workdir, owned = env["workdir"], env["owned"]
    dns = start_kubedns(workdir, "kubedns", "--dns-bind-address=" + KUBEDNS,
                        "--client-rate-limit=%d" % LIMIT, "--client-rate-burst=%d" % LIMIT,
                        "--client-rate-slip=0")
    owned.append(dns)
    external = fu.FakeUpstream(name="external")
    owned.append(external)
    fc = servers.FrontendCache(workdir, "frontend-cache",
                               "--server=/cluster.local/%s#%d" % (KUBEDNS, dns.port),
                               "--server=" + external.address,
                               "--client-address-to=%s/32" % KUBEDNS)
    owned.append(fc)
    problems = []
    # The external upstream never hears of the client.
    if dns_wire.ask_udp(fc.port, "www.external.test")[0] != "NOERROR":
        return ["the external upstream's name was not answered"]
    carried = [q["options"] for q in external.received("www.external.test")]
    if not carried or any(code == OPTION for options in carried for code, _ in options):
        problems.append("the external upstream got %s" % carried)

    limited_before = dns.metric('kdns_limit_hits_total{limit="client_rate"}') or 0
    light = light_client_through(fc.port)
    seen = {}
    timer = threading.Timer(FLOOD_SECONDS / 2, lambda: seen.update(json.loads(
        harness.http_get(dns.debug_port, "/debug/top-clients")[2])))
    timer.start()
    try:
        sent, rcodes = flood(fc.port)
    finally:
        timer.join(10)
        light.stop()
    limited = (dns.metric('kdns_limit_hits_total{limit="client_rate"}') or 0) - limited_before
    share = light.answered / max(1, light.asked)
    print("  flooder sent %d, replies by rcode %s; kubedns limited %d; light client %d/%d "
          "(%.2f%%)" % (sent, rcodes, limited, light.answered, light.asked, 100 * share))

    # The attack landed: kubedns limited most of the flood, as the flooder.
    if limited < sent / 2:
        problems.append("kubedns limited only %d of %d flood queries" % (limited, sent))
    top = seen.get("clients") or []
    if not top or top[0]["client"] != ATTACKER + "/32" or top[0]["limited"] == 0:
        problems.append("kubedns's /debug/top-clients does not name %s first, limited: %s" %
                        (ATTACKER, seen))
    if any(c["client"] == VICTIM + "/32" and c["limited"] > 0 for c in top):
        problems.append("kubedns limited the light client: %s" % top)
    log = dns.log()
    if "client=%s#" % ATTACKER not in log or "client=%s#" % VICTIM not in log:
        problems.append("kubedns's query log does not name both clients")
    # The victim's outcome.
    if light.asked < LIGHT_QPS * FLOOD_SECONDS // 2:
        problems.append("the light client asked only %d" % light.asked)
    if share < 0.99:
        problems.append("light client got %d of %d (%s)" % (light.answered, light.asked,
                                                            light.failures))
    # kubedns refused (never dropped) what it limited: the cache answered the flooder at once
    # and kept kubedns up for everyone.
    if rcodes.get(dns_wire.SERVFAIL, 0) < limited / 2:
        problems.append("the flooder got %s, not SERVFAIL for what kubedns refused" % rcodes)
    if dns_wire.ask_udp(fc.port, "svc1." + ZONE)[0] != "NOERROR":
        problems.append("kubedns not answered through the cache after the flood")
    return problems


def test_a_forged_client_address_from_an_untrusted_source_is_ignored(env):
    workdir, owned = env["workdir"], env["owned"]
    dns = start_kubedns(workdir, "kubedns-trusting-one", "--client-address-from=127.0.0.1/32")
    owned.append(dns)
    problems = []
    untrusted_before = dns.metric('kdns_limit_hits_total{limit="client_address_untrusted"}') or 0
    forged = dns_wire.build_query("svc0." + ZONE, ident=4242,
                                  options=[client_option("10.9.9.9", 4242)])
    for source in (ATTACKER, VICTIM):
        reply = exchange(source, dns.port, forged, "127.0.0.1")
        if reply is None or reply["rcode"] != dns_wire.NOERROR:
            problems.append("the query from %s was not answered: %s" % (source, reply))
    untrusted = (dns.metric('kdns_limit_hits_total{limit="client_address_untrusted"}') or 0) - \
        untrusted_before
    if untrusted != 1:
        problems.append("client_address_untrusted grew by %s, not 1" % untrusted)

    # Both answers are logged: the untrusted one as its peer, the trusted one as its client.
    def logged():
        lines = [line for line in dns.log().splitlines() if "name=svc0." + ZONE in line]
        return lines if len(lines) >= 2 else None
    lines = harness.wait_until(logged, 5) or []
    if not any("client=%s#" % ATTACKER in line for line in lines):
        problems.append("the forged query is not logged as %s: %s" % (ATTACKER, lines))
    if sum("client=10.9.9.9#4242" in line for line in lines) != 1:
        problems.append("the trusted query is not logged once as 10.9.9.9: %s" % lines)
    return problems


TESTS = [test_a_flood_through_the_cache_is_limited_by_kubedns_as_its_pod,
         test_a_forged_client_address_from_an_untrusted_source_is_ignored]


def main():
    return harness.main("kdns-abuse-client-address-", TESTS, reset_each=True)


if __name__ == "__main__":
    sys.exit(main())
