#!/usr/bin/python3
"""kubedns --autopath end to end: the pod of pod_test.py (kubedns, the nanny and
frontend-cache, NSD and unbound as the world outside, in a network and mount namespace of
its own), its /etc/resolv.conf a pod's in namespace `default` on a node whose search domain
is example.test (search default.svc.cluster.local svc.cluster.local cluster.local
example.test, ndots:5). kubedns reads the same file, so --autopath takes example.test from
it as the node's domain, as it does under dnsPolicy: Default.

The same lookups, glibc's `getent ahosts` (A and AAAA for each suffix) and single-query
`dig +search` (one type, as musl's resolver asks), run first with kubedns as it is by
default, then with --autopath; each costs what the cache's query counter says. Checks: with
autopath an external name, `svc.other-ns` and a name of the node's domain cost at most 2
queries at the cache, `svc` of the pod's own namespace still 2, and every answer's
addresses are those without it; names of the cluster asked in full answer exactly as
before; the cache keeps the completed answer under the question the pod asked (a second
lookup is all cache hits), lets it expire at its TTL and serves it stale when kubedns is
gone. Needs root; prints the query counts before and after, and `N passed, M failed` last.
"""
import ipaddress
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
import pod_test  # noqa: E402

RESOLV_CONF = """search default.svc.cluster.local svc.cluster.local cluster.local example.test
nameserver 127.0.0.1
options ndots:5
"""
CACHE_METRICS_PORT = 10056  # pod_test's frontend-cache --prometheus-port
KUBEDNS_METRICS_PORT = 10055
# (client, name as the pod asks it, what it is): the lookups compared.
MISSING = "name that exists nowhere"
LOOKUPS = [
    ("getent", "www.example.test", "external name (stub domain)"),
    ("getent-3", "www.example.test", "external name, no node domain"),
    ("getent", "www.other.test", "external name (another stub domain)"),
    ("getent", "www", "name of the node's domain"),
    ("getent", "kube-dns.kube-system", "svc.other-ns"),
    ("getent", "kubernetes", "svc of the pod's own namespace"),
    ("getent", "kubernetes.default.svc.cluster.local", "cluster name in full (4 dots)"),
    ("dig", "www.example.test", "external name"),
    ("dig", "kube-dns.kube-system", "svc.other-ns"),
    ("dig", "kubernetes", "svc of the pod's own namespace"),
    ("getent", "nothing-here", MISSING),
]
# Most queries one lookup may cost at the cache with --autopath.
MOST_WITH_AUTOPATH = {"getent": 2, "getent-3": 2, "dig": 1}
COUNTS = {}  # (client, name) -> {"without": n, "with": n}
ANSWERS = {}  # (client, name) -> addresses without autopath


def cache_metric(series):
    return harness.metric_sum(harness.scrape_metrics(CACHE_METRICS_PORT), series)


def cache_queries():
    """A and AAAA queries answered by the cache: the lookups' (the sidecar's probes are SRV,
    its poller's CHAOS TXT)."""
    samples = harness.scrape_metrics(CACHE_METRICS_PORT)
    return sum(harness.metric_sum(samples, 'kdns_frontend_queries_total{type="%s",' % qtype)
               for qtype in ("A", "AAAA"))


def addresses(text):
    """The IP addresses among the first words of `text`'s lines, sorted."""
    found = set()
    for line in text.splitlines():
        words = line.split()
        if not words:
            continue
        try:
            found.add(str(ipaddress.ip_address(words[0])))
        except ValueError:
            pass
    return sorted(found)


def lookup(client, name, pod=None):
    """(addresses, queries it cost at the cache) of one lookup as the pod makes it; client
    "getent-3" is getent with the pod's search list without the node's domain (pod_test's
    resolv.conf, the kubelet's on a node without a search domain of its own)."""
    if client == "getent-3":
        path = os.path.join(pod.workdir, "resolv.conf")  # bind-mounted on /etc/resolv.conf
        with open(path, "w") as f:  # in place: the mount follows the file, not the name
            f.write(pod_test.POD_RESOLV_CONF)
        try:
            return lookup("getent", name)
        finally:
            with open(path, "w") as f:
                f.write(RESOLV_CONF)
    if client == "getent":
        argv = ["getent", "ahosts", name]
    else:
        argv = ["dig", "+search", "+short", "+tries=1", "+time=5", name, "A"]
    before = cache_queries()
    run = subprocess.run(argv, capture_output=True, text=True, timeout=60)
    return addresses(run.stdout), cache_queries() - before


def restart_kubedns(pod, flags):
    pod.kubedns.stop()
    pod.kubedns_flags = list(flags)
    pod.start_kubedns()
    # The cluster zone's negative answers the cache holds from the old kubedns go when the
    # new one's NOTIFY (sent within 100 ms of its first publish) or the cache's SOA poll
    # (every second) shows a new serial; until then a pod still gets them, as in a cluster.
    # Wait for that condition, not for a time.
    if not harness.wait_until(
            lambda: cache_metric("kdns_frontend_cache_negative_entries") == 0, 30):
        raise RuntimeError("the cache kept the old kubedns's negative answers")


# ---------------------------------------------------------------------------------------

def test_lookups_without_autopath(pod):
    p = []
    pod.config.publish(pod.stub_domains(["example.test", "other.test"]))
    if not harness.wait_until(lambda: pod.answers("www.other.test"), 15):
        return ["the stub domain other.test is not answered"]
    for client, name, what in LOOKUPS:
        got, cost = lookup(client, name, pod)
        COUNTS[(client, name)] = {"without": cost}
        ANSWERS[(client, name)] = got
        if not got and what != MISSING:
            p.append("%s %s: no address without autopath" % (client, name))
        if client.startswith("getent") and "external" in what and cost < 8:
            # The walk the pod makes without autopath (and what the counter must see).
            p.append("%s %s: %d queries without autopath, want the walk's 8 or more" %
                     (client, name, cost))
    return p


def test_lookups_with_autopath(pod):
    p = []
    restart_kubedns(pod, ["--autopath"])
    if "without records walks N.svc.cluster.local. N.cluster.local. N.example.test. N.\n" \
            not in pod.kubedns.log():
        p.append("kubedns did not take example.test from resolv.conf: " +
                 pod.kubedns.log()[-800:])
    for client, name, what in LOOKUPS:
        got, cost = lookup(client, name, pod)
        COUNTS.setdefault((client, name), {})["with"] = cost
        want = ANSWERS.get((client, name))
        if got != want:
            p.append("%s %s (%s): %s with autopath, %s without" % (client, name, what, got,
                                                                   want))
        # A name that exists nowhere: the walk answers the first query NXDOMAIN and the pod
        # goes on as before, so no more queries than without autopath.
        most = COUNTS[(client, name)]["without"] if what == MISSING else \
            MOST_WITH_AUTOPATH[client]
        if cost > most:
            p.append("%s %s (%s): %d queries at the cache with autopath, want at most %d" %
                     (client, name, what, cost, most))
    kubedns = harness.scrape_metrics(KUBEDNS_METRICS_PORT)
    for suffix in ("svc.cluster.local.", "example.test.", "."):
        series = 'kdns_kubedns_autopath_hits_total{suffix="%s"}' % suffix
        if harness.metric_sum(kubedns, series) < 1:
            p.append("no autopath hit at %s" % suffix)
    if harness.metric_sum(kubedns, 'kdns_kubedns_forward_queries_total{route="stub",'
                                   'kind="autopath"}') < 1:
        p.append("no candidate went to a stub domain")
    return p


def test_cluster_names_answer_as_before(pod):
    """Names that exist: the same records from the cache, with autopath on."""
    p = []
    names = [("kubernetes.default.svc.cluster.local", "A"),
             ("kube-dns.kube-system.svc.cluster.local", "A"),
             ("headless.default.svc.cluster.local", "A"),
             ("_https._tcp.kubernetes.default.svc.cluster.local", "SRV"),
             ("external.default.svc.cluster.local", "A"),
             ("nothing.default.svc.cluster.local", "A")]
    with_autopath = {(n, t): harness.dig(10053, n, t) for n, t in names}
    restart_kubedns(pod, [])
    for name, qtype in names:
        without = harness.dig(10053, name, qtype)
        got = with_autopath[(name, qtype)]
        if (got.status, sorted(r.key() for r in got.answer)) != (
                without.status, sorted(r.key() for r in without.answer)):
            p.append("%s %s: %r with autopath, %r without" % (name, qtype, got, without))
    restart_kubedns(pod, ["--autopath"])
    return p


def test_cache_keeps_the_completion_under_the_pods_question(pod):
    p = []
    # The first lookup above already cached both answers; another pod of the namespace
    # asking again gets them from the cache alone.
    misses, hits = (cache_metric("kdns_frontend_cache_misses_total"),
                    cache_metric("kdns_frontend_cache_hits_total"))
    got, cost = lookup("getent", "www.example.test")
    new_misses = cache_metric("kdns_frontend_cache_misses_total") - misses
    new_hits = cache_metric("kdns_frontend_cache_hits_total") - hits
    measured = "%d queries, %d hits, %d misses" % (cost, new_hits, new_misses)
    pod_test.measured("getent ahosts www.example.test again (autopath)", measured)
    if got != ANSWERS[("getent", "www.example.test")] or cost != 2 or new_misses != 0 or \
            new_hits != 2:
        p.append("a second lookup: %s, %s; want 2 queries, both hits" % (got, measured))
    answer = harness.dig(53, "www.example.test.default.svc.cluster.local")
    if answer.status != "NOERROR" or [r.type for r in answer.answer] != ["CNAME", "A", "A"]:
        p.append("the cache's answer to the pod's question: %r" % answer)
    elif answer.answer[0].rdata != "www.example.test.":
        p.append("the CNAME points at %s" % answer.answer[0].rdata)
    return p


def test_ttl_and_serve_stale(pod):
    """The completed answer expires at its TTL (kubedns's, the shortest in it) and is served
    stale by the cache while kubedns is gone."""
    p = []
    restart_kubedns(pod, ["--autopath", "--ttl=2"])
    name = "mail.example.test.default.svc.cluster.local"  # asked by no test before
    first = harness.dig(53, name)
    if first.status != "NOERROR" or not first.answer or max(r.ttl for r in first.answer) > 2:
        return ["the first answer: %r (want TTLs of at most 2)" % first]
    misses = cache_metric("kdns_frontend_cache_misses_total")
    # Fresh, then expired: a query after the TTL goes to kubedns again (a miss). Asked only
    # every 2.5 s: a hit near the end of the TTL refreshes the entry (prefetch), so asking
    # more often than the TTL could keep it fresh for ever.
    if not harness.wait_until(
            lambda: harness.dig(53, name).status == "NOERROR" and
            cache_metric("kdns_frontend_cache_misses_total") > misses, 20, 2.5):
        p.append("the completed answer never expired in the cache")
    keys = sorted(r.key() for r in first.answer)
    pod.kubedns.stop()
    stale = cache_metric("kdns_frontend_cache_stale_answers_total")
    served = []

    def stale_answer():
        answer = harness.dig(53, name, timeout=3)
        served.append(answer)
        return cache_metric("kdns_frontend_cache_stale_answers_total") > stale

    if not harness.wait_until(stale_answer, 30, 0.2):
        p.append("no stale answer with kubedns gone: %r" % served[-1:])
    else:
        answer = served[-1]
        if answer.status != "NOERROR" or sorted(r.key() for r in answer.answer) != keys:
            p.append("the stale answer %r differs from %r" % (answer, first))
    pod.kubedns_flags = ["--autopath"]
    pod.start_kubedns()
    return p


def test_figures(pod):
    """Prints the query counts (a figure, not a threshold: the checks are above)."""
    for client, name, what in LOOKUPS:
        count = COUNTS.get((client, name), {})
        pod_test.measured("%s %s (%s): queries at the cache" % (client, name, what),
                          "%s without autopath, %s with" % (count.get("without"),
                                                            count.get("with")))
    return []


TESTS = [test_lookups_without_autopath, test_lookups_with_autopath,
         test_cluster_names_answer_as_before,
         test_cache_keeps_the_completion_under_the_pods_question, test_ttl_and_serve_stale,
         test_figures]


def run_inside():
    return pod_test.run_inside(TESTS, RESOLV_CONF)


if __name__ == "__main__":
    sys.exit(pod_test.main(__file__, run_inside))
