#!/usr/bin/python3
"""kubedns replicas and the API server's etcd, end to end, with the real kubedns binary.

The fake API server (test/fake_apiserver) counts the reads a real one would send to etcd
(consistent LISTs, their pages, Exact or paged NotOlderThan LISTs, watches from before the
window) and those its watch cache serves (resourceVersion=0, NotOlderThan without limit,
watch-list). Restarting N kubedns replicas at once, as a rollout or a node drain does, must
not make N times the etcd reads: each replica's first LIST asks the watch cache. Also: an
API-server restart (every watch 410) makes the replicas re-LIST from the cache, spread in
time by the jitter; the fake's old-server mode refuses watch-list parameters with 1.25's
422, and its new mode streams the initial events up to the initial-events-end bookmark.
Closes with `N passed, M failed`.
"""
import json
import os
import ssl
import sys
import urllib.error
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
import kubedns_api  # noqa: E402
from kubedns_api import expect  # noqa: E402

REPLICAS = 3


def reads(fake):
    return fake.control("/control/stats")["reads"]


def start_replicas(env, fake, count, tag):
    replicas = [kubedns_api.Kubedns(env["workdir"], fake.info["kubeconfig"],
                                    "kubedns-%s-%d" % (tag, i), "--api-relist-jitter=2s")
                for i in range(count)]
    for dns in replicas:
        if not harness.wait_until(dns.ready, 60):
            raise RuntimeError("a replica never became ready: " + dns.log()[-2000:])
    return replicas


def start_and_restart(env, fake, count, tag):
    """etcd and cache reads of `count` replicas started, then all restarted at once."""
    fake.control("/control/reset-stats", {})
    replicas = start_replicas(env, fake, count, tag + "a")
    for dns in replicas:
        dns.stop()
    replicas = start_replicas(env, fake, count, tag + "b")
    got = reads(fake)
    return got, replicas


def test_restarting_replicas_does_not_multiply_etcd_reads(env):
    fake = kubedns_api.start_fake(os.path.join(env["workdir"], "restart"))
    problems, replicas = [], []
    try:
        one, replicas = start_and_restart(env, fake, 1, "one")
        for dns in replicas:
            dns.stop()
        many, replicas = start_and_restart(env, fake, REPLICAS, "many")
        # Two resources (services, endpointslices), two starts per replica: every LIST
        # reached the fake, from its watch cache.
        if many["cache"] < 2 * 2 * REPLICAS:
            problems.append("%d replicas made %d watch-cache reads, want at least %d" %
                            (REPLICAS, many["cache"], 4 * REPLICAS))
        if many["etcd"] > one["etcd"]:
            problems.append("etcd reads grew with the replicas: %d with 1, %d with %d" %
                            (one["etcd"], many["etcd"], REPLICAS))
        if many["etcd"] != 0:
            problems.append("replica starts read etcd %d times (want 0): %s" %
                            (many["etcd"], fake.control("/control/stats")["reads_by_resource"]))
        problems.append(expect(replicas[-1], "kubernetes.default.svc.cluster.local.", "A",
                               "NOERROR", ["10.96.0.1"]))
    finally:
        for dns in replicas:
            dns.stop()
        fake.stop()
    return [p for p in problems if p]


def test_api_server_restart_relists_from_the_cache(env):
    fake = kubedns_api.start_fake(os.path.join(env["workdir"], "apirestart"))
    problems, replicas = [], []
    try:
        replicas = start_replicas(env, fake, REPLICAS, "api")
        fake.control("/control/reset-stats", {})
        fake.control("/control/restart", {})
        # Every replica's watch now gets 410 and re-LISTs, each within the 2 s jitter.
        def relisted():
            by = fake.control("/control/stats")["reads_by_resource"]
            got = sum(c.get("cache", 0) for c in by.values())
            return None if got >= 2 * REPLICAS else "%d cache reads so far: %s" % (got, by)
        problems.append(harness.eventually(relisted, 30))
        stats = fake.control("/control/stats")
        lists = [e for e in fake.control("/control/requests")["requests"]
                 if e["verb"] == "list"]
        # Watches from before the restart are the only etcd reads (one per watch); the
        # re-LISTs themselves are served by the cache.
        relist_etcd = [e for e in lists if "resourceVersion" not in json.dumps(e["query"])]
        if relist_etcd:
            problems.append("re-LISTs without a resourceVersion (etcd): %s" % relist_etcd)
        if stats["reads"]["cache"] < 2 * REPLICAS:
            problems.append("too few cache reads: %s" % stats["reads"])
        for dns in replicas:
            problems.append(expect(dns, "kubernetes.default.svc.cluster.local.", "A",
                                   "NOERROR", ["10.96.0.1"]))
    finally:
        for dns in replicas:
            dns.stop()
        fake.stop()
    return [p for p in problems if p]


def raw_get(fake, query):
    """(status, body lines) of a GET on the fake's API port with its token."""
    context = ssl.create_default_context(cafile=fake.info["ca_file"])
    request = urllib.request.Request(
        fake.info["api_url"] + "/api/v1/services?" + query,
        headers={"Authorization": "Bearer " + fake.info["token"],
                 "Accept": "application/json"})
    try:
        with urllib.request.urlopen(request, context=context, timeout=10) as response:
            return response.status, response.read().decode().splitlines()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode().splitlines()


def test_watch_list_forms(env):
    problems = []
    query = ("watch=1&sendInitialEvents=true&resourceVersionMatch=NotOlderThan"
             "&allowWatchBookmarks=true&timeoutSeconds=1")
    old = kubedns_api.start_fake(os.path.join(env["workdir"], "old"))
    try:
        status, lines = raw_get(old, query)
        body = json.loads(lines[0]) if lines else {}
        if status != 422 or "resourceVersionMatch is forbidden for watch" not in body.get(
                "message", ""):
            problems.append("old server: want 1.25's 422, got %s %s" % (status, lines[:1]))
        status, lines = raw_get(old, "resourceVersion=0&limit=3")
        items = json.loads(lines[0])["items"] if status == 200 else []
        if status != 200 or len(items) != 12:
            problems.append("resourceVersion=0 must ignore limit: %s, %d items" %
                            (status, len(items)))
        if old.control("/control/stats")["reads"] != {"etcd": 0, "cache": 1}:
            problems.append("reads: %s" % old.control("/control/stats")["reads"])
    finally:
        old.stop()
    new = kubedns_api.start_fake(os.path.join(env["workdir"], "new"), "--watch-list")
    try:
        status, lines = raw_get(new, query)
        events = [json.loads(line) for line in lines if line]
        added = [e for e in events if e["type"] == "ADDED"]
        ends = [e for e in events if e["type"] == "BOOKMARK" and e["object"]["metadata"].get(
            "annotations", {}).get("k8s.io/initial-events-end") == "true"]
        if status != 200 or len(added) != 12 or len(ends) != 1 or \
                events.index(ends[0]) != len(added):
            problems.append("watch-list: want 12 ADDED then the end bookmark, got %s %s" %
                            (status, [e["type"] for e in events]))
        if new.control("/control/stats")["reads"] != {"etcd": 0, "cache": 1}:
            problems.append("watch-list reads: %s" % new.control("/control/stats")["reads"])
        status, _ = raw_get(new, "watch=1&sendInitialEvents=true&timeoutSeconds=1")
        if status != 422:
            problems.append("watch-list without NotOlderThan: %s, want 422" % status)
    finally:
        new.stop()
    return problems


def test_kubedns_watch_list_and_fallback(env):
    """--api-watch-list: served by a 1.32-like fake, refused (422) by the 1.25 one."""
    problems = []
    for tag, fake_flags in (("wl-new", ["--watch-list"]), ("wl-old", [])):
        fake = kubedns_api.start_fake(os.path.join(env["workdir"], tag), *fake_flags)
        dns = None
        try:
            dns = kubedns_api.Kubedns(env["workdir"], fake.info["kubeconfig"], "kubedns-" + tag,
                                      "--api-watch-list")
            if not harness.wait_until(dns.ready, 60):
                problems.append("%s: never ready: %s" % (tag, dns.log()[-2000:]))
                continue
            problems.append(expect(dns, "kubernetes.default.svc.cluster.local.", "A",
                                   "NOERROR", ["10.96.0.1"]))
            log = fake.control("/control/requests")["requests"]
            streamed = [e for e in log if e["query"].get("sendInitialEvents") == "true"]
            lists = [e for e in log if e["verb"] == "list"]
            if fake_flags and (len(streamed) < 2 or lists or
                               any(e["status"] != 200 for e in streamed)):
                problems.append("%s: want watch-lists and no LIST: %s" % (tag, log))
            if not fake_flags and (not streamed or any(e["status"] != 422 for e in streamed)
                                   or len(lists) < 2):
                problems.append("%s: want a 422 per resource, then LISTs: %s" % (tag, log))
            if fake.control("/control/stats")["reads"]["etcd"] != 0:
                problems.append("%s: etcd reads: %s" % (tag, fake.control("/control/stats")))
        finally:
            if dns is not None:
                dns.stop()
            fake.stop()
    return [p for p in problems if p]


if __name__ == "__main__":
    sys.exit(kubedns_api.main([test_restarting_replicas_does_not_multiply_etcd_reads,
                               test_api_server_restart_relists_from_the_cache,
                               test_watch_list_forms, test_kubedns_watch_list_and_fallback],
                              main_instance=False))
