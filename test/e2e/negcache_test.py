#!/usr/bin/python3
"""Negative caching without staleness (issue 38): kubedns on an objects file behind
frontend-cache with negative caching on for cluster.local only (--no-negcache with
--serial-zones=cluster.local, as the manifests configure it). A pod asks for a Service that does
not exist: NXDOMAIN, cached (the cache hit confirmed from the metrics). Then the Service is
written into the objects file, and the same question through the cache must be answered
with the new address soon, because kubedns's SOA serial changed and the cache dropped its
negative answers for cluster.local:

  - told by kubedns's NOTIFY (--notify to the cache's port);
  - with no NOTIFY at all (kubedns not told, as when one is lost), found by the cache's own
    SOA poll (--serial-zones, --serial-poll=1s);
  - the same with kubedns following the fake Kubernetes API server (test/fake_apiserver),
    the Service created through the API, with and without NOTIFY;
  - the same for an endpoint appearing in a headless Service that had none;
  - a deleted Service: its cached positive answer lives out its TTL (as in kube-dns, and as
    from any authoritative server), then the name is NXDOMAIN;
  - attack: NOTIFYs from a pod (127.0.0.2, outside --notify-from) are REFUSED and counted
    (notify_untrusted) and drop nothing.

The design bound is about one second (NOTIFY: ~100 ms coalescing plus the file's inotify
debounce; lost NOTIFY: one poll interval). The tests print the measured delay and assert
only 5 s, a margin a loaded 2-core machine cannot break. Each test starts its own servers,
on loopback and free ports. Closes with `N passed, M failed`.
"""
import json
import os
import socket
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import dns_wire  # noqa: E402
import harness  # noqa: E402
import kubedns_api  # noqa: E402
import servers  # noqa: E402

ZONE = "default.svc.cluster.local"
BOUND_S = 5.0  # the design bound is ~1 s; this one only catches "never" on a loaded box
TTL_S = 3      # kubedns --ttl, for the deleted-Service case


def service(ns, name, cluster_ip=None):
    """A ClusterIP Service, or a headless one without `cluster_ip`."""
    ip = cluster_ip or "None"
    return {"apiVersion": "v1", "kind": "Service", "metadata": {"name": name, "namespace": ns},
            "spec": {"type": "ClusterIP", "clusterIP": ip, "clusterIPs": [ip],
                     "ports": [{"name": "http", "port": 80, "protocol": "TCP"}]}}


def slice_(ns, name, svc, ips):
    return {"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
            "metadata": {"name": name, "namespace": ns,
                         "labels": {"kubernetes.io/service-name": svc}},
            "addressType": "IPv4",
            "endpoints": [{"addresses": [ip], "conditions": {"ready": True}} for ip in ips],
            "ports": [{"name": "http", "port": 8080, "protocol": "TCP"}]}


def write_objects(path, items):
    """Replaces the objects file at once (rename), as kubectl's output written elsewhere."""
    with open(path + ".tmp", "w") as f:
        json.dump({"apiVersion": "v1", "kind": "List", "items": items}, f)
    os.rename(path + ".tmp", path)


def start(env, name, items, notify, api=False, cache_flags=()):
    """kubedns on the objects file (with `api`, following the fake API server, serving the
    conformance objects plus `items`) and frontend-cache in front of it as the manifests
    run it: --no-negcache for other zones, cluster.local's negatives cached and exact
    (--serial-zones, polled every second); kubedns NOTIFYs the cache when `notify`.
    Returns (the objects file, or the fake API server; kubedns; the cache)."""
    workdir, owned = env["workdir"], env["owned"]
    cache_port = harness.free_port()
    flags = ["--ttl=%d" % TTL_S]
    if notify:
        flags.append("--notify=127.0.0.1:%d" % cache_port)
    if api:
        objects = kubedns_api.start_fake(os.path.join(workdir, name))  # a fake of its own
        owned.append(objects)
        objects.control("/control/objects", items)
        dns = kubedns_api.Kubedns(workdir, objects.info["kubeconfig"], name + "-kubedns", *flags)
        owned.append(dns)
        if not harness.wait_until(dns.ready, 30):
            raise RuntimeError("kubedns never became ready: " + dns.log()[-2000:])
    else:
        objects = os.path.join(workdir, name + "-objects.json")
        write_objects(objects, items)
        dns = servers.Kubedns(workdir, name + "-kubedns", "--objects-file=" + objects,
                              "--domain=cluster.local.", *flags)
        owned.append(dns)
    # kubedns announces its first records (within 100 ms): let that pass before the cache
    # holds anything, or it would drop the test's first NXDOMAIN.
    if notify and not harness.wait_until(
            lambda: (dns.metric("kdns_kubedns_notify_sent_total") or 0) >= 3, 5):
        raise RuntimeError("kubedns sent no NOTIFY for its first records")
    cache = servers.FrontendCache(workdir, name + "-cache",
                                  "--server=/cluster.local/127.0.0.1#%d" % dns.port,
                                  "--no-negcache", "--serial-zones=cluster.local",
                                  "--serial-poll=1s", *cache_flags,
                                  port=cache_port)
    owned.append(cache)
    if not notify:
        # The poll's first serial drops what was cached before it (a serial the cache
        # cannot vouch for): let that happen on a warm-up name, not on the test's.
        dns_wire.ask_udp(cache.port, "warm-up." + ZONE)
        if not harness.wait_until(
                lambda: cache.metric("kdns_frontend_zone_serial_changes_total"), 5):
            raise RuntimeError("the cache never polled cluster.local's serial")
    return objects, dns, cache


def cached_negative(cache, name):
    """Asks `name` twice; problems unless both are NXDOMAIN and the second a cache hit."""
    first = dns_wire.ask_udp(cache.port, name)
    hits = cache.metric("kdns_frontend_cache_hits_total") or 0
    second = dns_wire.ask_udp(cache.port, name)
    problems = []
    if first[0] != "NXDOMAIN" or second[0] != "NXDOMAIN":
        problems.append("%s was %s then %s, not NXDOMAIN" % (name, first, second))
    if (cache.metric("kdns_frontend_cache_hits_total") or 0) <= hits:
        problems.append("the second NXDOMAIN for %s was not a cache hit" % name)
    if not cache.metric("kdns_frontend_cache_negative_entries"):
        problems.append("the cache holds no negative entry")
    return problems


def delay_until_answered(cache, name, address, since):
    """Seconds from `since` until the cache answers `name` with `address`, or None."""
    return harness.time_until(lambda: address in dns_wire.ask_udp(cache.port, name, timeout=0.5)[1],
                              timeout=BOUND_S + 5, interval=0.02, start=since)


def created_after_nxdomain(env, name, notify, api=False):
    objects, dns, cache = start(env, name, [service("default", "old", "10.96.0.1")], notify,
                                api)
    qname = "new." + ZONE
    problems = cached_negative(cache, qname)
    before = {m: cache.metric(m) or 0 for m in ("kdns_frontend_notify_total",
                                                "kdns_frontend_zone_serial_changes_total",
                                                "kdns_frontend_cache_negative_drops_total")}
    since = time.monotonic()
    if api:
        objects.control("/control/objects", [service("default", "new", "10.96.0.77")])
    else:
        write_objects(objects, [service("default", "old", "10.96.0.1"),
                                service("default", "new", "10.96.0.77")])
    delay = delay_until_answered(cache, qname, "10.96.0.77", since)
    print("  %s: answered with the new address %s after the Service was written" %
          (name, "never" if delay is None else "%.3f s" % delay))
    after = {m: cache.metric(m) or 0 for m in before}
    # How it was dropped: by a NOTIFY, or (none sent) by the poll finding a new serial.
    if notify and after["kdns_frontend_notify_total"] <= before["kdns_frontend_notify_total"]:
        problems.append("no NOTIFY reached the cache")
    if not notify:
        if after["kdns_frontend_notify_total"] != 0:
            problems.append("a NOTIFY arrived although kubedns had no --notify")
        if after["kdns_frontend_zone_serial_changes_total"] <= \
                before["kdns_frontend_zone_serial_changes_total"]:
            problems.append("the poll saw no serial change")
    if after["kdns_frontend_cache_negative_drops_total"] <= \
            before["kdns_frontend_cache_negative_drops_total"]:
        problems.append("no negative answer was dropped")
    if delay is None or delay > BOUND_S:
        problems.append("the new Service was not answered within %.0f s (%s)" % (BOUND_S, delay))
    return problems


def test_a_created_service_replaces_a_cached_nxdomain_on_notify(env):
    return created_after_nxdomain(env, "notify", notify=True)


def test_a_created_service_replaces_a_cached_nxdomain_when_the_notify_is_lost(env):
    return created_after_nxdomain(env, "lost", notify=False)


def test_a_service_created_through_the_api_replaces_a_cached_nxdomain(env):
    return created_after_nxdomain(env, "api", notify=True, api=True)


def test_a_service_created_through_the_api_replaces_a_cached_nxdomain_without_notify(env):
    return created_after_nxdomain(env, "api-lost", notify=False, api=True)


def test_an_endpoint_appearing_in_a_headless_service_replaces_its_negative_answer(env):
    headless = service("default", "db")  # no cluster IP, no endpoints yet
    objects, dns, cache = start(env, "headless", [headless], notify=True)
    qname = "db." + ZONE
    first = dns_wire.ask_udp(cache.port, qname, full=True)
    hits = cache.metric("kdns_frontend_cache_hits_total") or 0
    second = dns_wire.ask_udp(cache.port, qname, full=True)
    problems = []
    # A headless Service without endpoints: a name with no address (NODATA), cached.
    if first is None or second is None or first["answers"] or second["answers"]:
        problems.append("%s had addresses before its endpoints: %s" % (qname, first))
    if (cache.metric("kdns_frontend_cache_hits_total") or 0) <= hits:
        problems.append("the second negative answer was not a cache hit")
    since = time.monotonic()
    write_objects(objects, [headless, slice_("default", "db-1", "db", ["10.0.0.9"])])
    delay = delay_until_answered(cache, qname, "10.0.0.9", since)
    print("  headless: the endpoint answered after %s" %
          ("never" if delay is None else "%.3f s" % delay))
    if delay is None or delay > BOUND_S:
        problems.append("the endpoint was not answered within %.0f s (%s)" % (BOUND_S, delay))
    return problems


def notify_message(zone, ident):
    """A NOTIFY for `zone` (opcode 4, AA, the question <zone, SOA, IN>)."""
    query = bytearray(dns_wire.build_query(zone, "SOA", ident=ident, edns=False, rd=False))
    query[2] = (query[2] & 0x87) | (4 << 3) | 0x04  # opcode NOTIFY, AA
    return bytes(query)


def test_a_notify_flood_from_a_pod_drops_nothing(env):
    """Attack: a pod (127.0.0.2, outside --notify-from=127.0.0.1/32) sends NOTIFYs to empty
    the cache's negative answers and load kubedns. Bounded: 300 datagrams."""
    objects, dns, cache = start(env, "untrusted", [service("default", "old", "10.96.0.1")],
                                notify=True, cache_flags=["--notify-from=127.0.0.1/32"])
    qname = "absent." + ZONE
    problems = cached_negative(cache, qname)
    series = 'kdns_limit_hits_total{limit="notify_untrusted"}'
    untrusted_before = cache.metric(series) or 0
    drops_before = cache.metric("kdns_frontend_cache_negative_drops_total") or 0
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.bind(("127.0.0.2", 0))
    sock.settimeout(2)
    refused = 0
    try:
        for i in range(300):
            sock.sendto(notify_message("cluster.local", i), ("127.0.0.1", cache.port))
            try:
                refused += dns_wire.parse_message(sock.recv(4096))["rcode"] == dns_wire.REFUSED
            except OSError:
                pass
    finally:
        sock.close()
    untrusted = (cache.metric(series) or 0) - untrusted_before
    print("  untrusted: %d NOTIFYs refused, notify_untrusted grew by %d" % (refused, untrusted))
    # The attack landed: the cache saw and refused the NOTIFYs.
    if untrusted < 300 or refused < 300:
        problems.append("only %d refused, notify_untrusted grew by %d" % (refused, untrusted))
    # The victim's outcome: the negative answer is still cached, nothing was dropped.
    if (cache.metric("kdns_frontend_cache_negative_drops_total") or 0) != drops_before:
        problems.append("negative answers were dropped on an untrusted NOTIFY")
    hits = cache.metric("kdns_frontend_cache_hits_total") or 0
    if dns_wire.ask_udp(cache.port, qname)[0] != "NXDOMAIN" or \
            (cache.metric("kdns_frontend_cache_hits_total") or 0) <= hits:
        problems.append("the cached NXDOMAIN is gone after the flood")
    return problems


def test_a_deleted_service_lives_out_its_ttl_then_is_nxdomain(env):
    objects, dns, cache = start(env, "deleted", [service("default", "web", "10.96.0.5")],
                                notify=True)
    qname = "web." + ZONE
    problems = []
    if "10.96.0.5" not in dns_wire.ask_udp(cache.port, qname)[1]:
        return ["%s not answered before the deletion" % qname]
    since = time.monotonic()
    write_objects(objects, [])
    # kubedns itself stops answering it at once...
    if not harness.wait_until(lambda: dns_wire.ask_udp(dns.port, qname)[0] == "NXDOMAIN", BOUND_S):
        problems.append("kubedns still answers the deleted Service")
    # ...while the cache's positive answer keeps its TTL (kube-dns behaves the same: only
    # negative answers are dropped on a change), and then the name is NXDOMAIN.
    still = dns_wire.ask_udp(cache.port, qname)[1]
    if time.monotonic() - since < TTL_S - 0.5 and "10.96.0.5" not in still:
        problems.append("the cached positive answer was dropped before its TTL: %s" % still)
    gone = harness.time_until(lambda: dns_wire.ask_udp(cache.port, qname)[0] == "NXDOMAIN",
                              timeout=TTL_S + BOUND_S + 5, interval=0.05, start=since)
    print("  deleted: NXDOMAIN through the cache after %s (TTL %d s)" %
          ("never" if gone is None else "%.3f s" % gone, TTL_S))
    if gone is None or gone > TTL_S + BOUND_S:
        problems.append("the deleted Service was still answered %.0f s after its TTL" % BOUND_S)
    return problems


TESTS = [test_a_created_service_replaces_a_cached_nxdomain_on_notify,
         test_a_created_service_replaces_a_cached_nxdomain_when_the_notify_is_lost,
         test_a_service_created_through_the_api_replaces_a_cached_nxdomain,
         test_a_service_created_through_the_api_replaces_a_cached_nxdomain_without_notify,
         test_an_endpoint_appearing_in_a_headless_service_replaces_its_negative_answer,
         test_a_deleted_service_lives_out_its_ttl_then_is_nxdomain,
         test_a_notify_flood_from_a_pod_drops_nothing]


def main():
    return harness.main("kdns-negcache-", TESTS, reset_each=True)


if __name__ == "__main__":
    sys.exit(main())
