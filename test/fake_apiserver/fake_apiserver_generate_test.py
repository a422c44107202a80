#!/usr/bin/python3
"""Self-test of the fake kube-apiserver's generated clusters and churn generator: names,
addresses, defaults, canonical LIST bytes from the cached encodings, idempotence, bad
specs; the churn rate, the probe log, a paginated LIST pinned to one RV while it writes,
the watch events, addresses unique across churns, stop, bad requests.
Closes with `N passed, M failed`.
"""
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fake_client  # noqa: E402
from fake_client import (  # noqa: E402
    _ctl_status,
    _generated_cleanup,
    check)
import harness  # noqa: E402


def test_generate(f):
    spec = {"services": 12, "endpoints_per_service": 10, "namespace_prefix": "gentest",
            "services_per_namespace": 5, "max_endpoints_per_slice": 8}
    counts = [6 + (i * 7) % 9 for i in range(12)]
    try:
        out = f.ctl("/control/generate", spec)
        check(out["services"] == 12 and out["headless"] == 3, f"generate: {out}")
        check(out["endpoints"] == sum(counts), f"endpoints {out['endpoints']}")
        check(out["endpoint_slices"] == sum((c + 7) // 8 for c in counts), f"slices {out}")
        status, svc = f.get_json("/api/v1/namespaces/gentest-1/services/svc-5")
        check(status == 200 and svc["spec"]["clusterIP"] == "None", "svc-5 is headless")
        status, svc = f.get_json("/api/v1/namespaces/gentest-1/services/svc-6")
        check(svc["spec"]["clusterIP"] == "10.96.1.6", f"svc-6 {svc['spec']}")
        check(svc["spec"]["sessionAffinity"] == "None", "defaults filled in")
        status, sl = f.get_json("/apis/discovery.k8s.io/v1/namespaces/gentest-0/"
                                "endpointslices/svc-1-0")
        check([e["addresses"][0] for e in sl["endpoints"]] ==
              ["10.128.0.%d" % n for n in range(counts[0], counts[0] + 8)], "svc-1-0 addresses")
        check(sl["metadata"]["labels"]["kubernetes.io/service-name"] == "svc-1", "slice label")
        # LIST pages join cached encodings: the bytes must be what encoding the page gives.
        for path in ("/apis/discovery.k8s.io/v1/endpointslices?limit=7",
                     "/apis/discovery.k8s.io/v1/namespaces/gentest-2/endpointslices",
                     "/api/v1/services?limit=500"):
            status, headers, body = f.get(path)
            doc = json.loads(body)
            again = json.dumps(doc, separators=(",", ":"), ensure_ascii=False).encode() + b"\n"
            check(status == 200 and body == again, f"{path}: canonical bytes")
            check(list(doc) == ["kind", "apiVersion", "metadata", "items"], f"{path}: keys")
        status, doc = f.get_json("/apis/discovery.k8s.io/v1/namespaces/gentest-2/endpointslices")
        check(len(doc["items"]) == sum((c + 7) // 8 for c in counts[10:]), "namespaced list")
        again = f.ctl("/control/generate", spec)
        check(again["unchanged"] == out["services"] + out["endpoint_slices"], "idempotent")
        for bad in ({"services": -1}, {"servces": 1}, {"namespace_prefix": "a/b"}):
            check(_ctl_status(f, "/control/generate", bad) == 400, f"generate {bad}")
    finally:
        _generated_cleanup(f, ("gentest-",))


def test_churn(f):
    f.ctl("/control/generate", {"services": 20, "namespace_prefix": "churntest"})
    f.ctl("/control/objects", [
        {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "p", "namespace": "probe"},
         "spec": {"clusterIP": "None", "ports": [{"name": "http", "port": 80}]}},
        {"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
         "metadata": {"name": "p-1", "namespace": "probe",
                      "labels": {"kubernetes.io/service-name": "p"}},
         "addressType": "IPv4", "endpoints": [{"addresses": ["10.1.1.1"]}], "ports": []}])
    f.ctl("/control/config", {"history_size": 5000})
    try:
        rv0 = int(f.ctl("/control/health")["revision"])
        w = f.watch(f"resourceVersion={rv0}", "/apis/discovery.k8s.io/v1/endpointslices")
        out = f.ctl("/control/churn", {"rate": 400, "seconds": 1, "probe_namespace": "probe",
                                       "probe_rate": 40, "namespace_prefix": "churntest-"})
        check(out["running"] and out["slices"] == 20 and out["probe_slices"] == 1, f"{out}")
        # A paginated LIST while the churn writes: one pinned snapshot, every slice once.
        names, token, rvs = [], None, set()
        while True:
            path = "/apis/discovery.k8s.io/v1/endpointslices?limit=3" + (
                f"&continue={token}" if token else "")
            status, page = f.get_json(path)
            check(status == 200, f"page status {status}")
            rvs.add(page["metadata"]["resourceVersion"])
            for item in page["items"]:
                check(int(item["metadata"]["resourceVersion"]) <=
                      int(page["metadata"]["resourceVersion"]), "item newer than the list")
                names.append(item["metadata"]["namespace"] + "/" + item["metadata"]["name"])
            token = page["metadata"].get("continue")
            if token is None:
                break
            time.sleep(0.02)  # pacing, not a wait: the churn writes between the pages
        check(len(rvs) == 1, f"pages at one RV: {rvs}")
        check(names == sorted(names) and len(set(names)) == len(names), "sorted, no repeats")
        check(sum(n.startswith("churntest-") for n in names) == 20, "every slice listed")
        harness.wait_until(lambda: not f.ctl("/control/churn")["running"], 5)
        st = f.ctl("/control/churn?log=1")
        check(not st["running"] and st["error"] is None, f"churn ended: {st}")
        check(st["applied"] == 400 and st["probe_applied"] == 40, f"applied {st}")
        log = st["probe_log"]
        check(len(log) == 40 and len({e["ip"] for e in log}) == 40, "40 distinct probe IPs")
        check(all(a["t"] <= b["t"] for a, b in zip(log, log[1:])), "probe times in order")
        check(log[0]["service"] == "p" and log[0]["ip"] == "10.240.0.0", f"probe {log[0]}")
        status, sl = f.get_json("/apis/discovery.k8s.io/v1/namespaces/probe/endpointslices/p-1")
        check(sl["endpoints"] == [{"addresses": [log[-1]["ip"]], "conditions": {"ready": True}}],
              f"probe slice {sl['endpoints']}")
        events = 0
        try:
            while events < 400:
                ev = w.next_event(2)
                check(ev["type"] == "MODIFIED", f"churn event {ev['type']}")
                events += 1
        except (TimeoutError, EOFError):
            pass
        w.close()
        check(events == 400 - st["unchanged"], f"watch saw {events} events")
        check(f.ctl("/control/churn?log=1&since=39")["probe_log"] == log[39:], "since")
        out = f.ctl("/control/churn", {"rate": 100, "seconds": 30,
                                       "namespace_prefix": "churntest-"})
        check(f.ctl("/control/churn/stop", {})["running"] in (True, False), "stop answers")
        harness.wait_until(lambda: not f.ctl("/control/churn")["running"], 5)
        st = f.ctl("/control/churn")
        check(not st["running"] and st["applied"] < 100, f"stopped: {st}")
        check(st["unchanged"] == 0, f"a second churn repeats addresses: {st}")
        for bad in ({"rate": 0}, {"rate": 10, "probe_rate": 5, "probe_namespace": "none"}):
            check(_ctl_status(f, "/control/churn", bad) == 400, f"churn {bad}")
    finally:
        f.ctl("/control/churn/stop", {})
        f.ctl("/control/config", {"history_size": 20})
        _generated_cleanup(f, ("churntest-", "probe"))


TESTS = [test_generate,
         test_churn]


if __name__ == "__main__":
    sys.exit(fake_client.main(TESTS))
