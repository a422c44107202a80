#!/usr/bin/python3
"""Zone-aware headless answers end to end (kubedns --zonal, CoreDNS 1.14's `zonal`).

Every case of test/conformance/zonal_cases.json is asked with real dig and kdig of kubedns
serving test/conformance/zonal_objects.json with the case file's flags (--zonal), and its
`off_cases` of kubedns without them (the names NXDOMAIN, as before the option). Each outcome
is counted once in kdns_kubedns_zonal_queries_total{directive,outcome}, and nothing is
counted without the option. Through the fake API server (dig): a slice's endpoint moving to
another zone moves it between the pinned names. Closes with `N passed, M failed`.
"""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
import kubedns_api  # noqa: E402
import kubedns_conformance_test as conformance  # noqa: E402
import servers  # noqa: E402

CONFORMANCE = os.path.join(harness.ROOT, "test", "conformance")
FAMILY = "kdns_kubedns_zonal_queries_total"


def load_spec():
    with open(os.path.join(CONFORMANCE, "zonal_cases.json")) as f:
        return json.load(f)


def start(env, name, *flags):
    spec = load_spec()
    dns = servers.Kubedns(env["workdir"], name,
                          "--objects-file=" + os.path.join(CONFORMANCE, spec["objects_file"]),
                          "--domain=" + spec["zone"], *flags)
    env["owned"].append(dns)
    return dns


def case_problems(port, spec, cases):
    problems = []
    for case in cases:
        for client in ("dig", "kdig"):
            got, raw = conformance.ask(client, port, case)
            for p in conformance.check(case, got, spec["ttl"]):
                problems.append("%s (%s): %s\n    %s" % (case["id"], client, p,
                                                       raw.replace("\n", "\n    ")))
    return problems


def test_cases_with_zonal(env):
    spec = load_spec()
    dns = start(env, "kubedns-zonal", *spec["flags"])
    try:
        return case_problems(dns.port, spec, spec["cases"])
    finally:
        dns.stop()


def test_cases_without_zonal(env):
    spec = load_spec()
    dns = start(env, "kubedns-off")
    try:
        problems = case_problems(dns.port, spec, spec["off_cases"])
        counted = harness.metric_sum(dns.metrics(), FAMILY)
        if counted != 0:
            problems.append("%s counts %s queries with the option off" % (FAMILY, counted))
        return problems
    finally:
        dns.stop()


def test_outcomes_counted(env):
    """One query of each outcome moves its own series by one and no other."""
    spec = load_spec()
    dns = start(env, "kubedns-metrics", *spec["flags"])
    asked = [("pin", "zone", "us-west-2a.pin", "hdls"),
             ("pin", "empty", "us-west-2c.pin", "hdls"),
             ("pin", "nxdomain", "us-west-2a.pin", "clstr"),
             ("prefer", "zone", "us-west-2b.prefer", "hdls"),
             ("prefer", "fallback", "us-west-2c.prefer", "hdls"),
             ("prefer", "empty", "us-west-2a.prefer", "empty")]
    try:
        problems = []
        for directive, outcome, prefix, service in asked:
            series = '%s{directive="%s",outcome="%s"}' % (FAMILY, directive, outcome)
            before = dns.metrics()
            harness.dig(dns.port, "%s._zone.%s.testns.svc.cluster.local." % (prefix, service),
                        "A", None, "+notcp", timeout=5)
            after = dns.metrics()
            moved = {name: after.get(name, 0) - before.get(name, 0)
                     for name in after if name.startswith(FAMILY + "{")}
            want = {name: (1 if name == series else 0) for name in moved}
            if series not in moved or moved != want:
                problems.append("%s %s: moved %s" % (directive, outcome,
                                                     {k: v for k, v in moved.items() if v}))
        return problems
    finally:
        dns.stop()


def test_zone_change_through_the_api(env):
    """An endpoint moving zones (the same slice, a new zone) moves between pinned names."""
    fake = servers.FakeApiserver(os.path.join(env["workdir"], "fake"), "--objects",
                                 os.path.join(CONFORMANCE, "zonal_objects.json"),
                                 "--bookmark-interval", "0.5")
    env["owned"].append(fake)
    dns = kubedns_api.Kubedns(env["workdir"], fake.info["kubeconfig"], "kubedns-api", "--zonal")
    env["owned"].append(dns)
    try:
        if not harness.wait_until(dns.ready, 30):
            return ["kubedns never became ready: " + dns.log()[-2000:]]
        a = "us-west-2a.pin._zone.hdls.testns.svc.cluster.local."
        c = "us-west-2c.pin._zone.hdls.testns.svc.cluster.local."
        problems = [kubedns_api.expect(dns, a, "A", "NOERROR", ["172.0.0.1"]),
                    kubedns_api.expect(dns, c, "A", "NOERROR", [])]
        with open(os.path.join(CONFORMANCE, "zonal_objects.json")) as f:
            objects = json.load(f)["items"]
        moved = next(o for o in objects if o["metadata"]["name"] == "hdls-slice")
        moved["endpoints"][0]["zone"] = "us-west-2c"
        fake.control("/control/objects", moved)
        problems += [kubedns_api.expect(dns, a, "A", "NOERROR", []),
                     kubedns_api.expect(dns, c, "A", "NOERROR", ["172.0.0.1"])]
        return [p for p in problems if p]
    finally:
        dns.stop()
        fake.stop()


def main():
    return harness.main("kdns-zonal-e2e-",
                        [test_cases_with_zonal, test_cases_without_zonal, test_outcomes_counted,
                         test_zone_change_through_the_api])


if __name__ == "__main__":
    sys.exit(main())
